// What interrupted writes leave in storage is swept once old enough; fresh uploads in progress are left alone.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";

describe("HTTP: sweeping leftovers of interrupted writes", function () {
	this.timeout(30_000);
	let node: TestNode;
	let admin: string;

	before(async () => {
		node = await startNode();
		admin = await node.login("admin", node.adminPassword);
		assert.equal((await node.api("POST", "/a/config/datasource/sweepme", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "sweepme" } }, admin)).status, 200);
	});
	after(() => node.stop());

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
		const user = await node.broker.call("auth.resolve", { token: admin });
		const r = await node.broker.call<{ Removed: number }, { maxAgeMs: number }>("tree.sweep", { maxAgeMs: day * 1000 }, { meta: { user } });
		assert.ok(r.Removed >= 2);
		assert.ok(!existsSync(files.oldStaged));
		assert.ok(!existsSync(files.oldTmp));
		assert.ok(existsSync(files.newStaged));
	});
});
