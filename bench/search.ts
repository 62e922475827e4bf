// Search at a million nodes, over the index in the SQL store (lib/db/search.ts), on SQLite (or PostgreSQL with
// BENCH_SEARCH_PG=1). Three processes, so that each figure is its own:
//   1. fill: 1,000,000 synthetic nodes written to the nodes table (as an upgrade or the tree would have them);
//   2. first start: the engine's catch-up indexes every name and the text of the small text files (a new install
//      of this index over an existing tree: what used to happen at every start);
//   3. restart: time to the first answer, the catch-up that finds nothing to do, then typical queries (p50/p99)
//      and the process's memory.
// Target: p50 of a name search under 50 ms at a million nodes, memory that does not grow with the node count.
//   node --import tsx bench/search.ts      (BENCH_SEARCH_NODES=200000 for a smaller run; BENCH_SEARCH_DIR=<dir>
//   keeps the filled store between runs)
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { openDatabase, NodesRepo, type Db, type NodeRecord, type OpenOptions } from "../lib/db";
import { SearchRepo } from "../lib/db/search";
import { SearchEngine } from "../lib/search/engine";
import type { RootInfo, TreeQuery } from "../lib/search/query";
import { PG_SERVER, withPgDatabase } from "./common";

const TOTAL = Number(process.env.BENCH_SEARCH_NODES || 1_000_000);
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES || 200);

// Deterministic pseudo-random numbers (mulberry32).
let seed = 42;
function rnd(): number {
	seed |= 0;
	seed = (seed + 0x6d2b79f5) | 0;
	let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
	t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(a: T[]): T => a[Math.floor(rnd() * a.length)];

const WORDS = (
	"report invoice photo holiday budget draft final summary notes meeting project data backup image scan contract letter memo plan review " +
	"design sketch proposal minutes agenda schedule roadmap release spec manual guide tutorial presentation slides poster flyer brochure " +
	"quote order receipt statement payroll audit forecast analysis survey results thesis paper article chapter appendix index glossary"
).split(" ");
// About one file in ten is a small text file whose words get indexed.
const EXTS = "pdf pdf pdf docx docx xlsx xlsx pptx jpg jpg jpg jpg jpg png png png mp4 mov zip gz odt ods psd ai heic mp3 wav txt md csv".split(" ");
// A Zipf-ish vocabulary for file text: a few very common words, many rare ones.
const VOCAB = Array.from({ length: 50_000 }, (_, i) => (i < WORDS.length ? WORDS[i] : `w${i.toString(36)}x${(i * 7919).toString(36)}`));
const zipf = () => VOCAB[Math.floor(VOCAB.length ** rnd()) - 1];
const NOW = Math.floor(Date.now() / 1000);

const uuid = () => {
	const h = randomBytes(16).toString("hex");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** Datasources and their owners (users, projects), each owner a small folder tree filled with files. */
const LAYOUT: { ds: string; owners: number; perOwner: number; ownerName: (i: number) => string }[] = [
	{ ds: "personal", owners: 1000, perOwner: 0.6, ownerName: (i) => `user${i}` },
	{ ds: "pydiods1", owners: 100, perOwner: 0.3, ownerName: (i) => `${pick(WORDS)}-project-${i}` },
	{ ds: "archive", owners: 50, perOwner: 0.1, ownerName: (i) => `archive-${2000 + i}` },
];

/** The nodes of one owner at a time, folders before what they hold. */
function* generate(roots: Map<string, string>): Generator<NodeRecord[]> {
	for (const l of LAYOUT) {
		const quota = Math.floor((TOTAL * l.perOwner) / l.owners);
		for (let o = 0; o < l.owners; o++) {
			const out: NodeRecord[] = [];
			const folderUuid = new Map<string, string>();
			const addFolder = (path: string) => {
				const slash = path.lastIndexOf("/");
				const parent = slash < 0 ? (roots.get(l.ds) as string) : (folderUuid.get(path.slice(0, slash)) as string);
				const u = uuid();
				folderUuid.set(path, u);
				out.push({ uuid: u, ds: l.ds, parent, name: path.slice(slash + 1), path, type: "COLLECTION", size: 0, mtime: NOW - Math.floor(rnd() * 3 * 365 * 86400), meta: {} });
			};
			const top = l.ownerName(o);
			addFolder(top);
			const folders = [top];
			for (let a = 0; a < 10; a++) {
				const sub = `${top}/${pick(WORDS)}-${a}`;
				addFolder(sub);
				folders.push(sub);
				for (let b = 0; b < 5; b++) {
					const f = `${sub}/${pick(WORDS)} ${2015 + b}`;
					addFolder(f);
					folders.push(f);
				}
			}
			addFolder(`${top}/recycle_bin`);
			folders.push(`${top}/recycle_bin`);
			for (let n = folders.length; n < quota; n++) {
				const hidden = rnd() < 0.01;
				const ext = pick(EXTS);
				const base = hidden ? `.~lock-${n}` : rnd() < 0.2 ? `IMG_${Math.floor(rnd() * 100000)}_${n}` : `${rnd() < 0.3 ? pick(WORDS).toUpperCase() : pick(WORDS)}-${pick(WORDS)}_${n}`;
				const name = `${base}.${ext}`;
				const meta: Record<string, string> = {};
				if (rnd() < 0.03) meta["usermeta-tags"] = JSON.stringify(`${pick(WORDS)},${pick(WORDS)}`);
				if (rnd() < 0.02) meta["usermeta-stars"] = JSON.stringify(1 + Math.floor(rnd() * 5));
				const text = ["txt", "md", "csv"].includes(ext);
				const folder = pick(folders);
				out.push({
					uuid: uuid(),
					ds: l.ds,
					parent: folderUuid.get(folder) as string,
					name,
					path: `${folder}/${name}`,
					type: "LEAF",
					size: text ? Math.floor(rnd() * 20_000) : Math.floor(Math.exp(rnd() * 20)),
					mtime: NOW - Math.floor(rnd() * 3 * 365 * 86400),
					etag: randomBytes(16).toString("hex"),
					meta,
				});
			}
			yield out;
		}
	}
}

function synthText(): Buffer {
	const n = 50 + Math.floor(rnd() * 250);
	const words: string[] = [];
	for (let i = 0; i < n; i++) words.push(zipf());
	return Buffer.from(words.join(" "));
}

const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MB`;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const hwm = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) * 1024;

async function fill(db: Db): Promise<void> {
	const nodes = new NodesRepo(db);
	const roots = new Map<string, string>();
	for (const l of LAYOUT) roots.set(l.ds, (await nodes.ensureRoot(l.ds)).uuid);
	const t = performance.now();
	let n = 0;
	let batch: NodeRecord[] = [];
	for (const owner of generate(roots)) {
		batch.push(...owner);
		if (batch.length >= 20_000) {
			await nodes.importNodes(batch);
			n += batch.length;
			batch = [];
		}
	}
	if (batch.length) await nodes.importNodes(batch);
	n += batch.length;
	console.log(JSON.stringify({ filled: n + roots.size, ms: performance.now() - t }));
}

/** A start of the engine over the store: first answer, catch-up, then (`queries`) the query mix. */
async function start(opts: OpenOptions, queries: boolean): Promise<void> {
	setFlagsFromString("--expose-gc");
	const gc = runInNewContext("gc") as () => void;
	gc();
	const rss0 = process.memoryUsage().rss;
	const user: RootInfo[] = [
		{ Slug: "personal-files", UUID: "ws-personal", Label: "My Files", ds: "personal", rootPath: "user17", read: true, write: true },
		{ Slug: "common-files", UUID: "ws-common", Label: "Common Files", ds: "pydiods1", rootPath: "", read: true, write: true },
		{ Slug: "archive", UUID: "ws-archive", Label: "Archive", ds: "archive", rootPath: "", read: true, write: false },
	];
	const all: RootInfo[] = [{ Slug: "personal-all", UUID: "ws-p", Label: "Personal", ds: "personal", rootPath: "", read: true }, ...user.slice(1)];

	const t0 = performance.now();
	const db = await openDatabase(opts);
	const store = new SearchRepo(db);
	const engine = new SearchEngine({ store, readContent: async () => synthText() });
	await engine.search({ Query: { FileName: "report" }, Size: 50 }, user);
	const firstAnswerMs = performance.now() - t0;
	let t = performance.now();
	await engine.catchUp();
	await engine.idle();
	const catchUpMs = performance.now() - t;
	const st = await engine.status();
	const out: Record<string, unknown> = { firstAnswerMs, catchUpMs, namesMs: engine.lastCatchUp?.namesMs, names: st.Nodes, texts: st.TextFiles };

	if (queries) {
		const folders = (await db.kysely.selectFrom("nodes").select("path").where("ds", "=", "pydiods1").where("type", "=", "COLLECTION").where("path", "not like", "%/%/%").where("path", "<>", "").execute()).map((r) => r.path);
		const kinds: Record<string, () => TreeQuery> = {
			"name substring": () => ({ FileName: pick(WORDS).slice(0, 3 + Math.floor(rnd() * 4)) }),
			"name, rare (_12345)": () => ({ FileName: `_${Math.floor(rnd() * 600)}.` }),
			extension: () => ({ Extension: pick(["pdf", "jpg|png", "docx", "mp4|zip"]) }),
			"prefix + size range": () => {
				const min = Math.floor(Math.exp(rnd() * 15));
				return { PathPrefix: [`common-files/${pick(folders)}`], MinSize: min, MaxSize: min * 10 };
			},
			"content word": () => ({ Content: zipf() }),
			"content word, common": () => ({ Content: pick(WORDS) }),
			"date (<30d) + type LEAF": () => ({ DurationDate: "<30d", Type: "LEAF" }),
			"meta tag (FreeString)": () => ({ FreeString: `+Meta.usermeta-tags:${pick(WORDS)}` }),
		};
		const rows: Record<string, { p50: number; p99: number; hits: number }> = {};
		for (const [label, roots, n] of [
			["standard user", user, QUERIES],
			["sees everything", all, Math.max(5, Math.floor(QUERIES / 10))],
		] as const) {
			for (const [kind, make] of Object.entries(kinds)) {
				if (process.env.BENCH_SEARCH_ONLY && !kind.includes(process.env.BENCH_SEARCH_ONLY)) continue;
				// Scans of a whole scope are slow by nature (every node of the scope is read): fewer of them.
				const scan = !kind.startsWith("name") && !kind.startsWith("content");
				const count = scan ? Math.max(3, Math.floor(n / 20)) : n;
				const times: number[] = [];
				let totals = 0;
				for (let i = 0; i < count; i++) {
					const q = make();
					const t1 = performance.now();
					const r = (await engine.search({ Query: q, Size: 50 }, roots as RootInfo[])) as { Total: number };
					times.push(performance.now() - t1);
					totals += r.Total;
				}
				times.sort((a, b) => a - b);
				rows[`${label}: ${kind}`] = { p50: pct(times, 50), p99: pct(times, 99), hits: Math.round(totals / count) };
			}
		}
		out.queries = rows;
		// Event cost: a create written by the tree, then applied (its name upserted).
		const nodes = new NodesRepo(db);
		const made: NodeRecord[] = [];
		for (let i = 0; i < 200; i++) made.push(await nodes.insert({ ds: "pydiods1", path: `${folders[0]}/bench-new-${i}.pdf`, type: "LEAF", size: 10, etag: "e" }));
		t = performance.now();
		for (const m of made) engine.apply({ type: "create", node: { Uuid: m.uuid, ds: m.ds, path: m.path, type: "LEAF", size: 10, etag: "e" } });
		await engine.idle();
		out.createEventUs = ((performance.now() - t) / made.length) * 1000;
		for (const m of made) await nodes.deleteOne(m.ds, m.path, { type: "LEAF" });
	}
	gc();
	out.rssMb = process.memoryUsage().rss / 1024 / 1024;
	out.rssGrowthMb = (process.memoryUsage().rss - rss0) / 1024 / 1024;
	out.peakRssMb = hwm() / 1024 / 1024;
	await db.close();
	console.log(JSON.stringify(out));
}

function child(mode: string, opts: OpenOptions): Record<string, unknown> {
	const r = spawnSync(process.execPath, ["--import", "tsx", __filename, mode, JSON.stringify(opts)], { stdio: ["ignore", "pipe", "inherit"], env: process.env, maxBuffer: 64 * 1024 * 1024 });
	if (r.status !== 0) throw new Error(`bench/search.ts ${mode} failed (${r.status})`);
	const lines = r.stdout.toString().trim().split("\n");
	return JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
}

async function main(): Promise<void> {
	const [mode, optsJson] = process.argv.slice(2);
	if (mode === "fill") {
		const db = await openDatabase(JSON.parse(optsJson) as OpenOptions);
		await fill(db);
		await db.close();
		return;
	}
	if (mode === "first" || mode === "restart") return start(JSON.parse(optsJson) as OpenOptions, mode === "restart");

	const run = async (opts: OpenOptions, label: string) => {
		const marker = opts.dataDir ? join(opts.dataDir, `filled-${TOTAL}`) : undefined;
		if (!marker || !existsSync(marker)) {
			const f = child("fill", opts);
			console.log(`${label}: ${Number(f.filled).toLocaleString()} nodes written to the store in ${(Number(f.ms) / 1000).toFixed(1)} s (the tree's side, not search)`);
			const first = child("first", opts);
			console.log(
				`  first start over them (a new index): first answer ${Number(first.firstAnswerMs).toFixed(0)} ms; catch-up ${(Number(first.catchUpMs) / 1000).toFixed(1)} s (names ${(Number(first.namesMs) / 1000).toFixed(1)} s, then texts) for ${Number(first.names).toLocaleString()} names and ${Number(first.texts).toLocaleString()} text files; RSS ${Number(first.rssMb).toFixed(0)} MB (peak ${Number(first.peakRssMb).toFixed(0)} MB)`,
			);
			if (marker) writeFileSync(marker, "");
		}
		const r = child("restart", opts);
		console.log(`  restart: first answer ${Number(r.firstAnswerMs).toFixed(0)} ms after opening the store; catch-up with nothing to do ${(Number(r.catchUpMs) / 1000).toFixed(1)} s (in the background: searches answer meanwhile)`);
		const rows = r.queries as Record<string, { p50: number; p99: number; hits: number }>;
		for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(44)} p50 ${v.p50.toFixed(1).padStart(7)} ms   p99 ${v.p99.toFixed(1).padStart(7)} ms   avg hits ${v.hits.toLocaleString()}`);
		console.log(`  create event: ${Number(r.createEventUs).toFixed(0)} µs each; memory: RSS ${Number(r.rssMb).toFixed(0)} MB after the queries (${Number(r.rssGrowthMb).toFixed(0)} MB above the bare process; peak ${Number(r.peakRssMb).toFixed(0)} MB)`);
		const names = Object.entries(rows).filter(([k]) => k.startsWith("standard user: name"));
		const worst = Math.max(...names.map(([, v]) => v.p50));
		console.log(`  target p50 of a name search < 50 ms at ${TOTAL.toLocaleString()} nodes: ${worst < 50 ? "met" : "NOT met"} (worst name p50 ${worst.toFixed(1)} ms, standard user)`);
	};

	const keep = process.env.BENCH_SEARCH_DIR;
	const dir = keep || mkdtempSync(join(tmpdir(), "cellar-bench-search-"));
	try {
		console.log(`search index in the store at ${TOTAL.toLocaleString()} nodes (figures are noisy on a shared machine)`);
		await run({ dataDir: dir }, "SQLite");
		if (process.env.BENCH_SEARCH_PG === "1") await withPgDatabase((url) => run({ databaseUrl: url }, `PostgreSQL (${PG_SERVER})`));
	} finally {
		if (!keep) rmSync(dir, { recursive: true, force: true });
	}
	void mb;
}

main().catch((err) => {
	console.error(err);
	process.exit(1);
});
