import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { simpleParser } from "mailparser";
import { useNode } from "../helpers/node";

describe("HTTP: personal access tokens and password reset", function () {
	this.timeout(30_000);
	const node = useNode({ env: { IP_BAN_THRESHOLD: "1000" } });
	const now = () => Math.floor(Date.now() / 1000);
	const outbox = () => {
		const dir = join(node.dataDir, "outbox");
		return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".eml")).sort() : [];
	};
	/** The n-th mail of the outbox (1-based), parsed, once the mailer has written it. */
	const mailNo = async (n: number) => {
		for (let i = 0; i < 500 && outbox().length < n; i++) await new Promise((r) => setTimeout(r, 10));
		assert.ok(outbox().length >= n, "the mail arrives in the outbox");
		const parsed = await simpleParser(readFileSync(join(node.dataDir, "outbox", outbox()[n - 1])));
		return { to: parsed.to && !Array.isArray(parsed.to) ? parsed.to.text : "", subject: parsed.subject ?? "", text: parsed.text ?? "" };
	};
	const RESET_ANSWER = { Success: true, Message: "If this account exists, an email has been sent with instructions to reset the password." };

	before(async () => {
		const r = await node.api("PUT", "/a/user/dora", { Password: "Dora-Pass-1234", Attributes: { profile: "standard", email: "dora@example.com" } }, node.admin);
		assert.equal(r.status, 200, r.text);
	});

	it("a PAT works as Bearer until it is revoked", async () => {
		const gen = await node.api("POST", "/a/auth/token/personal", { Label: "http-test", ExpiresAt: String(now() + 3600) }, node.admin);
		assert.equal(gen.status, 200, gen.text);
		const pat = gen.body.AccessToken as string;
		assert.match(pat, /^pat_[A-Za-z0-9_-]{43}$/);

		const me = await node.api("GET", "/a/user/admin", undefined, pat);
		assert.equal(me.status, 200, me.text);
		assert.equal(me.body.Login, "admin");

		const list = await node.api("POST", "/a/auth/tokens", {}, node.admin);
		assert.equal(list.status, 200, list.text);
		const entry = list.body.Tokens.find((t: { Label: string }) => t.Label === "http-test");
		assert.ok(entry, list.text);
		assert.equal(entry.UserLogin, "admin");
		assert.match(entry.ExpiresAt, /^\d+$/); // int64 as a string on the wire
		assert.ok(!list.text.includes(pat));

		const del = await node.api("DELETE", `/a/auth/tokens/${entry.Uuid}`, undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.equal(del.body.Success, true);
		assert.equal((await node.api("GET", "/a/user/admin", undefined, pat)).status, 401);
		assert.equal((await node.api("DELETE", `/a/auth/tokens/${entry.Uuid}`, undefined, node.admin)).status, 404);
	});

	it("refuses a PAT request without expiry, and a user asking for someone else's", async () => {
		const none = await node.api("POST", "/a/auth/token/personal", { Label: "x" }, node.admin);
		assert.equal(none.status, 400, none.text);
		assert.equal(none.body.Code, "missing.parameters");
		assert.match(none.body.Title, /ExpiresAt .* or AutoRefresh/);
		const dora = await node.login("dora", "Dora-Pass-1234");
		const other = await node.api("POST", "/a/auth/token/personal", { UserLogin: "admin", AutoRefresh: 600 }, dora);
		assert.equal(other.status, 403, other.text);
		const own = await node.api("POST", "/a/auth/token/personal", { AutoRefresh: 600 }, dora);
		assert.equal(own.status, 200, own.text);
		assert.equal((await node.api("GET", "/a/user/dora", undefined, own.body.AccessToken)).status, 200);
	});

	it("impersonation is for admins only", async () => {
		const dora = await node.login("dora", "Dora-Pass-1234");
		assert.equal((await node.api("POST", "/a/auth/token/impersonate", { UserLogin: "admin" }, dora)).status, 403);
		const imp = await node.api("POST", "/a/auth/token/impersonate", { UserLogin: "dora" }, node.admin);
		assert.equal(imp.status, 200, imp.text);
		const me = await node.api("GET", "/a/user/dora", undefined, imp.body.AccessToken);
		assert.equal(me.status, 200, me.text);
	});

	it("resets a password end to end through the mailed key", async () => {
		const unknown = await node.api("PUT", "/a/auth/reset-password-token/nobody", {});
		assert.equal(unknown.status, 200, unknown.text);
		assert.deepEqual(unknown.body, RESET_ANSWER);
		const before = outbox().length;

		const ask = await node.api("PUT", "/a/auth/reset-password-token/dora", {});
		assert.equal(ask.status, 200, ask.text);
		assert.deepEqual(ask.body, RESET_ANSWER);
		const mail = await mailNo(before + 1);
		assert.equal(outbox().length, before + 1);
		assert.match(mail.to, /dora@example\.com/);
		// The link is on the server's own URL.
		const key = new RegExp(`${node.url}/user/reset-password/([0-9a-f-]{36})`).exec(mail.text)?.[1];
		assert.ok(key, mail.text);

		const session = await node.login("dora", "Dora-Pass-1234");
		const done = await node.api("POST", "/a/auth/reset-password", { ResetPasswordToken: key, UserLogin: "dora", NewPassword: "Dora-New-Pass-99" });
		assert.equal(done.status, 200, done.text);
		assert.equal(done.body.Success, true);
		assert.match((await mailNo(before + 2)).subject, /^Your password was changed/);

		await assert.rejects(node.login("dora", "Dora-Pass-1234"));
		assert.ok(await node.login("dora", "Dora-New-Pass-99"));
		// Sessions opened before the reset are gone, and their access tokens with them.
		assert.equal((await node.api("GET", "/a/user/dora", undefined, session)).status, 401);

		const again = await node.api("POST", "/a/auth/reset-password", { ResetPasswordToken: key, UserLogin: "dora", NewPassword: "Dora-Other-Pass-1" });
		assert.equal(again.status, 403, again.text);
		assert.equal(again.body.Title, "Invalid or already used reset token");
	});
});
