// DataSourcesRepo on SQLite and PostgreSQL, and DataSourceRegistry's defaults on it: configurations read back
// whole, create-if-absent decides once between two nodes, the NeDB collection imports.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DataSource } from "../../lib/datasources/model";
import { DataSourceRegistry } from "../../lib/datasources/registry";
import { openDatabase } from "../../lib/db";
import { DataSourcesRepo } from "../../lib/db/datasources";
import { onEveryBackend } from "../helpers/db";

const s3 = (name: string): DataSource => ({
	Name: name,
	StorageType: "S3",
	StorageConfiguration: { customEndpoint: "http://127.0.0.1:9000" },
	ObjectsBucket: `${name}-bucket`,
	ApiKey: "key",
	ApiSecret: "secret",
	FlatStorage: false,
	EncryptionMode: "CLEAR",
	CreationDate: 1700000000,
});

onEveryBackend("DataSourcesRepo", (h) => {
	let repo: DataSourcesRepo;
	before(() => {
		repo = new DataSourcesRepo(h().db);
	});

	it("reads a datasource back whole, secrets included; lists by name; put replaces", async () => {
		await repo.putDataSource(s3("zeta"));
		await repo.putDataSource(s3("alpha"));
		assert.deepEqual(await repo.dataSource("zeta"), s3("zeta"));
		assert.deepEqual((await repo.dataSources()).map((d) => d.Name), ["alpha", "zeta"]);
		await repo.putDataSource({ ...s3("zeta"), FlatStorage: true });
		assert.equal((await repo.dataSource("zeta"))?.FlatStorage, true);
		assert.equal(await repo.dataSource("nope"), null);
		assert.equal(await repo.deleteDataSource("zeta"), true);
		assert.equal(await repo.deleteDataSource("zeta"), false);
	});

	it("creates a datasource or a virtual node once, however many nodes try at once", async () => {
		const other = new DataSourcesRepo(await h().second());
		const ds = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : repo).createDataSource(s3("once"))));
		assert.equal(ds.filter(Boolean).length, 1);
		const vn = { Uuid: "vn-once", Path: "vn-once", MetaStore: { resolution: '"Path = DataSources.once;"' } };
		const vns = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : repo).createVirtualNode(vn)));
		assert.equal(vns.filter(Boolean).length, 1);
		assert.deepEqual(await repo.virtualNode("vn-once"), vn);
		await repo.putVirtualNode({ ...vn, MTime: 5 });
		assert.deepEqual(await repo.virtualNodes(), [{ ...vn, MTime: 5 }]);
		assert.equal(await repo.deleteVirtualNode("vn-once"), true);
	});

	it("imports the NeDB collection: datasources and virtual nodes, without their store keys", async () => {
		const fresh = await h().fresh();
		const db = await openDatabase(fresh);
		try {
			const n = await db.transaction((trx) =>
				DataSourcesRepo.importNedb(trx, [
					{ _id: "ds:pydiods1", kind: "datasource", Name: "pydiods1", StorageType: "LOCAL", StorageConfiguration: { folder: "pydiods1" }, FlatStorage: true },
					{ _id: "vn:my-files", kind: "virtualnode", Uuid: "my-files", Path: "my-files", MetaStore: { name: '"my-files"' } },
				]),
			);
			assert.deepEqual(n, { dataSources: 1, virtualNodes: 1 });
			const imported = new DataSourcesRepo(db);
			assert.deepEqual(await imported.dataSource("pydiods1"), { Name: "pydiods1", StorageType: "LOCAL", StorageConfiguration: { folder: "pydiods1" }, FlatStorage: true });
			assert.deepEqual(await imported.virtualNodes(), [{ Uuid: "my-files", Path: "my-files", MetaStore: { name: '"my-files"' } }]);
		} finally {
			await db.close();
		}
	});

	it("records one holder for a LOCAL datasource without one, however many nodes claim it at once", async () => {
		const other = new DataSourcesRepo(await h().second());
		const local = (name: string): DataSource => ({ Name: name, StorageType: "LOCAL", StorageConfiguration: { folder: name }, FlatStorage: true, EncryptionMode: "CLEAR", CreationDate: 1700000000 });
		await repo.putDataSource(local("claimed"));
		const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : repo).claimHolder("claimed", `node${i}`)));
		assert.equal(claims.filter((c) => c?.claimed).length, 1);
		const winner = claims.find((c) => c?.claimed)?.dataSource.PeerAddress;
		assert.ok(winner);
		// Every claimant, winner or not, reads the same holder; the rest of the configuration is untouched.
		for (const c of claims) assert.equal(c?.dataSource.PeerAddress, winner);
		assert.deepEqual(await other.dataSource("claimed"), { ...local("claimed"), PeerAddress: winner });
		// Once held, a claim changes nothing; S3 has no holder; an unknown name is null.
		assert.deepEqual(await repo.claimHolder("claimed", "late"), { dataSource: { ...local("claimed"), PeerAddress: winner }, claimed: false });
		await repo.putDataSource(s3("remote"));
		assert.deepEqual(await repo.claimHolder("remote", "late"), { dataSource: s3("remote"), claimed: false });
		assert.equal(await repo.claimHolder("nope", "late"), null);
	});

	it("two nodes ensuring the install defaults at once create each default once", async () => {
		const fresh = await h().fresh();
		const db1 = await openDatabase(fresh);
		// One process owns an SQLite file: the second node is the same handle there.
		const db2 = h().name === "postgres" ? await openDatabase(fresh) : db1;
		const dataDir = mkdtempSync(join(tmpdir(), "cellar-ds-defaults-"));
		try {
			const changes: unknown[] = [];
			const deps = { dataDir: () => dataDir, changed: async (p: unknown) => void changes.push(p), warn: () => undefined };
			const [a, b] = [new DataSourceRegistry(new DataSourcesRepo(db1), deps), new DataSourceRegistry(new DataSourcesRepo(db2), deps)];
			const [ca, cb] = await Promise.all([a.ensureDefaults(), b.ensureDefaults()]);
			const names = (await a.list()).map((d) => d.Name);
			assert.deepEqual([...ca, ...cb].sort(), [...names, ...(await a.virtualNodes()).map((v) => v.Uuid)].sort());
			assert.equal(changes.length, ca.length + cb.length);
			assert.deepEqual(await a.ensureDefaults(), []);
			// The defaults have no holder (an upgraded store, or a fresh one); two nodes claiming all at once share
			// nothing: each default ends with one holder, and only the winning claim tells the cluster.
			assert.ok((await a.list()).every((d) => !d.PeerAddress));
			changes.length = 0;
			const claims = await Promise.all(names.flatMap((n) => [a.claimHolder(n, "node-a"), b.claimHolder(n, "node-b")]));
			const held = await b.list();
			for (const n of names) {
				const holder = held.find((d) => d.Name === n)?.PeerAddress;
				assert.ok(holder === "node-a" || holder === "node-b", `${n}: ${holder}`);
				assert.deepEqual(claims.filter((c) => c.Name === n).map((c) => c.PeerAddress), [holder, holder]);
			}
			assert.deepEqual(changes.map((c) => (c as { name: string }).name).sort(), [...names].sort());
			await assert.rejects(a.claimHolder("nosuch", "node-a"), { code: 404 });
		} finally {
			await db1.close();
			if (db2 !== db1) await db2.close().catch(() => undefined);
			rmSync(dataDir, { recursive: true, force: true });
		}
	});
});
