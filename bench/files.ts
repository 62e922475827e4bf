// Files benchmark (issue 3): /io upload and download of a large file against `cp` on the same disk, with the
// node's peak RSS; the AWS SDK's default settings against WHEN_REQUIRED checksums, and ways of feeding it, as
// ratios of the bare server; stat and folder-listing requests/s against a bare `http` server answering the same
// bytes; the first page of a folder with 100,000 children. Sizes: BENCH_FILE_MB (default 1024), BENCH_CHILDREN
// (100000).
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { cpuMs, freePort, listening, load as run, login, peakRss, startNode } from "./common";
import { createReadStream, mkdtempSync, rmSync, statSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash, randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { NodesRepo, openDatabase, type NodeRecord } from "../lib/db";
import { S3Client, GetObjectCommand, PutObjectCommand, CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";

const FILE_MB = Number(process.env.BENCH_FILE_MB || 1024);
const CHILDREN = Number(process.env.BENCH_CHILDREN || 100_000);

/** One streamed PUT of a file (the light client: no client-side hashing); its duration in ms. */
function streamedPut(url: string, file: string, headers: Record<string, string>): Promise<number> {
	const t = Date.now();
	return new Promise<number>((resolve, reject) => {
		const req = httpRequest(url, { method: "PUT", headers: { ...headers, "Content-Length": String(statSync(file).size) } }, (res) => {
			res.resume();
			res.on("end", () => (res.statusCode === 200 ? resolve(Date.now() - t) : reject(new Error(`PUT answered ${res.statusCode}`))));
		});
		req.on("error", reject);
		createReadStream(file, { highWaterMark: 1 << 20 }).pipe(req);
	});
}

/**
 * A multipart upload as the SDK sends file parts when given streams with their length (not lib-storage, which
 * reads parts into Buffers): 64 MB ranges of the file, four at once.
 */
async function rangeMultipart(s3: S3Client, file: string, Key: string): Promise<void> {
	const size = statSync(file).size;
	const part = 64 * 1024 * 1024;
	const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key }));
	const count = Math.ceil(size / part);
	const etags: string[] = [];
	let next = 0;
	await Promise.all(
		Array.from({ length: 4 }, async () => {
			for (let i = next++; i < count; i = next++) {
				const start = i * part;
				const len = Math.min(part, size - start);
				const body = createReadStream(file, { start, end: start + len - 1, highWaterMark: 1 << 20 });
				etags[i] = (await s3.send(new UploadPartCommand({ Bucket: "io", Key, UploadId, PartNumber: i + 1, Body: body, ContentLength: len }))).ETag ?? "";
			}
		}),
	);
	await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key, UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }));
}

/** One GET read to the end with node's own http client (the one under the SDK); its duration in ms. */
function httpGet(url: string): Promise<number> {
	const t = Date.now();
	return new Promise<number>((resolve, reject) => {
		httpRequest(url, (res) => {
			let n = 0;
			res.on("data", (b: Buffer) => (n += b.length));
			res.on("end", () => (n === FILE_MB * 1024 * 1024 ? resolve(Date.now() - t) : reject(new Error(`downloaded ${n} bytes`))));
		})
			.on("error", reject)
			.end();
	});
}

/** One GET read to the end; its duration in ms. */
async function timedGet(url: string, headers: Record<string, string> = {}): Promise<number> {
	const t = Date.now();
	const r = await fetch(url, { headers });
	let n = 0;
	for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) n += chunk.length;
	if (n !== FILE_MB * 1024 * 1024) throw new Error(`downloaded ${n} bytes`);
	return Date.now() - t;
}

async function main() {
	const dataDir = mkdtempSync(join(tmpdir(), "cellar-bench-files-"));
	const port = await freePort();
	const base = `http://127.0.0.1:${port}`;
	let node = startNode(port, dataDir);
	const procs: ChildProcess[] = [];
	try {
		let token = await login(base);
		// The SDK's defaults, as current clients send them: streamed aws-chunked bodies with a CRC32 trailer.
		const s3 = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
		console.log(`Cellar files benchmark: ${FILE_MB} MB file, ${CHILDREN} children, node ${process.version}`);

		// 1. Upload and download of a large file vs cp on the same disk.
		const src = join(dataDir, "source.bin");
		execFileSync("dd", ["if=/dev/urandom", `of=${src}`, "bs=1M", `count=${FILE_MB}`, "status=none"]);
		// cp + sync, each run starting with nothing left to flush (dd's own dirty pages would otherwise be billed to
		// cp); the median of three, as this disk's speed varies a lot between runs.
		const cpRuns: number[] = [];
		for (let i = 0; i < 3; i++) {
			execFileSync("sync");
			const t0 = Date.now();
			execFileSync("cp", [src, join(dataDir, "copy.bin")]);
			execFileSync("sync");
			cpRuns.push(Date.now() - t0);
			rmSync(join(dataDir, "copy.bin"));
		}
		const cpMs = [...cpRuns].sort((a, b) => a - b)[1];
		// What any server that answers an S3 PUT must at least do here: md5 of the bytes (the ETag), on one core.
		const md5Ms = await (async () => {
			const t = Date.now();
			const h = createHash("md5");
			for await (const chunk of createReadStream(src, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
			h.digest();
			return Date.now() - t;
		})();
		// A bare Node http server doing that: the body to a file (fsynced) with its md5, nothing else.
		// (GET: the same server streams the file back, the bare baseline of downloads.)
		const barePutPort = await freePort();
		const barePut = spawn(process.execPath, ["-e", `const fs=require("node:fs"),c=require("node:crypto"),{pipeline}=require("node:stream/promises"),{Transform}=require("node:stream");const f=${JSON.stringify(join(dataDir, "bare.bin"))};require("node:http").createServer(async(q,s)=>{if(q.method==="GET"){s.writeHead(200,{"Content-Length":fs.statSync(f).size});return fs.createReadStream(f,{highWaterMark:1<<19}).pipe(s)}const h=c.createHash("md5");await pipeline(q,new Transform({transform(b,e,cb){h.update(b);cb(null,b)}}),fs.createWriteStream(f,{flush:true,highWaterMark:1<<20}));s.end(h.digest("hex"))}).listen(${barePutPort},"127.0.0.1")`], { stdio: "ignore" });
		procs.push(barePut);
		await listening(barePutPort);
		execFileSync("sync");
		const bareMs = await streamedPut(`http://127.0.0.1:${barePutPort}/`, src, {});
		const bareGetMs = await timedGet(`http://127.0.0.1:${barePutPort}/`);
		rmSync(join(dataDir, "bare.bin"), { force: true });
		execFileSync("sync");
		const up = await peakRss(node.pid!, async () => {
			const t = Date.now();
			await new Upload({ client: s3, params: { Bucket: "io", Key: "common-files/bench/big.bin", Body: createReadStream(src) }, partSize: 64 * 1024 * 1024, queueSize: 4 }).done();
			return Date.now() - t;
		});
		const down = await peakRss(node.pid!, async () => {
			const t = Date.now();
			const r = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/bench/big.bin" }));
			let n = 0;
			for await (const chunk of r.Body as AsyncIterable<Buffer>) n += chunk.length;
			if (n !== FILE_MB * 1024 * 1024) throw new Error(`downloaded ${n} bytes`);
			return Date.now() - t;
		});
		// The same download with the light client the bare server is measured with.
		const lightDown = await peakRss(node.pid!, () => timedGet(`${base}/io/common-files/bench/big.bin`, { "X-Pydio-Bearer": token }));
		// The same file with a light client (one streamed PUT, token in X-Pydio-Bearer): the server's own path,
		// without the SDK's client-side hashing competing for the same two cores.
		execFileSync("sync");
		const raw = await peakRss(node.pid!, () => streamedPut(`${base}/io/common-files/bench/raw.bin`, src, { "X-Pydio-Bearer": token }));
		// The same SDK upload into a server that only reads and discards the bytes: what the client alone can do
		// on this machine, the ceiling for any server measured with it.
		const sinkPort = await freePort();
		const sink = spawn(process.execPath, ["-e", `require("node:http").createServer((q,s)=>{q.resume();q.on("end",()=>{const x=q.method==="POST";s.writeHead(200,x?{"Content-Type":"application/xml"}:{ETag:'"0"'});s.end(x?(q.url.includes("uploads")?"<InitiateMultipartUploadResult><Bucket>io</Bucket><Key>k</Key><UploadId>u</UploadId></InitiateMultipartUploadResult>":"<CompleteMultipartUploadResult><Bucket>io</Bucket><Key>k</Key><ETag>&quot;0-1&quot;</ETag></CompleteMultipartUploadResult>"):undefined)})}).listen(${sinkPort},"127.0.0.1")`], { stdio: "ignore" });
		procs.push(sink);
		await listening(sinkPort);
		const sinkS3 = new S3Client({ endpoint: `http://127.0.0.1:${sinkPort}`, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "x", secretAccessKey: "y" } });
		const t1 = Date.now();
		await new Upload({ client: sinkS3, params: { Bucket: "io", Key: "k", Body: createReadStream(src) }, partSize: 64 * 1024 * 1024, queueSize: 4 }).done();
		const sinkMs = Date.now() - t1;
		const mbps = (ms: number) => ((FILE_MB / ms) * 1000).toFixed(0);
		const ofBare2 = (ms: number) => `${((bareGetMs / ms) * 100).toFixed(0)}% of bare`;
		const ofBare = (ms: number) => `${((bareMs / ms) * 100).toFixed(0)}% of bare`;
		console.log(`cp + sync of the same file             ${mbps(cpMs).padStart(6)} MB/s  (median of ${cpRuns.map((ms) => mbps(ms)).join(", ")} MB/s)`);
		console.log(`md5 of the file alone, one core        ${mbps(md5Ms).padStart(6)} MB/s  ${((cpMs / md5Ms) * 100).toFixed(0)}% of cp   (every S3 PUT's ETag)`);
		console.log(`bare http PUT: md5 + write + fsync     ${mbps(bareMs).padStart(6)} MB/s  ${((cpMs / bareMs) * 100).toFixed(0)}% of cp   (a bare Node server, same client)`);
		console.log(`/io upload (one streamed PUT, bearer)   ${mbps(raw.result).padStart(6)} MB/s  ${((cpMs / raw.result) * 100).toFixed(0)}% of cp  ${ofBare(raw.result)}   node peak RSS ${raw.peakMb.toFixed(0)} MB`);
		console.log(`/io upload (SDK multipart, 64 MB parts) ${mbps(up.result).padStart(6)} MB/s  ${((cpMs / up.result) * 100).toFixed(0)}% of cp  ${((sinkMs / up.result) * 100).toFixed(0)}% of sink   node peak RSS ${up.peakMb.toFixed(0)} MB`);
		console.log(`  the same SDK upload into a byte sink ${mbps(sinkMs).padStart(6)} MB/s  ${((cpMs / sinkMs) * 100).toFixed(0)}% of cp   (the client's own ceiling here)`);
		console.log(`bare http GET of the file              ${mbps(bareGetMs).padStart(6)} MB/s  ${((cpMs / bareGetMs) * 100).toFixed(0)}% of cp   (a bare Node server streaming it)`);
		console.log(`/io download (GET, bearer)             ${mbps(lightDown.result).padStart(6)} MB/s  ${((cpMs / lightDown.result) * 100).toFixed(0)}% of cp  ${ofBare2(lightDown.result)}   node peak RSS ${lightDown.peakMb.toFixed(0)} MB`);
		console.log(`/io download (SDK GetObject)           ${mbps(down.result).padStart(6)} MB/s  ${((cpMs / down.result) * 100).toFixed(0)}% of cp  ${ofBare2(down.result)}   node peak RSS ${down.peakMb.toFixed(0)} MB`);
		// The SDK's settings, each way of feeding it run with the default checksums (WHEN_SUPPORTED: CRC32 on every
		// upload, aws-chunked with a trailer for stream bodies) and with WHEN_REQUIRED, alternately, best of two: the
		// machine is shared, and only ratios taken in the same minutes mean anything.
		const lean = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" }, requestChecksumCalculation: "WHEN_REQUIRED", responseChecksumValidation: "WHEN_REQUIRED" });
		const bytes = FILE_MB * 1024 * 1024;
		const sdkRows: { name: string; up: boolean; run: (c: S3Client) => Promise<unknown> }[] = [
			{ name: "lib-storage Upload, 64 MB parts", up: true, run: (c) => new Upload({ client: c, params: { Bucket: "io", Key: "common-files/bench/sdk.bin", Body: createReadStream(src) }, partSize: 64 * 1024 * 1024, queueSize: 4 }).done() },
			{ name: "UploadPart of file ranges, 64 MB", up: true, run: (c) => rangeMultipart(c, src, "common-files/bench/sdk.bin") },
			{ name: "PutObject of a file stream", up: true, run: (c) => c.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/bench/sdk.bin", Body: createReadStream(src, { highWaterMark: 1 << 20 }), ContentLength: bytes })) },
			{
				name: "GetObject, Body read as a stream",
				up: false,
				run: async (c) => {
					const r = await c.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/bench/big.bin" }));
					let n = 0;
					for await (const chunk of r.Body as AsyncIterable<Buffer>) n += chunk.length;
					if (n !== bytes) throw new Error(`downloaded ${n} bytes`);
				},
			},
			{
				name: "GetObject, Body.transformToByteArray()",
				up: false,
				run: async (c) => {
					const r = await c.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/bench/big.bin" }));
					if ((await r.Body!.transformToByteArray()).length !== bytes) throw new Error("short download");
				},
			},
		];
		console.log(`AWS SDK for JavaScript v3 (${FILE_MB} MB; % of the bare server's PUT or GET with node's http client, measured in the same rounds; node CPU per GB moved)`);
		const bareUrl = `http://127.0.0.1:${barePutPort}/`;
		await streamedPut(bareUrl, src, {});
		for (const row of sdkRows) {
			const best = { bare: Infinity, default: { ms: Infinity, cpu: 0 }, WHEN_REQUIRED: { ms: Infinity, cpu: 0 } };
			for (let i = 0; i < 2; i++) {
				if (row.up) execFileSync("sync");
				best.bare = Math.min(best.bare, row.up ? await streamedPut(bareUrl, src, {}) : await httpGet(bareUrl));
				for (const [mode, c] of [["default", s3], ["WHEN_REQUIRED", lean]] as const) {
					if (row.up) execFileSync("sync");
					const c0 = cpuMs(node.pid!);
					const t = Date.now();
					await row.run(c);
					const ms = Date.now() - t;
					if (ms < best[mode].ms) best[mode] = { ms, cpu: cpuMs(node.pid!) - c0 };
				}
			}
			const cell = (b: { ms: number; cpu: number }) => `${mbps(b.ms).padStart(5)} MB/s ${((best.bare / b.ms) * 100).toFixed(0).padStart(3)}%  ${((b.cpu / FILE_MB) * 1.024).toFixed(2)} s/GB`;
			console.log(`  ${row.name.padEnd(40)} default ${cell(best.default)}   WHEN_REQUIRED ${cell(best.WHEN_REQUIRED)}   (bare ${mbps(best.bare)} MB/s)`);
		}
		rmSync(join(dataDir, "bare.bin"), { force: true });
		rmSync(src);

		// 2. Stat and listing against a bare server answering the same bytes.
		const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
		for (let i = 0; i < 20; i++) await fetch(`${base}/a/tree/create`, { method: "POST", headers: auth, body: JSON.stringify({ Nodes: [{ Path: `common-files/bench/f${i}.txt`, Type: "LEAF" }] }) });
		const statUrl = `${base}/a/tree/stat/common-files%2Fbench%2Fbig.bin`;
		const listBody = JSON.stringify({ NodePaths: ["common-files/bench/*"], Limit: 50 });
		const statBytes = await (await fetch(statUrl, { headers: auth })).text();
		const listBytes = await (await fetch(`${base}/a/tree/stats`, { method: "POST", headers: auth, body: listBody })).text();
		const barePort = await freePort();
		const bare = spawn(process.execPath, ["-e", `require("node:http").createServer((q,s)=>{let b="";q.on("data",d=>b+=d);q.on("end",()=>{s.writeHead(200,{"Content-Type":"application/json"});s.end(q.method==="GET"?${JSON.stringify(statBytes)}:${JSON.stringify(listBytes)})})}).listen(${barePort},"127.0.0.1")`], { stdio: "ignore" });
		procs.push(bare);
		await listening(barePort);
		const bareStat = await run({ url: `http://127.0.0.1:${barePort}/stat`, headers: auth });
		const stat = await run({ url: statUrl, headers: auth });
		const bareList = await run({ url: `http://127.0.0.1:${barePort}/list`, method: "POST", headers: auth, body: listBody });
		const list = await run({ url: `${base}/a/tree/stats`, method: "POST", headers: auth, body: listBody });
		const row = (n: string, f: { rps: number; p99: number }, b: { rps: number }) => console.log(`${n.padEnd(38)} ${f.rps.toFixed(0).padStart(7)} req/s  p99 ${f.p99} ms  ${((f.rps / b.rps) * 100).toFixed(0)}% of bare (${b.rps.toFixed(0)})`);
		// The same requests made different every time (a query string, a page size): never from the response cache.
		let n = 0;
		const statMiss = await run({ url: statUrl, headers: auth, requests: [{ setupRequest: (r) => ({ ...r, path: `${new URL(statUrl).pathname}?miss=${n++}` }) }] });
		const listMiss = await run({ url: `${base}/a/tree/stats`, method: "POST", headers: auth, requests: [{ setupRequest: (r) => ({ ...r, body: JSON.stringify({ NodePaths: ["common-files/bench/*"], Limit: 50 + (n++ % 9000) }) }) }] });
		row("GET /a/tree/stat/{file}", stat, bareStat);
		row("POST /a/tree/stats <folder>/* (20)", list, bareList);
		row("  the same, never cached: stat", statMiss, bareStat);
		row("  the same, never cached: listing", listMiss, bareList);

		// 3. A folder with many children: written straight into the index (DATA_DIR/cellar.db) while the node is stopped.
		await fetch(`${base}/a/tree/create`, { method: "POST", headers: auth, body: JSON.stringify({ Nodes: [{ Path: "common-files/many", Type: "COLLECTION" }] }) });
		node.kill("SIGTERM");
		await new Promise((r) => node.once("exit", r));
		const db = await openDatabase({ dataDir });
		try {
			const nodes = new NodesRepo(db);
			const folder = (await nodes.byPath("pydiods1", "many")) as NodeRecord;
			const now = Math.floor(Date.now() / 1000);
			let batch: NodeRecord[] = [];
			for (let i = 0; i < CHILDREN; i++) {
				const name = `file-${String(i).padStart(7, "0")}.txt`;
				// Empty files: the folders above keep the sum of their content without a recount.
				batch.push({ uuid: randomUUID(), ds: "pydiods1", parent: folder.uuid, name, path: `many/${name}`, type: "LEAF", size: 0, mtime: now, meta: {}, key: "none" });
				if (batch.length === 20_000) await nodes.importNodes(batch.splice(0));
			}
			if (batch.length) await nodes.importNodes(batch);
		} finally {
			await db.close();
		}
		const restart = Date.now();
		node = startNode(port, dataDir);
		token = await login(base);
		// The tree service starts on the index as it is (nothing is loaded): its routes answer once it is published.
		for (let i = 0; i < 600; i++) {
			const r = await fetch(`${base}/a/tree/stat/common-files%2Fbench`, { headers: { Authorization: `Bearer ${token}` } });
			if (r.status === 200) break;
			await new Promise((res) => setTimeout(res, 100));
		}
		const restartMs = Date.now() - restart;
		const times: number[] = [];
		for (let i = 0; i < 30; i++) {
			// A different page size each time: every request misses the gateway's response cache.
			const t = process.hrtime.bigint();
			const r = await fetch(`${base}/a/tree/stats`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ NodePaths: ["common-files/many/*"], Limit: 50 + i }) });
			const page = (await r.json()) as { Nodes?: unknown[]; Pagination?: { Total: number } };
			times.push(Number(process.hrtime.bigint() - t) / 1e6);
			if (page.Nodes?.length !== 50 + i || page.Pagination?.Total !== CHILDREN) throw new Error(`unexpected page: ${JSON.stringify(page).slice(0, 300)}`);
		}
		const cold = times.shift()!;
		times.sort((a, b) => a - b);
		const rss = (Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${node.pid}/status`, "utf8"))?.[1]) / 1024).toFixed(0);
		console.log(`first page of a ${CHILDREN}-child folder   first request after start ${cold.toFixed(0)} ms; then p50 ${times[14].toFixed(1)} ms  p99 ${times[28].toFixed(1)} ms`);
		console.log(`  (node start with them: ${restartMs} ms, RSS ${rss} MB)`);
		// Writes in a tree of that size: a small upload, then its deletion for good (each a separate request).
		const put: number[] = [];
		const del: number[] = [];
		for (let i = 0; i < 21; i++) {
			let t = process.hrtime.bigint();
			const r = await fetch(`${base}/io/common-files/many/new-${i}.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: `small ${i}` });
			if (r.status !== 200) throw new Error(`PUT answered ${r.status}`);
			put.push(Number(process.hrtime.bigint() - t) / 1e6);
			t = process.hrtime.bigint();
			const d = await fetch(`${base}/a/tree/delete`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ Nodes: [{ Path: `common-files/many/new-${i}.txt` }], RemovePermanently: true }) });
			if (d.status !== 200) throw new Error(`delete answered ${d.status}`);
			del.push(Number(process.hrtime.bigint() - t) / 1e6);
		}
		const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)].toFixed(1);
		console.log(`  among them: a small PUT p50 ${p50(put)} ms, a delete for good p50 ${p50(del)} ms`);
	} finally {
		node.kill("SIGKILL");
		for (const p of procs) p.kill("SIGKILL");
		rmSync(dataDir, { recursive: true, force: true });
	}
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
