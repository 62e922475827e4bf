import assert from "node:assert/strict";
import { SearchEngine, type SearchRequest } from "../../lib/search/engine";
import type { TreeChange } from "../../lib/contracts";
import { SearchIndex, type IndexNode } from "../../lib/search/index";
import { SortedSlots } from "../../lib/search/sorted";
import { NameText } from "../../lib/search/names";
import { ContentIndex, isTextFile, queryWords, tokenize } from "../../lib/search/content";
import { compileQuery, parseDurationDate, parseFreeString, runSearch, tuning, type RootInfo, type TreeQuery } from "../../lib/search/query";

const NOW = Math.floor(Date.now() / 1000);
let n = 0;
const id = () => `uuid-${String(++n).padStart(6, "0")}`;

function folder(ds: string, path: string, extra: Partial<IndexNode> = {}): IndexNode {
	return { Uuid: id(), ds, path, type: "COLLECTION", size: 0, mtime: NOW, meta: {}, ...extra };
}
function file(ds: string, path: string, extra: Partial<IndexNode> = {}): IndexNode {
	return { Uuid: id(), ds, path, type: "LEAF", size: 100, mtime: NOW, etag: "0123456789abcdef0123456789abcdef", meta: {}, ...extra };
}

const ALICE: RootInfo[] = [
	{ Slug: "personal-files", UUID: "ws-personal", Label: "My Files", ds: "personal", rootPath: "alice", read: true, write: true },
	{ Slug: "common-files", UUID: "ws-common", Label: "Common Files", ds: "pydiods1", rootPath: "", read: true, write: true },
	{ Slug: "readonly", UUID: "ws-ro", Label: "Read Only", ds: "archive", rootPath: "", read: true, write: false },
	{ Slug: "writeonly", UUID: "ws-wo", Label: "Drop Box", ds: "dropbox", rootPath: "", read: false, write: true },
];

/** An engine over the given nodes; file texts come from `texts` (by uuid). */
async function engineWith(nodes: IndexNode[], texts: Record<string, string> = {}): Promise<SearchEngine> {
	const sorted = [...nodes].sort((a, b) => (a.Uuid < b.Uuid ? -1 : 1));
	const e = new SearchEngine({
		async scan(after, limit) {
			return sorted.filter((x) => after === undefined || x.Uuid > after).slice(0, limit);
		},
		async readContent(node) {
			const t = texts[node.Uuid];
			return t === undefined ? null : Buffer.from(t);
		},
	});
	await e.build(3);
	await e.idle();
	return e;
}

function search(e: SearchEngine, Query: TreeQuery, roots = ALICE, extra: Partial<SearchRequest> = {}) {
	return e.search({ Query, ...extra }, roots) as { Total: number; Results?: { Uuid: string; Path: string; Type: string; Size: number; MetaStore: Record<string, string> }[] };
}
const paths = (r: { Results?: { Path: string }[] }) => (r.Results ?? []).map((x) => x.Path);

describe("search: building blocks", () => {
	it("keeps slots in (datasource, path) order and finds subtree runs", () => {
		const ds: number[] = [];
		const p: string[] = [];
		const sorted = new SortedSlots(
			(s) => ds[s],
			(s) => p[s],
		);
		const keys: [number, string][] = [];
		let seed = 7;
		const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
		const seg = ["a", "b", "a-b", "a.b", "ab", "b0", "c"];
		for (let s = 0; s < 5000; s++) {
			ds[s] = Math.floor(rnd() * 3);
			p[s] = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => seg[Math.floor(rnd() * seg.length)]).join("/") + `/${s}`;
			keys.push([ds[s], p[s]]);
			sorted.insert(s);
		}
		for (let s = 0; s < 5000; s += 3) assert.ok(sorted.remove(s));
		const live = [...Array(5000).keys()].filter((s) => s % 3 !== 0);
		const expect = live.sort((a, b) => ds[a] - ds[b] || (p[a] < p[b] ? -1 : p[a] > p[b] ? 1 : 0));
		const all = sorted.slice(sorted.lowerBound(0, ""), sorted.lowerBound(99, ""));
		assert.deepEqual(all, expect);
		// Every descendant run is exactly the slots whose path starts with "prefix/".
		for (const prefix of ["a", "a/b", "a-b", "b", "c/a"]) {
			const [from, to] = sorted.descendants(1, prefix);
			const got = sorted.slice(from, to).sort((x, y) => x - y);
			const want = live.filter((s) => ds[s] === 1 && p[s].startsWith(prefix + "/")).sort((x, y) => x - y);
			assert.deepEqual(got, want, prefix);
		}
		assert.equal(sorted.find(ds[1], p[1]), 1);
		assert.equal(sorted.find(ds[0], p[0]), -1);
	});

	it("finds name substrings in the name text, across renames and compaction", () => {
		const names: string[] = [];
		const text = new NameText((s) => names[s]);
		for (let s = 0; s < 1000; s++) text.set(s, (names[s] = `file-${s}.txt`));
		const hits = (q: string) => {
			const out: number[] = [];
			text.search(q, (s) => void out.push(s));
			return out.sort((a, b) => a - b);
		};
		assert.deepEqual(hits("file-99"), [99, 990, 991, 992, 993, 994, 995, 996, 997, 998, 999]);
		for (let s = 0; s < 1000; s++) text.set(s, (names[s] = `doc-${s}.md`));
		assert.deepEqual(hits("file-"), []);
		assert.equal(hits(".md").length, 1000);
		text.remove(5);
		assert.ok(!hits("doc-5.").includes(5));
		text.compact();
		assert.deepEqual(hits("doc-12."), [12]);
		assert.equal(hits("c-1").length, 111);
	});

	it("tokenises text into distinct lower-case words without accents and knows text files", () => {
		assert.deepEqual(tokenize("Hello, World! hello\tWORLD 42 café-crème Cafe"), ["hello", "world", "42", "cafe", "creme"]);
		assert.deepEqual(queryWords("Café RÉSUMÉ*"), ["cafe", "resume*"]);
		assert.deepEqual(queryWords("Budg* report"), ["budg*", "report"]);
		assert.ok(isTextFile("notes.MD", 10));
		assert.ok(isTextFile("data.json", 10));
		assert.ok(isTextFile("page.html", 10));
		assert.ok(isTextFile("README", 10, JSON.stringify("text/plain")));
		assert.ok(!isTextFile("photo.jpg", 10));
		assert.ok(!isTextFile("big.txt", 2 * 1024 * 1024));
	});

	it("drops the words of removed files lazily, without duplicates when a slot is reused", () => {
		const c = new ContentIndex();
		c.set(1, ["alpha", "beta"]);
		c.set(2, ["alpha"]);
		c.set(3, ["gamma"]);
		assert.deepEqual(c.matchAll(["alpha"]).sort(), [1, 2]);
		c.remove(1);
		assert.deepEqual(c.matchAll(["alpha"]), [2]);
		assert.deepEqual(c.matchAll(["beta"]), []);
		c.set(1, ["alpha", "delta"]);
		assert.deepEqual([...new Set(c.matchAll(["alpha"]))].sort(), [1, 2]);
		assert.deepEqual(c.matchAll(["alpha", "delta"]), [1]);
		assert.deepEqual(c.matchAll(["al*"]).sort(), [1, 2]);
		assert.equal(c.indexedFiles, 3);
	});

	it("parses durations, FreeStrings and refuses bad queries with 400", () => {
		assert.deepEqual(parseDurationDate(">10d", 1_000_000), { maxDate: 1_000_000 - 864_000 });
		assert.deepEqual(parseDurationDate("<2h", 1_000_000), { minDate: 1_000_000 - 7200 });
		assert.deepEqual(parseDurationDate("<1h30m", 10_000), { minDate: 10_000 - 5400 });
		const f = parseFreeString('+Meta.usermeta-tags:foo -Meta.x:"a b" Basename:rep*');
		assert.equal(f.must.length, 1);
		assert.equal(f.not.length, 1);
		assert.equal(f.should.length, 1);
		for (const bad of [{ DurationDate: "10 days" }, { FreeString: "+Owner:bob" }, { MinSize: "12x" as unknown as number }, { Type: "FILE" }, { PathPrefix: ["common-files/../x"] }, { PathDepth: -1 }, { GeoQuery: { Distance: "10km" } }, { Content: "!!!" }]) {
			assert.throws(() => compileQuery(bad as TreeQuery), (e: { code?: number }) => e.code === 400, JSON.stringify(bad));
		}
	});
});

// Each query runs twice: over the scopes' runs of the tree (small scopes), and from candidate lists (the name
// text, postings, meta values), which is what large scopes use.
for (const strategy of ["scope runs", "candidate lists"]) describe(`search: queries over an index (${strategy})`, () => {
	let e: SearchEngine;
	const saved = tuning.rangeScanLimit;
	before(() => {
		tuning.rangeScanLimit = strategy === "scope runs" ? 1e9 : 0;
	});
	after(() => {
		tuning.rangeScanLimit = saved;
	});
	const nodes = {
		personalRoot: folder("personal", "alice"),
		bobRoot: folder("personal", "bob"),
		bobSecret: file("personal", "bob/Secret-Report.pdf"),
		myReport: file("personal", "alice/My Annual REPORT.pdf", { size: 5000 }),
		holiday: file("personal", "alice/photos/holiday.JPG", { size: 2_000_000, mtime: NOW - 40 * 86400 }),
		photos: folder("personal", "alice/photos"),
		notes: file("personal", "alice/notes.txt", { size: 30 }),
		hidden: file("personal", "alice/.hidden-report.pdf"),
		hiddenDir: folder("personal", "alice/.git"),
		inHiddenDir: file("personal", "alice/.git/report-config"),
		binned: file("personal", "alice/recycle_bin/old-report.pdf", { meta: { recycle_restore: JSON.stringify("personal-files/old-report.pdf") } }),
		bin: folder("personal", "alice/recycle_bin"),
		dsRoot: folder("pydiods1", ""),
		projects: folder("pydiods1", "projects"),
		budget: file("pydiods1", "projects/budget-2024.xlsx", { size: 12_000, mtime: NOW - 3 * 86400, meta: { "usermeta-tags": JSON.stringify("Finance,Urgent"), "usermeta-stars": "4" } }),
		plan: file("pydiods1", "projects/plan.md", { size: 800, meta: { "usermeta-tags": JSON.stringify("finance") } }),
		deep: file("pydiods1", "projects/x/y/deep-report.csv", { size: 50 }),
		x: folder("pydiods1", "projects/x"),
		y: folder("pydiods1", "projects/x/y"),
		commonBin: file("pydiods1", "recycle_bin/deleted-report.txt"),
		archived: file("archive", "2019/report-2019.pdf", { meta: { GeoLocation: JSON.stringify({ lat: 48.85, lon: 2.35 }) } }),
		dropped: file("dropbox", "someone-report.pdf"),
	};
	const texts = {
		[nodes.notes.Uuid]: "Buy milk. Call the Plumber about the leak!",
		[nodes.plan.Uuid]: "# Plan\nMigrate the plumbing of the budget service.",
		[nodes.deep.Uuid]: "name,amount\nplumber,120\n",
	};

	before(async () => {
		e = await engineWith(Object.values(nodes), texts);
	});

	it("answers {Total: 0} without a Query", () => {
		assert.deepEqual(e.search({}, ALICE), { Total: 0 });
	});

	it("matches names case-insensitively by substring, with * and ? wildcards", () => {
		assert.deepEqual(paths(search(e, { FileName: "report" })).sort(), ["common-files/projects/x/y/deep-report.csv", "personal-files/My Annual REPORT.pdf", "readonly/2019/report-2019.pdf"]);
		assert.deepEqual(paths(search(e, { FileName: "REPORT-2019" })), ["readonly/2019/report-2019.pdf"]);
		assert.deepEqual(paths(search(e, { FileName: "annual*pdf" })), ["personal-files/My Annual REPORT.pdf"]);
		assert.deepEqual(paths(search(e, { FileName: "pla?.md" })), ["common-files/projects/plan.md"]);
	});

	it("excludes hidden nodes, recycle bins, unreadable workspaces and other users' folders", () => {
		const all = paths(search(e, { FileName: "report" }));
		for (const p of all) assert.ok(!/hidden|\.git|old-report|deleted-report|someone|Secret/.test(p), p);
		// Workspace roots themselves are not results; their content is.
		assert.ok(!paths(search(e, { Type: "COLLECTION" })).some((p) => p === "personal-files" || p === "common-files"));
	});

	it("maps hits to user paths with the workspace metas Cells adds", () => {
		const r = search(e, { FileName: "budget" });
		assert.equal(r.Total, 1);
		const hit = r.Results![0];
		assert.equal(hit.Path, "common-files/projects/budget-2024.xlsx");
		assert.equal(hit.Uuid, nodes.budget.Uuid);
		assert.equal(hit.MetaStore.repository_id, JSON.stringify("ws-common"));
		assert.equal(hit.MetaStore.repository_display, JSON.stringify("Common Files"));
		assert.equal(hit.MetaStore.name, JSON.stringify("budget-2024.xlsx"));
		assert.equal(hit.MetaStore["usermeta-stars"], "4");
		assert.equal(hit.MetaStore.node_readonly, undefined);
		assert.equal(search(e, { FileName: "report-2019" }).Results![0].MetaStore.node_readonly, "true");
	});

	it("filters by extension (one or several), type, size and dates", () => {
		assert.deepEqual(paths(search(e, { Extension: "JPG" })), ["personal-files/photos/holiday.JPG"]);
		assert.deepEqual(paths(search(e, { Extension: "xlsx|.md" })), ["common-files/projects/budget-2024.xlsx", "common-files/projects/plan.md"]);
		assert.deepEqual(paths(search(e, { Type: "COLLECTION" })), ["common-files/projects", "common-files/projects/x", "common-files/projects/x/y", "personal-files/photos"]);
		assert.deepEqual(paths(search(e, { Type: "COLLECTION", FileName: "o" })), ["common-files/projects", "personal-files/photos"]);
		assert.deepEqual(paths(search(e, { MinSize: 1000, MaxSize: 20_000 })), ["common-files/projects/budget-2024.xlsx", "personal-files/My Annual REPORT.pdf"]);
		assert.deepEqual(paths(search(e, { MinSize: "1000000" })), ["personal-files/photos/holiday.JPG"]);
		assert.deepEqual(paths(search(e, { DurationDate: ">10d" })), ["personal-files/photos/holiday.JPG"]);
		assert.deepEqual(paths(search(e, { DurationDate: "<5d", Extension: "xlsx" })), ["common-files/projects/budget-2024.xlsx"]);
		assert.deepEqual(paths(search(e, { MinDate: NOW - 5 * 86400, MaxDate: NOW - 86400 })), ["common-files/projects/budget-2024.xlsx"]);
	});

	it("restricts to a workspace (one segment) or a folder (deeper), with PathDepth", () => {
		assert.deepEqual(paths(search(e, { PathPrefix: ["readonly"] })), ["readonly/2019", "readonly/2019/report-2019.pdf"].filter((p) => p !== "readonly/2019"));
		assert.deepEqual(paths(search(e, { PathPrefix: ["common-files/projects/x"] })), ["common-files/projects/x/y", "common-files/projects/x/y/deep-report.csv"]);
		assert.deepEqual(paths(search(e, { PathPrefix: ["common-files/projects"], PathDepth: -1 })), ["common-files/projects/budget-2024.xlsx", "common-files/projects/plan.md", "common-files/projects/x"]);
		assert.deepEqual(paths(search(e, { PathPrefix: ["personal-files"], Type: "LEAF" })), ["personal-files/My Annual REPORT.pdf", "personal-files/notes.txt", "personal-files/photos/holiday.JPG"]);
		assert.equal(search(e, { PathPrefix: ["writeonly"] }).Total, 0);
		assert.equal(search(e, { PathPrefix: ["nope"] }).Total, 0);
		assert.equal(search(e, { PathPrefix: ["personal-files/recycle_bin"] }).Total, 0);
	});

	it("matches metadata with the minimal Bleve forms (decoded values, case-insensitive, wildcards)", () => {
		assert.deepEqual(paths(search(e, { FreeString: "+Meta.usermeta-tags:finance" })), ["common-files/projects/budget-2024.xlsx", "common-files/projects/plan.md"]);
		assert.deepEqual(paths(search(e, { FreeString: "+Meta.usermeta-tags:URGENT" })), ["common-files/projects/budget-2024.xlsx"]);
		assert.deepEqual(paths(search(e, { FreeString: "Meta.usermeta-tags:urg*" })), ["common-files/projects/budget-2024.xlsx"]);
		assert.deepEqual(paths(search(e, { FreeString: "+Meta.usermeta-tags:finance -Meta.usermeta-tags:urgent" })), ["common-files/projects/plan.md"]);
		assert.deepEqual(paths(search(e, { FreeString: "+Meta.usermeta-stars:4" })), ["common-files/projects/budget-2024.xlsx"]);
		assert.deepEqual(paths(search(e, { FreeString: '+Meta.usermeta-tags:"finance,urgent"' })), ["common-files/projects/budget-2024.xlsx"]);
		assert.equal(search(e, { FreeString: "+Meta.usermeta-tags:nothing" }).Total, 0);
	});

	it("finds words in the text of small text files, and file name or content", () => {
		assert.deepEqual(paths(search(e, { Content: "plumber" })).sort(), ["common-files/projects/x/y/deep-report.csv", "personal-files/notes.txt"]);
		assert.deepEqual(paths(search(e, { Content: "PLUMB*" })).sort(), ["common-files/projects/plan.md", "common-files/projects/x/y/deep-report.csv", "personal-files/notes.txt"]);
		assert.deepEqual(paths(search(e, { Content: "call plumber" })), ["personal-files/notes.txt"]);
		assert.deepEqual(paths(search(e, { FileNameOrContent: "budget" })).sort(), ["common-files/projects/budget-2024.xlsx", "common-files/projects/plan.md"]);
		assert.equal(search(e, { Content: "budget", Extension: "xlsx" }).Total, 0);
	});

	it("negates with Not, inside the caller's scope only", () => {
		const r = paths(search(e, { Not: true, Type: "COLLECTION", PathPrefix: ["common-files"] }));
		assert.deepEqual(r, ["common-files/projects/budget-2024.xlsx", "common-files/projects/plan.md", "common-files/projects/x/y/deep-report.csv"]);
	});

	it("looks nodes up by uuid or exact path, still within the caller's rights", () => {
		assert.deepEqual(paths(search(e, { UUIDs: [nodes.plan.Uuid, nodes.bobSecret.Uuid, "nope"] })), ["common-files/projects/plan.md"]);
		assert.deepEqual(paths(search(e, { Paths: ["personal-files/notes.txt", "personal-files/recycle_bin/old-report.pdf"] })), ["personal-files/notes.txt"]);
	});

	it("searches around a point (GeoQuery)", () => {
		assert.deepEqual(paths(search(e, { GeoQuery: { Center: { Lat: 48.86, Lon: 2.34 }, Distance: "5km" } })), ["readonly/2019/report-2019.pdf"]);
		assert.equal(search(e, { GeoQuery: { Center: { Lat: 45.76, Lon: 4.83 }, Distance: "50km" } }).Total, 0);
		assert.equal(search(e, { GeoQuery: { TopLeft: { Lat: 50, Lon: 2 }, BottomRight: { Lat: 48, Lon: 3 } } }).Total, 1);
	});
});

describe("search: pagination and order", () => {
	it("pages with From/Size, Total counting every match, sorted by path or a field", async () => {
		const list = [folder("pydiods1", "many"), ...Array.from({ length: 120 }, (_, i) => file("pydiods1", `many/f${String(i).padStart(3, "0")}.txt`, { size: 1000 - i, mtime: NOW - i }))];
		const e = await engineWith(list);
		const p1 = search(e, { Extension: "txt" }, ALICE);
		assert.equal(p1.Total, 120);
		assert.equal(p1.Results!.length, 50);
		assert.equal(p1.Results![0].Path, "common-files/many/f000.txt");
		const p3 = search(e, { Extension: "txt" }, ALICE, { From: 100, Size: 50 });
		assert.equal(p3.Total, 120);
		assert.deepEqual(paths(p3), Array.from({ length: 20 }, (_, i) => `common-files/many/f${100 + i}.txt`));
		assert.equal(search(e, { Extension: "txt" }, ALICE, { Size: 5000 }).Results!.length, 120);
		assert.equal(search(e, { Extension: "txt" }, ALICE, { From: 500 }).Results!.length, 0);
		const bySize = search(e, { FileName: "f0" }, ALICE, { SortField: "size", Size: 3 });
		assert.deepEqual(paths(bySize), ["common-files/many/f099.txt", "common-files/many/f098.txt", "common-files/many/f097.txt"]);
		const byTime = search(e, { FileName: "f" }, ALICE, { SortField: "mtime", SortDirDesc: true, Size: 2 });
		assert.deepEqual(paths(byTime), ["common-files/many/f000.txt", "common-files/many/f001.txt"]);
		const byName = search(e, { Extension: "txt" }, ALICE, { SortField: "name", SortDirDesc: true, Size: 1 });
		assert.deepEqual(paths(byName), ["common-files/many/f119.txt"]);
		assert.throws(() => search(e, { Extension: "txt" }, ALICE, { SortField: "colour" }), (err: { code?: number }) => err.code === 400);
	});

	it("orders by path whether nodes were laid out at the build or added and moved since", async () => {
		const list = [folder("pydiods1", "o"), ...Array.from({ length: 40 }, (_, i) => file("pydiods1", `o/k${String(i * 2).padStart(3, "0")}.txt`))];
		const e = await engineWith(list);
		for (let i = 0; i < 40; i++) e.apply({ type: "create", node: file("pydiods1", `o/k${String(i * 2 + 1).padStart(3, "0")}.txt`) });
		const moved = list[5];
		e.apply({ type: "move", node: { ...moved, path: "o/k0005.txt" }, from: { ds: "pydiods1", path: moved.path } });
		const want = [...Array(80).keys()].map((i) => (i === 8 ? null : `common-files/o/k${String(i).padStart(3, "0")}.txt`)).filter((p): p is string => !!p);
		want.splice(1, 0, "common-files/o/k0005.txt");
		const saved = tuning.rangeScanLimit;
		try {
			for (const limit of [1e9, 0]) {
				tuning.rangeScanLimit = limit;
				assert.deepEqual(paths(search(e, { FileName: "k0" }, ALICE, { Size: 100 })), want, `limit ${limit}`);
				assert.deepEqual(paths(search(e, { FileName: "k0" }, ALICE, { From: 10, Size: 5 })), want.slice(10, 15));
				assert.deepEqual(paths(search(e, { FileName: "k0" }, ALICE, { Size: 100, SortDirDesc: true })), [...want].reverse());
			}
			e.index.relayout();
			assert.deepEqual(paths(search(e, { FileName: "k0" }, ALICE, { Size: 100 })), want);
		} finally {
			tuning.rangeScanLimit = saved;
		}
	});

	it("counts a node once when two workspaces show it", async () => {
		const e = await engineWith([folder("pydiods1", "team"), file("pydiods1", "team/doc.txt")]);
		const roots: RootInfo[] = [...ALICE, { Slug: "team", UUID: "ws-team", Label: "Team", ds: "pydiods1", rootPath: "team", read: true }];
		const r = search(e, { FileName: "doc" }, roots);
		assert.equal(r.Total, 1);
		assert.deepEqual(paths(r), ["common-files/team/doc.txt"]);
		assert.deepEqual(paths(search(e, { FileName: "doc", PathPrefix: ["team"] }, roots)), ["team/doc.txt"]);
	});
});

describe("search: kept correct by tree.changed events", () => {
	it("follows creates, content changes, meta changes, subtree moves and deletes", async () => {
		const texts: Record<string, string> = {};
		const top = folder("pydiods1", "docs");
		const sub = folder("pydiods1", "docs/sub");
		const a = file("pydiods1", "docs/sub/alpha.txt", { etag: "11111111111111111111111111111111" });
		texts[a.Uuid] = "first version";
		const e = await engineWith([folder("pydiods1", ""), top, sub, a], texts);
		const apply = (ev: TreeChange) => e.apply(ev);
		assert.deepEqual(paths(search(e, { Content: "first" })), ["common-files/docs/sub/alpha.txt"]);

		// A new file, then its content changes (new etag): the old words go, the new ones come.
		const b = file("pydiods1", "docs/beta.md", { etag: "22222222222222222222222222222222" });
		texts[b.Uuid] = "hello world";
		apply({ type: "create", node: b });
		await e.idle();
		assert.deepEqual(paths(search(e, { Content: "hello" })), ["common-files/docs/beta.md"]);
		texts[b.Uuid] = "goodbye moon";
		apply({ type: "content", node: { ...b, etag: "33333333333333333333333333333333", size: 12 } });
		await e.idle();
		assert.equal(search(e, { Content: "hello" }).Total, 0);
		assert.deepEqual(paths(search(e, { Content: "moon", MinSize: 12 })), ["common-files/docs/beta.md"]);

		// Meta.
		apply({ type: "meta", node: { ...b, etag: "33333333333333333333333333333333", size: 12, meta: { "usermeta-tags": JSON.stringify("blue") } } });
		assert.deepEqual(paths(search(e, { FreeString: "+Meta.usermeta-tags:blue" })), ["common-files/docs/beta.md"]);
		assert.deepEqual(paths(search(e, { Content: "moon" })), ["common-files/docs/beta.md"], "a meta change keeps the text");

		// A folder move carries its subtree; names and texts stay.
		apply({ type: "move", node: { ...top, path: "archive/docs-2024", mtime: NOW + 1 }, from: { ds: "pydiods1", path: "docs" } });
		assert.deepEqual(paths(search(e, { FileName: "alpha" })), ["common-files/archive/docs-2024/sub/alpha.txt"]);
		assert.deepEqual(paths(search(e, { PathPrefix: ["common-files/archive/docs-2024"] })), [
			"common-files/archive/docs-2024/beta.md",
			"common-files/archive/docs-2024/sub",
			"common-files/archive/docs-2024/sub/alpha.txt",
		]);
		assert.equal(search(e, { PathPrefix: ["common-files/docs"] }).Total, 0);
		assert.deepEqual(paths(search(e, { Content: "first" })), ["common-files/archive/docs-2024/sub/alpha.txt"]);
		assert.deepEqual(paths(search(e, { FileName: "docs-2024" })), ["common-files/archive/docs-2024"]);

		// Into the recycle bin (a move): gone from results; restored: back.
		apply({ type: "move", node: { ...sub, path: "recycle_bin/sub" }, from: { ds: "pydiods1", path: "archive/docs-2024/sub" } });
		assert.equal(search(e, { FileName: "alpha" }).Total, 0);
		apply({ type: "move", node: { ...sub, path: "archive/docs-2024/sub" }, from: { ds: "pydiods1", path: "recycle_bin/sub" } });
		assert.equal(search(e, { FileName: "alpha" }).Total, 1);

		// A move to another datasource (another workspace).
		apply({ type: "move", node: { ...sub, ds: "personal", path: "alice/sub" }, from: { ds: "pydiods1", path: "archive/docs-2024/sub" } });
		assert.deepEqual(paths(search(e, { FileName: "alpha" })), ["personal-files/sub/alpha.txt"]);

		// A delete of a folder removes its subtree.
		apply({ type: "delete", node: { ...sub, ds: "personal", path: "alice/sub" } });
		assert.equal(search(e, { FileName: "alpha" }).Total, 0);
		assert.equal(search(e, { Content: "first" }).Total, 0);
		apply({ type: "delete", node: { ...top, path: "archive/docs-2024" } });
		assert.equal(search(e, { PathPrefix: ["common-files"] }).Total, 0);
		assert.equal(e.index.count, 1);
	});

	it("applies events received during a build after it", async () => {
		let release!: () => void;
		const gate = new Promise<void>((r) => (release = r));
		const x = file("pydiods1", "x.txt");
		const e = new SearchEngine({
			async scan(after) {
				await gate;
				return after ? [] : [folder("pydiods1", ""), x];
			},
		});
		const built = e.build();
		e.apply({ type: "create", node: file("pydiods1", "y.txt") });
		e.apply({ type: "delete", node: x });
		release();
		await built;
		assert.deepEqual(paths(search(e, { Extension: "txt" })), ["common-files/y.txt"]);
	});

	it("stays correct through a re-layout after many changes", async () => {
		const idx = new SearchIndex();
		const made: IndexNode[] = [];
		for (let i = 0; i < 3000; i++) {
			const nd = file("pydiods1", `d${i % 17}/n${(i * 7919) % 3000}.txt`);
			made.push(nd);
			idx.upsert(nd);
		}
		for (let i = 0; i < 3000; i += 5) idx.removeTree(made[i].Uuid, made[i].ds, made[i].path);
		assert.ok(idx.setContent(made[1].Uuid, made[1].etag, ["kiwi"]));
		const before = [...idx.uuidsIndexed()].sort();
		const q = compileQuery({ FileName: "n1" });
		const r1 = runSearch(idx, q, ALICE, { from: 0, size: 5000 }).hits.map((h) => idx.uuids[h.slot]);
		idx.relayout();
		assert.deepEqual([...idx.uuidsIndexed()].sort(), before);
		const r2 = runSearch(idx, q, ALICE, { from: 0, size: 5000 }).hits.map((h) => idx.uuids[h.slot]);
		assert.deepEqual(r2, r1);
		assert.deepEqual(idx.contentMatchAll(["kiwi"]), [idx.slotOf(made[1].Uuid)]);
		for (let s = 0; s < idx.highWater; s++) assert.equal(idx.sorted.find(idx.dsIds[s], idx.paths[s]), s);
	});
});
