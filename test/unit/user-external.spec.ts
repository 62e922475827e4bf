// Password logins through external directories (UserAdmin over an ExternalAuthenticator, faked here; the LDAP
// side is test/unit/directories.spec.ts), on SQLite and PostgreSQL: a directory user's local account made on
// the first login (its directory and DN recorded, in its directory's group, display name and mail from the
// directory) and refreshed on the next; a wrong password counts toward the lock like a local one; an outage
// counts for nothing and leaves local users alone; a local account is never opened by a directory.
import assert from "node:assert/strict";
import { RolesRepo } from "../../lib/db/roles";
import { UsersRepo } from "../../lib/db/users";
import { UnauthorizedError } from "../../lib/errors";
import { AUTH_DN_ATTRIBUTE, AUTH_SOURCE_ATTRIBUTE, type ExternalAccount, type ExternalAuthenticator, type ExternalOutcome } from "../../lib/identity/external-auth";
import { RoleAdmin } from "../../lib/identity/role-admin";
import { RoleDirectory } from "../../lib/identity/role-directory";
import { UserAdmin } from "../../lib/identity/user-admin";
import { UserDirectory } from "../../lib/identity/user-directory";
import { onEveryBackend } from "../helpers/db";
import { roleClientOf } from "../helpers/roles";

/** A directory in memory: accounts by login, or down. */
class FakeDirectories implements ExternalAuthenticator {
	down = false;
	readonly asked: { login: string; source?: string }[] = [];
	readonly accounts = new Map<string, { password: string; account: ExternalAccount }>();
	async authenticate(login: string, password: string, source?: string): Promise<ExternalOutcome> {
		this.asked.push({ login, ...(source ? { source } : {}) });
		if (this.down) return { status: "unavailable", reason: "connect ECONNREFUSED" };
		const a = this.accounts.get(login);
		if (!a || (source && a.account.source !== source)) return { status: "unknown" };
		return a.password === password ? { status: "ok", account: a.account } : { status: "rejected" };
	}
}

onEveryBackend("UserAdmin with external directories", (h) => {
	let users: UserAdmin;
	let ext: FakeDirectories;
	let directory: UserDirectory;

	before(async () => {
		const roles = new RoleAdmin(new RoleDirectory(new RolesRepo(h().db), async () => undefined));
		await roles.ensureDefaults();
		directory = new UserDirectory(new UsersRepo(h().db), async () => undefined);
		ext = new FakeDirectories();
		ext.accounts.set("alice", { password: "Alice-Ldap-1", account: { source: "corp", dn: "uid=alice,ou=people,dc=example,dc=org", login: "alice", displayName: "Alice Liddell", email: "alice@example.org", groupLabel: "example.org" } });
		ext.accounts.set("admin", { password: "Ldap-Admin-1", account: { source: "corp", dn: "uid=admin,ou=people,dc=example,dc=org", login: "admin" } });
		users = new UserAdmin(
			directory,
			roleClientOf(roles.directory),
			() => ({ maxFailed: 3, lockSeconds: 60, delayMaxSeconds: 0 }),
			() => undefined,
			ext,
		);
		await users.ensureAdmin("admin", "Local-Admin-1");
	});

	it("makes a directory user's local account on the first login, in its directory's group", async () => {
		const info = await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
		assert.equal(info.Login, "alice");
		assert.equal(info.Profile, "standard");
		assert.equal(info.GroupPath, "/example.org");
		const u = await directory.byLogin("alice");
		assert.equal(u?.Attributes[AUTH_SOURCE_ATTRIBUTE], "corp");
		assert.equal(u?.Attributes[AUTH_DN_ATTRIBUTE], "uid=alice,ou=people,dc=example,dc=org");
		assert.equal(u?.Attributes.displayName, "Alice Liddell");
		assert.equal(u?.PasswordHash, undefined, "the directory keeps the password");
		assert.equal((await directory.groupByPath("/example.org"))?.IsGroup, true);
		assert.ok(u?.LastConnected);
	});

	it("asks only that directory on the next logins, and takes its new display name", async () => {
		ext.asked.length = 0;
		const a = ext.accounts.get("alice");
		if (a) a.account = { ...a.account, displayName: "Alice L." };
		const info = await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
		assert.deepEqual(ext.asked, [{ login: "alice", source: "corp" }]);
		assert.equal((await directory.byUuid(info.Uuid))?.Attributes.displayName, "Alice L.");
	});

	it("counts a wrong directory password toward the lock, as a local one", async () => {
		for (let i = 0; i < 3; i++) await assert.rejects(users.checkPassword("alice", "guess", "203.0.113.9"), { code: 401, type: "login.failed" });
		await assert.rejects(users.checkPassword("alice", "Alice-Ldap-1", "203.0.113.10"), /Too many failed logins/);
		// From where it logged in before, the account still opens.
		await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
	});

	it("refuses a directory user while the directory is down, without counting it; local users log in", async () => {
		ext.down = true;
		try {
			for (let i = 0; i < 4; i++) await assert.rejects(users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1"), /directory of this account cannot be reached/);
			assert.equal((await directory.byLogin("alice"))?.Attributes.failedConnections, undefined);
			assert.equal((await users.checkPassword("admin", "Local-Admin-1", "192.0.2.1")).Profile, "admin");
			await assert.rejects(users.checkPassword("newcomer", "x", "192.0.2.1"), UnauthorizedError);
		} finally {
			ext.down = false;
		}
		await users.checkPassword("alice", "Alice-Ldap-1", "192.0.2.1");
	});

	it("never opens a local account with a directory's password, nor asks a directory for it", async () => {
		ext.asked.length = 0;
		await assert.rejects(users.checkPassword("admin", "Ldap-Admin-1", "192.0.2.1"), { code: 401 });
		assert.deepEqual(ext.asked, []);
		await assert.rejects(users.checkPassword("nobody", "whatever", "192.0.2.1"), { code: 401, type: "login.failed" });
		assert.deepEqual(ext.asked, [{ login: "nobody" }]);
	});
});
