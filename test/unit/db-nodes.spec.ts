// NodesRepo, one behaviour suite on SQLite and PostgreSQL: unique paths, folder sizes kept exact under
// concurrent writes, keyset pages in every order, subtree moves and deletes in one transaction.
import assert from "node:assert/strict";
import { BadRequestError, ConflictError, NotFoundError } from "../../lib/errors";
import { NodesRepo, type ChildCursor, type ChildPageOptions, type NodeRecord } from "../../lib/db";
import { onEveryBackend } from "../helpers/db";

async function rejectsWith(p: Promise<unknown>, cls: new (...a: never[]) => Error, type?: string): Promise<void> {
	await assert.rejects(p, (err: unknown) => {
		assert.ok(err instanceof cls, `expected ${cls.name}, got ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`);
		if (type) assert.equal((err as { type?: string }).type, type);
		return true;
	});
}

/** Every node of the repository (all datasources), by path. */
async function everything(nodes: NodesRepo): Promise<Map<string, NodeRecord>> {
	const out = new Map<string, NodeRecord>();
	let after: string | undefined;
	for (;;) {
		const page = await nodes.scan(after, 50);
		if (!page.length) return out;
		for (const n of page) out.set(`${n.ds}:${n.path}`, n);
		after = page[page.length - 1].uuid;
	}
}

onEveryBackend("NodesRepo", (h) => {
	let nodes: NodesRepo;
	let clock = 1_000;
	let root: NodeRecord;
	before(async () => {
		nodes = new NodesRepo(h().db, { now: () => clock });
		root = await nodes.ensureRoot("ds1");
	});

	const size = async (ds: string, path: string) => (await nodes.byPath(ds, path))?.size;

	it("creates a datasource root once, however many callers race for it", async () => {
		assert.equal(root.uuid, "DATASOURCE:ds1");
		assert.equal(root.parent, null);
		assert.equal(root.type, "COLLECTION");
		const again = await Promise.all(Array.from({ length: 10 }, () => nodes.ensureRoot("ds1")));
		for (const r of again) assert.equal(r.uuid, root.uuid);
	});

	it("inserts folders and files under existing folders; reads them by path and by uuid", async () => {
		const docs = await nodes.insert({ ds: "ds1", path: "docs", type: "COLLECTION" });
		assert.equal(docs.parent, root.uuid);
		assert.equal(docs.name, "docs");
		const f = await nodes.insert({ uuid: "file-1", ds: "ds1", path: "docs/a.txt", type: "LEAF", size: 10, etag: "e1", key: "file-1", mode: 0o644, meta: { color: '"red"' } });
		assert.deepEqual(await nodes.byPath("ds1", "docs/a.txt"), f);
		assert.deepEqual(await nodes.byUuid("file-1"), f);
		assert.deepEqual(f, { uuid: "file-1", ds: "ds1", parent: docs.uuid, name: "a.txt", path: "docs/a.txt", type: "LEAF", size: 10, mtime: clock, etag: "e1", key: "file-1", mode: 0o644, meta: { color: '"red"' } });
		assert.equal(await nodes.byPath("ds1", "docs/none"), null);
		assert.equal(await nodes.byPath("ds2", "docs/a.txt"), null);
	});

	it("refuses a taken path (ConflictError node.exists), a missing parent (NotFoundError), a file as parent (ConflictError)", async () => {
		await rejectsWith(nodes.insert({ ds: "ds1", path: "docs/a.txt", type: "LEAF", size: 1 }), ConflictError, "node.exists");
		await rejectsWith(nodes.insert({ ds: "ds1", path: "docs", type: "COLLECTION" }), ConflictError, "node.exists");
		await rejectsWith(nodes.insert({ ds: "ds1", path: "nope/x", type: "LEAF" }), NotFoundError, "node.notfound");
		await rejectsWith(nodes.insert({ ds: "ds1", path: "docs/a.txt/x", type: "LEAF" }), ConflictError);
		await rejectsWith(nodes.insert({ uuid: "file-1", ds: "ds1", path: "docs/b.txt", type: "LEAF" }), ConflictError);
		// The failed inserts changed no size.
		assert.equal(await size("ds1", "docs"), 10);
		assert.equal(await size("ds1", ""), 10);
	});

	it("keeps folder sizes as the sum of their content, touching the folders' mtime", async () => {
		clock = 2_000;
		await nodes.insert({ ds: "ds1", path: "docs/sub", type: "COLLECTION" });
		await nodes.insert({ ds: "ds1", path: "docs/sub/b.bin", type: "LEAF", size: 5_000_000_000 });
		assert.equal(await size("ds1", "docs/sub"), 5_000_000_000, "sizes beyond 32 bits");
		assert.equal(await size("ds1", "docs"), 5_000_000_010);
		assert.equal(await size("ds1", ""), 5_000_000_010);
		assert.equal((await nodes.byPath("ds1", "docs"))?.mtime, 2_000);
		clock = 3_000;
		const b = (await nodes.byPath("ds1", "docs/sub/b.bin")) as NodeRecord;
		const v2 = await nodes.setContent(b.uuid, { size: 7, etag: "e2", key: b.uuid, meta: { k: '"v"' } });
		assert.equal(v2.size, 7);
		assert.equal(v2.etag, "e2");
		assert.equal(v2.mtime, 3_000);
		assert.deepEqual(v2.meta, { k: '"v"' });
		assert.equal(await size("ds1", "docs/sub"), 7);
		assert.equal(await size("ds1", ""), 17);
		await rejectsWith(nodes.setContent((await nodes.byPath("ds1", "docs/sub"))!.uuid, { size: 1, etag: "x", key: "x" }), ConflictError);
	});

	it("20 concurrent inserts of one path: one wins, 19 ConflictError, the size counted once", async () => {
		const other = new NodesRepo(await h().second(), { now: () => clock });
		const repos = [nodes, other];
		const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => repos[i % 2].insert({ ds: "ds1", path: "docs/same.txt", type: "LEAF", size: 100 })));
		assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
		for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError, String(r.reason));
		assert.equal(await size("ds1", "docs"), 117);
	});

	it("concurrent writers in one folder (two handles) lose no size update", async () => {
		await nodes.insert({ ds: "ds1", path: "busy", type: "COLLECTION" });
		const other = new NodesRepo(await h().second(), { now: () => clock });
		const repos = [nodes, other];
		const before = (await size("ds1", "")) as number;
		await Promise.all(Array.from({ length: 30 }, (_, i) => repos[i % 2].insert({ ds: "ds1", path: `busy/f${i}`, type: "LEAF", size: i + 1 })));
		const total = (30 * 31) / 2;
		assert.equal(await size("ds1", "busy"), total);
		assert.equal(await size("ds1", ""), before + total);
		assert.deepEqual(await nodes.countChildren((await nodes.byPath("ds1", "busy"))!.uuid), { files: 30, folders: 0 });
	});

	describe("pages of children", () => {
		let folder: NodeRecord;
		const names = ["b", "a", "C", "é", "z", "Z", "ä", "10", "9", ".hidden", "a b", "ab", "日本"];
		before(async () => {
			folder = await nodes.insert({ ds: "ds1", path: "list", type: "COLLECTION" });
			for (const [i, n] of names.entries()) {
				clock = 10_000 + ((i * 7) % 5);
				await nodes.insert({ ds: "ds1", path: `list/${n}`, type: i % 4 === 0 ? "COLLECTION" : "LEAF", size: (i * 3) % 4 });
			}
		});

		/** Every page of a listing, following `next`. */
		async function walk(opts: ChildPageOptions, limit: number): Promise<NodeRecord[]> {
			const out: NodeRecord[] = [];
			let after: ChildCursor | undefined;
			for (let guard = 0; guard < 100; guard++) {
				const page = await nodes.childrenPage(folder.uuid, { ...opts, after, limit });
				assert.ok(page.nodes.length <= limit);
				out.push(...page.nodes);
				if (!page.next) return out;
				after = page.next;
			}
			assert.fail("listing did not end");
		}

		// Code point order, which is JS's order for these (no characters beyond the BMP).
		const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

		it("orders by name in code point order on both backends, a page at a time, forward and backward", async () => {
			const expected = [...names].sort(byName);
			for (const limit of [1, 3, 100]) {
				assert.deepEqual((await walk({}, limit)).map((n) => n.name), expected, `limit ${limit}`);
				assert.deepEqual((await walk({ desc: true }, limit)).map((n) => n.name), [...expected].reverse(), `desc, limit ${limit}`);
			}
		});

		it("orders by size and by mtime, ties by name, across page boundaries", async () => {
			const all = await walk({}, 100);
			for (const field of ["size", "mtime"] as const) {
				const expected = [...all].sort((x, y) => x[field] - y[field] || byName(x.name, y.name)).map((n) => n.name);
				for (const limit of [1, 2, 5]) {
					assert.deepEqual((await walk({ sort: field }, limit)).map((n) => n.name), expected, `${field}, limit ${limit}`);
					assert.deepEqual((await walk({ sort: field, desc: true }, limit)).map((n) => n.name), [...expected].reverse(), `${field} desc, limit ${limit}`);
				}
			}
		});

		it("pages by offset (Cells' Offset) in every order, the same children as the keyset pages", async () => {
			for (const opts of [{}, { desc: true }, { sort: "size" as const }, { sort: "mtime" as const, desc: true }, { hidden: false }]) {
				const all = (await walk(opts, 100)).map((n) => n.name);
				for (const offset of [0, 1, 5, 12, 13, 50]) assert.deepEqual((await nodes.childrenPage(folder.uuid, { ...opts, offset, limit: 3 })).nodes.map((n) => n.name), all.slice(offset, offset + 3), `${JSON.stringify(opts)} offset ${offset}`);
			}
		});

		it("filters hidden names and types; counts children", async () => {
			const visible = (await walk({ hidden: false }, 4)).map((n) => n.name);
			assert.ok(!visible.includes(".hidden"));
			assert.equal(visible.length, names.length - 1);
			const folders = (await walk({ type: "COLLECTION" }, 2)).map((n) => n.name);
			assert.deepEqual(folders, names.filter((_, i) => i % 4 === 0).sort(byName));
			assert.deepEqual(await nodes.countChildren(folder.uuid), { files: 9, folders: 4 });
			assert.deepEqual(await nodes.countChildren(folder.uuid, { hidden: false }), { files: 8, folders: 4 }, ".hidden is a file");
			assert.deepEqual((await nodes.childrenPage("no-such-folder")).nodes, []);
		});
	});

	describe("subtrees", () => {
		before(async () => {
			clock = 20_000;
			await nodes.insert({ ds: "ds1", path: "proj", type: "COLLECTION" });
			await nodes.insert({ ds: "ds1", path: "proj/été", type: "COLLECTION" });
			await nodes.insert({ ds: "ds1", path: "proj/été/ü.txt", type: "LEAF", size: 3 });
			await nodes.insert({ ds: "ds1", path: "proj/été/deep", type: "COLLECTION" });
			await nodes.insert({ ds: "ds1", path: "proj/été/deep/x", type: "LEAF", size: 4 });
			await nodes.insert({ ds: "ds1", path: "proj/other", type: "LEAF", size: 100 });
			// Starts like the folder but is not inside it.
			await nodes.insert({ ds: "ds1", path: "proj/été2", type: "LEAF", size: 1000 });
			await nodes.insert({ ds: "ds1", path: "dest", type: "COLLECTION" });
		});

		it("moves a folder with everything below it: paths rewritten, uuids kept, sizes follow, in one step", async () => {
			const before = await everything(nodes);
			const rootSize = (await size("ds1", "")) as number;
			clock = 21_000;
			const { node, moved } = await nodes.moveSubtree("ds1", "proj/été", "ds1", "dest/summer");
			assert.equal(moved, 4);
			assert.equal(node.path, "dest/summer");
			assert.equal(node.name, "summer");
			assert.equal(node.parent, (await nodes.byPath("ds1", "dest"))?.uuid);
			assert.equal(node.mtime, 21_000);
			const after = await everything(nodes);
			for (const [p, n] of [["proj/été/ü.txt", "dest/summer/ü.txt"], ["proj/été/deep", "dest/summer/deep"], ["proj/été/deep/x", "dest/summer/deep/x"]]) {
				assert.equal(after.get(`ds1:${n}`)?.uuid, before.get(`ds1:${p}`)?.uuid, `${p} -> ${n}`);
				assert.ok(!after.has(`ds1:${p}`));
			}
			assert.equal(after.get("ds1:proj/été2")?.path, "proj/été2", "a sibling sharing the prefix stays");
			assert.equal(await size("ds1", "proj"), 1100);
			assert.equal(await size("ds1", "dest"), 7);
			assert.equal(await size("ds1", ""), rootSize);
			// The moved folder lists as before under its new parent.
			const deep = (await nodes.byPath("ds1", "dest/summer/deep")) as NodeRecord;
			assert.deepEqual((await nodes.childrenPage(deep.uuid)).nodes.map((n) => n.path), ["dest/summer/deep/x"]);
		});

		it("refuses to move onto an existing path and changes nothing (ConflictError)", async () => {
			const before = await everything(nodes);
			await rejectsWith(nodes.moveSubtree("ds1", "dest/summer", "ds1", "proj/other"), ConflictError, "node.exists");
			assert.deepEqual(await everything(nodes), before);
		});

		it("refuses a move into itself, of a root, from a missing path, into a missing folder", async () => {
			await rejectsWith(nodes.moveSubtree("ds1", "dest/summer", "ds1", "dest/summer/deep/in"), BadRequestError);
			await rejectsWith(nodes.moveSubtree("ds1", "", "ds1", "x"), BadRequestError);
			await rejectsWith(nodes.moveSubtree("ds1", "nope", "ds1", "x"), NotFoundError);
			await rejectsWith(nodes.moveSubtree("ds1", "dest/summer", "ds1", "nope/x"), NotFoundError);
		});

		it("moves to another datasource", async () => {
			await nodes.ensureRoot("ds2");
			const { moved } = await nodes.moveSubtree("ds1", "dest/summer", "ds2", "summer");
			assert.equal(moved, 4);
			assert.equal((await nodes.byPath("ds2", "summer/deep/x"))?.ds, "ds2");
			assert.equal(await nodes.byPath("ds1", "dest/summer/deep/x"), null);
			assert.equal(await size("ds1", "dest"), 0);
			assert.equal(await size("ds2", ""), 7);
		});

		it("deletes a subtree, returning what it removed, and takes its size off the folders above", async () => {
			const rootSize = (await size("ds2", "")) as number;
			const removed = await nodes.deleteSubtree("ds2", "summer/deep");
			assert.deepEqual(removed.map((n) => n.path).sort(), ["summer/deep", "summer/deep/x"]);
			assert.equal(await nodes.byPath("ds2", "summer/deep/x"), null);
			assert.equal(await size("ds2", "summer"), 3);
			assert.equal(await size("ds2", ""), rootSize - 4);
			await rejectsWith(nodes.deleteSubtree("ds2", "summer/deep"), NotFoundError);
			// The whole tree of a datasource, counted only.
			assert.equal(await nodes.dropSubtree("ds2", ""), 3);
			assert.equal(await nodes.byPath("ds2", ""), null);
		});

		it("an insert racing a delete of its folder either lands before (and is deleted with it) or fails: no orphan", async () => {
			await nodes.insert({ ds: "ds1", path: "doomed", type: "COLLECTION" });
			for (let i = 0; i < 5; i++) await nodes.insert({ ds: "ds1", path: `doomed/old${i}`, type: "LEAF", size: 1 });
			const other = new NodesRepo(await h().second(), { now: () => clock });
			const inserts = Array.from({ length: 10 }, (_, i) => (i % 2 ? other : nodes).insert({ ds: "ds1", path: `doomed/new${i}`, type: "LEAF", size: 1 }));
			const del = nodes.deleteSubtree("ds1", "doomed");
			const results = await Promise.allSettled(inserts);
			const removed = await del;
			for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof NotFoundError, String(r.reason));
			const landed = results.filter((r) => r.status === "fulfilled").length;
			assert.equal(removed.length, 1 + 5 + landed);
			const left = [...(await everything(nodes)).keys()].filter((k) => k.startsWith("ds1:doomed"));
			assert.deepEqual(left, []);
		});
	});

	it("removes one file, or one empty folder, only as it was asked for", async () => {
		const folder = await nodes.insert({ ds: "ds1", path: "single", type: "COLLECTION" });
		const f = await nodes.insert({ ds: "ds1", path: "single/f", type: "LEAF", size: 9 });
		const rootSize = (await size("ds1", "")) as number;
		assert.equal(await nodes.hasChildren(folder.uuid), true);
		assert.equal(await nodes.deleteOne("ds1", "single", { type: "COLLECTION" }), null, "not empty");
		assert.equal(await nodes.deleteOne("ds1", "single/f", { type: "COLLECTION" }), null, "not a folder");
		assert.equal(await nodes.deleteOne("ds1", "single/f", { type: "LEAF", uuid: "other" }), null, "another file");
		assert.equal((await nodes.deleteOne("ds1", "single/f", { type: "LEAF", uuid: f.uuid }))?.uuid, f.uuid);
		assert.equal(await size("ds1", "single"), 0);
		assert.equal(await size("ds1", ""), rootSize - 9);
		assert.equal(await nodes.hasChildren(folder.uuid), false);
		assert.equal((await nodes.deleteOne("ds1", "single", { type: "COLLECTION" }))?.uuid, folder.uuid);
		assert.equal(await nodes.deleteOne("ds1", "", { type: "COLLECTION" }), null, "never a root");
	});

	it("walks a subtree a folder before what it holds, and lists a datasource's files by uuid", async () => {
		const sub = await nodes.subtree("ds1", "docs");
		assert.equal(sub[0].path, "docs");
		const at = new Map(sub.map((n, i) => [n.uuid, i]));
		for (const n of sub.slice(1)) assert.ok((at.get(n.parent as string) as number) < (at.get(n.uuid) as number), n.path);
		assert.deepEqual(await nodes.subtree("ds1", "docs/none"), []);
		const files = await nodes.filesPage("ds1", undefined, 1000);
		assert.ok(files.every((n) => n.type === "LEAF" && n.ds === "ds1"));
		assert.deepEqual(files.map((n) => n.uuid), files.map((n) => n.uuid).sort());
		assert.equal(files.length, await nodes.countFiles("ds1"));
	});

	it("imports complete records as they are, all or nothing", async () => {
		const r = await nodes.ensureRoot("imported");
		const folder: NodeRecord = { uuid: "imp-f", ds: "imported", parent: r.uuid, name: "f", path: "f", type: "COLLECTION", size: 30, mtime: 7, meta: {} };
		const files: NodeRecord[] = Array.from({ length: 2500 }, (_, i) => ({ uuid: `imp-${i}`, ds: "imported", parent: "imp-f", name: `n${String(i).padStart(4, "0")}`, path: `f/n${String(i).padStart(4, "0")}`, type: "LEAF", size: 1, mtime: 8, etag: "e", key: `imp-${i}`, meta: { a: "1" } }));
		await nodes.importNodes([folder, ...files]);
		assert.deepEqual(await nodes.byPath("imported", "f/n2499"), files[2499]);
		assert.equal((await nodes.byPath("imported", "f"))?.size, 30, "sizes are taken as given");
		assert.deepEqual(await nodes.countChildren("imp-f"), { files: 2500, folders: 0 });
		const page = await nodes.childrenPage("imp-f", { after: { name: "n1999" }, limit: 2 });
		assert.deepEqual(page.nodes.map((n) => n.name), ["n2000", "n2001"]);
		// One taken path in the last chunk: nothing of the call stays.
		const more: NodeRecord[] = Array.from({ length: 1500 }, (_, i) => ({ ...files[0], uuid: `imp2-${i}`, name: `m${i}`, path: `f/m${i}` }));
		more.push({ ...files[0], uuid: "imp2-dup" });
		await rejectsWith(nodes.importNodes(more), ConflictError);
		assert.equal(await nodes.byUuid("imp2-0"), null);
		// A child before its parent is refused.
		await assert.rejects(nodes.importNodes([{ ...files[0], uuid: "orphan", parent: "missing", path: "x/orphan" }]));
	});

	it("sets and removes metadata namespaces", async () => {
		const f = (await nodes.byPath("ds1", "docs/a.txt")) as NodeRecord;
		const m = await nodes.setMeta(f.uuid, { tags: '"x"', color: undefined });
		assert.deepEqual(m.meta, { tags: '"x"' });
		assert.deepEqual((await nodes.byUuid(f.uuid))?.meta, { tags: '"x"' });
		await rejectsWith(nodes.setMeta("missing", { a: "1" }), NotFoundError);
	});

	it("keeps every folder's count of visible children right through inserts, moves (renames to and from a dot-name), deletes and imports", async () => {
		await nodes.insert({ ds: "ds1", path: "counted", type: "COLLECTION" });
		await nodes.insert({ ds: "ds1", path: "counted/a", type: "LEAF" });
		await nodes.insert({ ds: "ds1", path: "counted/.b", type: "LEAF" });
		await nodes.insert({ ds: "ds1", path: "counted/sub", type: "COLLECTION" });
		await nodes.moveSubtree("ds1", "counted/a", "ds1", "counted/.a");
		await nodes.moveSubtree("ds1", "counted/.b", "ds1", "counted/sub/b");
		await nodes.moveSubtree("ds1", "counted/sub", "ds1", "counted/.sub");
		await nodes.moveSubtree("ds1", "counted/.sub", "ds1", "docs/sub2");
		const counted = (await nodes.byPath("ds1", "counted")) as NodeRecord;
		assert.deepEqual(await nodes.countChildren(counted.uuid, { hidden: false }), { files: 0, folders: 0 });
		assert.deepEqual(await nodes.countChildren(counted.uuid), { files: 1, folders: 0 });
		for (const n of (await everything(nodes)).values()) {
			if (n.type !== "COLLECTION") continue;
			let files = 0;
			let folders = 0;
			for (let page = await nodes.childrenPage(n.uuid, { hidden: false, limit: 10_000 }); ; ) {
				for (const c of page.nodes) c.type === "LEAF" ? files++ : folders++;
				if (!page.next) break;
				page = await nodes.childrenPage(n.uuid, { hidden: false, limit: 10_000, after: page.next });
			}
			assert.deepEqual(await nodes.countChildren(n.uuid, { hidden: false }), { files, folders }, `${n.ds}:${n.path}`);
		}
	});

	it("holds paths longer than a PostgreSQL btree entry (4,000 bytes), unique all the same", async () => {
		let path = "long";
		await nodes.insert({ ds: "ds1", path, type: "COLLECTION" });
		for (let i = 0; i < 15; i++) {
			path += `/${"é".repeat(120)}${i}`;
			await nodes.insert({ ds: "ds1", path, type: "COLLECTION" });
		}
		assert.ok(Buffer.byteLength(path) > 3600, `${Buffer.byteLength(path)} bytes`);
		await nodes.insert({ ds: "ds1", path: `${path}/f`, type: "LEAF", size: 2 });
		assert.equal((await nodes.byPath("ds1", `${path}/f`))?.size, 2);
		await rejectsWith(nodes.insert({ ds: "ds1", path: `${path}/f`, type: "LEAF" }), ConflictError);
		const { moved } = await nodes.moveSubtree("ds1", "long", "ds1", "longer");
		assert.equal(moved, 17);
		assert.equal((await nodes.byPath("ds1", `longer${path.slice(4)}/f`))?.size, 2);
	});

	it("lists a datasource's files most recently modified first, under a folder or anywhere", async () => {
		await nodes.ensureRoot("ds-recent");
		await nodes.insert({ ds: "ds-recent", path: "a", type: "COLLECTION", mtime: 1 });
		await nodes.insert({ ds: "ds-recent", path: "ab", type: "COLLECTION", mtime: 1 });
		await nodes.insert({ ds: "ds-recent", path: "a/old.txt", type: "LEAF", mtime: 100 });
		await nodes.insert({ ds: "ds-recent", path: "a/new.txt", type: "LEAF", mtime: 300 });
		await nodes.insert({ ds: "ds-recent", path: "ab/other.txt", type: "LEAF", mtime: 200 });
		assert.deepEqual((await nodes.recentFiles("ds-recent", "", 10)).map((n) => n.path), ["a/new.txt", "ab/other.txt", "a/old.txt"]);
		assert.deepEqual((await nodes.recentFiles("ds-recent", "a", 10)).map((n) => n.path), ["a/new.txt", "a/old.txt"]);
		assert.deepEqual((await nodes.recentFiles("ds-recent", "", 1)).map((n) => n.path), ["a/new.txt"]);
	});
});
