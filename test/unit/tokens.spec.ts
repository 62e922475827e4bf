// tokens service on a real broker, with small in-test `users` and `tree` stand-ins; lib/tokens on lib/db's
// TokensRepo with a fake clock, on SQLite and PostgreSQL.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker, type Context } from "moleculer";
import type { Identity } from "../../lib/auth/identity";
import { BadRequestError, NotFoundError } from "../../lib/errors";
import { isPersonalToken, parseRefreshToken, sha256 } from "../../lib/tokens/format";
import { parseMailbox } from "../../lib/mail/outbox";
import { OutboxTransport } from "../../lib/mail/transport";
import { simpleParser } from "mailparser";
import { TokensRepo } from "../../lib/db/tokens";
import { onEveryBackend } from "../helpers/db";
import { PersonalTokens } from "../../lib/tokens/personal";
import { ResetKeys } from "../../lib/tokens/reset";
import { Sessions } from "../../lib/tokens/sessions";

interface FakeUser {
	Uuid: string;
	Login: string;
	Attributes: Record<string, string>;
	password?: string;
}

function identity(u: { Uuid: string; Login: string }, profile: Identity["Profile"] = "standard", extra: Partial<Identity> = {}): Identity {
	return { Uuid: u.Uuid, Login: u.Login, Profile: profile, GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: Math.floor(Date.now() / 1000) + 600, ...extra };
}

async function rejects(p: Promise<unknown>, code: number, type?: string): Promise<Error & { code: number; type: string }> {
	try {
		await p;
	} catch (e) {
		const err = e as Error & { code: number; type: string };
		assert.equal(err.code, code, `expected ${code}, got ${err.code} ${err.type}: ${err.message}`);
		if (type) assert.equal(err.type, type);
		return err;
	}
	assert.fail(`expected a ${code} error`);
}

async function waitFor(cond: () => boolean, ms = 2000): Promise<void> {
	const until = Date.now() + ms;
	while (!cond()) {
		if (Date.now() > until) assert.fail("condition not met in time");
		await new Promise((r) => setTimeout(r, 5));
	}
}

describe("tokens service", function () {
	this.timeout(20000);
	let broker: ServiceBroker;
	let dataDir: string;
	let savedDataDir: string | undefined;
	let users: FakeUser[];
	const events: { name: string; payload: Record<string, unknown> }[] = [];
	const now = () => Math.floor(Date.now() / 1000);
	const alice = { Uuid: "u-alice", Login: "alice" };
	const bob = { Uuid: "u-bob", Login: "bob" };
	const root = { Uuid: "u-admin", Login: "admin" };
	const asAlice = { meta: { user: identity(alice) } };
	const asBob = { meta: { user: identity(bob) } };
	const asAdmin = { meta: { user: identity(root, "admin") } };
	const repo = () => (broker.getLocalService("tokens") as unknown as { tokens: TokensRepo }).tokens;
	const outbox = () => (existsSync(join(dataDir, "outbox")) ? readdirSync(join(dataDir, "outbox")).filter((f) => f.endsWith(".eml")).sort() : []);
	const taken = new Set<string>();
	/** The n-th mail of the outbox (1-based), once the mailer has written it: its raw text and parsed parts. */
	const mailNo = async (n: number) => {
		await waitFor(() => outbox().length >= n, 5000);
		taken.add(outbox()[n - 1]);
		const raw = readFileSync(join(dataDir, "outbox", outbox()[n - 1]), "utf8");
		const parsed = await simpleParser(raw);
		return { raw, to: parsed.to && !Array.isArray(parsed.to) ? parsed.to.value[0].address : "", subject: parsed.subject ?? "", text: parsed.text ?? "", html: parsed.html || "" };
	};
	/** The next reset-request mail not read yet (mails arrive in the outbox shortly after the call queued them). */
	const nextMail = async () => {
		for (const until = Date.now() + 5000; Date.now() < until; await new Promise((r) => setTimeout(r, 10))) {
			for (const [i, f] of outbox().entries()) {
				if (taken.has(f)) continue;
				const m = await mailNo(i + 1);
				if (/^Reset your password/.test(m.subject)) return m;
			}
		}
		assert.fail("no reset mail arrived");
	};
	const eventsNamed = (n: string) => events.filter((e) => e.name === n);

	before(async () => {
		savedDataDir = process.env.DATA_DIR;
		dataDir = mkdtempSync(join(tmpdir(), "cellar-tokens-"));
		process.env.DATA_DIR = dataDir;
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.loadService(join(__dirname, "..", "..", "services", "tokens.service.ts"));
		// Reset mails go through the mailer, which writes them to the outbox (no SMTP_URL).
		broker.loadService(join(__dirname, "..", "..", "services", "mailer.service.ts"));
		broker.createService({
			name: "users",
			actions: {
				byLogin(ctx: Context<{ login: string }>) {
					const u = users.find((x) => x.Login === ctx.params.login);
					if (!u) throw new NotFoundError("User not found");
					return { Uuid: u.Uuid, Login: u.Login, Attributes: u.Attributes };
				},
				byEmail(ctx: Context<{ email: string }>) {
					const u = users.find((x) => x.Attributes.email && x.Attributes.email === ctx.params.email);
					if (!u) throw new NotFoundError("User not found");
					return { Uuid: u.Uuid, Login: u.Login, Attributes: u.Attributes };
				},
				setPassword(ctx: Context<{ login: string; password: string }>) {
					const u = users.find((x) => x.Login === ctx.params.login);
					if (!u) throw new NotFoundError("User not found");
					if (ctx.params.password === "password") throw new BadRequestError("Password too weak");
					u.password = ctx.params.password;
					return { Success: true };
				},
			},
		});
		broker.createService({
			name: "spy",
			events: {
				"token.revoked"(ctx: Context<Record<string, unknown>>) {
					events.push({ name: "token.revoked", payload: ctx.params });
				},
				"audit.log"(ctx: Context<Record<string, unknown>>) {
					events.push({ name: "audit.log", payload: ctx.params });
				},
			},
		});
		await broker.start();
	});

	after(async () => {
		await broker.stop();
		rmSync(dataDir, { recursive: true, force: true });
		if (savedDataDir === undefined) delete process.env.DATA_DIR;
		else process.env.DATA_DIR = savedDataDir;
	});

	beforeEach(() => {
		users = [
			{ Uuid: alice.Uuid, Login: "alice", Attributes: { email: "alice@example.com" } },
			{ Uuid: bob.Uuid, Login: "bob", Attributes: {} },
			{ Uuid: root.Uuid, Login: "admin", Attributes: { email: "admin@example.com" } },
		];
		events.length = 0;
	});

	describe("sessions", () => {
		it("creates a session with a <sessionId>.<secret> refresh token, readable by getSession", async () => {
			const s = await broker.call<{ sessionId: string; refreshToken: string; refreshExpiresAt: number }, object>("tokens.createSession", { userUuid: alice.Uuid, login: "alice", ip: "10.0.0.1" });
			const parsed = parseRefreshToken(s.refreshToken);
			assert.ok(parsed);
			assert.equal(parsed.sessionId, s.sessionId);
			assert.ok(Math.abs(s.refreshExpiresAt - (now() + 30 * 24 * 3600)) <= 2);
			assert.deepEqual(await broker.call("tokens.getSession", { sessionId: s.sessionId }), { sessionId: s.sessionId, userUuid: alice.Uuid, refreshExpiresAt: s.refreshExpiresAt });
			const doc = await repo().session(s.sessionId);
			assert.equal(doc?.refreshHash, sha256(parsed.secret));
			assert.ok(!JSON.stringify(doc).includes(parsed.secret));
		});

		it("rotates the refresh token, and a reused one revokes the whole session", async () => {
			const s = await broker.call<{ sessionId: string; refreshToken: string }, object>("tokens.createSession", { userUuid: alice.Uuid, login: "alice" });
			const r1 = await broker.call<{ sessionId: string; userUuid: string; login: string; refreshToken: string }, object>("tokens.refreshSession", { refreshToken: s.refreshToken });
			assert.equal(r1.sessionId, s.sessionId);
			assert.equal(r1.userUuid, alice.Uuid);
			assert.equal(r1.login, "alice");
			assert.notEqual(r1.refreshToken, s.refreshToken);
			const r2 = await broker.call<{ refreshToken: string }, object>("tokens.refreshSession", { refreshToken: r1.refreshToken });
			// The first token again: stolen copy => session gone, even the newest token stops working.
			await rejects(broker.call("tokens.refreshSession", { refreshToken: s.refreshToken }), 401, "token.invalid");
			assert.equal(await broker.call("tokens.getSession", { sessionId: s.sessionId }), null);
			await rejects(broker.call("tokens.refreshSession", { refreshToken: r2.refreshToken }), 401, "token.invalid");
			await waitFor(() => eventsNamed("token.revoked").some((e) => (e.payload.SessionIds as string[] | undefined)?.includes(s.sessionId)));
		});

		it("lets only one of two concurrent refreshes with the same token succeed", async () => {
			for (let i = 0; i < 5; i++) {
				const s = await broker.call<{ sessionId: string; refreshToken: string }, object>("tokens.createSession", { userUuid: alice.Uuid, login: "alice" });
				const results = await Promise.allSettled([
					broker.call("tokens.refreshSession", { refreshToken: s.refreshToken }),
					broker.call("tokens.refreshSession", { refreshToken: s.refreshToken }),
					broker.call("tokens.refreshSession", { refreshToken: s.refreshToken }),
				]);
				assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
				for (const r of results) if (r.status === "rejected") assert.equal((r.reason as { code: number }).code, 401);
			}
		});

		it("refuses unknown, malformed and expired refresh tokens", async () => {
			await rejects(broker.call("tokens.refreshSession", { refreshToken: "nope" }), 401, "token.invalid");
			await rejects(broker.call("tokens.refreshSession", { refreshToken: `${crypto.randomUUID()}.${"A".repeat(43)}` }), 401, "token.invalid");
			const s = await broker.call<{ sessionId: string; refreshToken: string }, object>("tokens.createSession", { userUuid: alice.Uuid, login: "alice" });
			await rejects(broker.call("tokens.refreshSession", { refreshToken: `${s.sessionId}.${"B".repeat(43)}` }), 401, "token.invalid");
			await repo().setSessionExpiry(s.sessionId, now() - 1);
			assert.equal(await broker.call("tokens.getSession", { sessionId: s.sessionId }), null);
			await rejects(broker.call("tokens.refreshSession", { refreshToken: s.refreshToken }), 401, "token.expired");
		});

		it("deletes one session or all of a user's, and broadcasts token.revoked", async () => {
			const a = await broker.call<{ sessionId: string }, object>("tokens.createSession", { userUuid: "u-carol", login: "carol" });
			await broker.call("tokens.createSession", { userUuid: "u-carol", login: "carol" });
			await broker.call("tokens.createSession", { userUuid: "u-carol", login: "carol" });
			assert.deepEqual(await broker.call("tokens.deleteSession", { sessionId: a.sessionId }), { deleted: true });
			assert.deepEqual(await broker.call("tokens.deleteSession", { sessionId: a.sessionId }), { deleted: false });
			assert.deepEqual(await broker.call("tokens.deleteUserSessions", { userUuid: "u-carol" }), { deleted: 2 });
			assert.deepEqual(await broker.call("tokens.deleteUserSessions", { userUuid: "u-carol" }), { deleted: 0 });
			await waitFor(() => eventsNamed("token.revoked").length >= 2);
			assert.equal(eventsNamed("token.revoked").length, 2);
		});
	});

	describe("personal access tokens", () => {
		type Gen = { AccessToken: string; TokenUuid: string };
		type Resolved = { TokenId: string; Kind: string; UserUuid: string; UserLogin: string; Scopes: string[]; ExpiresAt: number; ImpersonatedBy?: string };

		it("creates a token for oneself that resolves to the user, and never stores it in clear", async () => {
			const exp = now() + 3600;
			const t = await broker.call<Gen, object>("tokens.generatePersonal", { Label: "cli", ExpiresAt: exp }, asAlice);
			assert.ok(isPersonalToken(t.AccessToken));
			assert.ok(t.AccessToken.startsWith("pat_") && !t.AccessToken.includes("."));
			const r = await broker.call<Resolved, object>("tokens.resolvePersonal", { token: t.AccessToken });
			assert.deepEqual(r, { TokenId: t.TokenUuid, Kind: "personal", UserUuid: alice.Uuid, UserLogin: "alice", Scopes: [], ExpiresAt: exp });
			const file = JSON.stringify(await repo().personal(t.TokenUuid));
			assert.ok(file.includes(t.TokenUuid));
			assert.ok(!file.includes(t.AccessToken));
			assert.ok(!file.includes(t.AccessToken.slice(4)));
			assert.ok(file.includes(sha256(t.AccessToken)));
		});

		it("requires an expiry or a refresh window, in the future", async () => {
			await rejects(broker.call("tokens.generatePersonal", { Label: "x" }, asAlice), 400, "missing.parameters");
			await rejects(broker.call("tokens.generatePersonal", { ExpiresAt: now() - 10 }, asAlice), 400);
			await rejects(broker.call("tokens.generatePersonal", { AutoRefresh: 60, Scopes: ["everything"] }, asAlice), 400);
			await rejects(broker.call("tokens.generatePersonal", { AutoRefresh: 60 }, { meta: { user: null } }), 401);
		});

		it("lets only admins create tokens for someone else", async () => {
			await rejects(broker.call("tokens.generatePersonal", { UserLogin: "bob", AutoRefresh: 60 }, asAlice), 403);
			const t = await broker.call<Gen, object>("tokens.generatePersonal", { UserLogin: "bob", AutoRefresh: 60 }, asAdmin);
			const r = await broker.call<Resolved, object>("tokens.resolvePersonal", { token: t.AccessToken });
			assert.equal(r.UserUuid, bob.Uuid);
			await rejects(broker.call("tokens.generatePersonal", { UserLogin: "ghost", AutoRefresh: 60 }, asAdmin), 404);
		});

		it("refuses to mint tokens from a scoped or impersonation credential", async () => {
			const scoped = { meta: { user: identity(alice, "standard", { TokenKind: "document", Scopes: ["node:abc:rw"] }) } };
			await rejects(broker.call("tokens.generatePersonal", { AutoRefresh: 60 }, scoped), 403);
			const imp = { meta: { user: identity(alice, "standard", { TokenKind: "impersonation", ImpersonatedBy: "admin" }) } };
			await rejects(broker.call("tokens.generatePersonal", { AutoRefresh: 60 }, imp), 403);
		});

		it("answers token.expired after a hard expiry", async () => {
			const t = await broker.call<Gen, object>("tokens.generatePersonal", { ExpiresAt: now() + 100 }, asAlice);
			await repo().setPersonalExpiry(t.TokenUuid, now() - 1);
			await rejects(broker.call("tokens.resolvePersonal", { token: t.AccessToken }), 401, "token.expired");
			await rejects(broker.call("tokens.resolvePersonal", { token: `pat_${"x".repeat(43)}` }), 401, "token.not.found");
			await rejects(broker.call("tokens.resolvePersonal", { token: "eyJ.a.b" }), 401);
		});

		it("slides the expiry of an auto-refresh token on each use, and persists it", async () => {
			const t = await broker.call<Gen, object>("tokens.generatePersonal", { AutoRefresh: 3600, Scopes: ["node:n1:r"] }, asAlice);
			await repo().setPersonalExpiry(t.TokenUuid, now() + 5);
			const r = await broker.call<Resolved, object>("tokens.resolvePersonal", { token: t.AccessToken });
			assert.ok(Math.abs(r.ExpiresAt - (now() + 3600)) <= 2);
			assert.deepEqual(r.Scopes, ["node:n1:r"]);
			const doc = await repo().personal(t.TokenUuid);
			assert.equal(doc?.ExpiresAt, r.ExpiresAt);
			// A window not used in time expires like any other.
			await repo().setPersonalExpiry(t.TokenUuid, now() - 1);
			await rejects(broker.call("tokens.resolvePersonal", { token: t.AccessToken }), 401, "token.expired");
		});

		it("lists own tokens for users, anyone's for admins, never with a secret", async () => {
			const mine = await broker.call<Gen, object>("tokens.generatePersonal", { Label: "list-me", AutoRefresh: 600 }, asAlice);
			await broker.call("tokens.generatePersonal", { Label: "bob's", AutoRefresh: 600 }, asBob);
			const list = await broker.call<{ Tokens: Record<string, unknown>[] }, object>("tokens.list", {}, asAlice);
			assert.ok(list.Tokens.length > 0);
			assert.ok(list.Tokens.every((t) => t.UserUuid === alice.Uuid));
			const one = list.Tokens.find((t) => t.Uuid === mine.TokenUuid);
			assert.ok(one);
			assert.deepEqual(Object.keys(one).sort(), ["AutoRefreshWindow", "CreatedAt", "CreatedBy", "ExpiresAt", "Label", "Scopes", "Type", "UpdatedAt", "UserLogin", "UserUuid", "Uuid"]);
			assert.equal(one.Type, "PERSONAL");
			assert.equal(one.AutoRefreshWindow, 600);
			assert.ok(!JSON.stringify(list).includes(mine.AccessToken));
			await rejects(broker.call("tokens.list", { ByUser: "bob" }, asAlice), 403);
			const bobs = await broker.call<{ Tokens: { UserLogin: string }[] }, object>("tokens.list", { ByUser: "bob" }, asAdmin);
			assert.ok(bobs.Tokens.length > 0 && bobs.Tokens.every((t) => t.UserLogin === "bob"));
			const docs = await broker.call<{ Tokens: unknown[] }, object>("tokens.list", { ByType: "DOCUMENT" }, asAdmin);
			assert.equal(docs.Tokens.length, 0);
		});

		it("revokes by id (own or admin) and by value", async () => {
			const t = await broker.call<Gen, object>("tokens.generatePersonal", { AutoRefresh: 600 }, asAlice);
			await rejects(broker.call("tokens.revoke", { TokenId: t.TokenUuid }, asBob), 403);
			const res = await broker.call<{ Success: boolean; Message: string }, object>("tokens.revoke", { TokenId: t.TokenUuid }, asAlice);
			assert.equal(res.Success, true);
			assert.ok(res.Message);
			await rejects(broker.call("tokens.resolvePersonal", { token: t.AccessToken }), 401, "token.not.found");
			await rejects(broker.call("tokens.revoke", { TokenId: t.TokenUuid }, asAlice), 404);
			await rejects(broker.call("tokens.revoke", { TokenId: "../etc" }, asAlice), 400);
			const t2 = await broker.call<Gen, object>("tokens.generatePersonal", { AutoRefresh: 600 }, asAlice);
			assert.equal((await broker.call<{ Success: boolean }, object>("tokens.revoke", { TokenId: t2.TokenUuid }, asAdmin)).Success, true);
			const t3 = await broker.call<Gen, object>("tokens.generatePersonal", { AutoRefresh: 600 }, asAlice);
			assert.equal((await broker.call<{ Success: boolean }, object>("tokens.revokeValue", { token: t3.AccessToken })).Success, true);
			assert.equal((await broker.call<{ Success: boolean }, object>("tokens.revokeValue", { token: t3.AccessToken })).Success, false);
			await rejects(broker.call("tokens.resolvePersonal", { token: t3.AccessToken }), 401, "token.not.found");
			await waitFor(() => eventsNamed("token.revoked").length >= 3);
			assert.equal(eventsNamed("token.revoked").length, 3);
		});

		it("impersonation: admin only, short default expiry, audited", async () => {
			await rejects(broker.call("tokens.impersonate", { UserLogin: "bob" }, asAlice), 403);
			await rejects(broker.call("tokens.impersonate", {}, asAdmin), 400);
			const t = await broker.call<Gen, object>("tokens.impersonate", { UserLogin: "bob" }, asAdmin);
			const r = await broker.call<Resolved, object>("tokens.resolvePersonal", { token: t.AccessToken });
			assert.equal(r.Kind, "impersonation");
			assert.equal(r.UserUuid, bob.Uuid);
			assert.equal(r.ImpersonatedBy, "admin");
			assert.ok(Math.abs(r.ExpiresAt - (now() + 3600)) <= 2);
			await waitFor(() => eventsNamed("audit.log").length > 0);
			const audit = eventsNamed("audit.log");
			assert.equal(audit.length, 1);
			assert.equal(audit[0].payload.action, "token.impersonate");
			assert.equal(audit[0].payload.actor, "admin");
			assert.equal(audit[0].payload.target, "bob");
		});

		it("document token: 503 without a tree service, a node-scoped sliding token with one", async () => {
			await rejects(broker.call("tokens.documentToken", { Path: "personal-files/a.docx" }, asAlice), 503, "service.unavailable");
			let seenUser: string | undefined;
			const tree = broker.createService({
				name: "tree",
				actions: {
					stat(ctx: Context<{ Node: string }, { user?: Identity }>) {
						seenUser = ctx.meta.user?.Login;
						if (ctx.params.Node !== "personal-files/a.docx") throw new NotFoundError("Node not found");
						return { Node: { Uuid: "node-123", Path: ctx.params.Node, MetaStore: {} } };
					},
				},
			});
			await broker.waitForServices("tree");
			try {
				const t = await broker.call<Gen, object>("tokens.documentToken", { Path: "personal-files/a.docx" }, asAlice);
				assert.equal(seenUser, "alice");
				const r = await broker.call<Resolved, object>("tokens.resolvePersonal", { token: t.AccessToken });
				assert.equal(r.Kind, "document");
				assert.deepEqual(r.Scopes, ["node:node-123:rw"]);
				assert.ok(Math.abs(r.ExpiresAt - (now() + 1800)) <= 2);
				await rejects(broker.call("tokens.documentToken", { Path: "personal-files/missing" }, asAlice), 404);
			} finally {
				await broker.destroyService(tree);
			}
		});
	});

	describe("password reset", () => {
		const answer = { Success: true, Message: "If this account exists, an email has been sent with instructions to reset the password." };
		const keyOf = (mail: string) => {
			const m = /\/user\/reset-password\/([0-9a-f-]{36})/.exec(mail);
			assert.ok(m, "mail carries the reset link");
			return m[1];
		};

		it("mails a single-use key to a known user, and gives the same answer for anyone", async () => {
			const before = outbox().length;
			assert.deepEqual(await broker.call("tokens.resetPasswordToken", { UserLogin: "ghost" }), answer);
			assert.deepEqual(await broker.call("tokens.resetPasswordToken", { UserLogin: "bob" }), answer); // no email
			assert.equal(outbox().length, before);
			assert.deepEqual(await broker.call("tokens.resetPasswordToken", { UserLogin: "alice" }), answer);
			const mail = await mailNo(before + 1);
			assert.equal(outbox().length, before + 1);
			assert.equal(mail.to, "alice@example.com");
			assert.match(mail.raw, /\r\nMessage-ID: <.+>\r\n/);
			assert.match(mail.subject, /^Reset your password/);
			const key = keyOf(mail.text);
			assert.ok(mail.text.includes(`code: ${key}`));
			assert.ok(!JSON.stringify(await repo().resetsOf(alice.Uuid)).includes(key));

			const sess = await broker.call<{ sessionId: string }, object>("tokens.createSession", { userUuid: alice.Uuid, login: "alice" });
			// Too short: refused before the key is used up.
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "short" }), 400);
			// Refused by the users service: the key stays usable.
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "password" }), 400);
			const ok = await broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "N3w-Passw0rd!" });
			assert.deepEqual(ok, { Success: true, Message: "Password was reset" });
			assert.equal(users[0].password, "N3w-Passw0rd!");
			assert.equal(await broker.call("tokens.getSession", { sessionId: sess.sessionId }), null);
			assert.match((await mailNo(before + 2)).subject, /^Your password was changed/);
			assert.equal(outbox().length, before + 2);
			const again = await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "Other-Pass-123" }), 403, "reset.token.invalid");
			assert.equal(again.message, "Invalid or already used reset token");
		});

		it("finds the account by email too, and checks login or email against the key", async () => {
			assert.deepEqual(await broker.call("tokens.resetPasswordToken", { UserLogin: "alice@example.com" }), answer);
			const key = keyOf((await nextMail()).text);
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "bob", NewPassword: "Whatever-123" }), 403, "reset.token.mismatch");
			// The key was consumed by the failed attempt (single use, as Cells does).
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "Whatever-123" }), 403, "reset.token.invalid");
			await broker.call("tokens.resetPasswordToken", { UserLogin: "alice" });
			const key2 = keyOf((await nextMail()).text);
			assert.deepEqual(await broker.call("tokens.resetPassword", { ResetPasswordToken: key2, UserLogin: "ALICE@example.com", NewPassword: "Whatever-123" }), {
				Success: true,
				Message: "Password was reset",
			});
		});

		it("refuses an expired key", async () => {
			await broker.call("tokens.resetPasswordToken", { UserLogin: "alice" });
			const key = keyOf((await nextMail()).text);
			const doc = await repo().resetByHash(sha256(key));
			assert.ok(doc);
			assert.ok(Math.abs(doc.expiresAt - (now() + 1200)) <= 2);
			await repo().setResetExpiry(doc._id, now() - 1);
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: key, UserLogin: "alice", NewPassword: "Whatever-123" }), 403, "reset.token.expired");
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: "not-a-key", UserLogin: "alice", NewPassword: "Whatever-123" }), 403, "reset.token.invalid");
		});

		it("keeps at most 3 outstanding keys per user, dropping the oldest", async () => {
			await repo().deleteResetsOf(alice.Uuid);
			const keys: string[] = [];
			for (let i = 0; i < 4; i++) {
				await broker.call("tokens.resetPasswordToken", { UserLogin: "alice" });
				keys.push(keyOf((await nextMail()).text));
			}
			assert.equal((await repo().resetsOf(alice.Uuid)).length, 3);
			await rejects(broker.call("tokens.resetPassword", { ResetPasswordToken: keys[0], UserLogin: "alice", NewPassword: "Whatever-123" }), 403, "reset.token.invalid");
			assert.equal((await broker.call<{ Success: boolean }, object>("tokens.resetPassword", { ResetPasswordToken: keys[3], UserLogin: "alice", NewPassword: "Whatever-123" })).Success, true);
			// A successful reset drops the user's other keys.
			assert.equal((await repo().resetsOf(alice.Uuid)).length, 0);
		});

		it("takes about the same time whether or not the account exists", async () => {
			const time = async (login: string) => {
				const t0 = Date.now();
				await broker.call("tokens.resetPasswordToken", { UserLogin: login });
				return Date.now() - t0;
			};
			const known = await time("alice");
			const unknown = await time("nobody-here");
			assert.ok(known >= 240 && unknown >= 240);
			assert.ok(Math.abs(known - unknown) < 150, `${known} vs ${unknown}`);
		});
	});

	onEveryBackend("lib/tokens with a fake clock", (h) => {
		let store: TokensRepo;
		before(() => {
			store = new TokensRepo(h().db);
		});

		it("sliding tokens move their expiry forward (at most about once a minute) and expire when unused", async () => {
			let t = 1_000_000;
			const pats = new PersonalTokens(store, () => t);
			const { token, doc } = await pats.create({ Kind: "personal", UserUuid: "u", UserLogin: "u", Label: "l", Scopes: [], AutoRefreshWindow: 3600, CreatedBy: "u" });
			assert.equal(doc.ExpiresAt, t + 3600);
			assert.deepEqual(await store.personal(doc._id), doc, "read back as written");
			t += 30;
			assert.equal((await pats.resolve(token)).ExpiresAt, 1_000_000 + 3600); // too soon to rewrite
			t += 100;
			assert.equal((await pats.resolve(token)).ExpiresAt, t + 3600);
			assert.equal((await store.personal(doc._id))?.ExpiresAt, t + 3600);
			t += 3600;
			await rejects(pats.resolve(token), 401, "token.expired");
		});

		it("a sliding token given a hard ExpiresAt never goes past it", async () => {
			let t = 2_000_000;
			const pats = new PersonalTokens(store, () => t);
			const { token, doc } = await pats.create({ Kind: "impersonation", UserUuid: "u", UserLogin: "u", Label: "l", Scopes: ["node:n:r"], AutoRefreshWindow: 600, ExpiresAt: t + 1000, CreatedBy: "a", ImpersonatedBy: "a" });
			assert.deepEqual(await store.personal(doc._id), doc, "read back as written, ceiling and impersonator included");
			t += 500;
			assert.equal((await pats.resolve(token)).ExpiresAt, 2_001_000);
			t += 500;
			await rejects(pats.resolve(token), 401, "token.expired");
		});

		it("sessions and reset keys expire with the clock; the purge removes them", async () => {
			let t = 3_000_000;
			const sessions = new Sessions(store, () => 100, () => t);
			const resets = new ResetKeys(store, () => t);
			const s = await sessions.create({ userUuid: "u3", login: "u3", ip: "10.1.2.3", userAgent: "ua" });
			const { key } = await resets.create({ userUuid: "u3", login: "u3", email: "u@x.y" });
			t += 99;
			const r = await sessions.refresh(s.refreshToken);
			assert.ok(r.ok);
			const stored = await store.session(s.sessionId);
			assert.equal(stored?.ip, "10.1.2.3");
			assert.equal(stored?.usedHashes.length, 1);
			t += 101;
			assert.equal(await sessions.get(s.sessionId), null);
			const expired = await sessions.refresh(r.session.refreshToken);
			assert.ok(!expired.ok && expired.error.type === "token.expired");
			t += 20 * 60;
			assert.equal((await resets.consume(key)).status, "expired");
			const s2 = await sessions.create({ userUuid: "u3", login: "u3" });
			await resets.create({ userUuid: "u3", login: "u3", email: "u@x.y" });
			t += 20 * 60 + 1;
			assert.equal(await sessions.purgeExpired(), 1);
			assert.equal(await resets.purgeExpired(), 1);
			assert.equal(await sessions.get(s2.sessionId), null);
			assert.equal(await store.session(s2.sessionId), null);
			assert.deepEqual(await store.resetsOf("u3"), []);
		});

		it("of concurrent refreshes with one token, on two handles, exactly one rotates it", async () => {
			const t = 4_000_000;
			const other = new TokensRepo(await h().second());
			const a = new Sessions(store, () => 100, () => t);
			const b = new Sessions(other, () => 100, () => t);
			for (let i = 0; i < 5; i++) {
				const s = await a.create({ userUuid: "u4", login: "u4" });
				const outs = await Promise.all(Array.from({ length: 6 }, (_, k) => (k % 2 ? a : b).refresh(s.refreshToken)));
				assert.equal(outs.filter((o) => o.ok).length, 1);
			}
		});

		it("a reset key is consumed once however many try at once", async () => {
			const t = 5_000_000;
			const other = new TokensRepo(await h().second());
			const a = new ResetKeys(store, () => t);
			const b = new ResetKeys(other, () => t);
			const { key } = await a.create({ userUuid: "u5", login: "u5", email: "u5@x.y" });
			const outs = await Promise.all(Array.from({ length: 6 }, (_, k) => (k % 2 ? a : b).consume(key)));
			assert.equal(outs.filter((o) => o.status === "ok").length, 1);
		});

		it("imports the NeDB tokens collection: sessions, personal tokens and reset keys, each in its table", async () => {
			const docs = [
				{ _id: "s-imp", kind: "session", userUuid: "u6", login: "u6", refreshHash: "h1", usedHashes: ["h0"], refreshExpiresAt: 10, createdAt: 1, updatedAt: 2, ip: "1.2.3.4" },
				{ _id: "p-imp", kind: "personal", tokenHash: "th", Kind: "document", Type: "DOCUMENT", Label: "doc", UserUuid: "u6", UserLogin: "u6", Scopes: ["node:x:rw"], AutoRefreshWindow: 1800, ExpiresAt: 20, CreatedAt: 1, CreatedBy: "u6", UpdatedAt: 3 },
				{ _id: "r-imp", kind: "reset", keyHash: "kh", userUuid: "u6", login: "u6", email: "e@x.y", expiresAt: 30, createdAt: 4, seq: 1234567890123456 },
				{ _id: "junk", kind: "session" },
			];
			const n = await h().db.transaction((trx) => TokensRepo.importNedb(trx, docs));
			assert.deepEqual(n, { sessions: 1, tokens: 1, resets: 1 });
			assert.deepEqual(await store.session("s-imp"), { _id: "s-imp", kind: "session", userUuid: "u6", login: "u6", refreshHash: "h1", usedHashes: ["h0"], refreshExpiresAt: 10, createdAt: 1, updatedAt: 2, ip: "1.2.3.4" });
			assert.deepEqual(await store.personalByHash("th"), { ...docs[1], kind: "personal" });
			assert.deepEqual(await store.resetByHash("kh"), docs[2]);
		});
	});

	describe("outbox", () => {
		it("writes each mail as one RFC 5322 .eml (CRLF, encoded non-ASCII subject); a recipient cannot inject headers", async () => {
			const dir = mkdtempSync(join(tmpdir(), "cellar-outbox-"));
			try {
				await new OutboxTransport(dir).deliver({ from: { address: "s@b.c" }, to: { address: "a@b.c" }, subject: "Réinitialisation", text: "line1\nline2", messageId: "<id@host>", date: 0 });
				const files = readdirSync(join(dir, "outbox"));
				assert.equal(files.length, 1);
				assert.match(files[0], /\.eml$/);
				const m = readFileSync(join(dir, "outbox", files[0]), "utf8");
				assert.match(m, /\r\nSubject: =\?UTF-8\?[BQ]\?/);
				assert.match(m, /\r\nDate: Thu, 01 Jan 1970 00:00:00 \+0000\r\n/);
				assert.ok(!/[^\r]\n/.test(m), "every line ends with CRLF");
				assert.equal((await simpleParser(m)).subject, "Réinitialisation");
				assert.equal((await simpleParser(m)).text?.trim(), "line1\nline2");
			} finally {
				rmSync(dir, { recursive: true, force: true });
			}
			assert.throws(() => parseMailbox("a@b.c\r\nBcc: x@y.z", "recipient"), /Invalid recipient/);
		});
	});
});
