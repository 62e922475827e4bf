// UsersRepo, one behaviour suite on SQLite and PostgreSQL: logins and group paths unique under concurrency, a
// taken login is a ConflictError, search by login prefix and group path.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError } from "../../lib/errors";
import { UsersRepo, type UserRecord } from "../../lib/db";
import { importNedbUsers } from "../../lib/db/users";
import { importNedbOnce, type NedbDoc } from "../../lib/db/nedb-import";
import { onEveryBackend } from "../helpers/db";

const user = (login: string, groupPath = "/", extra: Partial<UserRecord> = {}): UserRecord => ({
	Uuid: `u-${login}-${Math.random().toString(36).slice(2, 8)}`,
	Login: login,
	GroupPath: groupPath,
	Attributes: { displayName: login.toUpperCase() },
	Roles: [],
	Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }],
	...extra,
});
const group = (path: string, label: string): UserRecord => ({ Uuid: `g-${path}-${label}`, IsGroup: true, GroupPath: path, GroupLabel: label, Attributes: {}, Roles: [], Policies: [] });

async function conflict(p: Promise<unknown>): Promise<ConflictError> {
	try {
		await p;
	} catch (err) {
		assert.ok(err instanceof ConflictError, `expected ConflictError, got ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`);
		return err;
	}
	assert.fail("expected a ConflictError");
}

onEveryBackend("UsersRepo", (h) => {
	let users: UsersRepo;
	before(() => {
		users = new UsersRepo(h().db);
	});

	it("creates a user and reads it back by login and by uuid, every field as written", async () => {
		const u = user("alice", "/", { PasswordHash: "scrypt$abc", LastConnected: 1700000000, CreatedAt: 1690000000, Roles: ["r1", "r2"] });
		const created = await users.create(u);
		assert.deepEqual(created, u);
		assert.deepEqual(await users.byLogin("alice"), u);
		assert.deepEqual(await users.byUuid(u.Uuid), u);
		assert.equal(await users.byLogin("Alice"), null, "logins are case-sensitive");
		assert.equal(await users.byLogin("nobody"), null);
	});

	it("refuses a taken login with ConflictError (user.exists), and leaves the first user as it was", async () => {
		const err = await conflict(users.create(user("alice")));
		assert.equal(err.code, 409);
		assert.equal(err.type, "user.exists");
		assert.equal((await users.search({ loginPrefix: "alice" })).length, 1);
	});

	it("20 concurrent creates of one login: exactly one is created, 19 get ConflictError", async () => {
		const db2 = await h().second();
		const repos = [users, new UsersRepo(db2)];
		const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => repos[i % 2].create(user("racer"))));
		const ok = results.filter((r) => r.status === "fulfilled");
		const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
		assert.equal(ok.length, 1);
		assert.equal(failed.length, 19);
		for (const f of failed) assert.ok(f.reason instanceof ConflictError, `${(f.reason as Error)?.message}`);
		assert.equal((await users.search({ loginPrefix: "racer" })).length, 1);
	});

	it("keeps group full paths unique, users in a group path not constrained", async () => {
		await users.create(group("/", "sales"));
		await users.create(group("/sales", "emea"));
		const err = await conflict(users.create({ ...group("/", "sales"), Uuid: "g-other" }));
		assert.equal(err.type, "group.exists");
		await users.create(user("bob", "/sales"));
		await users.create(user("carol", "/sales"));
		assert.equal((await users.groupByPath("/sales/emea"))?.GroupLabel, "emea");
		assert.equal((await users.groupByPath("/sales"))?.IsGroup, true);
		assert.equal(await users.groupByPath("/nope"), null);
	});

	it("refuses a row that is neither a user nor a group", async () => {
		await assert.rejects(users.create({ Uuid: "broken", GroupPath: "/", Attributes: {}, Roles: [], Policies: [] }));
		assert.equal(await users.byUuid("broken"), null);
	});

	it("updates a user; renaming it to a taken login is a ConflictError that changes nothing", async () => {
		const bob = (await users.byLogin("bob")) as UserRecord;
		const updated = await users.update({ ...bob, Attributes: { displayName: "Robert", email: "bob@example.com" }, Roles: ["team"] });
		assert.deepEqual(updated?.Attributes, { displayName: "Robert", email: "bob@example.com" });
		assert.deepEqual((await users.byLogin("bob"))?.Roles, ["team"]);
		const err = await conflict(users.update({ ...bob, Login: "alice" }));
		assert.equal(err.type, "user.exists");
		assert.equal((await users.byUuid(bob.Uuid))?.Login, "bob");
		const renamed = await users.update({ ...bob, Login: "robert" });
		assert.equal(renamed?.Login, "robert");
		assert.equal(await users.byLogin("bob"), null);
		assert.equal(await users.update({ ...bob, Uuid: "does-not-exist" }), null);
		assert.equal(await users.touchLastConnected(bob.Uuid, 1234), true);
		assert.equal((await users.byUuid(bob.Uuid))?.LastConnected, 1234);
	});

	it("searches by login prefix (ASCII case folded) and by group path, flat or recursive, with counts and pages", async () => {
		await users.create(user("ALBERT", "/sales/emea"));
		await users.create(user("alfred", "/support"));
		const logins = async (q: Parameters<UsersRepo["search"]>[0]) => (await users.search(q)).map((u) => u.Login ?? `[${u.GroupLabel}]`);
		assert.deepEqual(await logins({ loginPrefix: "al" }), ["ALBERT", "alfred", "alice"]);
		assert.deepEqual(await logins({ loginPrefix: "ALF" }), ["alfred"]);
		assert.deepEqual(await logins({ loginPrefix: "zz" }), []);
		assert.deepEqual(await logins({ groupPath: "/sales" }), ["[emea]", "carol", "robert"]);
		assert.deepEqual(await logins({ groupPath: "/sales", recursive: true }), ["[emea]", "ALBERT", "carol", "robert"]);
		assert.deepEqual(await logins({ groupPath: "/sales/", recursive: true, kind: "user" }), ["ALBERT", "carol", "robert"]);
		// "/salesforce" starts with "/sales" but is not under it.
		await users.create(user("dave", "/salesforce"));
		assert.ok(!(await logins({ groupPath: "/sales", recursive: true })).includes("dave"));
		assert.equal(await users.count({ kind: "group" }), 2);
		assert.equal(await users.count({ groupPath: "/", recursive: true }), await users.count());
		const all = await logins({ kind: "user" });
		assert.deepEqual(await logins({ kind: "user", offset: 2, limit: 2 }), all.slice(2, 4));
		assert.deepEqual(await logins({ kind: "user", offset: 3 }), all.slice(3));
	});

	it("deletes", async () => {
		const u = (await users.byLogin("alfred")) as UserRecord;
		assert.equal(await users.delete(u.Uuid), true);
		assert.equal(await users.delete(u.Uuid), false);
		assert.equal(await users.byLogin("alfred"), null);
		// The login is free again.
		await users.create(user("alfred"));
	});

	it("keeps the login guard, and lists every user and group", async () => {
		const guard = { Failures: [{ IP: "192.0.2.1", Count: 4, Last: 1700000000000 }], Known: [{ IP: "192.0.2.9", At: 1690000000000 }], LockedUntil: 1700000600000 };
		const u = await users.create(user("guarded", "/", { LoginGuard: guard }));
		assert.deepEqual((await users.byUuid(u.Uuid))?.LoginGuard, guard);
		await users.update({ ...u, LoginGuard: undefined });
		assert.equal((await users.byUuid(u.Uuid))?.LoginGuard, undefined);
		const all = await users.all();
		assert.equal(all.length, await users.count());
		assert.ok(all.some((x) => x.IsGroup) && all.some((x) => x.Login === "guarded"));
	});

	it("records login bookkeeping alone: a password or attribute changed since the login read the user stays", async () => {
		const u = await users.create(user("bookkeeper", "/", { PasswordHash: "old-hash", Attributes: { displayName: "B", failedConnections: "2" } }));
		// Meanwhile (another request, another node): a new password and a new display name.
		await users.update({ ...u, PasswordHash: "new-hash", Attributes: { ...u.Attributes, displayName: "Book" } });
		const guard = { Known: [{ IP: "192.0.2.5", At: 1 }] };
		const after = await users.recordLogin(u.Uuid, { failedConnections: null, loginGuard: guard, lastConnected: 1234 });
		assert.equal(after?.PasswordHash, "new-hash");
		assert.deepEqual(after?.Attributes, { displayName: "Book" });
		assert.deepEqual(after?.LoginGuard, guard);
		assert.equal(after?.LastConnected, 1234);
		const failed = await users.recordLogin(u.Uuid, { failedConnections: 3, loginGuard: undefined });
		assert.deepEqual(failed?.Attributes, { displayName: "Book", failedConnections: "3" });
		assert.equal(failed?.LoginGuard, undefined);
		assert.equal(failed?.LastConnected, 1234, "a failure leaves the last connection");
		assert.equal(await users.recordLogin("nobody", { failedConnections: null, loginGuard: undefined }), null);
	});

	it("counts 20 concurrent failed logins of one account from two handles, each on the stored record: none lost", async () => {
		const u = (await users.byLogin("bookkeeper")) as UserRecord;
		await users.recordLogin(u.Uuid, { failedConnections: null, loginGuard: undefined });
		const db2 = await h().second();
		const repos = [users, new UsersRepo(db2)];
		await Promise.all(
			Array.from({ length: 20 }, (_, i) =>
				repos[i % 2].recordLogin(u.Uuid, (current) => ({
					failedConnections: Number(current.Attributes.failedConnections ?? 0) + 1,
					loginGuard: { Failures: [...(current.LoginGuard?.Failures ?? []), { IP: `192.0.2.${i}`, Count: 1, Last: i }] },
				})),
			),
		);
		const after = (await users.byUuid(u.Uuid)) as UserRecord;
		assert.equal(after.Attributes.failedConnections, "20");
		assert.equal(after.LoginGuard?.Failures?.length, 20);
	});

	it("adds members only under existing groups, and a group deleted while members are added leaves none behind", async () => {
		assert.equal(await users.createInGroup(user("homeless", "/no/such")), null);
		assert.equal(await users.byLogin("homeless"), null);
		await users.create(group("/", "doomed"));
		await users.create(group("/doomed", "inner"));
		assert.ok(await users.createInGroup(user("resident", "/doomed/inner")));
		const db2 = await h().second();
		const repos = [users, new UsersRepo(db2)];
		const adds = Array.from({ length: 20 }, (_, i) => repos[i % 2].createInGroup(user(`late${i}`, i % 3 ? "/doomed" : "/doomed/inner")));
		const [deleted] = await Promise.all([users.deleteGroupTree("/doomed"), ...adds]);
		assert.ok(deleted.some((d) => d.Login === "resident"));
		assert.equal(await users.groupByPath("/doomed"), null);
		assert.equal(await users.count({ groupPath: "/doomed", recursive: true }), 0, "no member left in a deleted group");
	});

	it("deletes a group with everything under it, not its namesakes' members", async () => {
		await users.create(group("/", "tree"));
		await users.create(group("/tree", "sub"));
		await users.create(user("leaf1", "/tree"));
		await users.create(user("leaf2", "/tree/sub"));
		await users.create(group("/", "treehouse"));
		await users.create(user("outsider", "/treehouse"));
		const victims = await users.deleteGroupTree("/tree/");
		assert.deepEqual(victims.map((v) => v.Login ?? `[${v.GroupLabel}]`).sort(), ["[sub]", "[tree]", "leaf1", "leaf2"]);
		assert.equal(await users.groupByPath("/tree"), null);
		assert.ok(await users.groupByPath("/treehouse"));
		assert.ok(await users.byLogin("outsider"));
		assert.deepEqual(await users.deleteGroupTree("/nope"), []);
		assert.deepEqual(await users.deleteGroupTree("/"), []);
	});

	it("imports the users and groups of an NeDB DATA_DIR once, leaving out what the schema refuses", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-users-"));
		try {
			mkdirSync(join(dir, "db"));
			const docs = [
				{ _id: "n-g", Uuid: "n-g", GroupPath: "/", IsGroup: true, GroupLabel: "imported", Attributes: { displayName: "Imported" }, Roles: [], Policies: [], CreatedAt: 5 },
				{ _id: "n-u", Uuid: "n-u", Login: "nedbuser", GroupPath: "/imported", Attributes: { profile: "standard" }, PasswordHash: "scrypt$x", Roles: ["r"], Policies: [], LastConnected: 9, LoginGuard: { Known: [{ IP: "192.0.2.3", At: 1 }] } },
				{ _id: "n-dup", Uuid: "n-dup", Login: "nedbuser", GroupPath: "/", Attributes: {}, Roles: [], Policies: [] },
				{ _id: "n-nologin", Uuid: "n-nologin", GroupPath: "/", Attributes: {}, Roles: [], Policies: [] },
			];
			writeFileSync(join(dir, "db", "users.db"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");
			const skipped: string[] = [];
			const report = await importNedbOnce(h().db, dir, "users", (trx, d) => importNedbUsers(trx, d, (doc: NedbDoc) => skipped.push(doc._id)));
			assert.equal(report.imported, true);
			assert.deepEqual(skipped.sort(), ["n-dup", "n-nologin"]);
			const { _id, ...expected } = docs[1];
			assert.deepEqual(await users.byLogin("nedbuser"), expected);
			assert.equal((await users.groupByPath("/imported"))?.Uuid, "n-g");
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
