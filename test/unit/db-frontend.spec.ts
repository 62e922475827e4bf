// BinariesRepo, TotpRepo and StatsRepo on SQLite and PostgreSQL: images read back byte for byte and are replaced
// whole; TOTP state changes are conditional (one activation, each time step once); counts over the store.
import assert from "node:assert/strict";
import { BinariesRepo, TotpRepo } from "../../lib/db/frontend";
import { StatsRepo } from "../../lib/db/stats";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("Front-end repositories", (h) => {
	it("stores an image, replaces it whole, and finds it by owner or by id", async () => {
		const repo = new BinariesRepo(h().db);
		const bytes = Buffer.from([0, 1, 2, 255, 0x89, 0x50]);
		await repo.put({ kind: "USER", owner: "u1", id: "aaaaaaaaaaaa.png", mime: "image/png", data: bytes, createdAt: 100 });
		const got = await repo.byOwner("USER", "u1");
		assert.ok(got?.data.equals(bytes));
		assert.equal(got?.mime, "image/png");
		await repo.put({ kind: "USER", owner: "u1", id: "bbbbbbbbbbbb.jpg", mime: "image/jpeg", data: Buffer.from([9]), createdAt: 200 });
		assert.deepEqual(await repo.byOwner("USER", "u1"), { kind: "USER", owner: "u1", id: "bbbbbbbbbbbb.jpg", mime: "image/jpeg", data: Buffer.from([9]), createdAt: 200 });
		assert.equal(await repo.byId("USER", "aaaaaaaaaaaa.png"), null);
		assert.equal((await repo.byId("USER", "bbbbbbbbbbbb.jpg"))?.owner, "u1");
		// The same owner name under the other kind is another image.
		assert.equal(await repo.byOwner("GLOBAL", "u1"), null);
		// Without the bytes: what a kept thumbnail is served from.
		assert.deepEqual(await repo.metaByOwner("USER", "u1"), { kind: "USER", owner: "u1", id: "bbbbbbbbbbbb.jpg", mime: "image/jpeg", createdAt: 200 });
		assert.deepEqual(await repo.metaById("USER", "bbbbbbbbbbbb.jpg"), await repo.metaByOwner("USER", "u1"));
		assert.equal(await repo.metaById("USER", "aaaaaaaaaaaa.png"), null);
		assert.equal(await repo.delete("USER", "u1"), true);
		assert.equal(await repo.byOwner("USER", "u1"), null);
		assert.equal(await repo.metaByOwner("USER", "u1"), null);
		// A deleted group's users, in one call, across statements; other owners and the other kind stay.
		const owners = Array.from({ length: 1203 }, (_, i) => `g${i}`);
		for (const owner of ["g0", "g600", "g1202", "other"]) await repo.put({ kind: "USER", owner, id: `${owner}.png`, mime: "image/png", data: bytes, createdAt: 1 });
		await repo.put({ kind: "GLOBAL", owner: "g0", id: "logo.png", mime: "image/png", data: bytes, createdAt: 1 });
		assert.equal(await repo.deleteOwners("USER", owners), 3);
		assert.deepEqual([await repo.metaByOwner("USER", "g600"), (await repo.metaByOwner("USER", "other"))?.id, (await repo.metaByOwner("GLOBAL", "g0"))?.id], [null, "other.png", "logo.png"]);
	});

	it("moves a TOTP factor pending -> active once, and accepts each step once", async () => {
		const repo = new TotpRepo(h().db);
		assert.equal(await repo.startPending("t1", "sealed-1", 10), true);
		assert.equal(await repo.startPending("t1", "sealed-2", 11), true, "a pending enrolment restarts");
		assert.equal((await repo.get("t1"))?.secret, "sealed-2");
		assert.equal(await repo.useStep("t1", 5), false, "no code is accepted before activation");
		const [a, b] = await Promise.all([repo.activate("t1", 100, 12), repo.activate("t1", 100, 12)]);
		assert.equal(Number(a) + Number(b), 1);
		assert.deepEqual(await repo.get("t1"), { userUuid: "t1", secret: "sealed-2", status: "active", createdAt: 11, enrolledAt: 12, lastStep: 100, failures: 0, blockedUntil: 0 });
		assert.equal(await repo.startPending("t1", "sealed-3", 13), false, "an active factor is not replaced");
		assert.equal(await repo.useStep("t1", 100), false);
		const [c, d] = await Promise.all([repo.useStep("t1", 101), repo.useStep("t1", 101)]);
		assert.equal(Number(c) + Number(d), 1);
		// Wrong codes: the third of a limit of 3 blocks and starts the count again; a good code resets it.
		assert.equal(await repo.recordFailure("t1", 3, 999), false);
		assert.equal(await repo.recordFailure("t1", 3, 999), false);
		assert.equal(await repo.recordFailure("t1", 3, 999), true);
		assert.deepEqual([(await repo.get("t1"))?.failures, (await repo.get("t1"))?.blockedUntil], [0, 999]);
		await repo.recordFailure("t1", 3, 5000);
		assert.equal(await repo.useStep("t1", 102), true);
		assert.equal((await repo.get("t1"))?.failures, 0);
		assert.equal(await repo.recordFailure("nobody", 3, 1), false);
		assert.equal(await repo.remove("t1"), true);
		assert.equal(await repo.get("t1"), null);
		for (const u of ["t2", "t3", "t4"]) await repo.startPending(u, "sealed", 1);
		assert.equal(await repo.removeMany(["t2", "t3", "nobody"]), 2);
		assert.deepEqual([await repo.get("t2"), (await repo.get("t4"))?.userUuid], [null, "t4"]);
	});

	it("counts users, groups, workspaces, files and their bytes", async () => {
		const repo = new StatsRepo(h().db);
		const k = h().db.kysely;
		const before = await repo.collect();
		const user = (uuid: string, login: string | null, group: string | null) => ({ uuid, login, group_path: "/", is_group: (group ? 1 : 0) as 0 | 1, group_label: group, attributes: "{}", password_hash: null, roles: "[]", policies: "[]", last_connected: null, created_at: 1, login_guard: null });
		await k.insertInto("users").values([user("st-u1", "st-one", null), user("st-u2", "st-two", null), user("st-g1", null, "st-group")]).execute();
		const ws = (uuid: string, scope: string) => ({ uuid, slug: uuid, label: uuid, description: "", scope, last_updated: 1, policies: "[]", policies_context_editable: 0 as const, attributes: "{}" });
		await k.insertInto("workspaces").values([ws("st-ws", "ADMIN"), ws("st-cell", "ROOM")]).execute();
		const node = (uuid: string, parent: string | null, path: string, type: "LEAF" | "COLLECTION", size: number) => ({ uuid, ds: "st-ds", parent, name: path.split("/").pop() ?? "", path, type, size, mtime: 1, etag: null, mode: null, key: null, meta: "{}", files: 0, folders: 0 });
		await k.insertInto("nodes").values([node("st-root", null, "", "COLLECTION", 1500), node("st-dir", "st-root", "d", "COLLECTION", 1500), node("st-f1", "st-dir", "d/a", "LEAF", 1000), node("st-f2", "st-root", "b", "LEAF", 500)]).execute();
		const after = await repo.collect();
		assert.deepEqual(
			{ users: after.users - before.users, groups: after.groups - before.groups, workspaces: after.workspaces - before.workspaces, cells: after.cells - before.cells, files: after.files - before.files, folders: after.folders - before.folders, filesBytes: after.filesBytes - before.filesBytes },
			// The datasource root is not a folder anyone made; folders' sizes are sums, not more bytes.
			{ users: 2, groups: 1, workspaces: 1, cells: 1, files: 2, folders: 1, filesBytes: 1500 },
		);
	});
});
