// The store behind every service, on each adapter: the same tests on NeDB files and, when MONGO_URI is set,
// on MongoDB (which cannot be installed on the build machines: that run skips with its reason).
import assert from "node:assert/strict";
import { ServiceBroker, type Service } from "moleculer";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbMixin, type Doc, type Store } from "../../mixins/db.mixin";

interface Item extends Doc {
	name: string;
	n: number;
	tags?: string[];
}

for (const backend of ["nedb", "mongo"] as const) {
	describe(`db mixin on ${backend}`, function () {
		let broker: ServiceBroker;
		let store: Store<Item>;
		let dir: string;
		const saved = { DATA_DIR: process.env.DATA_DIR, MONGO_URI: process.env.MONGO_URI };

		before(async function () {
			if (backend === "mongo" && !process.env.MONGO_URI) {
				console.log("      skipped: MONGO_URI is not set (MongoDB cannot be installed on this machine)");
				this.skip();
			}
			dir = mkdtempSync(join(tmpdir(), "cellar-db-"));
			process.env.DATA_DIR = dir;
			if (backend === "nedb") delete process.env.MONGO_URI;
			broker = new ServiceBroker({ logger: false });
			const svc = broker.createService({ name: `dbtest${backend}`, mixins: [DbMixin(`items_${process.pid}_${Date.now()}`)] }) as Service & { store: Store<Item> };
			await broker.start();
			store = svc.store;
		});
		after(async () => {
			await broker?.stop();
			if (dir) rmSync(dir, { recursive: true, force: true });
			process.env.DATA_DIR = saved.DATA_DIR;
			if (saved.MONGO_URI) process.env.MONGO_URI = saved.MONGO_URI;
		});

		it("inserts, reads, counts and finds with operators", async () => {
			await store.insert({ _id: "a", name: "alpha", n: 1, tags: ["x"] });
			await store.insert({ _id: "b", name: "beta", n: 2 });
			assert.equal((await store.get("a"))?.name, "alpha");
			assert.equal(await store.get("zzz"), null);
			assert.equal(await store.count({}), 2);
			assert.deepEqual((await store.find({ query: { n: { $gte: 2 } } })).map((d) => d._id), ["b"]);
			assert.deepEqual((await store.find({ sort: ["-n"] })).map((d) => d._id), ["b", "a"]);
			assert.deepEqual((await store.find({ query: { name: { $in: ["alpha", "nope"] } } })).map((d) => d._id), ["a"]);
		});

		it("replaces a document whole (removed fields disappear) and patches fields", async () => {
			await store.replace({ _id: "a", name: "alpha2", n: 3 });
			const a = await store.get("a");
			assert.equal(a?.name, "alpha2");
			assert.equal(a?.tags, undefined);
			await store.patch("a", { n: 4 });
			assert.equal((await store.get("a"))?.n, 4);
			await store.replace({ _id: "c", name: "new", n: 0 });
			assert.equal(await store.count({}), 3);
		});

		it("removes one or many", async () => {
			assert.equal(await store.remove("c"), true);
			assert.equal(await store.removeMany({ n: { $gt: 0 } }), 2);
			assert.equal(await store.count({}), 0);
		});

		it("has written to disk before answering (NeDB)", async function () {
			if (backend !== "nedb") this.skip();
			await store.insert({ _id: "durable", name: "on disk", n: 9 });
			const files = require("node:fs").readdirSync(join(dir, "db")) as string[];
			const content = files.map((f) => readFileSync(join(dir, "db", f), "utf8")).join("");
			assert.match(content, /on disk/);
		});

		it("compacts an NeDB file once the writes since the last compaction pass twice the documents", async function () {
			if (backend !== "nedb") return this.skip();
			const name = `compact_${process.pid}_${Date.now()}`;
			const svc = broker.createService({ name: `compacttest${Date.now()}`, mixins: [DbMixin(name, { compactAfter: 50 })] }) as Service & { store: Store<Item> };
			await broker.waitForServices(svc.name, 5000, 10);
			const s = svc.store;
			const file = join(dir, "db", `${name}.db`);
			const lines = () => readFileSync(file, "utf8").split("\n").filter(Boolean).length;
			for (let i = 0; i < 10; i++) await s.insert({ _id: `d${i}`, name: "doc", n: 0 });
			// Every write appends a line; the 50th triggers a rewrite holding one line per document.
			for (let i = 0; i < 39; i++) await s.patch(`d${i % 10}`, { n: i });
			assert.ok(lines() >= 49, `${lines()} lines before the threshold`);
			await s.patch("d0", { n: 100 });
			for (let i = 0; i < 50 && lines() > 10; i++) await new Promise((r) => setTimeout(r, 20));
			assert.equal(lines(), 10);
			assert.equal((await s.get("d0"))?.n, 100);
			assert.equal(await s.count({}), 10);
		});
	});
}
