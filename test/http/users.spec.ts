import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: users, groups and roles", function () {
	this.timeout(30_000);
	const node = useNode();

	it("admin creates a standard user who logs in; the password never comes back", async () => {
		const r = await node.api("PUT", "/a/user/dave", { Password: "Dave-Pass-1234", Attributes: { profile: "standard", displayName: "Dave D" } }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Login, "dave");
		assert.equal(r.body.Password, undefined);
		assert.ok(!JSON.stringify(r.body).includes("scrypt"));
		assert.deepEqual(r.body.Roles.map((x: { Uuid: string }) => x.Uuid).slice(0, 1), ["ROOT_GROUP"]);
		assert.equal(r.body.Roles.at(-1).Uuid, r.body.Uuid);
		await node.login("dave", "Dave-Pass-1234");
	});

	it("refuses duplicates, escalation and bad logins", async () => {
		// A taken login is a conflict, found by the login's unique index (the NeDB versions answered 403).
		const taken = await node.api("PUT", "/a/user/dave", { Password: "Dave-Pass-1234" }, node.admin);
		assert.equal(taken.status, 409, taken.text);
		const dave = await node.login("dave", "Dave-Pass-1234");
		assert.equal((await node.api("PUT", "/a/user/eve", { Password: "Eve-Pass-12345", Attributes: { profile: "admin" } }, dave)).status, 403);
		for (const bad of ["..%2Fetc", "a%2F..%2Fb", "nul%00byte", "x".repeat(300)]) {
			const r = await node.api("PUT", `/a/user/${bad}`, { Password: "Some-Pass-1234" }, node.admin);
			assert.equal(r.status, 400, `${bad} -> ${r.status} ${r.text}`);
		}
		assert.equal((await node.api("PUT", "/a/user/typo", { Password: 12345678 }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/user/typo", { Password: "Some-Pass-1234", Unknown: true }, node.admin)).status, 400);
		assert.equal((await node.api("GET", "/a/user/typo", undefined, node.admin)).status, 404);
	});

	it("searches with wildcards, groups, offset/limit and CountOnly", async () => {
		assert.equal((await node.api("PUT", "/a/user/sales", { IsGroup: true, GroupPath: "/", GroupLabel: "sales" }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/user/frank", { Password: "Frank-Pass-123", GroupPath: "/sales", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		const all = await node.api("POST", "/a/user", { Queries: null, Limit: "10" }, node.admin);
		assert.equal(all.status, 200);
		assert.ok(all.body.Users.some((u: { Login: string }) => u.Login === "frank"));
		assert.ok(all.body.Groups.some((g: { GroupLabel: string }) => g.GroupLabel === "sales"));
		const wild = await node.api("POST", "/a/user", { Queries: [{ Login: "fr*" }] }, node.admin);
		assert.deepEqual(wild.body.Users.map((u: { Login: string }) => u.Login), ["frank"]);
		const inGroup = await node.api("POST", "/a/user", { Queries: [{ GroupPath: "/sales", NodeType: "USER" }] }, node.admin);
		assert.deepEqual(inGroup.body.Users.map((u: { Login: string }) => u.Login), ["frank"]);
		const frank = await node.api("GET", "/a/user/frank", undefined, node.admin);
		const roleIds = frank.body.Roles.map((r: { Uuid: string }) => r.Uuid);
		const group = all.body.Groups.find((g: { GroupLabel: string }) => g.GroupLabel === "sales");
		assert.deepEqual(roleIds.slice(0, 2), ["ROOT_GROUP", group.Uuid]);
		const members = await node.api("POST", "/a/user", { Queries: [{ HasRole: group.Uuid }] }, node.admin);
		assert.deepEqual([members.body.Users.map((u: { Login: string }) => u.Login), members.body.Groups.map((g: { GroupLabel: string }) => g.GroupLabel)], [["frank"], ["sales"]]);
		assert.deepEqual(members.body.Users[0].Roles, frank.body.Roles, "the roles a search shows are the user's own");
		const admins = await node.api("POST", "/a/user", { Queries: [{ HasRole: "ADMINS" }, { HasRole: group.Uuid }], Operation: "OR" }, node.admin);
		assert.deepEqual(admins.body.Users.map((u: { Login: string }) => u.Login), ["admin", "frank"]);
		const count = await node.api("POST", "/a/user", { CountOnly: true }, node.admin);
		assert.equal(typeof count.body.Total, "number");
		assert.equal(count.body.Users, undefined);
		const page = await node.api("POST", "/a/user", { Offset: 1, Limit: 1, Queries: [{ NodeType: "USER" }] }, node.admin);
		assert.equal(page.body.Users.length, 1);
	});

	it("creates a team role, assigns it, and deletes users and groups", async () => {
		const role = await node.api("PUT", "/a/role/team-1", { Label: "Team One", IsTeam: true }, node.admin);
		assert.equal(role.status, 200, role.text);
		const frank = await node.api("GET", "/a/user/frank", undefined, node.admin);
		const put = await node.api("PUT", "/a/user/roles/frank", { Uuid: frank.body.Uuid, Roles: [{ Uuid: "team-1" }] }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.ok(put.body.Roles.some((r: { Uuid: string }) => r.Uuid === "team-1"));
		const search = await node.api("POST", "/a/role", { Queries: [{ IsTeam: true }] }, node.admin);
		assert.deepEqual(search.body.Roles.map((r: { Uuid: string }) => r.Uuid), ["team-1"]);
		const byLabel = await node.api("POST", "/a/role", { Queries: [{ Label: "team*" }, { Label: "ADMINISTRATOR" }] }, node.admin);
		assert.deepEqual(byLabel.body.Roles.map((r: { Uuid: string }) => r.Uuid).sort(), ["ADMINS", "team-1"]);
		const holders = await node.api("POST", "/a/user", { Queries: [{ HasRole: "team-1" }] }, node.admin);
		assert.deepEqual(holders.body.Users.map((u: { Login: string }) => u.Login), ["frank"]);
		assert.equal((await node.api("GET", "/a/role/nope", undefined, node.admin)).status, 404);
		const del = await node.api("DELETE", "/a/user/sales%2F", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.equal(del.body.NumRows, "2");
		assert.equal((await node.api("GET", "/a/user/frank", undefined, node.admin)).status, 404);
		assert.equal((await node.api("DELETE", "/a/user/admin", undefined, node.admin)).status, 403);
		assert.equal((await node.api("DELETE", "/a/role/team-1", undefined, node.admin)).status, 200);
	});

	it("a user changes their own password only with the old one", async () => {
		const dave = await node.login("dave", "Dave-Pass-1234");
		const me = await node.api("GET", "/a/user/dave", undefined, dave);
		assert.equal((await node.api("PUT", "/a/user/dave", { Uuid: me.body.Uuid, Password: "New-Pass-12345", OldPassword: "wrong-one" }, dave)).status, 401);
		assert.equal((await node.api("PUT", "/a/user/dave", { Uuid: me.body.Uuid, Password: "New-Pass-12345", OldPassword: "Dave-Pass-1234" }, dave)).status, 200);
		await node.login("dave", "New-Pass-12345");
	});
});
