// lib/identity/user-admin (the users service's rules) without a broker, on SQLite and PostgreSQL: the real
// UsersRepo under a UserDirectory, and the roles as the roles service keeps them (RoleAdmin over a RoleDirectory
// on the same database), so the store's unique indexes, not checks before writing, decide what is taken.
import assert from "node:assert/strict";
import type { Identity } from "../../lib/auth/identity";
import { RolesRepo } from "../../lib/db/roles";
import { UsersRepo } from "../../lib/db/users";
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "../../lib/errors";
import { RoleAdmin } from "../../lib/identity/role-admin";
import { RoleDirectory } from "../../lib/identity/role-directory";
import { UserAdmin, type AuthInfo } from "../../lib/identity/user-admin";
import { UserDirectory } from "../../lib/identity/user-directory";
import { onEveryBackend } from "../helpers/db";

const asIdentity = (a: AuthInfo): Identity => ({ Uuid: a.Uuid, Login: a.Login, Profile: a.Profile, GroupPath: a.GroupPath, Roles: a.Roles, TokenKind: "session", ExpiresAt: 2e9 });

onEveryBackend("UserAdmin (lib/identity/user-admin)", (h) => {
	let users: UserAdmin;
	let roles: RoleAdmin;
	let admin: Identity;
	let alice: Identity;
	const warnings: string[] = [];
	/** Lookups a search makes per group path or profile, not per user. */
	const calls = { autoApplied: 0, getMany: 0, groupByPath: 0 };

	before(async () => {
		roles = new RoleAdmin(new RoleDirectory(new RolesRepo(h().db), async () => undefined));
		await roles.ensureDefaults();
		const directory = new UserDirectory(new UsersRepo(h().db), async () => undefined);
		const groupByPath = directory.groupByPath.bind(directory);
		directory.groupByPath = (path) => (calls.groupByPath++, groupByPath(path));
		users = new UserAdmin(
			directory,
			{
				ensure: (r) => roles.directory.ensure(r),
				delete: (uuids) => roles.directory.delete(uuids),
				getMany: (uuids) => (calls.getMany++, roles.directory.many(uuids)),
				autoApplied: (profile) => (calls.autoApplied++, roles.directory.autoApplied(profile)),
			},
			() => ({ maxFailed: 3, lockSeconds: 60, delayMaxSeconds: 0 }),
			(m) => void warnings.push(m),
		);
	});

	it("creates the administrator once, with a generated password that logs in", async () => {
		const first = await users.ensureAdmin("admin", undefined);
		assert.equal(first.created, true);
		assert.ok(first.password && first.password.length >= 12);
		assert.deepEqual(await users.ensureAdmin("admin", "Other-Pass-1"), { created: false });
		const info = await users.checkPassword("admin", first.password, "192.0.2.1");
		assert.equal(info.Profile, "admin");
		// Role order: root, profile roles, own.
		assert.deepEqual(info.Roles, ["ROOT_GROUP", "ADMINS", info.Uuid]);
		admin = asIdentity(info);
	});

	it("creates users with their personal role; a taken login is the store's 409 and leaves no role behind", async () => {
		await users.put(admin, { Login: "alice", Password: "Alice-Pass-1", Attributes: { profile: "standard", email: "alice@example.org" } });
		alice = asIdentity(await users.checkPassword("alice", "Alice-Pass-1", undefined));
		assert.deepEqual(alice.Roles, ["ROOT_GROUP", alice.Uuid]);
		assert.equal((await roles.directory.find(alice.Uuid))?.UserRole, true);
		const personalRoles = async () => (await roles.directory.all()).filter((r) => r.UserRole).length;
		const before = await personalRoles();
		await assert.rejects(users.put(admin, { Login: "alice", Password: "Another-Pass-1" }), ConflictError);
		assert.equal(await personalRoles(), before);
	});

	it("keeps profiles, groups and other users' settings to those allowed to change them", async () => {
		await assert.rejects(users.put(alice, { Login: "alice", Uuid: alice.Uuid, Attributes: { profile: "admin" } }), ForbiddenError);
		await assert.rejects(users.put(alice, { Login: "", IsGroup: true, GroupLabel: "mine" }), /Only administrators can create groups/);
		await assert.rejects(users.put(alice, { Login: "x", Password: "Long-Enough-1", Attributes: { "pydio:secret": "x" } }), /Attribute pydio:secret is reserved/);
		await assert.rejects(users.put(alice, { Login: "short", Password: "short" }), { code: 400 });
		await assert.rejects(users.put(alice, { Login: "admin", Uuid: admin.Uuid, Attributes: { displayName: "Me" } }), /not allowed to edit this user/);
		const bob = await users.put(alice, { Login: "bob", Password: "Bob-Pass-12" });
		assert.equal(bob.Attributes.profile, "shared", "a new user is shared unless told otherwise");
		const bobId = asIdentity(await users.checkPassword("bob", "Bob-Pass-12", undefined));
		await assert.rejects(users.put(bobId, { Login: "carol", Password: "Carol-Pass-1" }), /Shared users cannot create users/);
	});

	it("changes one's own password only with the old one", async () => {
		await assert.rejects(users.put(alice, { Login: "alice", Uuid: alice.Uuid, Password: "Alice-Pass-2", OldPassword: "wrong" }), UnauthorizedError);
		await users.put(alice, { Login: "alice", Uuid: alice.Uuid, Password: "Alice-Pass-2", OldPassword: "Alice-Pass-1" });
		await assert.rejects(users.checkPassword("alice", "Alice-Pass-1", undefined), UnauthorizedError);
		await users.checkPassword("alice", "Alice-Pass-2", undefined);
	});

	it("locks an account against new addresses after too many failures, not against where it logs in from", async () => {
		await users.checkPassword("alice", "Alice-Pass-2", "198.51.100.7");
		for (let i = 0; i < 3; i++) await assert.rejects(users.checkPassword("alice", "guess", "203.0.113.9"), UnauthorizedError);
		assert.ok(warnings.some((w) => /Account alice refuses logins from new addresses/.test(w)));
		await assert.rejects(users.checkPassword("alice", "Alice-Pass-2", "203.0.113.10"), /Too many failed logins/);
		await users.checkPassword("alice", "Alice-Pass-2", "198.51.100.7");
		await assert.rejects(users.checkPassword("nobody", "x", "203.0.113.9"), { code: 401 });
	});

	it("assigns roles the caller may assign, never another user's own role", async () => {
		await roles.put(admin, { Uuid: "team-x", Label: "Team X", IsTeam: true });
		await assert.rejects(users.putRoles(admin, { Login: "alice", Uuid: alice.Uuid, Roles: [{ Uuid: admin.Uuid }] }), /personal role of another user/);
		await assert.rejects(users.putRoles(admin, { Login: "alice", Uuid: alice.Uuid, Roles: [{ Uuid: "no-such-role" }] }), { code: 400 });
		await users.putRoles(admin, { Login: "alice", Uuid: alice.Uuid, Roles: [{ Uuid: "ROOT_GROUP" }, { Uuid: "team-x" }, { Uuid: alice.Uuid }] });
		const shown = await users.get(admin, "alice");
		assert.deepEqual(shown.Roles.map((r) => r.Uuid), ["ROOT_GROUP", "team-x", alice.Uuid]);
		assert.equal(shown.PoliciesContextEditable, true);
	});

	it("searches by role with each group path's and profile's roles looked up once, not once per user", async () => {
		const sales = await users.put(admin, { Login: "", IsGroup: true, GroupLabel: "sales", GroupPath: "/" });
		const emea = await users.put(admin, { Login: "", IsGroup: true, GroupLabel: "emea", GroupPath: "/sales" });
		await users.put(admin, { Login: "sam", Password: "Sam-Pass-123", GroupPath: "/sales", Attributes: { profile: "standard" } });
		await users.put(admin, { Login: "eve", Password: "Eve-Pass-123", GroupPath: "/sales/emea", Attributes: { profile: "shared" } });
		await users.put(admin, { Login: "ed", Password: "Ed-Pass-1234", GroupPath: "/sales/emea", Attributes: { profile: "admin" } });
		const everyone = await users.directory.all();
		const profiles = new Set(everyone.filter((u) => !u.IsGroup).map((u) => u.Attributes.profile || "standard"));
		// Per user, as a search used to: the expected hits.
		const holders = async (role: string) => {
			const out: string[] = [];
			for (const u of everyone) if ((await users.roleOrder(u)).includes(role)) out.push(u.Login ?? u.GroupLabel ?? "");
			return out.sort();
		};
		const names = (r: Awaited<ReturnType<UserAdmin["search"]>>) => [...(r.Users ?? []), ...(r.Groups ?? [])].map((u) => String(u.Login ?? u.GroupLabel)).sort();
		for (const [queries, operation, expected] of [
			[[{ HasRole: sales.Uuid }], "OR", ["ed", "emea", "eve", "sales", "sam"]],
			[[{ HasRole: emea.Uuid }, { HasRole: "team-x" }], "OR", ["alice", "ed", "emea", "eve"]],
			[[{ HasRole: sales.Uuid }, { HasRole: "ADMINS" }], "AND", ["ed"]],
			[[{ HasRole: "EXTERNAL_USERS", not: true }, { NodeType: "USER" }], "AND", ["admin", "alice", "ed", "sam"]],
		] as const) {
			Object.assign(calls, { autoApplied: 0, getMany: 0, groupByPath: 0 });
			const found = await users.search(admin, { Queries: [...queries], Operation: operation });
			assert.deepEqual(names(found), expected, JSON.stringify(queries));
			assert.ok(calls.autoApplied <= profiles.size, `${calls.autoApplied} roles.autoApplied calls for ${profiles.size} profiles`);
			// "/" has no group above, "/sales" one, "/sales/emea" two.
			assert.ok(calls.groupByPath <= 3, `${calls.groupByPath} group lookups for 3 group paths`);
			assert.equal(calls.getMany, 1, "the page's roles in one call");
			for (const u of [...(found.Users ?? []), ...(found.Groups ?? [])]) {
				const one = await users.present((await users.directory.byUuid(String(u.Uuid)))!, admin);
				assert.deepEqual(u.Roles, one.Roles, `${u.Login ?? u.GroupLabel}'s roles as shown alone`);
			}
		}
		// The same as each user's own role stack says.
		assert.deepEqual(await holders(sales.Uuid), ["ed", "emea", "eve", "sales", "sam"]);
		assert.deepEqual(await holders(emea.Uuid), ["ed", "emea", "eve"]);
		assert.deepEqual(await holders("team-x"), ["alice"]);
		assert.deepEqual(await holders("EXTERNAL_USERS"), ["bob", "eve"]);
	});

	it("shows and deletes users as their policies allow; a deleted user's role goes with them", async () => {
		await assert.rejects(users.get(alice, "nobody"), NotFoundError);
		assert.equal((await users.get(alice, "admin")).PoliciesContextEditable, false);
		await assert.rejects(users.removeUserOrGroup(admin, "admin"), /cannot delete yourself/);
		await assert.rejects(users.removeUserOrGroup(alice, "admin"), ForbiddenError);
		assert.deepEqual(await users.removeUserOrGroup(admin, "alice"), { Success: true, NumRows: 1 });
		await assert.rejects(users.get(admin, "alice"), NotFoundError);
		assert.equal(await roles.directory.find(alice.Uuid), undefined);
		await assert.rejects(users.removeUserOrGroup(admin, "/"), /root group cannot be deleted/);
	});
});
