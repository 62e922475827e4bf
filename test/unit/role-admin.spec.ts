import assert from "node:assert/strict";
import type { Identity } from "../../lib/auth/identity";
import { ForbiddenError, NotFoundError } from "../../lib/errors";
import { RoleAdmin, type RoleQuery } from "../../lib/identity/role-admin";
import { RoleDirectory } from "../../lib/identity/role-directory";
import { MemRoles } from "../helpers/roles";

const admin: Identity = { Uuid: "u-admin", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP", "ADMINS", "u-admin"], TokenKind: "session", ExpiresAt: 2e9 };
const alice: Identity = { Uuid: "u-alice", Login: "alice", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u-alice"], TokenKind: "session", ExpiresAt: 2e9 };
const bob: Identity = { ...alice, Uuid: "u-bob", Login: "bob", Roles: ["ROOT_GROUP", "u-bob"] };

function setup() {
	const store = new MemRoles();
	const changed: string[][] = [];
	const roles = new RoleAdmin(new RoleDirectory(store, async (uuids) => void changed.push(uuids)));
	return { store, changed, roles };
}

describe("RoleAdmin (lib/identity/role-admin)", () => {
	it("creates the default roles once, readable by every profile and writable by administrators", async () => {
		const { roles } = setup();
		assert.deepEqual(await roles.ensureDefaults(), { created: 3 });
		assert.deepEqual(await roles.ensureDefaults(), { created: 0 });
		const admins = await roles.get(alice, "ADMINS");
		assert.deepEqual(admins.AutoApplies, ["admin"]);
		assert.equal(admins.PoliciesContextEditable, false);
		assert.equal((await roles.get(admin, "ADMINS")).PoliciesContextEditable, true);
		await assert.rejects(roles.remove(admin, "ROOT_GROUP"), ForbiddenError);
	});

	it("lets a standard user create only teams, which only they can see and edit", async () => {
		const { roles, changed } = setup();
		await assert.rejects(roles.put(alice, { Uuid: "editors", Label: "Editors" }), /Only administrators can create roles other than teams/);
		await assert.rejects(roles.put(alice, { Uuid: "t1", Label: "Team", IsTeam: true, AutoApplies: ["standard"] }), /Only administrators can set AutoApplies/);
		const team = await roles.put(alice, { Uuid: "t1", Label: "Team", IsTeam: true });
		assert.equal(team.PoliciesContextEditable, true);
		assert.deepEqual(changed, [["t1"]]);
		await assert.rejects(roles.get(bob, "t1"), NotFoundError);
		assert.deepEqual((await roles.search(bob, {})).Roles.map((r) => r.Uuid), []);
		await assert.rejects(roles.put(bob, { Uuid: "t1", Label: "Mine now" }), ForbiddenError);
		await assert.rejects(roles.remove(bob, "t1"), ForbiddenError);
		const renamed = await roles.put(alice, { Uuid: "t1", Label: "Renamed" });
		assert.equal(renamed.Label, "Renamed");
		assert.equal(renamed.IsTeam, true, "fields left out keep their value");
		assert.deepEqual(await roles.remove(alice, "t1"), { Uuid: "t1" });
		await assert.rejects(roles.get(alice, "t1"), NotFoundError);
	});

	it("requires a label for a new role and checks the id", async () => {
		const { roles } = setup();
		await assert.rejects(roles.put(admin, { Uuid: "r1", Label: "" }), /Label is required/);
		await assert.rejects(roles.put(admin, { Uuid: "../x", Label: "X" }), { code: 400 });
	});

	it("keeps a user's own role one, and refuses to delete it", async () => {
		const { roles, store } = setup();
		store.roles.set("u-alice", { Uuid: "u-alice", Label: "User alice", UserRole: true, Policies: roles.policiesFor(admin) });
		const saved = await roles.put(admin, { Uuid: "u-alice", Label: "Alice", UserRole: false, GroupRole: true });
		assert.equal(saved.UserRole, true);
		assert.equal(saved.GroupRole, undefined);
		await assert.rejects(roles.remove(admin, "u-alice"), /deleted with the user or group/);
	});

	it("redoes a create that lost the race as an update of the winner's role, with its permissions", async () => {
		const { roles, store } = setup();
		// Another node creates the team (as bob) between this node's read and its insert.
		store.beforeCreate = () => store.roles.set("t2", { Uuid: "t2", Label: "Bob's", IsTeam: true, Policies: roles.policiesFor(bob) });
		await assert.rejects(roles.put(alice, { Uuid: "t2", Label: "Alice's", IsTeam: true }), ForbiddenError);
		assert.equal(store.roles.get("t2")?.Label, "Bob's");
		store.beforeCreate = () => store.roles.set("t3", { Uuid: "t3", Label: "First", Policies: roles.policiesFor(admin) });
		const second = await roles.put(admin, { Uuid: "t3", Label: "Second" });
		assert.equal(second.Label, "Second");
		assert.equal(store.roles.get("t3")?.Label, "Second");
	});

	it("searches with OR or AND queries, negation and paging, over the roles the caller may read", async () => {
		const { roles } = setup();
		await roles.ensureDefaults();
		await roles.put(admin, { Uuid: "team-a", Label: "Alpha team", IsTeam: true });
		await roles.put(admin, { Uuid: "team-b", Label: "Beta team", IsTeam: true });
		const ids = async (p: Parameters<RoleAdmin["search"]>[1]) => (await roles.search(alice, p)).Roles.map((r) => r.Uuid).sort();
		assert.deepEqual(await ids({ Queries: [{ IsTeam: true }] }), ["team-a", "team-b"]);
		assert.deepEqual(await ids({ Queries: [{ IsTeam: true }, { HasAutoApply: true }] }), ["ADMINS", "EXTERNAL_USERS", "team-a", "team-b"]);
		assert.deepEqual(await ids({ Operation: "AND", Queries: [{ IsTeam: true }, { Label: "alpha" }] }), ["team-a"]);
		assert.deepEqual(await ids({ Queries: [{ IsTeam: true, not: true }] }), ["ADMINS", "EXTERNAL_USERS", "ROOT_GROUP"]);
		const page = await roles.search(alice, { Queries: [{ IsTeam: true }], Offset: 1, Limit: 1 });
		assert.equal(page.Total, 2);
		assert.equal(page.Roles.length, 1);
	});

	it("matches labels by substring, or by wildcard when given one, ignoring case, with other characters literal", async () => {
		const { roles } = setup();
		await roles.ensureDefaults();
		for (const [uuid, label] of [["r1", "Sales (EMEA)"], ["r2", "sales.emea"], ["r3", "Salesxemea"], ["r4", "Pre-sales"]]) await roles.put(admin, { Uuid: uuid, Label: label, IsTeam: true });
		const ids = async (...Queries: RoleQuery[]) => (await roles.search(admin, { Queries })).Roles.map((r) => r.Uuid).sort();
		assert.deepEqual(await ids({ Label: "SALES" }), ["r1", "r2", "r3", "r4"]);
		assert.deepEqual(await ids({ Label: "sales.e" }), ["r2"], "a dot is a dot");
		assert.deepEqual(await ids({ Label: "(emea)" }), ["r1"]);
		assert.deepEqual(await ids({ Label: "sales*" }), ["r1", "r2", "r3"], "a wildcard anchors the pattern");
		assert.deepEqual(await ids({ Label: "*EMEA" }), ["r2", "r3"]);
		assert.deepEqual(await ids({ Label: "sales", Uuid: ["r2", "r4", "ADMINS"] }), ["r2", "r4"]);
		assert.deepEqual(await ids({ Label: "sales", not: true }, { Uuid: ["r1"] }), ["ADMINS", "EXTERNAL_USERS", "ROOT_GROUP", "r1"]);
	});
});
