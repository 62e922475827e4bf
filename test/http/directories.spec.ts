// External (LDAP) directories through the real gateway, against an LDAP server in the test process: an admin
// saves, lists (password masked), tests and deletes them; nobody else may; a directory user logs in (their
// local account made on the first login), a wrong password is refused like a local one, and the local
// administrator still logs in while the directory is unreachable; schedules and mappings are saved, what is not
// supported yet refused (400); the service synchronises a directory (users made with roles, a lost one locked).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { useNode, type TestNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { BASE, BIND_DN, BIND_PW, startDirectory, type TestDirectory } from "../helpers/ldap";
import type { DirectorySync } from "../../lib/directories/sync";
import type { DirectoryConfig } from "../../lib/directories/model";

const session = (node: TestNode, login: string, password: string) => node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login, password } });

describe("HTTP: external directories", function () {
	this.timeout(60_000);
	const node = useNode();
	let ldap: TestDirectory;
	let bob: string;
	const config = () => ({
		Host: ldap.host,
		Connection: "normal",
		BindDN: BIND_DN,
		BindPW: BIND_PW,
		DomainName: "example.org",
		User: { DNs: [BASE], Filter: "(objectClass=inetOrgPerson)", IDAttribute: "uid", DisplayAttribute: "cn", Scope: "sub" },
	});

	before(async () => {
		ldap = await startDirectory([{ uid: "alice", password: "Alice-Ldap-1", cn: "Alice Liddell", mail: "alice@example.org" }]);
		bob = await addUser(node, node.admin, "bob", "Bob-Pass-12345");
	});
	after(() => ldap?.stop());

	it("is for administrators only", async () => {
		for (const [method, path, body] of [
			["GET", "/a/config/directories", undefined],
			["PUT", "/a/config/directories/corp", { Config: config() }],
			["DELETE", "/a/config/directories/corp", undefined],
			["POST", "/a/config/directories-test/ping", { Config: config() }],
			["POST", "/a/config/directories-test/search", { Config: config() }],
		] as const) {
			assert.equal((await node.api(method, path, body, bob)).status, 403, `${method} ${path} as a standard user`);
			assert.equal((await node.api(method, path, body)).status, 401, `${method} ${path} anonymously`);
		}
	});

	it("saves a directory, lists it with its password masked, keeps the password when the mask comes back", async () => {
		const put = await node.api("PUT", "/a/config/directories/corp", { Config: config() }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body, { Success: true });
		const list = await node.api("GET", "/a/config/directories", undefined, node.admin);
		assert.equal(list.status, 200, list.text);
		const [corp] = list.body.Directories;
		assert.equal(corp.ConfigId, "corp");
		assert.equal(corp.BindPW, "********");
		assert.equal(corp.User.IDAttribute, "uid");
		assert.ok(!list.text.includes(BIND_PW), "the password is never sent back");
		assert.equal((await node.api("PUT", "/a/config/directories/corp", { Config: corp }, node.admin)).status, 200);
		const ping = await node.api("POST", "/a/config/directories-test/ping", { Config: corp, Bind: true }, node.admin);
		assert.equal(ping.status, 200, ping.text);
		assert.equal(ping.body.Success, true, ping.text);
		// The masked password is never sent to another server than the saved one's.
		const elsewhere = await node.api("POST", "/a/config/directories-test/ping", { Config: { ...corp, Host: "127.0.0.1:1" }, Bind: true }, node.admin);
		assert.equal(elsewhere.status, 400, elsewhere.text);
		assert.match(elsewhere.body.Title, /Host or BindDN differ from the saved directory/);
	});

	it("refuses configurations it could not use", async () => {
		const bad = await node.api("PUT", "/a/config/directories/broken", { Config: { ...config(), User: { ...config().User, Filter: "(uid=*" } } }, node.admin);
		assert.equal(bad.status, 400);
		assert.match(bad.body.Title ?? bad.text, /User.Filter is not a valid LDAP filter/);
		assert.equal((await node.api("PUT", "/a/config/directories/broken", { Config: { ...config(), Host: "ldap" } }, node.admin)).status, 400);
		assert.equal((await node.api("DELETE", "/a/config/directories/nothing", undefined, node.admin)).status, 404);
	});

	it("saves schedules and mappings it applies; refuses with a 400 the options it does not support yet", async () => {
		const full = {
			...config(),
			Schedule: "R/2012-06-04T19:25:16.828696-07:00/PT10M",
			RolePrefix: "ldap_",
			MemberOfMapping: { RealMemberOf: true, RealMemberOfAttribute: "memberOf", Mapping: { LeftAttribute: "cn", RuleString: "staff" } },
			MappingRules: [{ LeftAttribute: "mail", RightAttribute: "email" }],
		};
		const put = await node.api("PUT", "/a/config/directories/mapped", { Config: full }, node.admin);
		assert.equal(put.status, 200, put.text);
		const [mapped] = (await node.api("GET", "/a/config/directories", undefined, node.admin)).body.Directories.filter((d: { ConfigId: string }) => d.ConfigId === "mapped");
		assert.deepEqual([mapped.Schedule, mapped.MemberOfMapping, mapped.MappingRules], [full.Schedule, full.MemberOfMapping, full.MappingRules]);
		assert.equal((await node.api("DELETE", "/a/config/directories/mapped", undefined, node.admin)).status, 200);
		for (const [over, why] of [
			[{ Schedule: "every ten minutes" }, /Schedule: every ten minutes is not a repeating interval/],
			[{ Schedule: "R/2024-01-01T00:00:00Z/P1M" }, /months and years are not supported/],
			[{ SyncOnly: true }, /SyncOnly needs a Schedule/],
			[{ MappingRules: [{ LeftAttribute: "telephoneNumber", RightAttribute: "phone" }] }, /MappingRules\[0\]\.RightAttribute phone is not supported yet/],
			[{ MappingRules: [{ RightAttribute: "email" }] }, /MappingRules\[0\]\.LeftAttribute is required/],
			[{ MemberOfMapping: { RealMemberOf: true, Mapping: { LeftAttribute: "cn" }, SupportNestedGroup: true } }, /SupportNestedGroup is not supported yet/],
			[{ MemberOfMapping: { RealMemberOf: true, Mapping: { LeftAttribute: "cn" }, RealMemberOfValueFormat: "uid" } }, /RealMemberOfValueFormat: only dn is supported yet/],
			[{ MemberOfMapping: { GroupFilter: { DNs: ["ou=groups,dc=example,dc=org"], Filter: "(objectClass=groupOfNames)" }, Mapping: { LeftAttribute: "cn" }, PydioMemberOfValueFormat: "uid" } }, /PydioMemberOfValueFormat: only dn is supported yet/],
			[{ MemberOfMapping: { RealMemberOf: true } }, /MemberOfMapping.Mapping is required/],
			[{ MemberOfMapping: { Mapping: { LeftAttribute: "cn" } } }, /MemberOfMapping.GroupFilter.DNs needs at least one base DN/],
		] as const) {
			const res = await node.api("PUT", "/a/config/directories/unsupported", { Config: { ...config(), ...over } }, node.admin);
			assert.equal(res.status, 400, `${JSON.stringify(over)}: ${res.text}`);
			assert.match(res.body.Title ?? res.text, why);
		}
		assert.equal((await node.api("GET", "/a/config/directories", undefined, node.admin)).body.Directories.filter((d: { ConfigId: string }) => d.ConfigId === "unsupported").length, 0);
	});

	it("tests a configuration: ping with a wrong password, search", async () => {
		const wrong = await node.api("POST", "/a/config/directories-test/ping", { Config: { ...config(), BindPW: "nope" } }, node.admin);
		assert.equal(wrong.status, 200, wrong.text);
		assert.equal(wrong.body.Success, undefined, "false is omitted, as Cells omits zero values");
		assert.match(JSON.parse(wrong.body.DirectoryResponseJSON).Error, /49/);
		const search = await node.api("POST", "/a/config/directories-test/search", { Config: config(), Filter: { Filter: "ali*" }, Limit: 5 }, node.admin);
		assert.equal(search.status, 200, search.text);
		assert.equal(search.body.Success, true);
		assert.deepEqual(JSON.parse(search.body.DirectoryResponseJSON).Users.map((u: { DN: string }) => u.DN), [`uid=alice,${BASE}`]);
	});

	it("logs a directory user in, their account made on the first login; refuses a wrong password", async () => {
		assert.equal((await session(node, "alice", "wrong-password")).status, 401);
		const token = await node.login("alice", "Alice-Ldap-1");
		const me = await node.api("GET", "/a/user/alice", undefined, node.admin);
		assert.equal(me.status, 200, me.text);
		assert.equal(me.body.GroupPath, "/example.org");
		assert.equal(me.body.Attributes.displayName, "Alice Liddell");
		assert.equal((await node.api("GET", "/a/user/alice", undefined, token)).status, 200, "the session works");
		assert.equal((await node.login("alice", "Alice-Ldap-1")).length > 0, true, "and the next login finds the account");
		const refused = await session(node, "alice", "wrong-password");
		assert.equal(refused.status, 401);
	});

	it("synchronises a directory through the services: its users made with their memberOf roles, a lost one locked", async () => {
		ldap.users.push({ uid: "dora", password: "Dora-Ldap-1", groups: ["staff"] });
		const cfg = { ...config(), Schedule: "R/2024-01-01T00:00:00Z/PT10M", RolePrefix: "ldap_", MemberOfMapping: { RealMemberOf: true, Mapping: { LeftAttribute: "cn" } } };
		assert.equal((await node.api("PUT", "/a/config/directories/corp", { Config: cfg }, node.admin)).status, 200);
		// The service's own synchroniser, run now rather than at the schedule's next tick (30 s).
		const svc = node.broker.getLocalService("directories") as unknown as { sync: DirectorySync };
		const run = () => svc.sync.syncOne({ ...cfg, ConfigId: "corp" } as DirectoryConfig);
		const out = await run();
		assert.ok(out.ok && out.report.created === 1, JSON.stringify(out));
		const dora = await node.api("GET", "/a/user/dora", undefined, node.admin);
		assert.equal(dora.status, 200, dora.text);
		assert.deepEqual(dora.body.Roles.map((r: { Uuid: string }) => r.Uuid).filter((id: string) => id.startsWith("ldap_")), ["ldap_staff"]);
		ldap.users = ldap.users.filter((u) => u.uid !== "dora");
		const second = await run();
		assert.ok(second.ok && second.report.locked === 1, JSON.stringify(second));
		assert.equal((await session(node, "dora", "Dora-Ldap-1")).status, 401);
	});

	it("keeps local users logging in while the directory is unreachable", async () => {
		const s = createServer();
		await new Promise<void>((res) => s.listen(0, "127.0.0.1", () => res()));
		const port = (s.address() as { port: number }).port;
		await new Promise<void>((res) => s.close(() => res()));
		assert.equal((await node.api("PUT", "/a/config/directories/corp", { Config: { ...config(), Host: `127.0.0.1:${port}` } }, node.admin)).status, 200);
		assert.ok(await node.login("admin", node.adminPassword));
		assert.ok(await node.login("bob", "Bob-Pass-12345"));
		const alice = await session(node, "alice", "Alice-Ldap-1");
		assert.equal(alice.status, 401);
		assert.match(alice.text, /cannot be reached/);
		const del = await node.api("DELETE", "/a/config/directories/corp", undefined, node.admin);
		assert.deepEqual([del.status, del.body], [200, { Success: true }]);
		assert.deepEqual((await node.api("GET", "/a/config/directories", undefined, node.admin)).body, {});
	});
});
