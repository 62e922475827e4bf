// VersionsRepo on SQLite and PostgreSQL (policies, version records, the path ranges of folder deletes and moves),
// and VersionKeeper's first-run policies on it.
import assert from "node:assert/strict";
import type { VersionRecord } from "../../lib/versions/prune";
import { DEFAULT_POLICIES, DEFAULT_POLICY_ID } from "../../lib/versions/policy";
import { VersionKeeper } from "../../lib/versions/keeper";
import { openDatabase } from "../../lib/db";
import { VersionsRepo } from "../../lib/db/versions";
import { onEveryBackend } from "../helpers/db";

let seq = 0;
const version = (nodeUuid: string, path: string, extra: Partial<VersionRecord> = {}): VersionRecord => {
	const id = `v-${++seq}-${nodeUuid}`;
	return { _id: id, kind: "version", nodeUuid, ds: "ds1", path, size: 10, etag: `e${seq}`, mtime: 1700000000, owner: "u1", createdAt: 1700000000000 + seq, vds: "versions", key: `${nodeUuid}/${id}`, policy: "p1", ...extra };
};

onEveryBackend("VersionsRepo", (h) => {
	let repo: VersionsRepo;
	before(() => {
		repo = new VersionsRepo(h().db);
	});

	it("reads versions back as written, a node's oldest first", async () => {
		const a = version("n1", "docs/a.txt");
		const b = version("n1", "docs/a.txt", { reason: "delete", deletedAt: 5 });
		await repo.add(b);
		await repo.add(a);
		assert.deepEqual(await repo.ofNode("n1"), [a, b]);
		assert.deepEqual(await repo.version(b._id), b);
		assert.equal(await repo.version("nope"), null);
	});

	it("finds a folder's versions by path range: below it, not beside it", async () => {
		const inside = [version("n2", "docs/sub/b.txt"), version("n3", "docs/é/ü.txt"), version("n4", "docs/😀.txt")];
		const beside = [version("n5", "docs2/c.txt"), version("n6", "docs"), version("n7", "docs/x.txt", { ds: "other" })];
		for (const v of [...inside, ...beside]) await repo.add(v);
		const found = await repo.ofNodeOrUnder("folder-uuid", "ds1", "docs");
		assert.deepEqual(found.map((v) => v.nodeUuid).sort(), ["n1", "n1", "n2", "n3", "n4"]);
		assert.deepEqual((await repo.ofNodeOrUnder("n5", "ds1")).map((v) => v.nodeUuid), ["n5"]);
	});

	it("moves a folder's versions in one statement, and a file's by its uuid", async () => {
		assert.equal(await repo.moveUnder("ds1", "docs", "ds2", "archive/2024 ☃"), 5);
		assert.deepEqual((await repo.ofNode("n4")).map((v) => [v.ds, v.path]), [["ds2", "archive/2024 ☃/😀.txt"]]);
		assert.deepEqual((await repo.ofNode("n3")).map((v) => [v.ds, v.path]), [["ds2", "archive/2024 ☃/é/ü.txt"]]);
		assert.deepEqual((await repo.ofNode("n5")).map((v) => v.path), ["docs2/c.txt"]);
		assert.equal(await repo.moveNode("n5", "ds3", "moved.txt"), 1);
		assert.deepEqual((await repo.ofNode("n5")).map((v) => [v.ds, v.path]), [["ds3", "moved.txt"]]);
	});

	it("marks deleted once, removes once, walks the nodes that have versions", async () => {
		const [v] = await repo.ofNode("n2");
		await repo.markDeleted([v._id], 10);
		await repo.markDeleted([v._id], 20);
		assert.equal((await repo.version(v._id))?.deletedAt, 10);
		assert.equal(await repo.remove(v._id), true);
		assert.equal(await repo.remove(v._id), false);
		const nodes: string[] = [];
		for await (const n of repo.nodesWithVersions()) nodes.push(n);
		assert.deepEqual(nodes, ["n1", "n3", "n4", "n5", "n6", "n7"]);
		assert.equal((await repo.underPolicy("p1")).length, 7);
	});

	it("seeds the first-run policies once: a deleted one stays deleted, the default comes back", async () => {
		const keeper = new VersionKeeper(repo, { dataSource: async () => null, objectStore: async () => assert.fail("no store"), dropped: () => undefined, warn: () => undefined, error: () => undefined });
		await keeper.seedPolicies();
		assert.deepEqual((await repo.policies()).map((p) => p.Uuid).sort(), DEFAULT_POLICIES.map((p) => p.Uuid).sort());
		assert.deepEqual(await repo.policy(DEFAULT_POLICY_ID), DEFAULT_POLICIES.find((p) => p.Uuid === DEFAULT_POLICY_ID));
		const other = DEFAULT_POLICIES.find((p) => p.Uuid !== DEFAULT_POLICY_ID)!.Uuid;
		await repo.deletePolicy(other);
		await repo.deletePolicy(DEFAULT_POLICY_ID);
		await keeper.seedPolicies();
		assert.equal(await repo.policy(other), null);
		assert.ok(await repo.policy(DEFAULT_POLICY_ID));
		assert.equal((await keeper.policies())[0].Uuid, DEFAULT_POLICY_ID);
	});

	it("imports the NeDB collection: policies, the seeded list and versions", async () => {
		const fresh = await h().fresh();
		const db = await openDatabase(fresh);
		try {
			const p = { _id: "policy:p9", kind: "policy", Uuid: "p9", Name: "Nine", VersionsDataSourceName: "versions", KeepPeriods: [], NodeDeletedStrategy: "KeepAll" };
			const v = { _id: "v9", kind: "version", nodeUuid: "n9", ds: "ds1", path: "a", size: 1, etag: "e", mtime: 2, owner: "o", createdAt: 3, vds: "versions", key: "n9/v9", policy: "p9", reason: "delete" };
			const n = await db.transaction((trx) => VersionsRepo.importNedb(trx, [p, { _id: "meta:seeded", kind: "meta", seeded: ["p9"] }, v]));
			assert.deepEqual(n, { policies: 1, versions: 1 });
			const imported = new VersionsRepo(db);
			const { _id, kind, ...policy } = p;
			assert.deepEqual(await imported.policy("p9"), policy);
			assert.deepEqual(await imported.seededPolicies(), ["p9"]);
			assert.deepEqual(await imported.version("v9"), v);
		} finally {
			await db.close();
		}
	});
});
