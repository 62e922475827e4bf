// The tree's node index on the SQL store (TreeIndex over NodesRepo), on SQLite and PostgreSQL: Cells' Offset
// pages (resumed from the index, the same answers as OFFSET), child counts, the mkdir race settled by the unique
// index, large subtrees moved and deleted a chunk at a time while the event loop keeps turning, and the one-time
// import of an NeDB index with what that store could not enforce.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError } from "../../lib/errors";
import { NodesRepo, openDatabase } from "../../lib/db";
import { importNedbNodes } from "../../lib/db/nodes-import";
import { ANALYZE_FROM, NEDB_BATCH, type NedbDoc } from "../../lib/db/nedb-import";
import { sql } from "kysely";
import { TreeIndex } from "../../lib/tree/index";
import { parentOf } from "../../lib/tree/paths";
import { listWorkspaceObjects } from "../../lib/tree/objects";
import type { Location } from "../../lib/tree/resolver";
import type { NodeDoc } from "../../lib/tree/model";
import { onEveryBackend } from "../helpers/db";

const file = (uuid: string, size = 1) => ({ uuid, key: uuid, size, etag: "e" });

onEveryBackend("tree index", (h) => {
	let index: TreeIndex;
	const names = Array.from({ length: 1200 }, (_, i) => `f-${String((i * 7919) % 1200).padStart(5, "0")}.txt`);
	const sorted = [...names].sort();

	before(async () => {
		index = new TreeIndex(new NodesRepo(h().db));
		await index.mkdir("ds1", "big", true);
		// Out of name order, with a hidden file that listings never show.
		for (const [i, name] of [...names, ".hidden"].entries()) await index.commitFile("ds1", `big/${name}`, { ...file(`u-${name}`, i % 7), mtime: 1000 + (i % 13) });
	});

	it("pages a large folder by Offset, resuming from the index, the same as reading from the start", async () => {
		const page = await index.children("ds1", "big", { offset: 100, limit: 5 });
		assert.equal(page.total, 1200);
		assert.deepEqual(page.nodes.map((d) => d.name), sorted.slice(100, 105));
		// Page after page (resumed from the cursor the previous page left), then pages asked out of order.
		const seen: string[] = [];
		for (let offset = 0; offset < 1200; offset += 250) seen.push(...(await index.children("ds1", "big", { offset, limit: 250 })).nodes.map((d) => d.name));
		assert.deepEqual(seen, sorted);
		assert.deepEqual((await index.children("ds1", "big", { offset: 777, limit: 3 })).nodes.map((d) => d.name), sorted.slice(777, 780));
		assert.deepEqual((await index.children("ds1", "big", { offset: 1198, limit: 10 })).nodes.map((d) => d.name), sorted.slice(1198));
		assert.deepEqual((await index.children("ds1", "big", { offset: 5000, limit: 10 })).nodes, []);
		// Descending, and by size and date, ties by name.
		assert.deepEqual((await index.children("ds1", "big", { limit: 3, sort: { field: "name", desc: true } })).nodes.map((d) => d.name), sorted.slice(-3).reverse());
		const all = (await index.children("ds1", "big")).nodes;
		assert.equal(all.length, 1200, "no limit: every visible child");
		for (const field of ["size", "mtime"] as const) {
			const expected = [...all].sort((a, b) => a[field] - b[field] || (a.name < b.name ? -1 : 1)).map((d) => d.name);
			const got: string[] = [];
			for (let offset = 0; offset < 1200; offset += 500) got.push(...(await index.children("ds1", "big", { offset, limit: 500, sort: { field } })).nodes.map((d) => d.name));
			assert.deepEqual(got, expected, field);
			assert.deepEqual((await index.children("ds1", "big", { offset: 10, limit: 5, sort: { field, desc: true } })).nodes.map((d) => d.name), [...expected].reverse().slice(10, 15), `${field} desc`);
		}
		// The administrators' view includes the hidden file.
		assert.equal((await index.children("ds1", "big", { includeHidden: true })).total, 1201);
	});

	it("a page resumed from a cursor follows writes made since", async () => {
		await index.children("ds1", "big", { offset: 0, limit: 10 });
		await index.commitFile("ds1", "big/0-first.txt", file("u-first"));
		const next = await index.children("ds1", "big", { offset: 10, limit: 2 });
		assert.equal(next.total, 1201);
		// Resumed after the 10th name seen: the file added before it shifts nothing.
		assert.deepEqual(next.nodes.map((d) => d.name), sorted.slice(10, 12));
		assert.deepEqual((await index.children("ds1", "big", { limit: 2 })).nodes.map((d) => d.name), ["0-first.txt", sorted[0]]);
		assert.deepEqual(await index.childCounts("ds1", "big"), { files: 1201, folders: 0 });
		await index.mkdir("ds1", "big/sub1", false);
		await index.mkdir("ds1", "big/sub2", false);
		await index.remove("ds1", "big/0-first.txt");
		await index.remove("ds1", "big/sub1");
		assert.deepEqual(await index.childCounts("ds1", "big"), { files: 1200, folders: 1 });
		assert.deepEqual((await index.children("ds1", "big", { type: "COLLECTION" })).nodes.map((d) => d.name), ["sub2"]);
		await index.remove("ds1", "big/sub2");
	});

	it("two uploads into one new folder: both land, in one folder, the loser using the winner's", async () => {
		const [a, b] = await Promise.all([index.mkdir("ds1", "race/new/deep", true), index.mkdir("ds1", "race/new/deep", true)]);
		assert.equal(a.node._id, b.node._id);
		assert.equal(a.created.length + b.created.length, 3);
		await assert.rejects(index.mkdir("ds1", "big/f-00000.txt", true), ConflictError);
	});

	it("finds a subtree, folders before what they hold; removes only an empty folder or the file asked for", async () => {
		await index.mkdir("ds1", "tree/a/b", true);
		await index.mkdir("ds1", "tree/a-sibling", true);
		await index.mkdir("ds1", "treetop", true);
		for (const p of ["tree/x.txt", "tree/a/y.txt", "tree/a/b/z.txt", "tree/a-sibling/w.txt", "treetop/v.txt"]) await index.commitFile("ds1", p, file(`u-${p}`));
		const sub = await index.subtree("ds1", "tree");
		assert.deepEqual(sub.map((d) => d.path).sort(), ["tree", "tree/a", "tree/a-sibling", "tree/a-sibling/w.txt", "tree/a/b", "tree/a/b/z.txt", "tree/a/y.txt", "tree/x.txt"]);
		const at = new Map(sub.map((d, i) => [d.path, i]));
		for (const d of sub) if (d.path !== "tree") assert.ok((at.get(parentOf(d.path)) as number) < (at.get(d.path) as number), d.path);
		assert.deepEqual((await index.subtree("ds1", "tree/a/y.txt")).map((d) => d.path), ["tree/a/y.txt"]);
		assert.deepEqual(await index.subtree("ds1", "tree/nope"), []);
		assert.equal(await index.removeSingle("ds1", "tree/a", "COLLECTION"), null, "a folder holding something stays");
		assert.equal(await index.removeSingle("ds1", "tree/x.txt", "LEAF", "another-uuid"), null, "another file now at the path stays");
		assert.equal((await index.removeSingle("ds1", "tree/x.txt", "LEAF", "u-tree/x.txt"))?.path, "tree/x.txt");
		assert.equal((await index.get("ds1", "tree"))?.size, 3);
	});

	it("moves and deletes a folder of 5,000 files a chunk at a time: one transaction, the event loop keeps turning", async function () {
		this.timeout(120_000);
		const repo = new NodesRepo(h().db);
		const folder = await repo.insert({ ds: "ds1", path: "many", type: "COLLECTION" });
		await repo.insert({ ds: "ds1", path: "many/sub", type: "COLLECTION" });
		const records = Array.from({ length: 5000 }, (_, i) => ({ uuid: `many-${i}`, ds: "ds1", parent: folder.uuid, name: `n${i}`, path: `many/n${i}`, type: "LEAF" as const, size: 0, mtime: 1, meta: {} }));
		await repo.importNodes(records);
		await index.commitFile("ds1", "many/sub/last.txt", file("u-last", 5));
		let ticks = 0;
		const timer = setInterval(() => ticks++, 0);
		try {
			const top = await index.move("ds1", "many", "ds1", "tree/many");
			assert.equal(top.path, "tree/many");
			assert.equal((await index.get("ds1", "tree/many/n4999"))?._id, "many-4999");
			assert.equal((await index.get("ds1", "tree/many/sub/last.txt"))?._id, "u-last");
			assert.equal(await index.get("ds1", "many/n1"), null);
			assert.equal((await index.get("ds1", "tree"))?.size, 3 + 5);
			const before = ticks;
			const removed = await index.remove("ds1", "tree/many");
			assert.equal(removed.length, 5003);
			assert.ok(ticks > before, "timers ran while the subtree was deleted");
		} finally {
			clearInterval(timer);
		}
		assert.equal((await index.get("ds1", "tree"))?.size, 3);
		assert.deepEqual((await index.children("ds1", "tree")).nodes.map((d) => d.name), ["a", "a-sibling"]);
	});

	it("lists S3 keys in key order a page at a time, folders after the names extending theirs with a character below '/'", async () => {
		const loc: Location = { ws: { Slug: "ws" } as Location["ws"], ds: "s3", rootPath: "", path: "", rel: "", read: true, write: true };
		for (const f of ["a", "a-", "empty", ".hidden", "recycle_bin", "deep/er/est", "deep/e2", "deep/e2-", "big"]) await index.mkdir("s3", f, true);
		const files = ["a/x.txt", "a-b", "a.txt", "a0", "a-/z", "a--b", ".hidden/inside.txt", ".dot", "deep/er/est/f", "deep/e2-/g", "deep/e1"];
		for (let i = 0; i < 30; i++) files.push(`big/f${String(i).padStart(2, "0")}`, `big/f${String(i).padStart(2, "0")}-x`);
		for (const p of files) await index.commitFile("s3", p, file(`s3-${p}`));
		// What the listings must say, from the whole tree.
		const all = await index.subtree("s3", "");
		const holding = new Set(all.filter((d) => d.path !== "").map((d) => parentOf(d.path)));
		const recursive = all
			.filter((d) => !d.name.startsWith(".") && d.path !== "" && d.path !== "recycle_bin" && (d.type === "LEAF" || !holding.has(d.path)))
			.map((d) => (d.type === "LEAF" ? `ws/${d.path}` : `ws/${d.path}/`))
			.sort();
		const childrenOf = (folder: string) => all.filter((d) => d.path !== "" && parentOf(d.path) === folder && !d.name.startsWith(".")).map((d: NodeDoc) => (d.type === "LEAF" ? `ws/${d.path}` : `ws/${d.path}/`));
		const expected = (prefix: string, delimiter: boolean, startAfter?: string) => {
			const rel = prefix.slice(3);
			const keys = delimiter ? childrenOf(rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "").sort() : recursive;
			return keys.filter((k) => k.startsWith(prefix) && (startAfter === undefined || k > startAfter));
		};
		const walk = async (prefix: string, delimiter: boolean, maxKeys: number, startAfter?: string) => {
			const out: string[] = [];
			let after = startAfter;
			for (let guard = 0; guard < 1000; guard++) {
				const page = await listWorkspaceObjects(index, loc, prefix, delimiter ? "/" : undefined, after, maxKeys);
				out.push(...page.Contents.map((c) => c.Key), ...page.CommonPrefixes);
				assert.ok(page.Contents.length + page.CommonPrefixes.length <= maxKeys);
				if (!page.IsTruncated) return out.sort();
				after = page.NextStartAfter;
			}
			assert.fail("listing did not end");
		};
		assert.ok(recursive.indexOf("ws/a--b") < recursive.indexOf("ws/a-/z") && recursive.indexOf("ws/a.txt") < recursive.indexOf("ws/a/x.txt"));
		for (const prefix of ["ws/", "ws/a", "ws/a-", "ws/deep/", "ws/deep/e", "ws/deep/er/est/f", "ws/big/f1", "ws/nope/", "ws/empty/"]) {
			for (const delimiter of [false, true]) {
				for (const maxKeys of [1, 2, 7, 1000]) assert.deepEqual(await walk(prefix, delimiter, maxKeys), expected(prefix, delimiter), `${prefix} ${delimiter ? "/" : ""} ${maxKeys}`);
				for (const startAfter of ["ws/a", "ws/a-", "ws/a-/", "ws/a.txt", "ws/big/f10", "ws/deep/e2", "ws/deep/er/"]) assert.deepEqual(await walk(prefix, delimiter, 3, startAfter), expected(prefix, delimiter, startAfter), `${prefix} ${delimiter ? "/" : ""} after ${startAfter}`);
			}
		}
		// One page of each: the keys come in order.
		const page = await listWorkspaceObjects(index, loc, "ws/", undefined, undefined, 1000);
		assert.deepEqual(page.Contents.map((c) => c.Key), recursive);
	});

	it("scans every node once in uuid order, a page at a time; lists a datasource's files page by page", async () => {
		const seen: string[] = [];
		let after: string | undefined;
		for (;;) {
			const page = await index.scan(after, 250);
			if (!page.length) break;
			seen.push(...page.map((d) => d._id));
			after = page[page.length - 1]._id;
		}
		assert.deepEqual(seen, [...seen].sort());
		assert.equal(new Set(seen).size, seen.length);
		let files = 0;
		for await (const page of index.files("ds1", 100)) files += page.length;
		assert.equal(files, await index.fileCount("ds1"));
		assert.equal((await index.keysOf("ds1")).size, files);
		assert.equal((await index.sampleKeys("ds1", 3)).length, 3);
	});

	it("imports an NeDB index once: missing folders made, nodes under a file left out, folder sizes summed", async () => {
		const repo = new NodesRepo(h().db);
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-nodes-"));
		mkdirSync(join(dir, "db"), { recursive: true });
		const doc = (d: Partial<NedbDoc> & { _id: string; path: string; type: string }) => ({ ds: "old", meta: {}, mtime: 5, size: 0, ...d });
		const docs = [
			doc({ _id: "DATASOURCE:old", path: "", type: "COLLECTION", size: 999 }),
			// A file whose folder the old index lost, and one two levels below a missing folder.
			doc({ _id: "o1", path: "lost/a.txt", type: "LEAF", size: 10, key: "o1", etag: "e", meta: { tags: '"x"' } }),
			doc({ _id: "o2", path: "lost/deeper/b.txt", type: "LEAF", size: 5 }),
			doc({ _id: "o3", path: "file.txt", type: "LEAF", size: 7 }),
			doc({ _id: "o4", path: "file.txt/under", type: "LEAF", size: 100 }),
			doc({ _id: "o5", path: "moved", type: "COLLECTION" }),
			{ _id: "bad" },
		];
		const lines = [JSON.stringify({ $$indexCreated: { fieldName: "dsPath", unique: true } }), ...docs.map((d) => JSON.stringify(d)), JSON.stringify({ _id: "o5", $$deleted: true })];
		writeFileSync(join(dir, "db", "nodes.db"), lines.join("\n") + "\n");
		const logs: string[] = [];
		const report = await importNedbNodes(h().db, dir, (m) => logs.push(m));
		assert.equal(report.imported, true);
		assert.equal(report.foldersAdded, 2);
		assert.equal(report.skipped, 2);
		assert.equal((await h().db.kysely.selectFrom("nodes").select("uuid").where("ds", "=", "old").execute()).length, 6, "o5 deleted, o4 under a file");
		assert.ok(!existsSync(join(dir, "db", "nodes.db")) && existsSync(join(dir, "db", "nodes.db.imported")));
		assert.equal((await repo.byPath("old", "lost/a.txt"))?.meta.tags, '"x"');
		assert.equal((await repo.byPath("old", "lost"))?.size, 15);
		assert.equal((await repo.byPath("old", ""))?.size, 22);
		assert.equal(await repo.byPath("old", "file.txt/under"), null);
		assert.equal(await repo.byPath("old", "moved"), null, "a deleted document stays deleted");
		assert.ok(logs.some((l) => l.includes("2 missing folders made")), logs.join("\n"));
		// Once: the marker holds even if the file came back.
		writeFileSync(join(dir, "db", "nodes.db"), lines.join("\n") + "\n");
		assert.equal((await importNedbNodes(h().db, dir, () => undefined)).imported, false);
		// Never over an index the SQL store already holds (another DATA_DIR on the same database, here).
		const other = mkdtempSync(join(tmpdir(), "cellar-nedb-nodes-"));
		mkdirSync(join(other, "db"));
		writeFileSync(join(other, "db", "nodes.db"), lines.join("\n") + "\n");
		await h().db.kysely.deleteFrom("markers").where("name", "=", "nedb-import:nodes").execute();
		await assert.rejects(importNedbNodes(h().db, other, () => undefined), /already holds nodes of its datasources \(old\)/);
		assert.ok(existsSync(join(other, "db", "nodes.db")), "the old file stays where it is");
	});

	it("imports an NeDB index read in batches: rewritten and moved nodes as last written, deleted ones gone, a failed import leaving nothing", async () => {
		const db = await openDatabase(await h().fresh());
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-nodes-"));
		try {
			mkdirSync(join(dir, "db"));
			const nodesFile = join(dir, "db", "nodes.db");
			const line = (d: Record<string, unknown>) => JSON.stringify({ ds: "ov", mtime: 5, size: 0, meta: {}, ...d });
			const lines = [
				line({ _id: "DATASOURCE:ov", path: "", type: "COLLECTION" }),
				line({ _id: "docs", path: "docs", type: "COLLECTION" }),
				line({ _id: "a1", path: "docs/a.txt", type: "LEAF", size: 1, etag: "old" }),
				line({ _id: "m1", path: "docs/old-name.txt", type: "LEAF", size: 3 }),
				line({ _id: "d1", path: "docs/deleted.txt", type: "LEAF", size: 100 }),
				line({ _id: "gone", path: "gone", type: "COLLECTION" }),
				line({ _id: "g1", path: "gone/x.txt", type: "LEAF", size: 4 }),
				line({ _id: "bulk", path: "bulk", type: "COLLECTION" }),
			];
			// More documents than a batch holds, every other one deleted later.
			const BULK = NEDB_BATCH + 500;
			for (let i = 0; i < BULK; i++) lines.push(line({ _id: `b${i}`, path: `bulk/f-${i}`, type: "LEAF", size: 1 }));
			lines.push(
				line({ _id: "a1", path: "docs/a.txt", type: "LEAF", size: 10, etag: "new" }),
				line({ _id: "m1", path: "docs/new-name.txt", type: "LEAF", size: 3 }),
				JSON.stringify({ _id: "d1", $$deleted: true }),
				// Its folder deleted, not the file: the folder is made again.
				JSON.stringify({ _id: "gone", $$deleted: true }),
				// A second document for a path: the first read (m1, whose last line comes before) stays.
				line({ _id: "m2", path: "docs/new-name.txt", type: "LEAF", size: 99 }),
			);
			for (let i = 0; i < BULK; i += 2) lines.push(JSON.stringify({ _id: `b${i}`, $$deleted: true }));
			// A document whose uuid is the one the root of "cr" gets when it is made: the nodes table refuses it,
			// after the staging and part of the writes.
			const clash = line({ _id: "DATASOURCE:cr", ds: "other", path: "x", type: "LEAF" });
			const crLine = line({ _id: "c1", ds: "cr", path: "c.txt", type: "LEAF", size: 2 });
			writeFileSync(nodesFile, [...lines, clash, crLine].join("\n") + "\n");
			await assert.rejects(importNedbNodes(db, dir, () => undefined), ConflictError);
			assert.equal((await db.kysely.selectFrom("nodes").select("uuid").execute()).length, 0, "nothing of a failed import stays");
			assert.equal(await db.kysely.selectFrom("markers").select("name").where("name", "=", "nedb-import:nodes").executeTakeFirst(), undefined);
			assert.ok(existsSync(nodesFile));

			// The next start imports again, from scratch.
			writeFileSync(nodesFile, [...lines, crLine].join("\n") + "\n");
			const logs: string[] = [];
			const report = await importNedbNodes(db, dir, (m) => logs.push(m));
			assert.equal(report.imported, true);
			assert.equal(report.documents, 8 - 2 + 1 + BULK / 2 + 1);
			// "gone", and the root of "cr".
			assert.equal(report.foldersAdded, 2);
			assert.equal(report.skipped, 1);
			const repo = new NodesRepo(db);
			const a = await repo.byPath("ov", "docs/a.txt");
			assert.deepEqual([a?.uuid, a?.size, a?.etag], ["a1", 10, "new"]);
			assert.equal(await repo.byPath("ov", "docs/old-name.txt"), null);
			assert.equal((await repo.byPath("ov", "docs/new-name.txt"))?.uuid, "m1");
			assert.equal(await repo.byPath("ov", "docs/deleted.txt"), null);
			const gone = await repo.byPath("ov", "gone");
			assert.ok(gone && gone.uuid !== "gone" && gone.type === "COLLECTION");
			assert.equal((await repo.byPath("ov", "gone/x.txt"))?.parent, gone.uuid);
			const bulk = (await db.kysely.selectFrom("nodes").select(["files", "size"]).where("uuid", "=", "bulk").executeTakeFirstOrThrow());
			assert.deepEqual([Number(bulk.files), Number(bulk.size)], [BULK / 2, BULK / 2]);
			assert.equal((await repo.byPath("ov", ""))?.size, 10 + 3 + 4 + BULK / 2);
			assert.equal((await repo.byPath("cr", ""))?.uuid, "DATASOURCE:cr");
			assert.equal((await repo.byPath("cr", ""))?.size, 2);
			assert.equal((await db.kysely.selectFrom("nodes").select("uuid").execute()).length, 8 - 2 + BULK / 2 + 1 + 2);
			assert.ok(logs.some((l) => l.includes("2 missing folders made")), logs.join("\n"));
			assert.ok(!existsSync(nodesFile) && existsSync(`${nodesFile}.imported`));
		} finally {
			await db.close();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("analyzes the table after a large import on PostgreSQL, so that the planner knows its size", async function () {
		const db = h().db;
		if (db.dialect !== "postgres") return this.skip();
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-nodes-"));
		mkdirSync(join(dir, "db"), { recursive: true });
		const docs = [{ _id: "DATASOURCE:big", ds: "big", path: "", type: "COLLECTION" }];
		for (let i = 0; i < ANALYZE_FROM; i++) docs.push({ _id: `b${i}`, ds: "big", path: `f-${i}`, type: "LEAF" });
		writeFileSync(join(dir, "db", "nodes.db"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");
		assert.equal((await importNedbNodes(db, dir, () => undefined)).imported, true);
		const stats = await sql<{ last_analyze: Date | null; n_live_tup: string }>`select last_analyze, n_live_tup from pg_stat_user_tables where relname = 'nodes'`.execute(db.kysely);
		assert.ok(stats.rows[0]?.last_analyze, "nodes analyzed");
		const planned = await sql<{ reltuples: number }>`select reltuples from pg_class where relname = 'nodes'`.execute(db.kysely);
		assert.ok(Number(planned.rows[0]?.reltuples) >= ANALYZE_FROM, `the planner counts ${planned.rows[0]?.reltuples} rows`);
	});
});
