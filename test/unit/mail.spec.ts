// lib/mail without a broker: the templates (every id renders, values escaped, links kept on the server), the
// composed bytes (no header injection through names), and the sender on both backends with a fake transport and
// clock: retry delays that double, give-up with the error kept, a node dying mid-send (its mail sent by the next
// holder once the claim ran out), and the lease (no lease, no sending).
import assert from "node:assert/strict";
import { simpleParser } from "mailparser";
import { MailQueueRepo } from "../../lib/db/mail-queue";
import { MailSender, type SenderLease } from "../../lib/mail/sender";
import { TEMPLATE_IDS, linkOf, renderPlain, renderTemplate } from "../../lib/mail/templates";
import { composeMail, type MailMessage, type MailTransport } from "../../lib/mail/transport";
import { enUs } from "../../lib/mail/templates/en-us";
import { fr } from "../../lib/mail/templates/fr";
import { onEveryBackend } from "../helpers/db";

const ctx = { title: "Cellar", url: "https://files.example.com", recipientName: "Eric" };

describe("mail templates", () => {
	it("has every English text in French too", () => {
		assert.deepEqual(Object.keys(fr).sort(), Object.keys(enUs).sort());
	});

	it("renders every template id with a subject, the greeting, the server's URL, in text and HTML", () => {
		for (const id of TEMPLATE_IDS) {
			const m = renderTemplate(id, { Inviter: "Dora", Cell: "Team", FileName: "a.pdf", FolderName: "Docs", Login: "eric", Message: "hi", LinkPath: "/x", Code: "c", Minutes: "20" }, ctx);
			assert.ok(m.subject.length > 3, id);
			assert.ok(!/[{}]/.test(m.subject), `${id}: ${m.subject}`);
			assert.match(m.text, /^Hello Eric,/, id);
			assert.ok(m.text.includes("https://files.example.com"), id);
			assert.match(m.html, /^<!DOCTYPE html>/, id);
		}
	});

	it("drops the lines whose values are missing, and falls back to English for a missing language or key", () => {
		const m = renderTemplate("PublicFile", { Inviter: "Dora", FileName: "a.pdf", LinkPath: "/public/abc" }, ctx);
		assert.ok(!m.text.includes("expires"));
		assert.ok(!m.text.includes("downloaded"));
		assert.ok(m.text.includes("https://files.example.com/public/abc"));
		const f = renderTemplate("Cell", { Inviter: "Dora", Cell: "Équipe" }, { ...ctx, language: "fr" });
		assert.equal(f.subject, "Dora vous a ajouté à la cellule Équipe");
		assert.match(f.text, /^Bonjour Eric,/);
		assert.equal(renderTemplate("Digest", {}, { ...ctx, language: "xx-yy" }).subject, "Your Cellar notifications");
		assert.ok(renderTemplate("PublicFolder", { Inviter: "D", FolderName: "F" }, { ...ctx, language: "fr-FR" }).text.includes("Pour voir le dossier"));
	});

	it("escapes template data and bodies in HTML; links only go to http(s) URLs, relative ones on the server", () => {
		const m = renderTemplate("Cell", { Inviter: "<script>x</script>", Cell: 'a"b' }, ctx);
		assert.ok(!m.html.includes("<script>"));
		assert.ok(m.html.includes("&lt;script&gt;"));
		assert.ok(renderPlain("s", "<img src=x>", ctx).html.includes("&lt;img src=x&gt;"));
		assert.equal(linkOf({ LinkUrl: "javascript:alert(1)" }, ctx.url), ctx.url);
		assert.equal(linkOf({ LinkUrl: "https://other.example/x" }, ctx.url), "https://other.example/x");
		assert.equal(linkOf({ LinkPath: "ws/x" }, ctx.url), ctx.url);
		assert.equal(linkOf({ LinkPath: "/ws/x" }, ctx.url), "https://files.example.com/ws/x");
	});

	it("composes headers that a name or subject cannot break", async () => {
		const raw = await composeMail({
			from: { name: "Server", address: "s@example.com" },
			to: { name: "Eve\r\nBcc: victim@example.org", address: "eve@example.com" },
			subject: "Hi\r\nBcc: victim@example.org",
			text: "body",
			messageId: "<m1@example.com>",
			date: 0,
		});
		const parsed = await simpleParser(raw);
		assert.equal(parsed.bcc, undefined);
		assert.ok(!/^Bcc:/im.test(raw.toString("utf8")));
		assert.equal(parsed.messageId, "<m1@example.com>");
	});
});

class FakeTransport implements MailTransport {
	readonly kind = "fake";
	delivered: MailMessage[] = [];
	/** Failures still to answer before accepting. */
	failures = 0;
	hang = false;
	async deliver(m: MailMessage): Promise<void> {
		if (this.hang) return new Promise(() => undefined);
		if (this.failures > 0) {
			this.failures--;
			throw Object.assign(new Error("Greylisted"), { responseCode: 451 });
		}
		this.delivered.push(m);
	}
	close(): void {}
}

const always: SenderLease = { run: async (work) => ({ ran: true, value: await work() }) };
const never: SenderLease = { run: async () => ({ ran: false }) };

onEveryBackend("MailSender", (h) => {
	let repo: MailQueueRepo<MailMessage>;
	let now = 1_800_000_000_000;
	const clock = () => now;
	const opts = { retryDelayMs: 1000, maxRetryDelayMs: 4000, claimMs: 60_000, batch: 5, keepSentMs: 1000, clock };
	const message = (to: string): MailMessage => ({ from: { address: "s@example.com" }, to: { address: to }, subject: `to ${to}`, text: "secret body", html: "<p>secret body</p>", messageId: `<${to}>`, date: now });
	const queue = (to: string, maxAttempts = 3) => repo.enqueue([{ id: `id-${to}`, recipient: to, subject: `to ${to}`, message: message(to), maxAttempts }], now);

	beforeEach(async () => {
		repo = new MailQueueRepo<MailMessage>(h().db);
		await h().db.kysely.deleteFrom("mail_queue").execute();
	});

	it("sends what is due, retries a failure after a delay that doubles (capped), then delivers", async () => {
		const t = new FakeTransport();
		const s = new MailSender(repo, t, always, { ...opts, node: "n1" });
		assert.deepEqual([1, 2, 3, 4, 5].map((a) => s.retryDelay(a)), [1000, 2000, 4000, 4000, 4000]);
		await queue("a@x.io", 5);
		t.failures = 2;
		assert.deepEqual(await s.tick(), { ran: true, sent: 0, retried: 1, failed: 0 });
		assert.equal(await s.nextDue(), now + 1000);
		now += 999;
		assert.equal((await s.tick()).retried, 0);
		now += 1;
		assert.equal((await s.tick()).retried, 1);
		assert.equal(await s.nextDue(), now + 2000);
		now += 2000;
		assert.deepEqual(await s.tick(), { ran: true, sent: 1, retried: 0, failed: 0 });
		assert.equal(t.delivered.length, 1);
		const sent = await repo.get("id-a@x.io");
		assert.equal(sent?.status, "sent");
		// Done with: the envelope and subject stay, not the body (a reset key has no business staying there).
		assert.deepEqual([sent?.message.text, sent?.message.html, sent?.message.subject, sent?.message.to], ["", undefined, "to a@x.io", { address: "a@x.io" }]);
	});

	it("gives up after the mail's attempts, keeping the last error", async () => {
		const t = new FakeTransport();
		const s = new MailSender(repo, t, always, { ...opts, node: "n1" });
		await queue("b@x.io", 2);
		t.failures = 10;
		await s.tick();
		now += 1000;
		assert.deepEqual(await s.tick(), { ran: true, sent: 0, retried: 0, failed: 1 });
		const row = await repo.get("id-b@x.io");
		assert.equal(row?.status, "failed");
		assert.match(row?.lastError ?? "", /451 Greylisted/);
		assert.equal(row?.message.text, "");
		assert.equal(row?.message.to.address, "b@x.io");
	});

	it("a mail whose node died mid-send is sent by the next node once the claim ran out, once", async () => {
		const dying = new FakeTransport();
		dying.hang = true;
		await queue("c@x.io");
		void new MailSender(repo, dying, always, { ...opts, node: "dead" }).tick();
		await new Promise((r) => setTimeout(r, 50));
		assert.equal((await repo.get("id-c@x.io"))?.status, "sending");
		const t = new FakeTransport();
		const next = new MailSender(repo, t, always, { ...opts, node: "alive" });
		assert.equal((await next.tick()).sent, 0);
		now += 60_000;
		assert.equal((await next.tick()).sent, 1);
		assert.equal(t.delivered[0].messageId, "<c@x.io>");
		assert.equal((await next.tick()).sent, 0);
	});

	it("does nothing without the lease", async () => {
		const t = new FakeTransport();
		await queue("d@x.io");
		assert.deepEqual(await new MailSender(repo, t, never, { ...opts, node: "n2" }).tick(), { ran: false, sent: 0, retried: 0, failed: 0 });
		assert.equal(t.delivered.length, 0);
		assert.equal((await repo.get("id-d@x.io"))?.status, "queued");
	});
});
