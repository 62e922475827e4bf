import assert from "node:assert/strict";
import type { Identity } from "../../lib/auth/identity";
import { useNode, type ApiResponse } from "../helpers/node";

async function until(fn: () => Promise<ApiResponse>, ok: (r: ApiResponse) => boolean, what: string): Promise<ApiResponse> {
	let last: ApiResponse | undefined;
	// Time-bound rather than count-bound: on a loaded machine a thousand events (each also audited) take seconds.
	for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
		last = await fn();
		if (ok(last)) return last;
		await new Promise((r) => setTimeout(r, 20));
	}
	throw new Error(`timed out waiting for ${what}: last answer ${last?.status} ${last?.text}`);
}

describe("HTTP: security policies", function () {
	this.timeout(30_000);
	const node = useNode({ env: { IP_BAN_THRESHOLD: "1000" } });

	it("anonymous callers get 401 on POST /a/policy", async () => {
		const r = await node.api("POST", "/a/policy", {});
		assert.equal(r.status, 401);
	});

	it("standard users cannot reach the policy API", async () => {
		const put = await node.api("PUT", "/a/user/polly", { Password: "Polly-Pass-1234", Attributes: { profile: "standard" } }, node.admin);
		assert.equal(put.status, 200, put.text);
		const polly = await node.login("polly", "Polly-Pass-1234");
		const r = await node.api("POST", "/a/policy", {}, polly);
		assert.ok(r.status === 401 || r.status === 403, `${r.status}`);
	});

	it("admin lists the default groups", async () => {
		const r = await node.api("POST", "/a/policy", {}, node.admin);
		assert.equal(r.status, 200, r.text);
		const uuids = r.body.PolicyGroups.map((g: { Uuid: string }) => g.Uuid);
		for (const u of ["public-access", "admin-access", "user-access", "office-hours-access-acl-policy"]) assert.ok(uuids.includes(u), u);
		const office = r.body.PolicyGroups.find((g: { Uuid: string }) => g.Uuid === "office-hours-access-acl-policy");
		assert.equal(office.ResourceGroup, "acl");
		assert.equal(typeof office.Policies[0].conditions.clientTime.jsonOptions, "string");
		const filtered = await node.api("POST", "/a/policy", { Filter: "resource_group:acl" }, node.admin);
		assert.ok(filtered.body.PolicyGroups.every((g: { ResourceGroup: string }) => g.ResourceGroup === "acl"));
	});

	it("a deny policy with a CIDR condition matching 127.0.0.1 really blocks the route, until deleted", async () => {
		const route = "/a/policy/iplists/whitelist";
		assert.equal((await node.api("GET", route, undefined, node.admin)).status, 200);

		// A CIDR that does not contain the caller changes nothing.
		const elsewhere = await node.api(
			"PUT",
			"/a/policy",
			{
				Name: "No lists from 10/8",
				ResourceGroup: "rest",
				Policies: [{ subjects: ["profile:admin"], resources: ["rest:/policy/iplists/<.+>"], actions: ["GET"], effect: "deny", conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"10.0.0.0/8"}' } } }],
			},
			node.admin,
		);
		assert.equal(elsewhere.status, 200, elsewhere.text);
		assert.ok(elsewhere.body.Uuid);
		await new Promise((r) => setTimeout(r, 100));
		assert.equal((await node.api("GET", route, undefined, node.admin)).status, 200);

		const local = await node.api(
			"PUT",
			"/a/policy",
			{
				Name: "No lists from loopback",
				Policies: [{ id: "deny-loopback", subjects: ["profile:admin"], resources: ["rest:/policy/iplists/<.+>"], actions: ["GET"], effect: "deny", conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"127.0.0.0/8"}' } } }],
			},
			node.admin,
		);
		assert.equal(local.status, 200, local.text);
		assert.equal(local.body.Policies[0].effect, "deny");
		const blocked = await until(() => node.api("GET", route, undefined, node.admin), (r) => r.status !== 200, "the deny to apply");
		assert.ok(blocked.status === 401 || blocked.status === 403, `${blocked.status}`);
		// Other routes stay open.
		assert.equal((await node.api("POST", "/a/policy", {}, node.admin)).status, 200);

		for (const g of [local.body, elsewhere.body]) {
			const del = await node.api("DELETE", `/a/policy/${g.Uuid}`, undefined, node.admin);
			assert.equal(del.status, 200, del.text);
			assert.equal(del.body.Success, true);
		}
		await until(() => node.api("GET", route, undefined, node.admin), (r) => r.status === 200, "the deny to be lifted");
	});

	it("validates groups (400) and protects the admin group (403); unknown groups are 404", async () => {
		const bad = await node.api("PUT", "/a/policy", { Policies: [{ subjects: ["profile:admin"], resources: ["rest:/x"], actions: ["GET"], effect: "deny", conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"nope"}' } } }] }, node.admin);
		assert.equal(bad.status, 400, bad.text);
		assert.equal(typeof bad.body.Code, "string");
		const noEffect = await node.api("PUT", "/a/policy", { Policies: [{ subjects: ["profile:admin"], resources: ["rest:/x"], actions: ["GET"] }] }, node.admin);
		assert.equal(noEffect.status, 400);
		assert.equal((await node.api("DELETE", "/a/policy/admin-access", undefined, node.admin)).status, 403);
		assert.equal((await node.api("DELETE", "/a/policy/does-not-exist", undefined, node.admin)).status, 404);
	});

	it("IP lists over HTTP", async () => {
		const put = await node.api("POST", "/a/policy/iplists", { Name: "office", IPs: ["192.168.0.0/16", "10.1.2.3"] }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body, { Name: "office", IPs: ["192.168.0.0/16", "10.1.2.3"] });
		const get = await node.api("GET", "/a/policy/iplists/office", undefined, node.admin);
		assert.deepEqual(get.body, put.body);
		assert.equal((await node.api("POST", "/a/policy/iplists", { Name: "office", IPs: ["999.1.1.1"] }, node.admin)).status, 400);
	});

	it("lists bans with int64 fields as strings, and unbans", async () => {
		for (let i = 0; i < 1000; i++) node.broker.emit("auth.login.failed", { ip: "203.0.113.9", login: "mallory" });
		const r = await until(
			() => node.api("GET", "/a/policy/ipbans", undefined, node.admin),
			(x) => x.status === 200 && (x.body.Bans ?? []).some((b: { IP: string }) => b.IP === "203.0.113.9"),
			"the ban",
		);
		const ban = r.body.Bans.find((b: { IP: string }) => b.IP === "203.0.113.9");
		assert.match(ban.BanExpire, /^\d+$/);
		assert.ok(ban.History.length > 0);
		assert.match(ban.History[0].connectionTime, /^\d+$/);
		const un = await node.api("POST", "/a/policy/ipbans", { IP: "203.0.113.9" }, node.admin);
		assert.equal(un.status, 200, un.text);
		assert.equal(un.body.Success, true);
		const after = await node.api("GET", "/a/policy/ipbans", undefined, node.admin);
		assert.ok(!(after.body.Bans ?? []).some((b: { IP: string }) => b.IP === "203.0.113.9"));
	});
});

describe("HTTP: IP bans after failed logins", function () {
	this.timeout(30_000);
	const node = useNode({ env: { IP_BAN_THRESHOLD: "3", IP_BAN_WINDOW: "60", IP_BAN_DURATION: "600", MAX_FAILED_LOGINS: "100" } });

	it("bans the client address from logging in after 3 failed logins (tokens it holds keep working), and lets it back after an unban", async () => {
		const admin = await node.login("admin", node.adminPassword);
		for (let i = 0; i < 3; i++) {
			const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "admin", password: "wrong-password" } });
			assert.equal(r.status, 401, r.text);
		}
		const login = () => node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "admin", password: node.adminPassword } });
		const banned = await until(login, (r) => r.status === 403, "the ban");
		assert.equal(banned.body.Code, "ip.banned");
		assert.equal((await node.api("POST", "/a/policy", {}, admin)).status, 200);

		// Banned from HTTP: the unban goes through the bus, as an operator's tool would.
		const identity: Identity = { Uuid: "op", Login: "admin", Profile: "admin", GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: 0 };
		const { Bans } = await node.broker.call<{ Bans: { IP: string }[] }, unknown>("policy.listBans", {}, { meta: { user: identity } });
		assert.ok(Bans.some((b) => b.IP === "127.0.0.1"));
		await node.broker.call("policy.unban", { IP: "127.0.0.1" }, { meta: { user: identity } });
		await until(login, (r) => r.status === 200, "the unban");
	});
});
