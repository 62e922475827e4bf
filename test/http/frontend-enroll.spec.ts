// TOTP second factor through the real gateway: a user enrols (setup, verify with a code computed here from the
// secret), then a password alone no longer logs in, a current code does (once), personal tokens keep working,
// and the secret is never shown again; a deleted user's factor goes with them, a deleted group's users' too.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { hotp, stepAt } from "../../lib/auth/totp";
import { acquireDatabase } from "../../lib/db/shared";
import { TotpRepo } from "../../lib/db/frontend";

describe("HTTP: TOTP enrolment and login", function () {
	this.timeout(60_000);
	const node = useNode();
	let secret: string;
	const PASSWORD = "Some-Pass-1234";

	const login = (totp?: string) => node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "tess", password: PASSWORD, ...(totp ? { totp } : {}) } });
	const enroll = (token: string, info: Record<string, string>) => node.api("POST", "/a/frontend/enroll", { EnrollType: "totp", EnrollInfo: info }, token);
	const codeAt = (offsetSteps: number) => hotp(secret, stepAt(Date.now() / 1000) + offsetSteps);

	before(async () => {
		const r = await node.api("PUT", "/a/user/tess", { Password: PASSWORD, Attributes: { profile: "standard" } }, node.admin);
		assert.equal(r.status, 200, r.text);
	});

	it("sets up a pending factor: base32 secret and otpauth URI, login still without code", async () => {
		const tess = await node.login("tess", PASSWORD);
		const r = await enroll(tess, { step: "setup" });
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Info.Status, "pending");
		assert.match(r.body.Info.Secret, /^[A-Z2-7]{32}$/);
		secret = r.body.Info.Secret;
		const uri = new URL(r.body.Info.OtpAuthUri);
		assert.equal(uri.protocol, "otpauth:");
		assert.equal(uri.searchParams.get("secret"), secret);
		assert.equal(uri.searchParams.get("digits"), "6");
		assert.equal(uri.searchParams.get("period"), "30");
		assert.equal(uri.searchParams.get("algorithm"), "SHA1");
		assert.equal((await login()).status, 200);
	});

	it("refuses a wrong code, then enrols with the current one", async () => {
		const tess = await node.login("tess", PASSWORD);
		const wrong = await enroll(tess, { step: "verify", code: codeAt(0) === "000000" ? "111111" : "000000" });
		assert.equal(wrong.status, 400, wrong.text);
		const ok = await enroll(tess, { step: "verify", code: codeAt(0) });
		assert.equal(ok.status, 200, ok.text);
		assert.deepEqual(ok.body.Info, { Status: "enrolled" });
		const status = await enroll(tess, { step: "status" });
		assert.deepEqual(status.body.Info, { Status: "enrolled" });
		assert.ok(!JSON.stringify(status.body).includes(secret));
		// An enrolled factor is not replaced by a new setup (which would show a new secret to whoever holds a session).
		assert.equal((await enroll(tess, { step: "setup" })).status, 409);
	});

	it("then requires a code at login: none -> 401, wrong -> 401, current -> 200, the same again -> 401", async () => {
		const none = await login();
		assert.equal(none.status, 401);
		assert.match(none.text, /AuthInfo\.totp/);
		assert.equal((await login("123456" === codeAt(1) ? "654321" : "123456")).status, 401);
		// The enrolment used this step's code: the next step's is the one an authenticator shows next.
		const code = codeAt(1);
		const ok = await login(code);
		assert.equal(ok.status, 200, ok.text);
		assert.ok(ok.body.JWT);
		assert.equal((await login(code)).status, 401, "a code is accepted once");
	});

	it("leaves personal access tokens working", async () => {
		const pat = await node.api("POST", "/a/auth/token/personal", { UserLogin: "tess", Label: "cli", AutoRefresh: 3600 }, node.admin);
		assert.equal(pat.status, 200, pat.text);
		const r = await node.api("GET", "/a/frontend/state", undefined, pat.body.AccessToken);
		assert.equal(r.status, 200);
		assert.match(r.text, /<user id="tess"/);
	});

	it("lets an admin disable another user's factor (lost phone), after which the password suffices again", async () => {
		const r = await node.api("POST", "/a/frontend/enroll", { EnrollType: "totp", EnrollInfo: { step: "disable", login: "tess" } }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body.Info, { Status: "none" });
		assert.equal((await login()).status, 200);
	});

	it("refuses unknown enrol types and steps, and users acting on others", async () => {
		const tess = await node.login("tess", PASSWORD);
		assert.equal((await node.api("POST", "/a/frontend/enroll", { EnrollType: "sms", EnrollInfo: {} }, tess)).status, 400);
		assert.equal((await enroll(tess, { step: "dance" })).status, 400);
		assert.equal((await enroll(tess, { step: "disable", login: "admin" })).status, 403);
		assert.equal((await node.api("POST", "/a/frontend/enroll", { EnrollType: "totp" })).status, 401);
	});

	it("removes a deleted user's factor, and only theirs", async () => {
		const PASS = "Other-Pass-1234";
		const uuids: Record<string, string> = {};
		for (const login of ["ulla", "vic"]) {
			const u = await node.api("PUT", `/a/user/${login}`, { Password: PASS, Attributes: { profile: "standard" } }, node.admin);
			assert.equal(u.status, 200, u.text);
			uuids[login] = u.body.Uuid;
			assert.equal((await enroll(await node.login(login, PASS), { step: "setup" })).status, 200);
		}
		assert.equal((await node.api("DELETE", "/a/user/ulla", undefined, node.admin)).status, 200);
		const shared = await acquireDatabase({ dataDir: node.dataDir });
		try {
			const repo = new TotpRepo(shared.db);
			// The factor goes on the identity.changed event: shortly after the answer.
			let row = await repo.get(uuids.ulla);
			for (let i = 0; i < 50 && row; i++) {
				await new Promise((r) => setTimeout(r, 50));
				row = await repo.get(uuids.ulla);
			}
			assert.equal(row, null);
			assert.equal((await repo.get(uuids.vic))?.status, "pending", "other users' factors stay");
		} finally {
			await shared.release();
		}
	});

	it("removes the factors of a deleted group's users", async () => {
		const PASS = "Other-Pass-1234";
		assert.equal((await node.api("PUT", "/a/user/night", { IsGroup: true, GroupPath: "/", GroupLabel: "night" }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/user/night%2Fshift", { IsGroup: true, GroupPath: "/night", GroupLabel: "shift" }, node.admin)).status, 200);
		const uuids: Record<string, string> = {};
		for (const [login, group] of [["wes", "/night"], ["xia", "/night/shift"], ["yann", "/"]]) {
			const u = await node.api("PUT", `/a/user/${login}`, { Login: login, GroupPath: group, Password: PASS, Attributes: { profile: "standard" } }, node.admin);
			assert.equal(u.status, 200, u.text);
			uuids[login] = u.body.Uuid;
			assert.equal((await enroll(await node.login(login, PASS), { step: "setup" })).status, 200);
		}
		// The group and its subgroup, with their users.
		const del = await node.api("DELETE", "/a/user/night%2F", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		const shared = await acquireDatabase({ dataDir: node.dataDir });
		try {
			const repo = new TotpRepo(shared.db);
			let left = 2;
			for (let i = 0; i < 50 && left; i++) {
				await new Promise((r) => setTimeout(r, 50));
				left = (await Promise.all([repo.get(uuids.wes), repo.get(uuids.xia)])).filter(Boolean).length;
			}
			assert.equal(left, 0);
			assert.equal((await repo.get(uuids.yann))?.status, "pending", "users outside the group keep theirs");
		} finally {
			await shared.release();
		}
	});
});
