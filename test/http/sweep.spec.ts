// What interrupted writes leave in storage is swept once old enough; fresh uploads in progress are left alone.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, renameSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { useNode } from "../helpers/node";

describe("HTTP: sweeping leftovers of interrupted writes", function () {
	this.timeout(30_000);
	const node = useNode();

	before(async () => {
		assert.equal((await node.api("POST", "/a/config/datasource/sweepme", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "sweepme" } }, node.admin)).status, 200);
	});

	it("removes old staged uploads and temp files, keeps recent ones", async () => {
		const root = join(node.dataDir, "sweepme");
		const day = 24 * 3600;
		const old = Date.now() / 1000 - 2 * day;
		const files = { oldStaged: join(root, ".cellar-staging", "old.part"), newStaged: join(root, ".cellar-staging", "new.part"), oldTmp: join(root, ".cellar-tmp", "old.tmp") };
		for (const f of Object.values(files)) {
			mkdirSync(join(f, ".."), { recursive: true });
			writeFileSync(f, "x");
		}
		utimesSync(files.oldStaged, old, old);
		utimesSync(files.oldTmp, old, old);
		const user = await node.broker.call("auth.resolve", { token: node.admin });
		const r = await node.broker.call<{ Removed: number }, { maxAgeMs: number }>("tree.sweep", { maxAgeMs: day * 1000 }, { meta: { user } });
		assert.ok(r.Removed >= 2);
		assert.ok(!existsSync(files.oldStaged));
		assert.ok(!existsSync(files.oldTmp));
		assert.ok(existsSync(files.newStaged));
	});

	it("removes objects of a flat datasource that no node points to, once old, and nothing else", async () => {
		const root = join(node.dataDir, "pydiods1");
		const day = 24 * 3600;
		const old = Date.now() / 1000 - 2 * day;
		const put = await fetch(`${node.url}/io/common-files/sweep/kept.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": node.admin }, body: "kept content" });
		assert.equal(put.status, 200);
		const uuid = (await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/sweep/kept.txt")}`, undefined, node.admin)).body.Node.Uuid as string;
		assert.ok(existsSync(join(root, uuid)), "flat content lives at the node's uuid");
		const plant = (name: string, age: number | null) => {
			writeFileSync(join(root, name), "x");
			if (age !== null) utimesSync(join(root, name), age, age);
			return join(root, name);
		};
		const orphan = plant(randomUUID(), old);
		const superseded = plant(`${uuid}.m0ld1234`, old);
		const fresh = plant(randomUUID(), null);
		const foreign = plant("notes.txt", old);
		utimesSync(join(root, uuid), old, old);
		const user = await node.broker.call("auth.resolve", { token: node.admin });
		// Without `orphans` (the hourly run) nothing of this is touched.
		await node.broker.call("tree.sweep", { maxAgeMs: day * 1000 }, { meta: { user } });
		assert.ok(existsSync(orphan));
		await node.broker.call("tree.sweep", { maxAgeMs: day * 1000, orphans: true }, { meta: { user } });
		assert.ok(!existsSync(orphan), "an old object no node points to is removed");
		assert.ok(!existsSync(superseded), "an old replaced version of a node's content is removed");
		assert.ok(existsSync(fresh), "a recent object may be an upload about to be committed");
		assert.ok(existsSync(foreign), "what this service did not write is left alone");
		const got = await fetch(`${node.url}/io/common-files/sweep/kept.txt`, { headers: { "X-Pydio-Bearer": node.admin } });
		assert.equal(await got.text(), "kept content");

		// Two first uploads of one path racing leave the node (the first one's uuid) on the second one's object:
		// an object is kept whenever some node points to it, whatever uuid its key carries.
		const put2 = await fetch(`${node.url}/io/common-files/sweep/raced.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": node.admin }, body: "raced content" });
		assert.equal(put2.status, 200);
		const raced = (await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/sweep/raced.txt")}`, undefined, node.admin)).body.Node.Uuid as string;
		const other = randomUUID();
		renameSync(join(root, raced), join(root, other));
		const tree = node.broker.getLocalService("tree") as unknown as { ops: { index: { setKey(uuid: string, key: string): Promise<void> } } };
		await tree.ops.index.setKey(raced, other);
		utimesSync(join(root, other), old, old);
		await node.broker.call("tree.sweep", { maxAgeMs: day * 1000, orphans: true }, { meta: { user } });
		assert.ok(existsSync(join(root, other)));
		const got2 = await fetch(`${node.url}/io/common-files/sweep/raced.txt`, { headers: { "X-Pydio-Bearer": node.admin } });
		assert.equal(await got2.text(), "raced content");
	});
});
