// Store benchmark (issue 8): the same rows on SQLite (DATA_DIR/cellar.db) and on PostgreSQL (a fresh database
// `cellar_bench_<random>` on BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432, dropped afterwards), printed
// side by side, each against a bare Node server (or the node's own empty index) measured in the same run:
//   1. 4 KiB PUTs through /io, BENCH_PUT_CLIENTS (16) at once: files/s, % of a bare Node http server doing what a
//      durable upload owes (md5, write, fsync, rename) with the same client and concurrency. Target >= 50%.
//   2. Never-cached GET /a/tree/stat and a never-cached 50-child listing (POST /a/meta/bulk/get, a different
//      query each request): req/s, % of a bare server answering the same bytes. Target >= 40%.
//   3. The node's peak RSS during a BENCH_MULTIPART_MB (512) MiB AWS SDK multipart upload (64 MiB parts, 4 at
//      once) and its download. Target <= 150 MB.
//   4. bench/tree.ts's large index (BENCH_TREE_FILES files; `npm run bench` sets 200,000) against an empty one.
//   5. The floors of this stack (bench/floors.ts) against each throughput target's budget.
// PostgreSQL missing: its column says so. BENCH_STORE_TREE=0 skips part 4.
import type autocannon from "autocannon";
import { createReadStream, mkdtempSync, rmSync } from "node:fs";
import { execFileSync, type ChildProcess } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client, GetObjectCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { bareServer, cpuMs, freePort, load, login, peakRss, pgAvailable, rssMb, startNode, stopNode, withPgDatabase, type Load } from "./common";
import { FILES, treeFigures, type TreeRows } from "./tree";
import { budgetUs, gatewayFloor, sqliteFloors, verdict } from "./floors";

const CLIENTS = Number(process.env.BENCH_PUT_CLIENTS || 16);
const MULTIPART_MB = Number(process.env.BENCH_MULTIPART_MB || 512);
const TREE = process.env.BENCH_STORE_TREE !== "0" && FILES > 0;

type Rows = [string, string, string][]; // [row, figure, target met?]

/** What the bare servers did in a run, for the floors (bench/floors.ts). */
interface Bare {
	put: Load;
	/** The bare PUT server's CPU per file, µs. */
	putCpuUs: number;
	stat: Load;
	list: Load;
	statBytes: string;
}

const pctOf = (f: Load, b: Load) => (f.rps / b.rps) * 100;

/** Rows 1-3 on one node (SQLite, or PostgreSQL at databaseUrl). */
async function serverRows(databaseUrl?: string): Promise<{ rows: Rows; bare: Bare }> {
	const dataDir = mkdtempSync(join(tmpdir(), "cellar-bench-store-"));
	const port = await freePort();
	const base = `http://127.0.0.1:${port}`;
	const procs: ChildProcess[] = [];
	const node = startNode(port, dataDir, { DATABASE_URL: databaseUrl, IP_BAN_THRESHOLD: "1000000", MAX_FAILED_LOGINS: "1000000" });
	procs.push(node);
	const rows: Rows = [];
	try {
		const token = await login(base);
		const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

		// 3. (First, on the idle node: the load rows below leave their own garbage.) Peak RSS of the node during a
		//    multipart upload (64 MiB parts, 4 at once) and the download.
		const src = join(dataDir, "source.bin");
		execFileSync("dd", ["if=/dev/urandom", `of=${src}`, "bs=1M", `count=${MULTIPART_MB}`, "status=none"]);
		const s3 = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
		const key = "common-files/bench/multipart.bin";
		const idle = rssMb(node.pid as number);
		const up = await peakRss(node.pid as number, async () => {
			const t = Date.now();
			await new Upload({ client: s3, params: { Bucket: "io", Key: key, Body: createReadStream(src) }, partSize: 64 * 1024 * 1024, queueSize: 4 }).done();
			return Date.now() - t;
		});
		rmSync(src);
		const down = await peakRss(node.pid as number, async () => {
			const t = Date.now();
			const r = await s3.send(new GetObjectCommand({ Bucket: "io", Key: key }));
			let got = 0;
			for await (const chunk of r.Body as AsyncIterable<Buffer>) got += chunk.length;
			if (got !== MULTIPART_MB * 1024 * 1024) throw new Error(`downloaded ${got} bytes`);
			return Date.now() - t;
		});
		for (const [name, f] of [["upload", up], ["download", down]] as const)
			rows.push([`node peak RSS, ${MULTIPART_MB} MiB AWS SDK multipart ${name} (target <= 150 MB)`, `${f.peakMb.toFixed(0)} MB (${idle.toFixed(0)} MB idle before; ${((MULTIPART_MB / f.result) * 1000).toFixed(0)} MB/s)`, f.peakMb <= 150 ? "met" : `missed by ${(f.peakMb - 150).toFixed(0)} MB`]);

		// 1. Small durable uploads, each a new file, against a bare server that fsyncs each one (md5, write, fsync,
		//    rename into place), the same client and concurrency.
		const bareDir = join(dataDir, "bare");
		const barePut = await bareServer(`const fs=require("node:fs"),fsp=fs.promises,c=require("node:crypto");fs.mkdirSync(${JSON.stringify(bareDir)},{recursive:true});let n=0;require("node:http").createServer((q,s)=>{const bufs=[];q.on("data",(b)=>bufs.push(b));q.on("end",async()=>{const b=Buffer.concat(bufs),h=c.createHash("md5").update(b).digest("hex"),f=${JSON.stringify(bareDir)}+"/f"+(n++),t=f+".tmp";const fh=await fsp.open(t,"w");await fh.write(b);await fh.sync();await fh.close();await fsp.rename(t,f);s.writeHead(200,{ETag:'"'+h+'"'});s.end()})}).listen(PORT,"127.0.0.1")`);
		procs.push(barePut.proc);
		const body = Buffer.alloc(4096, 7);
		let n = 0;
		const putOpts = (url: string, headers: Record<string, string>): autocannon.Options => ({ url, method: "PUT", connections: CLIENTS, headers, body, requests: [{ setupRequest: (r) => ({ ...r, path: `${new URL(url).pathname}/f-${n++}.bin` }) }] });
		await fetch(`${base}/a/tree/create`, { method: "POST", headers: auth, body: JSON.stringify({ Nodes: [{ Path: "common-files/puts", Type: "COLLECTION" }] }) });
		await load(putOpts(`${base}/io/common-files/puts`, { "X-Pydio-Bearer": token }), 3); // warm-up
		execFileSync("sync");
		const bareCpu0 = cpuMs(barePut.proc.pid as number);
		const bare = await load(putOpts(`${barePut.url}/x`, {}));
		const barePutCpuUs = ((cpuMs(barePut.proc.pid as number) - bareCpu0) * 1000) / (bare.rps * Number(process.env.BENCH_SECONDS || 8));
		execFileSync("sync");
		const cpu0 = cpuMs(node.pid as number);
		const puts = await load(putOpts(`${base}/io/common-files/puts`, { "X-Pydio-Bearer": token }));
		const cpuPerPut = (cpuMs(node.pid as number) - cpu0) / (puts.rps * Number(process.env.BENCH_SECONDS || 8));
		const p1 = pctOf(puts, bare);
		rows.push([`4 KiB PUT /io, ${CLIENTS} clients (target >= 50% of bare)`, `${puts.rps.toFixed(0)} files/s, p99 ${puts.p99} ms, ${p1.toFixed(0)}% of bare (${bare.rps.toFixed(0)}), node CPU ${cpuPerPut.toFixed(1)} ms a file${puts.errors ? `, ${puts.errors} errors` : ""}`, p1 >= 50 ? "met" : `missed by ${(50 - p1).toFixed(0)} points`]);

		// 2. Never-cached stat and 50-child listing against a bare server answering the same bytes.
		for (let i = 0; i < 50; i++) await fetch(`${base}/io/common-files/fifty/f-${String(i).padStart(2, "0")}.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: `file ${i}` });
		const statPath = "/a/tree/stat/common-files%2Ffifty%2Ff-07.txt";
		// The response cache keeps 10,000 answers for 5 s: 19,900 different queries (Limit 50 to 9,999, with and
		// without Offset 0), all answering the same 50 children, never repeat within its reach.
		const listQuery = (k: number) => JSON.stringify({ NodePaths: ["common-files/fifty/*"], Limit: 50 + (k % 9950), ...(Math.floor(k / 9950) % 2 ? { Offset: 0 } : {}) });
		const statBytes = await (await fetch(`${base}${statPath}`, { headers: auth })).text();
		const listBytes = await (await fetch(`${base}/a/meta/bulk/get`, { method: "POST", headers: auth, body: listQuery(0) })).text();
		if (!listBytes.includes("f-49.txt")) throw new Error(`listing: ${listBytes.slice(0, 200)}`);
		const bareAnswer = await bareServer(`require("node:http").createServer((q,s)=>{let b="";q.on("data",d=>b+=d);q.on("end",()=>{s.writeHead(200,{"Content-Type":"application/json"});s.end(q.method==="GET"?${JSON.stringify(statBytes)}:${JSON.stringify(listBytes)})})}).listen(PORT,"127.0.0.1")`);
		procs.push(bareAnswer.proc);
		const statMiss = () => load({ url: `${base}${statPath}`, headers: auth, requests: [{ setupRequest: (r) => ({ ...r, path: `${statPath}?miss=${n++}` }) }] });
		const listMiss = () => load({ url: `${base}/a/meta/bulk/get`, method: "POST", headers: auth, requests: [{ setupRequest: (r) => ({ ...r, body: listQuery(n++) }) }] });
		await load({ url: `${base}${statPath}`, headers: auth }, 2); // warm-up
		const bareStat = await load({ url: `${bareAnswer.url}${statPath}`, headers: auth });
		const stat = await statMiss();
		const bareList = await load({ url: `${bareAnswer.url}/a/meta/bulk/get`, method: "POST", headers: auth, body: listQuery(0) });
		const list = await listMiss();
		for (const [name, f, b] of [["GET /a/tree/stat, never cached", stat, bareStat], ["50-child listing (POST /a/meta/bulk/get), never cached", list, bareList]] as const) {
			const p = pctOf(f, b);
			rows.push([`${name} (target >= 40% of bare)`, `${f.rps.toFixed(0)} req/s, p99 ${f.p99} ms, ${p.toFixed(0)}% of bare (${b.rps.toFixed(0)})${f.errors ? `, ${f.errors} errors` : ""}`, p >= 40 ? "met" : `missed by ${(40 - p).toFixed(0)} points`]);
		}
		return { rows, bare: { put: bare, putCpuUs: barePutCpuUs, stat: bareStat, list: bareList, statBytes } };

	} finally {
		await stopNode(node);
		for (const p of procs) p.kill("SIGKILL");
		rmSync(dataDir, { recursive: true, force: true });
	}
}

/** The floors (bench/floors.ts) against each throughput target's budget, with the SQLite run's bare figures. */
async function floorRows(bare: Bare): Promise<string[]> {
	const gw = await gatewayFloor(bare.statBytes);
	const st = await sqliteFloors();
	const put = budgetUs(50, bare.put.rps);
	const stat = budgetUs(40, bare.stat.rps);
	const list = budgetUs(40, bare.list.rps);
	return [
		`| gateway floor: moleculer-web + Cellar's broker options, one action answering the stat's bytes, never cached | ${gw.rps.toFixed(0)} req/s, ${((gw.rps / bare.stat.rps) * 100).toFixed(0)}% of bare, ${gw.cpuUs.toFixed(0)} µs CPU a request |`,
		`| store floor (SQLite, in-process, no Kysely): the stat's row / a 50-child page / one file's index write committed | ${st.statRowUs.toFixed(1)} / ${st.childrenUs.toFixed(1)} / ${st.fileWriteUs.toFixed(1)} µs |`,
		`| bare PUT server's own CPU per file (md5 + write + fsync + rename) | ${bare.putCpuUs.toFixed(0)} µs |`,
		`| 4 KiB PUT >= 50% of bare (${bare.put.rps.toFixed(0)}/s): bare's work + the index write | ${verdict(put, bare.putCpuUs + st.fileWriteUs)} |`,
		`| stat >= 40% of bare (${bare.stat.rps.toFixed(0)}/s): gateway + the row | ${verdict(stat, gw.cpuUs + st.statRowUs)} |`,
		`| 50-child listing >= 40% of bare (${bare.list.rps.toFixed(0)}/s): gateway + the page | ${verdict(list, gw.cpuUs + st.childrenUs)} |`,
	];
}

async function main(): Promise<void> {
	console.log(`Cellar store benchmark (issue 8): SQLite and PostgreSQL, node ${process.version}, ${require("node:os").cpus().length} cores`);
	const pg = await pgAvailable();
	console.log("SQLite: rows 1-3...");
	const { rows: sqlite, bare } = await serverRows();
	console.log(sqlite.map((r) => `  ${r.join(" | ")}`).join("\n"));
	let postgres: Rows | undefined;
	if (pg) {
		console.log("PostgreSQL: rows 1-3...");
		postgres = (await withPgDatabase((url) => serverRows(url))).rows;
		console.log(postgres.map((r) => `  ${r.join(" | ")}`).join("\n"));
	}
	console.log("Floors...");
	const floors = await floorRows(bare);
	let treeSqlite: TreeRows | undefined, treePg: TreeRows | undefined;
	if (TREE) {
		treeSqlite = await treeFigures();
		if (pg) treePg = await withPgDatabase((url) => treeFigures(url));
	}

	console.log(`\n| row | SQLite | PostgreSQL |\n|---|---|---|`);
	sqlite.forEach(([name, fig, met], i) => {
		const p = postgres?.[i];
		console.log(`| ${name} | ${fig} (${met}) | ${p ? `${p[1]} (${p[2]})` : "no PostgreSQL on " + "BENCH_PG_URL"} |`);
	});
	console.log(`\nFloors of this stack on this machine (bench/floors.ts; a node bound on one core answers at most 1 / its CPU a request)\n\n| floor or target | figure |\n|---|---|\n${floors.join("\n")}`);
	if (treeSqlite) {
		console.log(`\n${FILES.toLocaleString("en")} files in the store, against an empty store\n\n| measure | SQLite empty | SQLite ${FILES.toLocaleString("en")} | PostgreSQL empty | PostgreSQL ${FILES.toLocaleString("en")} |\n|---|---:|---:|---:|---:|`);
		treeSqlite.forEach(([name, e, l], i) => console.log(`| ${name} | ${e} | ${l} | ${treePg?.[i]?.[1] ?? ""} | ${treePg?.[i]?.[2] ?? (pg ? "" : "no PostgreSQL")} |`));
	}
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
