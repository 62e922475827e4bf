// The node index over a real NeDB store: large folders sorted once at start, listings and scans served from the
// documents the store already holds, with the same answers as the query path.
import assert from "node:assert/strict";
import { ServiceBroker, type Service } from "moleculer";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbMixin, type Store } from "../../mixins/db.mixin";
import { TreeIndex } from "../../lib/tree/index";
import type { NodeDoc } from "../../lib/tree/model";

describe("tree index (NeDB)", function () {
	let broker: ServiceBroker;
	let store: Store<NodeDoc>;
	let dir: string;
	const saved = { DATA_DIR: process.env.DATA_DIR, MONGO_URI: process.env.MONGO_URI };
	const names = Array.from({ length: 1200 }, (_, i) => `f-${String((i * 7919) % 1200).padStart(5, "0")}.txt`);

	before(async () => {
		dir = mkdtempSync(join(tmpdir(), "cellar-tree-index-"));
		process.env.DATA_DIR = dir;
		delete process.env.MONGO_URI;
		broker = new ServiceBroker({ logger: false });
		const svc = broker.createService({ name: "treeindextest", mixins: [DbMixin("nodes", { indexes: [{ field: "dsPath", unique: true }, { field: "parentKey" }] })] }) as Service & { store: Store<NodeDoc> };
		await broker.start();
		store = svc.store;
		const index = new TreeIndex(store);
		await index.mkdir("ds1", "big", true);
		await index.mkdir("ds1", "small", true);
		// Out of name order, with hidden files that listings never show.
		for (const name of [...names, ".hidden"]) await index.commitFile("ds1", `big/${name}`, { uuid: `u-${name}`, key: `u-${name}`, size: 1, etag: "e" });
		await index.commitFile("ds1", "small/a.txt", { uuid: "u-small-a", key: "u-small-a", size: 1, etag: "e" });
	});
	after(async () => {
		await broker?.stop();
		rmSync(dir, { recursive: true, force: true });
		process.env.DATA_DIR = saved.DATA_DIR;
		if (saved.MONGO_URI) process.env.MONGO_URI = saved.MONGO_URI;
	});

	it("sorts large folders at start and serves their pages from memory, dot-files excluded", async () => {
		// A fresh index, as after a restart.
		const index = new TreeIndex(store);
		const pre = await index.preloadListings(1000);
		assert.deepEqual(pre, { folders: 1, entries: 1200 });
		const cached = index.listings.get("ds1/big");
		assert.ok(cached, "the large folder is listed before any request");
		assert.equal(index.listings.get("ds1/small"), undefined, "small folders wait for their first listing");
		const sorted = [...names].sort();
		assert.deepEqual(cached.map((e) => e.name), sorted);
		const page = await index.children("ds1", "big", { offset: 100, limit: 5 });
		assert.equal(page.total, 1200);
		assert.deepEqual(page.nodes.map((d) => d.name), sorted.slice(100, 105));
		// The query path (hidden files included) agrees on the visible ones.
		const all = await index.children("ds1", "big", { includeHidden: true });
		assert.equal(all.total, 1201);
		assert.deepEqual((await index.children("ds1", "small")).nodes.map((d) => d.name), ["a.txt"]);
	});

	it("keeps preloaded listings up to date with writes", async () => {
		const index = new TreeIndex(store);
		await index.preloadListings(1000);
		await index.commitFile("ds1", "big/0-first.txt", { uuid: "u-first", key: "u-first", size: 1, etag: "e" });
		await index.remove("ds1", `big/${[...names].sort()[0]}`);
		const page = await index.children("ds1", "big", { limit: 2 });
		assert.equal(page.total, 1200);
		assert.deepEqual(page.nodes.map((d) => d.name), ["0-first.txt", [...names].sort()[1]]);
		// Counts follow the writes without a recount.
		assert.deepEqual(await index.childCounts("ds1", "big"), { files: 1200, folders: 0 });
		await index.mkdir("ds1", "big/sub1", false);
		await index.mkdir("ds1", "big/sub2", false);
		await index.remove("ds1", "big/0-first.txt");
		assert.deepEqual(await index.childCounts("ds1", "big"), { files: 1199, folders: 2 });
		await index.remove("ds1", "big/sub1");
		assert.deepEqual(await index.childCounts("ds1", "big"), { files: 1199, folders: 1 });
		assert.deepEqual(await new TreeIndex(store).childCounts("ds1", "big"), { files: 1199, folders: 1 }, "a fresh count agrees");
	});

	it("finds a subtree through the children index, the same as the path-prefix query", async () => {
		const index = new TreeIndex(store);
		await index.mkdir("ds1", "tree/a/b", true);
		await index.mkdir("ds1", "tree/a-sibling", true);
		await index.mkdir("ds1", "treetop", true);
		for (const p of ["tree/x.txt", "tree/a/y.txt", "tree/a/b/z.txt", "tree/a-sibling/w.txt", "treetop/v.txt"]) await index.commitFile("ds1", p, { uuid: `u-${p}`, key: `u-${p}`, size: 1, etag: "e" });
		const paths = (docs: { path: string }[]) => docs.map((d) => d.path).sort();
		const expected = ["tree", "tree/a", "tree/a-sibling", "tree/a-sibling/w.txt", "tree/a/b", "tree/a/b/z.txt", "tree/a/y.txt", "tree/x.txt"];
		assert.deepEqual(paths(await index.subtree("ds1", "tree")), expected);
		// Without the in-memory view (as on MongoDB): the query answers the same.
		const queried = new TreeIndex({ ...store, memory: undefined, find: store.find, get: store.get, findOne: store.findOne } as Store<NodeDoc>);
		assert.deepEqual(paths(await queried.subtree("ds1", "tree")), expected);
		assert.deepEqual(paths(await index.subtree("ds1", "tree/a/y.txt")), ["tree/a/y.txt"]);
		assert.deepEqual(await index.subtree("ds1", "tree/nope"), []);
		// Copies: changing one does not change the index.
		const [, child] = await index.subtree("ds1", "tree/a");
		child.meta.touched = "yes";
		assert.equal((await index.byUuid(child._id))?.meta.touched, undefined);
	});

	it("scans every node once in uuid order, a page at a time, as copies", async () => {
		const index = new TreeIndex(store);
		const seen: string[] = [];
		let after: string | undefined;
		for (;;) {
			const page = await index.scan(after, 250);
			if (!page.length) break;
			seen.push(...page.map((d) => d._id));
			after = page[page.length - 1]._id;
		}
		assert.equal(seen.length, await store.count({}));
		assert.deepEqual(seen, [...seen].sort());
		const [first] = await index.scan(undefined, 1);
		first.meta.touched = "yes";
		assert.equal((await index.byUuid(first._id))?.meta.touched, undefined, "a scanned document is a copy");
	});
});
