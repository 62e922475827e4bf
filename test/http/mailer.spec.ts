// The mailer end to end: a real SMTP server in the test process (smtp-server) receives what a node sends through
// SMTP_URL, parsed with mailparser; `POST /a/mailer/send` and what each profile may send, the password reset mail,
// a relay that refuses then accepts (retried), one that always refuses (given up, the error kept), a node
// restarted with a mail still queued (delivered after the restart), and the outbox `.eml` without SMTP_URL.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { simpleParser, type ParsedMail } from "mailparser";
import { Relay } from "../helpers/smtp";
import { useNode, startNode, type TestNode } from "../helpers/node";
import type { MailQueueRepo } from "../../lib/db/mail-queue";
import type { MailMessage } from "../../lib/mail/transport";

async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 10_000): Promise<T> {
	const until = Date.now() + ms;
	for (;;) {
		const v = await probe();
		if (v) return v;
		if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 25));
	}
}

const queueOf = (node: TestNode) => (node.broker.getLocalService("mailer") as unknown as { queueRepo: MailQueueRepo<MailMessage> }).queueRepo;
const toAddress = (m: ParsedMail) => (m.to && !Array.isArray(m.to) ? m.to.value[0]?.address : undefined);

describe("HTTP: mailer", function () {
	this.timeout(60_000);
	const relay = new Relay();
	let dataDir: string;
	let node: TestNode;
	let admin: string;
	let dora: string;
	let doraUuid: string;
	let ericUuid: string;
	const env = () => ({ DATA_DIR: dataDir, SMTP_URL: relay.url, MAIL_RETRY_DELAY: "1", MAIL_MAX_ATTEMPTS: "3", MAIL_FROM: "Cellar <cellar@files.example.com>", IP_BAN_THRESHOLD: "1000" });

	before(async () => {
		await relay.start();
		dataDir = mkdtempSync(join(tmpdir(), "cellar-mailer-"));
		node = await startNode({ env: env() });
		admin = await node.login("admin", node.adminPassword);
		for (const [login, attrs] of [
			["dora", { profile: "standard", email: "dora@example.com", displayName: "Dora Explorer" }],
			["eric", { profile: "standard", email: "eric@example.com" }],
			["nomail", { profile: "standard" }],
		] as const) {
			const r = await node.api("PUT", `/a/user/${login}`, { Login: login, Password: "Some-Pass-1234", Attributes: attrs }, admin);
			assert.equal(r.status, 200, r.text);
			if (login === "dora") doraUuid = r.body.Uuid;
			if (login === "eric") ericUuid = r.body.Uuid;
		}
		dora = await node.login("dora", "Some-Pass-1234");
	});
	after(async () => {
		await node?.stop();
		await relay.stop();
		rmSync(dataDir, { recursive: true, force: true });
	});

	it("a user sends a plain mail to another user by uuid: delivered by SMTP, from the server on the user's behalf", async () => {
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Uuid: ericUuid }], Subject: "Lunch?", ContentPlain: "Shall we meet at noon?" }, dora);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body, { Success: true });
		const got = await waitFor("the mail at the relay", () => relay.find("eric@example.com", /^Lunch\?$/));
		const m = got.mail;
		assert.equal(toAddress(m), "eric@example.com");
		assert.equal(m.from?.value[0].address, "cellar@files.example.com");
		assert.match(m.from?.value[0].name ?? "", /Dora Explorer/);
		assert.equal(m.replyTo?.value[0].address, "dora@example.com");
		assert.match(m.text ?? "", /Shall we meet at noon\?/);
		assert.match(m.html || "", /Shall we meet at noon\?/);
		assert.match(m.messageId ?? "", /@files\.example\.com>$/);
	});

	it("a cell invitation by login: the Cell template, the inviter is the caller, the link on the server's URL", async () => {
		const r = await node.api(
			"POST",
			"/a/mailer/send",
			{ To: [{ Uuid: "eric" }], TemplateId: "Cell", TemplateData: { Cell: "Project X", Inviter: "Someone Else", LinkPath: "/ws/project-x", LinkUrl: "https://evil.example/" } },
			dora,
		);
		assert.equal(r.status, 200, r.text);
		const got = await waitFor("the invitation", () => relay.find("eric@example.com", /Project X/));
		assert.equal(got.mail.subject, "Dora Explorer added you to the cell Project X");
		assert.ok((got.mail.text ?? "").includes(`${node.url}/ws/project-x`), got.mail.text);
		assert.ok(!(got.mail.text ?? "").includes("evil.example"));
		assert.ok((got.mail.html || "").includes(`href="${node.url}/ws/project-x"`));
	});

	it("refuses what a standard user may not send: outside addresses, reserved templates, HTML, attachments; and anonymous callers", async () => {
		const send = (body: unknown, token?: string) => node.api("POST", "/a/mailer/send", body, token);
		const outside = await send({ To: [{ Address: "stranger@elsewhere.org" }], Subject: "Hi", ContentPlain: "x" }, dora);
		assert.equal(outside.status, 403, outside.text);
		assert.match(outside.body.Title, /only send mail to users of this server/);
		// An address that is a user's email is fine.
		assert.equal((await send({ To: [{ Address: "eric@example.com" }], Subject: "By address", ContentPlain: "x" }, dora)).status, 200);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], TemplateId: "ResetPassword", TemplateData: { LinkPath: "/x" } }, dora)).status, 403);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], Subject: "Html", ContentHtml: "<b>x</b>" }, dora)).status, 403);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], Subject: "Att", ContentPlain: "x", Attachments: ["a"] }, dora)).status, 400);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], TemplateId: "NoSuchTemplate" }, dora)).status, 400);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], ContentPlain: "no subject" }, dora)).status, 400);
		const none = await send({ To: [{ Uuid: "nomail" }], Subject: "x", ContentPlain: "x" }, dora);
		assert.equal(none.status, 400, none.text);
		assert.match(none.body.Title, /Could not find any address/);
		assert.equal((await send({}, admin)).status, 400);
		assert.equal((await send({ To: [{ Uuid: ericUuid }], Subject: "anon", ContentPlain: "x" })).status, 401);
		assert.equal((await send({ To: Array.from({ length: 101 }, () => ({ Uuid: ericUuid })), Subject: "x", ContentPlain: "x" }, dora)).status, 403);
		// Header injection through an address or a name goes nowhere.
		const inject = await send({ To: [{ Address: "eric@example.com\r\nBcc: victim@example.org" }], Subject: "x", ContentPlain: "x" }, admin);
		assert.equal(inject.status, 400, inject.text);
	});

	it("an administrator may write to any address, with HTML", async () => {
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Address: "partner@elsewhere.org", Name: "A Partner" }], Subject: "Welcome aboard", ContentHtml: "<p>Hello <b>partner</b></p>", ContentPlain: "Hello partner" }, admin);
		assert.equal(r.status, 200, r.text);
		const got = await waitFor("the admin's mail", () => relay.find("partner@elsewhere.org", /^Welcome aboard$/));
		assert.match(got.mail.html || "", /<b>partner<\/b>/);
		assert.equal(got.mail.to && !Array.isArray(got.mail.to) ? got.mail.to.value[0].name : "", "A Partner");
	});

	it("an administrator's AdminTestMail is sent at once: the relay's refusal is the answer", async () => {
		const body = { To: [{ Uuid: "admin" }, { Address: "ops@elsewhere.org" }], TemplateId: "AdminTestMail", TemplateData: { Message: "Is the relay working?" } };
		relay.refuse = true;
		const refused = await node.api("POST", "/a/mailer/send", body, admin);
		assert.equal(refused.status, 503, refused.text);
		assert.match(refused.body.Title, /451/);
		relay.refuse = false;
		const ok = await node.api("POST", "/a/mailer/send", body, admin);
		assert.equal(ok.status, 200, ok.text);
		// Already at the relay when the call answers.
		const got = relay.find("ops@elsewhere.org", /test mail/);
		assert.ok(got, "delivered before the answer");
		assert.match(got.mail.text ?? "", /Is the relay working\?/);
		// The admin account has no email here: only the address was written to.
		assert.equal(relay.received.filter((r) => /test mail/.test(r.mail.subject ?? "")).length, 1);
		assert.equal((await queueOf(node).list("queued")).filter((m) => /test mail/.test(m.subject)).length, 0);
	});

	it("the password reset mail reaches the SMTP server, with a working link", async () => {
		const ask = await node.api("PUT", "/a/auth/reset-password-token/dora", {});
		assert.equal(ask.status, 200, ask.text);
		const got = await waitFor("the reset mail", () => relay.find("dora@example.com", /^Reset your password/));
		const key = new RegExp(`${node.url}/user/reset-password/([0-9a-f-]{36})`).exec(got.mail.text ?? "")?.[1];
		assert.ok(key, got.mail.text);
		const done = await node.api("POST", "/a/auth/reset-password", { ResetPasswordToken: key, UserLogin: "dora", NewPassword: "Dora-New-Pass-99" });
		assert.equal(done.status, 200, done.text);
		await waitFor("the reset-done mail", () => relay.find("dora@example.com", /^Your password was changed/));
		dora = await node.login("dora", "Dora-New-Pass-99");
	});

	it("a relay that refuses (451) and then accepts: the mail is retried and delivered, the error kept meanwhile", async () => {
		relay.refuse = true;
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Uuid: ericUuid }], Subject: "Retried mail", ContentPlain: "x" }, dora);
		assert.equal(r.status, 200, r.text);
		const pending = await waitFor("a failed first attempt", async () => (await queueOf(node).list("queued")).find((m) => m.subject === "Retried mail" && m.attempts === 1));
		assert.match(pending.lastError ?? "", /451/);
		assert.equal(relay.find("eric@example.com", /^Retried mail$/), undefined);
		relay.refuse = false;
		await waitFor("the retried mail", () => relay.find("eric@example.com", /^Retried mail$/));
		const sent = await queueOf(node).get(pending.id);
		assert.equal(sent?.status, "sent");
		assert.equal(sent?.attempts, 2);
	});

	it("gives a mail up after MAIL_MAX_ATTEMPTS refusals, keeping the last error", async () => {
		relay.bounce.add("partner2@elsewhere.org");
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Address: "partner2@elsewhere.org" }], Subject: "Bounced", ContentPlain: "x" }, admin);
		assert.equal(r.status, 200, r.text);
		const failed = await waitFor("the mail given up", async () => (await queueOf(node).list("failed")).find((m) => m.subject === "Bounced"), 20_000);
		assert.equal(failed.attempts, 3);
		assert.match(failed.lastError ?? "", /550/);
	});

	it("a mail being sent when the node stops (the relay hangs) is sent again after it starts", async () => {
		relay.hangMs = 8000;
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Uuid: ericUuid }], Subject: "Interrupted", ContentPlain: "x" }, dora);
		assert.equal(r.status, 200, r.text);
		const sending = await waitFor("the mail being sent", async () => (await queueOf(node).list("sending")).find((m) => m.subject === "Interrupted"));
		await node.stop();
		relay.hangMs = 0;
		node = await startNode({ env: env() });
		await waitFor("the mail after the restart", () => relay.find("eric@example.com", /^Interrupted$/), 20_000);
		const row = await waitFor("the row marked sent", async () => {
			const m = await queueOf(node).get(sending.id);
			return m?.status === "sent" && m;
		});
		// The interrupted attempt was given back, not counted.
		assert.equal(row.attempts, 1);
		assert.equal(relay.received.filter((x) => x.mail.subject === "Interrupted").length, 1);
	});

	it("a mail still queued when the node stops is delivered after it starts again", async () => {
		await relay.stop();
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Uuid: ericUuid }], Subject: "Across a restart", ContentPlain: "x" }, dora);
		assert.equal(r.status, 200, r.text);
		await waitFor("a failed attempt (relay down)", async () => (await queueOf(node).list("queued")).find((m) => m.subject === "Across a restart" && m.attempts >= 1));
		await node.stop();
		await relay.start(relay.port);
		node = await startNode({ env: env() });
		await waitFor("the mail after the restart", () => relay.find("eric@example.com", /^Across a restart$/), 20_000);
		assert.ok(doraUuid);
	});
});

describe("HTTP: mailer without SMTP_URL", function () {
	this.timeout(30_000);
	const node = useNode({ env: { SMTP_URL: "" } });

	it("writes each mail as an .eml file to DATA_DIR/outbox", async () => {
		const admin = await node.login("admin", node.adminPassword);
		const r = await node.api("POST", "/a/mailer/send", { To: [{ Address: "ops@example.org" }], TemplateId: "AdminTestMail", TemplateData: { Message: "Testing the outbox" } }, admin);
		assert.equal(r.status, 200, r.text);
		const dir = join(node.dataDir, "outbox");
		const file = await waitFor("the .eml file", () => existsSync(dir) && readdirSync(dir).find((f) => f.endsWith(".eml")));
		const mail = await simpleParser(readFileSync(join(dir, file)));
		assert.equal(toAddress(mail), "ops@example.org");
		assert.equal(mail.subject, "Cellar is sending you a test mail");
		assert.match(mail.text ?? "", /Testing the outbox/);
		assert.match(mail.html || "", /Testing the outbox/);
	});
});
