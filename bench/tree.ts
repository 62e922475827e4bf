// Tree benchmark (issue 8): a whole node (dist/, as `npm start` runs it) over a node index of BENCH_TREE_FILES
// files (default 1,000,000: one folder of BENCH_CHILDREN, default 100,000, the rest in folders of 1,000), written
// into DATA_DIR/cellar.db (or PostgreSQL, from bench/store.ts) while the node is stopped; the search service is
// left out. Measures, against the same node on an empty index:
//   start to the first answer (a stat in the big folder), RSS once idle, the first page of the big folder on the
//   first request after the start and then (by name, by size, deep by Offset), stat p50 (never from the response
//   cache), a 4 KiB upload p50.
// With BENCH_TREE_NEDB=<n>, also the one-time import of an NeDB nodes.db of n files at start (nodes/s, peak RSS)
// and the start after it; BENCH_TREE_FILES=0 measures that alone.
//   npm run build && node --import tsx bench/tree.ts        (BENCH_TREE_FILES=200000 for a quicker run)
import { type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodesRepo, analyzeAfterImport, openDatabase, type NodeRecord } from "../lib/db";
import { PASSWORD, freePort, pct, rssMb, since, startNode as startBenchNode, stopNode as stop } from "./common";

export const FILES = Number(process.env.BENCH_TREE_FILES || 1_000_000);
const CHILDREN = Math.min(Number(process.env.BENCH_CHILDREN || 100_000), FILES);
const NEDB = Number(process.env.BENCH_TREE_NEDB || 0);
const DS = "pydiods1";

/**
 * The node on SQLite in dataDir, or on `databaseUrl` (PostgreSQL) when given; without the search service (its
 * in-memory index is built from the whole tree after each start: run it on nodes of its own at this size), unless
 * BENCH_TREE_SERVICES says otherwise ("all" for every service).
 */
function startNode(port: number, dataDir: string, databaseUrl?: string): ChildProcess {
	return startBenchNode(port, dataDir, { LOG_LEVEL: "info", SCRYPT_N: "1024", DATABASE_URL: databaseUrl, SERVICES: process.env.BENCH_TREE_SERVICES || "!search" }, (line) => {
		if (/NeDB node index/.test(line)) console.log(`    node: ${line.replace(/^.*?(importing|imported)/, "$1")}`);
	});
}

/** Logs in as soon as the node answers, then waits for `path` to stat; ms from `t0` to that answer. */
async function firstAnswer(base: string, path: string, t0: bigint): Promise<{ token: string; ms: number }> {
	for (let i = 0; i < 6000; i++) {
		const r = await fetch(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: PASSWORD } }) }).catch(() => null);
		if (r?.ok) {
			const token = ((await r.json()) as { JWT: string }).JWT;
			for (let j = 0; j < 6000; j++) {
				const s = await fetch(`${base}/a/tree/stat/${encodeURIComponent(path)}`, { headers: { Authorization: `Bearer ${token}` } }).catch(() => null);
				if (s?.status === 200) return { token, ms: since(t0) };
				await new Promise((res) => setTimeout(res, 50));
			}
		}
		await new Promise((res) => setTimeout(res, 50));
	}
	throw new Error("node did not come up");
}

interface Figures {
	startMs: number;
	idleRss: number;
	statP50: number;
	uploadP50: number;
}

/** Stat (never cached) and 4 KiB uploads into `folder`, in a running node. */
async function common(base: string, token: string, pid: number, statPath: string, folder: string): Promise<Omit<Figures, "startMs">> {
	await new Promise((r) => setTimeout(r, 3000));
	const idleRss = rssMb(pid);
	const auth = { Authorization: `Bearer ${token}` };
	const stat: number[] = [];
	for (let i = 0; i < 200; i++) {
		const t = process.hrtime.bigint();
		const r = await fetch(`${base}/a/tree/stat/${encodeURIComponent(statPath)}?miss=${i}`, { headers: auth });
		await r.arrayBuffer();
		if (r.status !== 200) throw new Error(`stat answered ${r.status}`);
		stat.push(since(t));
	}
	const body = Buffer.alloc(4096, 7);
	const up: number[] = [];
	for (let i = 0; i < 41; i++) {
		const t = process.hrtime.bigint();
		const r = await fetch(`${base}/io/${folder}/new-${i}.bin`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body });
		await r.arrayBuffer();
		if (r.status !== 200) throw new Error(`PUT answered ${r.status}`);
		up.push(since(t));
	}
	return { idleRss, statP50: pct(stat, 50), uploadP50: pct(up, 50) };
}

/** The index, written straight into the database: the big folder, then folders of 1,000 files. */
async function fill(dataDir: string, databaseUrl?: string): Promise<{ sample: string; ms: number }> {
	const t0 = process.hrtime.bigint();
	const db = await openDatabase({ dataDir, databaseUrl });
	try {
		const nodes = new NodesRepo(db);
		const root = await nodes.ensureRoot(DS);
		const now = Math.floor(Date.now() / 1000);
		let batch: NodeRecord[] = [];
		let made = 0;
		let sample = "";
		const flush = async () => {
			if (batch.length) await nodes.importNodes(batch);
			batch = [];
		};
		// Sizes 0: the folders above keep the sum of their content without recounting.
		const folder = async (path: string, n: number) => {
			const f: NodeRecord = { uuid: randomUUID(), ds: DS, parent: root.uuid, name: path, path, type: "COLLECTION", size: 0, mtime: now, meta: {} };
			batch.push(f);
			for (let i = 0; i < n; i++, made++) {
				const name = `file-${String(i).padStart(7, "0")}-${(made * 2654435761) % 1000003}.bin`;
				const uuid = randomUUID();
				batch.push({ uuid, ds: DS, parent: f.uuid, name, path: `${path}/${name}`, type: "LEAF", size: 0, mtime: now - (made % 100_000), etag: "d41d8cd98f00b204e9800998ecf8427e", key: uuid, meta: {} });
				if (i === Math.floor(n / 2) && path === "many") sample = `${path}/${name}`;
				if (batch.length >= 20_000) await flush();
			}
		};
		await folder("many", CHILDREN);
		for (let i = 0; made < FILES; i++) await folder(`folder-${String(i).padStart(5, "0")}`, Math.min(999, FILES - made));
		await flush();
		// As the NeDB import does after a bulk load (PostgreSQL plans by statistics; see analyzeAfterImport).
		await analyzeAfterImport(db, ["nodes"]);
		return { sample, ms: since(t0) };
	} finally {
		await db.close();
	}
}

async function main(): Promise<void> {
	const procs: ChildProcess[] = [];
	const dirs: string[] = [];
	try {
		const port = await freePort();
		const base = `http://127.0.0.1:${port}`;
		if (FILES > 0) await largeIndex(port, base, procs, dirs);
		if (NEDB > 0) await nedbImport(port, base, procs, dirs);
	} finally {
		for (const p of procs) p.kill("SIGKILL");
		for (const d of dirs) rmSync(d, { recursive: true, force: true });
	}
}

/** The figures of the large index against the empty one, as table rows: [measure, empty index, large index]. */
export type TreeRows = [string, string, string][];

/** The large-index measures on SQLite, or on the PostgreSQL database `databaseUrl` (empty) when given. */
export async function treeFigures(databaseUrl?: string): Promise<TreeRows> {
	const procs: ChildProcess[] = [];
	const dirs: string[] = [];
	try {
		const port = await freePort();
		return await largeIndex(port, `http://127.0.0.1:${port}`, procs, dirs, databaseUrl);
	} finally {
		for (const p of procs) p.kill("SIGKILL");
		for (const d of dirs) rmSync(d, { recursive: true, force: true });
	}
}

async function largeIndex(port: number, base: string, procs: ChildProcess[], dirs: string[], databaseUrl?: string): Promise<TreeRows> {
	const empty = mkdtempSync(join(tmpdir(), "cellar-bench-tree-"));
	dirs.push(empty);

	// The same node on an empty index.
	let t0 = process.hrtime.bigint();
	let node = startNode(port, empty, databaseUrl);
	procs.push(node);
	let first = await firstAnswer(base, "common-files", t0);
	await fetch(`${base}/a/tree/create`, { method: "POST", headers: { Authorization: `Bearer ${first.token}`, "Content-Type": "application/json" }, body: JSON.stringify({ Nodes: [{ Path: "common-files/small", Type: "COLLECTION" }] }) });
	await fetch(`${base}/io/common-files/small/f.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": first.token }, body: "x" });
	const e: Figures = { startMs: first.ms, ...(await common(base, first.token, node.pid as number, "common-files/small/f.txt", "common-files/small")) };
	await stop(node);
	// Second start of the empty one: what a restart costs without an index to read.
	t0 = process.hrtime.bigint();
	node = startNode(port, empty, databaseUrl);
	procs.push(node);
	e.startMs = (await firstAnswer(base, "common-files/small/f.txt", t0)).ms;
	await stop(node);

	// The large index, in the same DATA_DIR layout.
	console.log(`writing ${FILES.toLocaleString("en")} files into ${databaseUrl ? "PostgreSQL" : "cellar.db"}...`);
	const filled = await fill(empty, databaseUrl);
	console.log(`  written in ${(filled.ms / 1000).toFixed(1)} s`);
	t0 = process.hrtime.bigint();
	node = startNode(port, empty, databaseUrl);
	procs.push(node);
	first = await firstAnswer(base, `common-files/${filled.sample}`, t0);
	const auth = { Authorization: `Bearer ${first.token}`, "Content-Type": "application/json" };
	const page = async (body: Record<string, unknown>) => {
		const t = process.hrtime.bigint();
		const r = await fetch(`${base}/a/tree/stats`, { method: "POST", headers: auth, body: JSON.stringify({ NodePaths: ["common-files/many/*"], ...body }) });
		const j = (await r.json()) as { Nodes?: unknown[]; Pagination?: { Total: number } };
		const ms = since(t);
		if (j.Pagination?.Total !== CHILDREN) throw new Error(`unexpected page: ${JSON.stringify(j).slice(0, 300)}`);
		return ms;
	};
	const firstPage = await page({ Limit: 50 });
	const rest: number[] = [];
	for (let i = 1; i <= 30; i++) rest.push(await page({ Limit: 50 + i }));
	const bySizeFirst = await page({ Limit: 50, SortField: "size", SortDirDesc: true });
	const byMtime: number[] = [];
	for (let i = 1; i <= 10; i++) byMtime.push(await page({ Limit: 50 + i, SortField: "mtime", SortDirDesc: true }));
	const deep: number[] = [];
	for (let i = 0; i < 10; i++) deep.push(await page({ Offset: 50_000 + i * 100, Limit: 50 }));
	// Page after page, as a client scrolls (each page resumes where the previous ended).
	const scroll: number[] = [];
	for (let i = 0; i < 20; i++) scroll.push(await page({ Offset: 60_000 + i * 100, Limit: 100 }));
	const l: Figures = { startMs: first.ms, ...(await common(base, first.token, node.pid as number, `common-files/${filled.sample}`, "common-files/many")) };
	const smallInBig = await common(base, first.token, node.pid as number, `common-files/${filled.sample}`, "common-files/folder-00001");
	const rssAfter = rssMb(node.pid as number);
	await stop(node);

	const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
	const rows: TreeRows = [
		["start to the first answer (a stat)", `${f(e.startMs)} ms`, `${f(l.startMs)} ms`],
		["RSS once idle", `${f(e.idleRss)} MB`, `${f(l.idleRss)} MB (${f(rssAfter)} MB after the runs below)`],
		["stat of a file, p50 (never cached)", `${f(e.statP50)} ms`, `${f(l.statP50)} ms`],
		["4 KiB upload (PUT /io), p50", `${f(e.uploadP50)} ms`, `${f(l.uploadP50)} ms in the ${CHILDREN.toLocaleString("en")}-child folder, ${f(smallInBig.uploadP50)} ms in a 1,000-file one`],
		[`first page (50) of the ${CHILDREN.toLocaleString("en")}-child folder, first request after the start`, "", `${f(firstPage)} ms`],
		["the same, then (p50 of 30, never cached)", "", `${f(pct(rest, 50))} ms`],
		["by size, descending, first time / by mtime p50", "", `${f(bySizeFirst)} ms / ${f(pct(byMtime, 50))} ms`],
		["a page at Offset 50,000 (OFFSET), p50", "", `${f(pct(deep, 50))} ms`],
		["page after page from Offset 60,000 (resumed), p50", "", `${f(pct(scroll, 50))} ms`],
	];
	console.log(`\nnode index: ${FILES.toLocaleString("en")} files (one folder of ${CHILDREN.toLocaleString("en")}), ${databaseUrl ? "PostgreSQL" : "SQLite"}, against an empty index\n`);
	console.log("| measure | empty index | large index |\n|---|---:|---:|");
	for (const [k, a, b] of rows) console.log(`| ${k} | ${a} | ${b} |`);
	return rows;
}

async function nedbImport(port: number, base: string, procs: ChildProcess[], dirs: string[]): Promise<void> {
	// A DATA_DIR of the NeDB versions: nodes.db read once into cellar.db at start.
	const old = mkdtempSync(join(tmpdir(), "cellar-bench-nedb-"));
	dirs.push(old);
	// Only the index: the node installs itself around it on this first start, as the upgrade test's fixture does.
	mkdirSync(join(old, "db"), { recursive: true });
	const file = join(old, "db", "nodes.db");
	const now = Math.floor(Date.now() / 1000);
	let lines = [JSON.stringify({ _id: `DATASOURCE:${DS}`, ds: DS, path: "", dsPath: DS, parentKey: "", name: DS, type: "COLLECTION", size: 0, mtime: now, meta: {} })];
	for (let i = 0; i < NEDB; i++) {
		const folder = `d${Math.floor(i / 1000)}`;
		if (i % 1000 === 0) lines.push(JSON.stringify({ _id: randomUUID(), ds: DS, path: folder, dsPath: `${DS}/${folder}`, parentKey: DS, name: folder, type: "COLLECTION", size: 1000, mtime: now, meta: {} }));
		const name = `f${i}.txt`;
		lines.push(JSON.stringify({ _id: randomUUID(), ds: DS, path: `${folder}/${name}`, dsPath: `${DS}/${folder}/${name}`, parentKey: `${DS}/${folder}`, name, type: "LEAF", size: 1, mtime: now, meta: {}, key: "k" }));
		if (lines.length >= 10_000) {
			appendFileSync(file, lines.join("\n") + "\n");
			lines = [];
		}
	}
	appendFileSync(file, lines.join("\n") + "\n");
	let t0 = process.hrtime.bigint();
	let node = startNode(port, old);
	procs.push(node);
	const ms = (await firstAnswer(base, "common-files/d0/f0.txt", t0)).ms;
	const peak = rssMb(node.pid as number, "VmHWM");
	await stop(node);
	// The next start, on the imported index.
	t0 = process.hrtime.bigint();
	node = startNode(port, old);
	procs.push(node);
	const again = (await firstAnswer(base, "common-files/d0/f0.txt", t0)).ms;
	await new Promise((r) => setTimeout(r, 3000));
	const idle = rssMb(node.pid as number);
	await stop(node);
	console.log(`| first start with an NeDB nodes.db of ${NEDB.toLocaleString("en")} files (imported once) | ${(ms / 1000).toFixed(1)} s, ${Math.round(NEDB / (ms / 1000)).toLocaleString("en")} nodes/s, peak RSS ${peak.toFixed(0)} MB |`);
	console.log(`| the next start | ${(again / 1000).toFixed(1)} s, RSS once idle ${idle.toFixed(0)} MB |`);
}

if (require.main === module)
	main().catch((e) => {
		console.error(e);
		process.exit(1);
	});
