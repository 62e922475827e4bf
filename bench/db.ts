// The node index in SQLite at a million nodes (lib/db's NodesRepo, synchronous=FULL, WAL): what NeDB made slow
// (a start that reads every node: 60-85 s and 1.8 GB at 1,000,000) measured on the SQL store. Builds a file with
// BENCH_DB_NODES nodes (default 1,000,000), one folder of BENCH_DB_BIG (default 100,000) children and the rest in
// folders of 1,000, then in a fresh process-state (database closed and reopened):
//   open time, first page of the big folder (by name, size, mtime), a deep keyset page, child counts,
//   path and uuid lookups (p50/p99), single-file inserts (each a durable commit), a 1,000-file folder moved and
//   deleted, RSS and file size.
//   node --import tsx bench/db.ts                 (BENCH_DB_NODES=200000 for a quicker run; BENCH_DB_KEEP=1 keeps the file)
// Not part of `npm test` or `npm run bench`: informative figures.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodesRepo, openDatabase, type Db, type NodeRecord } from "../lib/db";

const TOTAL = Number(process.env.BENCH_DB_NODES || 1_000_000);
const BIG = Math.min(Number(process.env.BENCH_DB_BIG || 100_000), TOTAL - 10);
const PER_FOLDER = 1000;
const LOOKUPS = Number(process.env.BENCH_DB_LOOKUPS || 10_000);
const NOW = 1_700_000_000;

let seed = 7;
function rnd(): number {
	seed |= 0;
	seed = (seed + 0x6d2b79f5) | 0;
	let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
	t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const hex = (n: number) => Math.floor(rnd() * 2 ** 32).toString(16).padStart(8, "0") + n.toString(16).padStart(8, "0");
const uuidOf = (n: number) => {
	const h = hex(n) + hex(n * 31);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const WORDS = "report invoice photo holiday budget draft final summary notes meeting project data backup image scan contract".split(" ");
const fileName = (i: number) => `${WORDS[i % WORDS.length]}-${Math.floor(rnd() * 1e9).toString(36)}-${i}.${["pdf", "jpg", "docx", "txt"][i % 4]}`;

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
const rows: [string, string][] = [];
const report = (what: string, value: string) => {
	rows.push([what, value]);
	console.log(`  ${what}: ${value}`);
};

/** Loads the tree; returns sample paths and uuids for the lookups. */
async function build(db: Db): Promise<{ paths: string[]; uuids: string[] }> {
	const nodes = new NodesRepo(db);
	const root = await nodes.ensureRoot("pydiods1");
	const samples: { paths: string[]; uuids: string[] } = { paths: [], uuids: [] };
	let batch: NodeRecord[] = [];
	let made = 1;
	const flush = async () => {
		if (batch.length) await nodes.importNodes(batch);
		batch = [];
	};
	const add = async (n: NodeRecord) => {
		batch.push(n);
		made++;
		if (rnd() < LOOKUPS / TOTAL) samples.paths.push(n.path), samples.uuids.push(n.uuid);
		if (batch.length >= 20_000) await flush();
	};
	const folder = async (path: string, children: number) => {
		const f: NodeRecord = { uuid: uuidOf(made), ds: "pydiods1", parent: root.uuid, name: path, path, type: "COLLECTION", size: 0, mtime: NOW, meta: {} };
		await add(f);
		for (let i = 0; i < children; i++) {
			const name = fileName(made);
			const size = Math.floor(rnd() * 10_000_000);
			f.size += size;
			await add({ uuid: uuidOf(made), ds: "pydiods1", parent: f.uuid, name, path: `${path}/${name}`, type: "LEAF", size, mtime: NOW - Math.floor(rnd() * 1e7), etag: hex(made), key: uuidOf(made), meta: { "mime": '"application/octet-stream"' } });
		}
	};
	await folder("big", BIG);
	for (let i = 0; made < TOTAL; i++) await folder(`folder-${String(i).padStart(5, "0")}`, Math.min(PER_FOLDER - 1, TOTAL - made - 1));
	await flush();
	return samples;
}

/** Runs in a process of its own, so that open time and RSS are those of a node starting on an existing file. */
async function measure(dir: string): Promise<void> {
	const samples = JSON.parse(readFileSync(join(dir, "samples.json"), "utf8")) as { paths: string[]; uuids: string[] };
	const rssBefore = process.memoryUsage().rss;
	let t0 = process.hrtime.bigint();
	const db = await openDatabase({ dataDir: dir });
	report("open (existing file, migrations checked)", `${ms(t0).toFixed(1)} ms`);
	const nodes = new NodesRepo(db);
	const big = (await nodes.byPath("pydiods1", "big")) as NodeRecord;

	t0 = process.hrtime.bigint();
	let page = await nodes.childrenPage(big.uuid, { limit: 100 });
	report(`first page (100) of the ${BIG.toLocaleString("en")}-child folder by name, first query after open`, `${ms(t0).toFixed(2)} ms`);
	const times = async (n: number, fn: () => Promise<unknown>) => {
		const out: number[] = [];
		for (let i = 0; i < n; i++) {
			const s = process.hrtime.bigint();
			await fn();
			out.push(ms(s));
		}
		return out;
	};
	let xs = await times(50, () => nodes.childrenPage(big.uuid, { limit: 100 }));
	report("  same, repeated: p50", `${pct(xs, 50).toFixed(2)} ms`);
	for (const sort of ["size", "mtime"] as const) {
		xs = await times(20, () => nodes.childrenPage(big.uuid, { limit: 100, sort, desc: true }));
		report(`  by ${sort}, descending: p50`, `${pct(xs, 50).toFixed(2)} ms`);
	}
	// A page half-way down: keyset, so no cost for the children before it.
	let after = page.next;
	for (let i = 0; i < BIG / 200 && after; i++) after = (await nodes.childrenPage(big.uuid, { limit: 100, after })).next;
	xs = await times(20, () => nodes.childrenPage(big.uuid, { limit: 100, after }));
	report(`  page at child ${(BIG / 2).toLocaleString("en")}: p50`, `${pct(xs, 50).toFixed(2)} ms`);
	t0 = process.hrtime.bigint();
	let walked = 0;
	after = undefined;
	do {
		page = await nodes.childrenPage(big.uuid, { limit: 1000, after });
		walked += page.nodes.length;
		after = page.next;
	} while (after);
	report(`  every child, pages of 1,000 (${walked.toLocaleString("en")})`, `${ms(t0).toFixed(0)} ms`);
	xs = await times(10, () => nodes.countChildren(big.uuid));
	report("  countChildren: p50", `${pct(xs, 50).toFixed(1)} ms`);

	let i = 0;
	xs = await times(samples.paths.length, () => nodes.byPath("pydiods1", samples.paths[i++]));
	report(`path lookup (${samples.paths.length.toLocaleString("en")} random paths)`, `p50 ${(pct(xs, 50) * 1000).toFixed(0)} µs, p99 ${(pct(xs, 99) * 1000).toFixed(0)} µs`);
	i = 0;
	xs = await times(samples.uuids.length, () => nodes.byUuid(samples.uuids[i++]));
	report("uuid lookup", `p50 ${(pct(xs, 50) * 1000).toFixed(0)} µs, p99 ${(pct(xs, 99) * 1000).toFixed(0)} µs`);

	i = 0;
	xs = await times(200, () => nodes.insert({ ds: "pydiods1", path: `big/new-${i++}.txt`, type: "LEAF", size: 10 }));
	report("insert a file in the big folder (a durable commit; 2 folder sizes)", `p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms`);

	t0 = process.hrtime.bigint();
	const { moved } = await nodes.moveSubtree("pydiods1", "folder-00000", "pydiods1", "big/moved");
	report(`move a folder of ${moved.toLocaleString("en")} nodes`, `${ms(t0).toFixed(0)} ms`);
	t0 = process.hrtime.bigint();
	const removed = await nodes.deleteSubtree("pydiods1", "big/moved");
	report(`delete a folder of ${removed.length.toLocaleString("en")} nodes`, `${ms(t0).toFixed(0)} ms`);

	report("RSS of this process", `${mb(process.memoryUsage().rss)} (${mb(rssBefore)} before opening)`);
	let wal = 0;
	try {
		wal = statSync(`${db.location}-wal`).size;
	} catch {
		// no WAL left
	}
	report("database file", `${mb(statSync(db.location).size)} (+ ${mb(wal)} WAL)`);
	await db.close();
	writeFileSync(join(dir, "report.json"), JSON.stringify(rows));
}

async function main(): Promise<void> {
	const dir = mkdtempSync(join(tmpdir(), "cellar-bench-db-"));
	try {
		console.log(`SQLite node index: ${TOTAL.toLocaleString("en")} nodes, one folder of ${BIG.toLocaleString("en")} children, the rest in folders of ${PER_FOLDER}`);
		const t0 = process.hrtime.bigint();
		const db = await openDatabase({ dataDir: dir });
		const samples = await build(db);
		await db.close();
		const loadMs = ms(t0);
		report("load (importNodes, 20,000 rows a transaction)", `${(loadMs / 1000).toFixed(1)} s, ${Math.round(TOTAL / (loadMs / 1000)).toLocaleString("en")} nodes/s`);
		writeFileSync(join(dir, "samples.json"), JSON.stringify(samples));
		const child = spawnSync(process.execPath, [...process.execArgv, __filename, "--measure", dir], { stdio: "inherit", env: process.env });
		if (child.status !== 0) throw new Error(`measuring process failed (${child.status ?? child.signal})`);
		rows.push(...(JSON.parse(readFileSync(join(dir, "report.json"), "utf8")) as [string, string][]));
		console.log("\n| measure | figure |\n|---|---|");
		for (const [k, v] of rows) console.log(`| ${k.trim()} | ${v} |`);
	} finally {
		if (process.env.BENCH_DB_KEEP) console.log(`kept: ${dir}`);
		else rmSync(dir, { recursive: true, force: true });
	}
}

const at = process.argv.indexOf("--measure");
(at > 0 ? measure(process.argv[at + 1]) : main()).catch((err) => {
	console.error(err);
	process.exit(1);
});
