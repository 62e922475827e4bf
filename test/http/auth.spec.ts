import assert from "node:assert/strict";
import jwt from "jsonwebtoken";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { useNode } from "../helpers/node";

describe("HTTP: sessions and credentials", function () {
	this.timeout(30_000);
	const node = useNode({ env: { MAX_FAILED_LOGINS: "10", IP_BAN_THRESHOLD: "1000", LOGIN_DELAY_MAX: "0" } });

	before(async () => {
		const r = await node.api("PUT", "/a/user/alice", { Password: "Alice-Pass-1234", Attributes: { profile: "standard", email: "alice@example.com" } }, node.admin);
		assert.equal(r.status, 200, r.text);
	});

	it("logs in with credentials and answers JWT, ExpireTime and Token", async () => {
		const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "alice", password: "Alice-Pass-1234" } });
		assert.equal(r.status, 200);
		assert.equal(typeof r.body.JWT, "string");
		assert.equal(typeof r.body.ExpireTime, "number");
		assert.ok(r.body.ExpireTime > Date.now() / 1000);
		assert.equal(r.body.Token.AccessToken, r.body.JWT);
		assert.match(r.body.Token.ExpiresAt, /^\d+$/);
		assert.ok(r.body.Token.IDToken && r.body.Token.RefreshToken);
		assert.match(r.headers.get("set-cookie") ?? "", /pydio=.*HttpOnly/);
	});

	it("refreshes with rotation: the old refresh token stops working", async () => {
		const login = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "alice", password: "Alice-Pass-1234" } });
		const first = login.body.Token.RefreshToken;
		const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "refresh", refresh_token: first } });
		assert.equal(r.status, 200, r.text);
		assert.notEqual(r.body.Token.RefreshToken, first);
		assert.equal((await node.api("GET", "/a/user/alice", undefined, r.body.JWT)).status, 200);
		const again = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "refresh", refresh_token: first } });
		assert.equal(again.status, 401);
		assert.equal(typeof again.body.Code, "string");
	});

	it("refreshes from the session cookie", async () => {
		const login = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "alice", password: "Alice-Pass-1234" } });
		const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
		const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "refresh" } }, undefined, { Cookie: cookie });
		assert.equal(r.status, 200, r.text);
	});

	it("logout ends the session: its access token gets 401", async () => {
		const token = await node.login("alice", "Alice-Pass-1234");
		assert.equal((await node.api("GET", "/a/user/alice", undefined, token)).status, 200);
		const out = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "logout" } }, token);
		assert.equal(out.status, 200);
		assert.equal((await node.api("GET", "/a/user/alice", undefined, token)).status, 401);
	});

	it("a logout with only the session cookie ends the session if the cookie holds its current secret, not merely its id", async () => {
		const login = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "alice", password: "Alice-Pass-1234" } });
		const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
		const [name, value] = cookie.split("=");
		const sessionId = value.split(".")[0];
		// An id alone (as every access token of the session carries it) ends nothing.
		const forged = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "logout" } }, undefined, { Cookie: `${name}=${sessionId}.not-the-secret` });
		assert.equal(forged.status, 200);
		assert.equal((await node.api("GET", "/a/user/alice", undefined, login.body.JWT)).status, 200);
		const out = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "logout" } }, undefined, { Cookie: cookie });
		assert.equal(out.status, 200);
		assert.equal((await node.api("GET", "/a/user/alice", undefined, login.body.JWT)).status, 401);
	});

	it("revokes a token with POST /a/auth/token/revoke", async () => {
		const token = await node.login("alice", "Alice-Pass-1234");
		const r = await node.api("POST", "/a/auth/token/revoke", { TokenId: token }, token);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Success, true);
		assert.equal((await node.api("GET", "/a/user/alice", undefined, token)).status, 401);
	});

	it("refuses forged, expired and foreign-secret tokens with 401 in Cells' error shape", async () => {
		const token = await node.login("alice", "Alice-Pass-1234");
		const claims = jwt.decode(token) as Record<string, unknown>;
		const secret = readFileSync(join(node.dataDir, "jwt-secret"), "utf8").trim();
		const foreign = jwt.sign({ ...claims }, "another-secret", { algorithm: "HS256", noTimestamp: true });
		const expired = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) - 10 }, secret, { algorithm: "HS256", noTimestamp: true });
		const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.`;
		const tampered = token.slice(0, -3) + (token.endsWith("AAA") ? "BBB" : "AAA");
		for (const bad of [foreign, expired, none, tampered, "garbage", "a.b.c"]) {
			const r = await node.api("GET", "/a/user/alice", undefined, bad);
			assert.equal(r.status, 401, `token ${bad.slice(0, 20)} got ${r.status}`);
			assert.deepEqual(Object.keys(r.body).sort(), ["Code", "Detail", "Title"]);
		}
	});

	it("a standard user gets 403 (not 401) on admin routes; anonymous gets 401", async () => {
		const token = await node.login("alice", "Alice-Pass-1234");
		for (const [m, p, b] of [["POST", "/a/acl", {}], ["POST", "/a/policy", {}], ["DELETE", "/a/workspace/common-files", undefined]] as const) {
			assert.equal((await node.api(m, p, b, token)).status, 403, `${m} ${p}`);
			assert.equal((await node.api(m, p, b)).status, 401, `anonymous ${m} ${p}`);
		}
	});

	it("locks an account after 10 failed logins (for addresses it never logged in from) until an admin unlocks it", async () => {
		assert.equal((await node.api("PUT", "/a/user/bob", { Password: "Bob-Pass-12345", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		for (let i = 0; i < 10; i++) {
			const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "bob", password: `wrong-${i}` } });
			assert.equal(r.status, 401);
		}
		const locked = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "bob", password: "Bob-Pass-12345" } });
		assert.equal(locked.status, 401);
		assert.equal(locked.body.Code, "user.locked");
		const bob = await node.api("GET", "/a/user/bob", undefined, node.admin);
		assert.equal(bob.body.Attributes.failedConnections, "10");
		const unlock = await node.api("PUT", "/a/user/bob", { Uuid: bob.body.Uuid, Attributes: { ...bob.body.Attributes, locks: "[]" } }, node.admin);
		assert.equal(unlock.status, 200, unlock.text);
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "bob", password: "Bob-Pass-12345" } })).status, 200);
	});

	it("a deleted or locked user's token stops working at once", async () => {
		assert.equal((await node.api("PUT", "/a/user/carol", { Password: "Carol-Pass-1234", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		const token = await node.login("carol", "Carol-Pass-1234");
		assert.equal((await node.api("GET", "/a/user/carol", undefined, token)).status, 200);
		const carol = await node.api("GET", "/a/user/carol", undefined, node.admin);
		await node.api("PUT", "/a/user/carol", { Uuid: carol.body.Uuid, Attributes: { ...carol.body.Attributes, locks: '["logout"]' } }, node.admin);
		assert.equal((await node.api("GET", "/a/user/carol", undefined, token)).status, 401);
		await node.api("DELETE", "/a/user/carol", undefined, node.admin);
		assert.equal((await node.api("GET", "/a/user/admin", undefined, token)).status, 401);
	});

	it("answers bad session requests with clear 4xx errors", async () => {
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "magic" } })).status, 400);
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials" } })).status, 400);
		assert.equal((await node.api("POST", "/a/frontend/session", "{not json")).status, 400);
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "nobody", password: "whatever1" } })).status, 401);
		const huge = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "x".repeat(4 * 1024 * 1024), password: "y" } });
		assert.ok(huge.status === 413 || huge.status === 400, String(huge.status));
	});
});
