// The cached directories of users and roles over fake stores: one load per change, indexes by uuid, login and
// group path, login bookkeeping patched in place without a reload or an announcement, and which identity
// changes drop which cache.
import assert from "node:assert/strict";
import { RoleDirectory } from "../../lib/identity/role-directory";
import { UserDirectory, type LoginChange, type UserChange, type UserStore } from "../../lib/identity/user-directory";
import type { UserDoc } from "../../lib/identity/users";
import { MemRoles } from "../helpers/roles";

class FakeUsers implements UserStore {
	loads = 0;
	docs = new Map<string, UserDoc>();
	async all() {
		this.loads++;
		return [...this.docs.values()].map((d) => structuredClone(d));
	}
	async createInGroup(u: UserDoc): Promise<UserDoc | null> {
		this.docs.set(u.Uuid, structuredClone(u));
		return u;
	}
	async update(u: UserDoc) {
		if (!this.docs.has(u.Uuid)) return null;
		this.docs.set(u.Uuid, structuredClone(u));
		return u;
	}
	async recordLogin(uuid: string, c: LoginChange) {
		const d = this.docs.get(uuid);
		if (!d) return null;
		const next: UserDoc = { ...d, LoginGuard: c.loginGuard, ...(c.lastConnected !== undefined ? { LastConnected: c.lastConnected } : {}) };
		this.docs.set(uuid, next);
		return structuredClone(next);
	}
	async delete(uuid: string) {
		return this.docs.delete(uuid);
	}
	async deleteGroupTree(path: string) {
		const victims = [...this.docs.values()].filter((d) => d.GroupPath === path || d.GroupPath.startsWith(`${path}/`) || (d.IsGroup && `${d.GroupPath.replace(/\/$/, "")}/${d.GroupLabel}` === path));
		for (const v of victims) this.docs.delete(v.Uuid);
		return victims;
	}
}

const user = (login: string, groupPath = "/"): UserDoc => ({ Uuid: `u-${login}`, Login: login, GroupPath: groupPath, Attributes: {}, Roles: [], Policies: [] });

describe("UserDirectory", () => {
	it("loads once, answers by uuid, login and group path, reloads after a write and announces it", async () => {
		const store = new FakeUsers();
		const changes: UserChange[] = [];
		const dir = new UserDirectory(store, async (c) => void changes.push(c));
		await dir.create({ Uuid: "g-sales", IsGroup: true, GroupPath: "/", GroupLabel: "sales", Attributes: {}, Roles: [], Policies: [] });
		await dir.create({ ...user("alice", "/sales"), Attributes: { email: "Alice@Example.org" } });
		assert.equal((await dir.byLogin("alice"))?.Uuid, "u-alice");
		assert.equal((await dir.byUuid("u-alice"))?.Login, "alice");
		assert.equal((await dir.groupByPath("/sales"))?.Uuid, "g-sales");
		assert.equal((await dir.byEmail("alice@example.ORG"))?.Login, "alice");
		assert.equal(await dir.byLogin("sales"), undefined, "a group is not a login");
		assert.equal(store.loads, 1);
		await dir.save({ ...((await dir.byLogin("alice")) as UserDoc), Login: "alice2" });
		assert.equal(await dir.byLogin("alice"), undefined);
		assert.equal((await dir.byLogin("alice2"))?.Uuid, "u-alice");
		assert.equal(store.loads, 2);
		assert.deepEqual(changes, [
			{ kind: "user", uuid: "g-sales" },
			{ kind: "user", uuid: "u-alice" },
			{ kind: "user", uuid: "u-alice" },
		]);
	});

	it("patches login bookkeeping into the cached list without a reload or an announcement, unless asked", async () => {
		const store = new FakeUsers();
		const changes: UserChange[] = [];
		const dir = new UserDirectory(store, async (c) => void changes.push(c));
		await dir.create(user("bob"));
		changes.length = 0;
		await dir.all();
		const loads = store.loads;
		await dir.recordLogin("u-bob", { failedConnections: null, loginGuard: { Known: [{ IP: "192.0.2.1", At: 5 }] }, lastConnected: 99 });
		assert.equal((await dir.byLogin("bob"))?.LastConnected, 99);
		assert.equal((await dir.byUuid("u-bob"))?.LoginGuard?.Known?.[0].IP, "192.0.2.1");
		assert.equal(store.loads, loads);
		assert.deepEqual(changes, []);
		await dir.recordLogin("u-bob", { failedConnections: 5, loginGuard: { LockedUntil: 1 } }, true);
		assert.deepEqual(changes, [{ kind: "user", uuid: "u-bob" }]);
		assert.equal((await dir.byLogin("bob"))?.LoginGuard?.LockedUntil, 1);
		assert.equal(store.loads, loads + 1);
	});

	it("names the logins and uuids a deletion removed (services keyed by either forget them), users only", async () => {
		const store = new FakeUsers();
		const changes: UserChange[] = [];
		const dir = new UserDirectory(store, async (c) => void changes.push(c));
		await dir.create({ Uuid: "g-ops", IsGroup: true, GroupPath: "/", GroupLabel: "ops", Attributes: {}, Roles: [], Policies: [] });
		for (const u of [user("gus", "/ops"), user("hal", "/ops"), user("ivy")]) await dir.create(u);
		changes.length = 0;
		assert.equal(await dir.delete(user("ivy")), true);
		assert.equal(await dir.delete(user("ivy")), false);
		await dir.deleteGroupTree("/ops");
		assert.deepEqual(changes, [
			{ kind: "user", uuid: "u-ivy", deleted: ["ivy"], deletedUuids: ["u-ivy"] },
			{ kind: "group", path: "/ops", deleted: ["gus", "hal"], deletedUuids: ["u-gus", "u-hal"] },
		]);
	});

	it("refuses a member of a group that does not exist (400) and keeps nothing cached of it", async () => {
		const store = new FakeUsers();
		store.createInGroup = async () => null;
		const dir = new UserDirectory(store, async () => undefined);
		await assert.rejects(dir.create(user("carol", "/nowhere")), (err: { code?: number }) => err.code === 400);
	});

	it("is dropped by user, group and unknown changes, kept over ACL, workspace and role ones", () => {
		for (const kind of ["user", "group", undefined, "other"]) assert.equal(UserDirectory.affectedBy({ kind }), true, String(kind));
		for (const kind of ["acl", "workspace", "role"]) assert.equal(UserDirectory.affectedBy({ kind }), false, kind);
		assert.equal(UserDirectory.affectedBy(undefined), true);
	});
});

describe("RoleDirectory", () => {
	it("stamps, caches, announces only what it created or changed, and answers profiles' roles", async () => {
		const store = new MemRoles();
		const announced: string[][] = [];
		const dir = new RoleDirectory(store, async (u) => void announced.push(u), () => 42);
		await dir.create({ Uuid: "ADMINS", Label: "Administrators", AutoApplies: ["admin"], PoliciesContextEditable: true });
		assert.deepEqual(store.roles.get("ADMINS"), { Uuid: "ADMINS", Label: "Administrators", AutoApplies: ["admin"], LastUpdated: 42 }, "stored without the caller's view");
		assert.equal((await dir.ensure({ Uuid: "ADMINS", Label: "ignored" })).created, false);
		assert.deepEqual(await dir.autoApplied("admin"), ["ADMINS"]);
		assert.deepEqual((await dir.many(["nope", "ADMINS"])).map((r) => r.Uuid), ["ADMINS"]);
		assert.equal(store.loads, 1);
		assert.equal(await dir.update({ Uuid: "ghost", Label: "x" }), null);
		await dir.delete(["ADMINS"]);
		assert.deepEqual(await dir.autoApplied("admin"), []);
		assert.deepEqual(announced, [["ADMINS"], ["ADMINS"]]);
	});

	it("is dropped by role and unknown changes, kept over ACL, workspace, user and group ones", () => {
		for (const kind of ["role", undefined, "other"]) assert.equal(RoleDirectory.affectedBy({ kind }), true, String(kind));
		for (const kind of ["acl", "workspace", "user", "group"]) assert.equal(RoleDirectory.affectedBy({ kind }), false, kind);
	});
});
