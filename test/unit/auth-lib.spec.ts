import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashPassword, verifyPassword } from "../../lib/auth/password";
import { signAccess, verifyAccess } from "../../lib/auth/jwt";
import { IdentityCache } from "../../lib/gateway/identity-cache";
import type { Identity } from "../../lib/auth/identity";

describe("auth building blocks", () => {
	before(() => {
		process.env.DATA_DIR = mkdtempSync(join(tmpdir(), "cellar-authlib-"));
	});

	it("hashes passwords with scrypt and a salt; verifies only the right one", async () => {
		const a = await hashPassword("correct horse");
		const b = await hashPassword("correct horse");
		assert.match(a, /^scrypt\$/);
		assert.notEqual(a, b);
		assert.equal(await verifyPassword("correct horse", a), true);
		assert.equal(await verifyPassword("wrong horse", a), false);
		assert.equal(await verifyPassword("anything", undefined), false);
		assert.equal(await verifyPassword("anything", "md5$abc"), false);
	});

	it("signs access tokens and refuses expired or altered ones", () => {
		const { token, exp } = signAccess({ sub: "u1", name: "alice", sid: "s1" }, 60);
		const c = verifyAccess(token);
		assert.equal(c.sub, "u1");
		assert.equal(c.exp, exp);
		const expired = signAccess({ sub: "u1", name: "alice", sid: "s1" }, -5).token;
		assert.throws(() => verifyAccess(expired), (e: { type: string; code: number }) => e.code === 401 && e.type === "token.expired");
		assert.throws(() => verifyAccess(token.slice(0, -2) + "xx"), (e: { type: string }) => e.type === "token.invalid");
	});

	it("caches identities no longer than the credential lives", () => {
		const cache = new IdentityCache(5000);
		const now = 1_000_000_000_000;
		const id = { Uuid: "u", Login: "l", Profile: "standard", GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: now / 1000 + 2 } as Identity;
		cache.remember("t", id, now);
		assert.equal(cache.get("t", now + 1000), id);
		assert.equal(cache.get("t", now + 2500), undefined);
		cache.remember("t", id, now);
		cache.clear();
		assert.equal(cache.get("t", now), undefined);
	});
});
