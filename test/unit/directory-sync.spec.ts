// Directory synchronisation and mapping, end to end in one process: an LDAP server (test/helpers/ldap, users
// with groups), lib/directories (DirectorySync, DirectoriesAdmin as the login's authenticator) and UserAdmin
// on SQLite and PostgreSQL. A sync makes the directory's users (as a first login does) with their mapped
// attributes and roles (memberOf, prefixed), refreshes them, locks the users the directory lost and unlocks
// them when it has them again (an admin's lock kept), reports entries it cannot take and goes on; group roles
// by a GroupFilter search at login, admin roles kept; SyncOnly refuses logins the sync has not brought; the
// schedule decides when a tick runs.
import assert from "node:assert/strict";
import { RolesRepo } from "../../lib/db/roles";
import { UsersRepo } from "../../lib/db/users";
import { DirectoriesAdmin } from "../../lib/directories/admin";
import type { DirectoryConfig } from "../../lib/directories/model";
import { DirectorySync } from "../../lib/directories/sync";
import { AUTH_SOURCE_ATTRIBUTE } from "../../lib/identity/external-auth";
import { RoleAdmin } from "../../lib/identity/role-admin";
import { RoleDirectory } from "../../lib/identity/role-directory";
import { UserAdmin } from "../../lib/identity/user-admin";
import { UserDirectory } from "../../lib/identity/user-directory";
import { isLocked, locksOf } from "../../lib/identity/users";
import { onEveryBackend } from "../helpers/db";
import { roleClientOf } from "../helpers/roles";
import { BASE, BIND_DN, BIND_PW, GROUPS, MemDirectoryStore, startDirectory, type TestDirectory } from "../helpers/ldap";

const EVERY_10_MIN = "R/2024-01-01T00:00:00Z/PT10M";

onEveryBackend("directory synchronisation and mapping", (h) => {
	let ldap: TestDirectory;
	let store: MemDirectoryStore;
	let dirs: DirectoriesAdmin;
	let users: UserAdmin;
	let directory: UserDirectory;
	let roles: RoleAdmin;
	let sync: DirectorySync;
	const logs: string[] = [];
	const config = (over: DirectoryConfig = {}): DirectoryConfig => ({
		Host: ldap.host,
		BindDN: BIND_DN,
		BindPW: BIND_PW,
		DomainName: "example.org",
		PageSize: 2,
		User: { DNs: [BASE], Filter: "(objectClass=inetOrgPerson)", IDAttribute: "uid", DisplayAttribute: "cn" },
		...over,
	});

	before(async () => {
		ldap = await startDirectory([
			{ uid: "alice", password: "Alice-Ldap-1", cn: "Alice Liddell", mail: "alice@example.org", groups: ["staff", "admins"], employeeType: "manager" },
			{ uid: "bob", password: "Bob-Ldap-1", groups: ["staff"], employeeType: "intern" },
			{ uid: "carol", password: "Carol-Ldap-1" },
		]);
		roles = new RoleAdmin(new RoleDirectory(new RolesRepo(h().db), async () => undefined));
		await roles.ensureDefaults();
		directory = new UserDirectory(new UsersRepo(h().db), async () => undefined);
		store = new MemDirectoryStore();
		dirs = new DirectoriesAdmin(store, 3000);
		users = new UserAdmin(
			directory,
			roleClientOf(roles.directory),
			() => ({ maxFailed: 3, lockSeconds: 60, delayMaxSeconds: 0 }),
			() => undefined,
			dirs,
		);
		sync = new DirectorySync(store, (source, accounts, complete) => users.syncExternal(source, accounts, complete), (m) => logs.push(m), 100, 3000);
	});
	after(() => ldap.stop());

	it("creates the directory's users with their mapped attributes and memberOf roles, prefixed", async () => {
		await dirs.put("corp", config({ Schedule: EVERY_10_MIN, RolePrefix: "ldap_", MemberOfMapping: { RealMemberOf: true, Mapping: { LeftAttribute: "cn" } } }));
		const out = await sync.syncOne((await store.get("corp")) as DirectoryConfig);
		assert.ok(out.ok, JSON.stringify(out));
		assert.equal(out.complete, true);
		assert.deepEqual({ ...out.report, skipped: out.report.skipped.length }, { created: 3, updated: 0, locked: 0, unlocked: 0, skipped: 0, failed: [] });
		const alice = await directory.byLogin("alice");
		assert.equal(alice?.GroupPath, "/example.org");
		assert.equal(alice?.Attributes[AUTH_SOURCE_ATTRIBUTE], "corp");
		assert.equal(alice?.Attributes.displayName, "Alice Liddell");
		assert.equal(alice?.Attributes.email, "alice@example.org");
		assert.deepEqual(alice?.Roles, ["ldap_admins", "ldap_staff"]);
		assert.deepEqual((await directory.byLogin("bob"))?.Roles, ["ldap_staff"]);
		assert.deepEqual((await directory.byLogin("carol"))?.Roles, []);
		assert.deepEqual((await roles.directory.many(["ldap_admins", "ldap_staff"])).map((r) => r.Label).sort(), ["ldap_admins", "ldap_staff"]);
		// Made by the sync, they log in with the directory's password.
		assert.equal((await users.checkPassword("bob", "Bob-Ldap-1", "192.0.2.1")).Login, "bob");
	});

	it("refreshes users, locks those the directory lost, unlocks them when it has them again", async () => {
		const carol = ldap.users.find((u) => u.uid === "carol");
		ldap.users = ldap.users.filter((u) => u.uid !== "carol");
		ldap.users.find((u) => u.uid === "bob")?.groups?.push("admins");
		const out = await sync.syncOne((await store.get("corp")) as DirectoryConfig);
		assert.ok(out.ok);
		assert.equal(out.report.locked, 1);
		assert.equal(out.report.updated, 1);
		assert.deepEqual((await directory.byLogin("bob"))?.Roles, ["ldap_admins", "ldap_staff"]);
		const gone = await directory.byLogin("carol");
		assert.ok(gone && isLocked(gone), "the lost user is locked, not deleted");
		await assert.rejects(users.checkPassword("carol", "Carol-Ldap-1", "192.0.2.1"), { code: 401 });
		// A second run leaves it as it is.
		const again = await sync.syncOne((await store.get("corp")) as DirectoryConfig);
		assert.ok(again.ok && again.report.locked === 0);

		if (carol) ldap.users.push(carol);
		const back = await sync.syncOne((await store.get("corp")) as DirectoryConfig);
		assert.ok(back.ok && back.report.unlocked === 1);
		const found = await directory.byLogin("carol");
		assert.ok(found && !isLocked(found));
		assert.equal((await users.checkPassword("carol", "Carol-Ldap-1", "192.0.2.1")).Login, "carol");
	});

	it("keeps an administrator's lock when the directory loses and finds the user again", async () => {
		const bob = await directory.byLogin("bob");
		assert.ok(bob);
		await directory.save({ ...bob, Attributes: { ...bob.Attributes, locks: JSON.stringify(["logout"]) } });
		const bobEntry = ldap.users.find((u) => u.uid === "bob");
		ldap.users = ldap.users.filter((u) => u.uid !== "bob");
		assert.ok((await sync.syncOne((await store.get("corp")) as DirectoryConfig)).ok);
		if (bobEntry) ldap.users.push(bobEntry);
		assert.ok((await sync.syncOne((await store.get("corp")) as DirectoryConfig)).ok);
		const after = await directory.byLogin("bob");
		assert.deepEqual(after && locksOf(after), ["logout"]);
		await assert.rejects(users.checkPassword("bob", "Bob-Ldap-1", "192.0.2.1"), { type: "user.locked" });
		await directory.save({ ...(after as NonNullable<typeof after>), Attributes: { ...after?.Attributes, locks: "[]" } });
	});

	it("reports an entry it cannot make a user of, and goes on with the others", async () => {
		ldap.users.push({ uid: "bad..login", password: "x" }, { uid: "frank", password: "Frank-Ldap-1" });
		const out = await sync.syncOne((await store.get("corp")) as DirectoryConfig);
		assert.ok(out.ok);
		assert.equal(out.report.failed.length, 1);
		assert.match(out.report.failed[0], /^bad\.\.login: Login contains forbidden characters/);
		assert.ok(await directory.byLogin("frank"));
		ldap.users = ldap.users.filter((u) => u.uid !== "bad..login");
	});

	it("changes nothing when the directory cannot be read", async () => {
		const out = await sync.syncOne({ ...((await store.get("corp")) as DirectoryConfig), BindPW: "wrong" });
		assert.equal(out.ok, false);
		const alice = await directory.byLogin("alice");
		assert.ok(alice && !isLocked(alice));
	});

	it("maps groups found by a GroupFilter search and MappingRules at login, keeping an admin's roles", async () => {
		await roles.directory.ensure({ Uuid: "hand-picked", Label: "Hand picked" });
		const alice = await directory.byLogin("alice");
		assert.ok(alice);
		await directory.save({ ...alice, Roles: [...alice.Roles, "hand-picked"] });
		await dirs.put(
			"corp",
			config({
				RolePrefix: "grp_",
				MemberOfMapping: { GroupFilter: { DNs: [GROUPS], Filter: "(objectClass=groupOfNames)" }, Mapping: { LeftAttribute: "cn", RuleString: "admins" } },
				MappingRules: [
					{ LeftAttribute: "employeeType", RightAttribute: "Roles", RolePrefix: "type_", RuleString: "manager, director" },
					{ LeftAttribute: "uid", RightAttribute: "displayName" },
				],
			}),
		);
		await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
		const after = await directory.byLogin("alice");
		// The directory's former roles (ldap_*) go, the admin's stay; only the groups the RuleString keeps count.
		assert.deepEqual(after?.Roles, ["hand-picked", "grp_admins", "type_manager"]);
		assert.equal(after?.Attributes.displayName, "alice");
		// A directory that maps no roles any more takes back those it gave, not the admin's.
		await dirs.put("corp", config());
		await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
		assert.deepEqual((await directory.byLogin("alice"))?.Roles, ["hand-picked"]);
	});

	it("SyncOnly: a login the synchronisation has not brought is refused, a synchronised one logs in", async () => {
		ldap.users.push({ uid: "dave", password: "Dave-Ldap-1", groups: ["staff"] });
		await dirs.put("corp", config({ Schedule: EVERY_10_MIN, SyncOnly: true }));
		await assert.rejects(users.checkPassword("dave", "Dave-Ldap-1", "192.0.2.1"), { type: "login.failed" });
		assert.equal(await directory.byLogin("dave"), undefined);
		assert.ok((await sync.syncOne((await store.get("corp")) as DirectoryConfig)).ok);
		assert.equal((await users.checkPassword("dave", "Dave-Ldap-1", "192.0.2.1")).Login, "dave");
	});

	it("runs a directory when its schedule has an occurrence since the last run, not before", async () => {
		ldap.users.push({ uid: "erin", password: "Erin-Ldap-1" });
		const t0 = Date.parse("2030-01-01T00:01:00Z");
		await sync.tick(t0);
		await sync.tick(t0 + 60_000);
		assert.equal(await directory.byLogin("erin"), undefined, "no occurrence yet");
		await sync.tick(t0 + 9 * 60_000);
		assert.ok(await directory.byLogin("erin"), "00:10 has passed");
		assert.ok(logs.some((m) => /Directory corp synchronised: 1 created/.test(m)), logs.join("\n"));
	});
});
