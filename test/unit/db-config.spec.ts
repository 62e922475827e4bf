// ConfigRepo and ConfigTree on SQLite and PostgreSQL: subtrees read as key ranges (a sibling whose name merely
// starts the same is not part of it), replaced atomically (a failing write leaves the old subtree whole), an
// ancestor leaf replaced by a subtree, and concurrent writers from two handles ending in one of the written trees.
import assert from "node:assert/strict";
import { ConfigRepo } from "../../lib/db/config";
import { ConfigTree, assemble, flatten } from "../../lib/config-tree/tree";
import { FRONTEND_SCHEMAS } from "../../lib/config-tree/schemas";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("ConfigRepo", (h) => {
	let repo: ConfigRepo;
	let tree: ConfigTree;
	before(() => {
		repo = new ConfigRepo(h().db);
		tree = new ConfigTree({ repo, schemas: () => new Map(Object.entries(FRONTEND_SCHEMAS)) });
	});

	it("reads a subtree as a range: siblings sharing a prefix stay out", async () => {
		await repo.replace("frontend/a", flatten("frontend/a", { x: 1, y: { z: "t" } }), "admin", 1);
		await repo.replace("frontend/ab", flatten("frontend/ab", { w: true }), "admin", 2);
		await repo.replace("frontend/a-b", flatten("frontend/a-b", 5), "admin", 2);
		assert.deepEqual(assemble("frontend/a", await repo.subtree("frontend/a")), { x: 1, y: { z: "t" } });
		assert.deepEqual(assemble("frontend", await repo.subtree("frontend")), { a: { x: 1, y: { z: "t" } }, ab: { w: true }, "a-b": 5 });
		assert.deepEqual(await repo.subtree("frontend/none"), []);
	});

	it("replaces a leaf by a subtree and a subtree by a leaf", async () => {
		await repo.replace("frontend/a/y/z/deep", flatten("frontend/a/y/z/deep", [1, 2]), "admin", 3);
		assert.deepEqual(await tree.get("frontend/a"), { x: 1, y: { z: { deep: [1, 2] } } });
		await repo.replace("frontend/a/y", flatten("frontend/a/y", "flat"), "admin", 4);
		assert.deepEqual(await tree.get("frontend/a"), { x: 1, y: "flat" });
	});

	it("a refused write changes nothing (validation before, one transaction for the write)", async () => {
		await tree.put("frontend/plugin/core.pydio", { APPLICATION_TITLE: "T", OTHER: 1 }, "admin");
		await assert.rejects(tree.put("frontend/plugin/core.pydio", { APPLICATION_TITLE: 3 }, "admin"), /APPLICATION_TITLE/);
		await assert.rejects(tree.put("frontend/plugin", { "core.pydio": { APPLICATION_TITLE: false } }, "admin"), /APPLICATION_TITLE/);
		await assert.rejects(repo.replace("frontend/plugin/core.pydio", [{ path: "frontend/plugin/core.pydio/A", json: "1" }, { path: "frontend/plugin/core.pydio/A", json: "2" }], "admin", 5));
		assert.deepEqual(await tree.get("frontend/plugin/core.pydio"), { APPLICATION_TITLE: "T", OTHER: 1 });
		await assert.rejects(tree.put("other/x", {}, "admin"), /Wrong path/);
	});

	it("concurrent writers from two handles leave exactly one of the written subtrees", async () => {
		const other = new ConfigTree({ repo: new ConfigRepo(await h().second()), schemas: () => new Map() });
		const values = Array.from({ length: 8 }, (_, i) => Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`k${k}`, `${i}`])));
		await Promise.all(values.map((v, i) => (i % 2 ? other : tree).put("services/race", v, "admin")));
		const after = (await tree.get("services/race")) as Record<string, string>;
		assert.equal(Object.keys(after).length, 20);
		assert.equal(new Set(Object.values(after)).size, 1, "never a mix of two writes");
	});
});
