// npm run bench — figures as ratios against a bare Node `http` server answering the same bytes, in one run.
// The Cellar node and the bare server each run in their own process; autocannon drives them from this one.
import autocannon from "autocannon";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./common";

const ROOT = join(__dirname, "..");
const DURATION = Number(process.env.BENCH_SECONDS || 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 50);
const PASSWORD = "Bench-Admin-1234";

function start(args: string[], env: Record<string, string>): ChildProcess {
	const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
	child.stdout?.resume();
	return child;
}

async function waitFor(url: string, init?: RequestInit): Promise<Response> {
	for (let i = 0; i < 300; i++) {
		try {
			const r = await fetch(url, init);
			if (r.status < 500 && r.status !== 404) return r;
		} catch {
			/* not up yet */
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new Error(`${url} did not come up`);
}

interface Figures {
	rps: number;
	p50: number;
	p99: number;
	errors: number;
}

function run(opts: autocannon.Options): Promise<Figures> {
	return new Promise((resolve, reject) => {
		autocannon({ connections: CONNECTIONS, duration: DURATION, ...opts }, (err, r) => {
			if (err) return reject(err);
			resolve({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx });
		});
	});
}

function row(name: string, f: Figures, base?: Figures) {
	const ratio = base ? `${((f.rps / base.rps) * 100).toFixed(0)}% of bare` : "";
	console.log(`${name.padEnd(44)} ${f.rps.toFixed(0).padStart(8)} req/s  p50 ${String(f.p50).padStart(3)} ms  p99 ${String(f.p99).padStart(3)} ms  ${f.errors ? `errors ${f.errors}  ` : ""}${ratio}`);
}

async function main() {
	const dataDir = mkdtempSync(join(tmpdir(), "cellar-bench-"));
	const port = await freePort();
	const barePort = await freePort();
	const node = start(["--max-semi-space-size=2", "dist/bin/start.js", "--config", "dist/moleculer.config.js", "dist/services/**/*.service.js"], {
		PORT: String(port),
		DATA_DIR: dataDir,
		ADMIN_PASSWORD: PASSWORD,
		LOG_LEVEL: "warn",
		IP_BAN_THRESHOLD: "1000000",
		MAX_FAILED_LOGINS: "1000000",
	});
	const procs = [node];
	try {
		const base = `http://127.0.0.1:${port}`;
		await waitFor(`${base}/a/frontend/bootconf`);
		let token = "";
		for (let i = 0; i < 100 && !token; i++) {
			const r = await fetch(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: PASSWORD } }) });
			if (r.ok) token = ((await r.json()) as { JWT: string }).JWT;
			else await new Promise((res) => setTimeout(res, 100));
		}
		if (!token) throw new Error("admin login failed");
		const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
		const searchBody = JSON.stringify({ Queries: [{ Login: "*" }], Limit: "10" });

		// The bare server answers with the very bytes Cellar answers.
		const stateRes = await fetch(`${base}/a/frontend/state`, { headers: auth });
		const state = await stateRes.text();
		const searchRes = await fetch(`${base}/a/user`, { method: "POST", headers: auth, body: searchBody });
		const search = await searchRes.text();
		const bare = start(["-e", `
			const http = require("node:http");
			const state = ${JSON.stringify(state)}, search = ${JSON.stringify(search)};
			http.createServer((req, res) => {
				let body = ""; req.on("data", (d) => body += d); req.on("end", () => {
					const isState = req.url.startsWith("/a/frontend/state");
					res.writeHead(200, { "Content-Type": isState ? ${JSON.stringify(stateRes.headers.get("content-type"))} : "application/json" });
					res.end(isState ? state : search);
				});
			}).listen(${barePort}, "127.0.0.1");
		`], {});
		procs.push(bare);
		const bareBase = `http://127.0.0.1:${barePort}`;
		await waitFor(`${bareBase}/a/frontend/state`);

		// Warm-up (JIT, caches) before anything is measured.
		await run({ url: `${base}/a/frontend/state`, headers: auth, duration: 3 });
		await run({ url: `${base}/a/user`, method: "POST", headers: auth, body: searchBody, duration: 3 });
		await run({ url: `${bareBase}/a/frontend/state`, headers: auth, duration: 2 });

		console.log(`Cellar benchmark: ${CONNECTIONS} connections, ${DURATION} s per row, node ${process.version}, ${require("node:os").cpus().length} cores`);
		const bareState = await run({ url: `${bareBase}/a/frontend/state`, headers: auth });
		row("bare http: same bytes as /a/frontend/state", bareState);
		const state1 = await run({ url: `${base}/a/frontend/state`, headers: auth });
		row("GET /a/frontend/state (authenticated)", state1, bareState);
		const bareSearch = await run({ url: `${bareBase}/a/user`, method: "POST", headers: auth, body: searchBody });
		row("bare http: same bytes as POST /a/user", bareSearch);
		const search1 = await run({ url: `${base}/a/user`, method: "POST", headers: auth, body: searchBody });
		row("POST /a/user search (authenticated)", search1, bareSearch);

		// The same search with a different body each time: every call misses the response cache and runs the action.
		let n = 0;
		const uncached = await run({
			url: `${base}/a/user`,
			method: "POST",
			headers: auth,
			requests: [{ setupRequest: (r) => ({ ...r, body: JSON.stringify({ Queries: [{ Login: "*" }], Limit: String(10 + (n++ % 100000)) }) }) }],
		});
		row("POST /a/user search, never cached", uncached, bareSearch);

		const loginBody = JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: PASSWORD } });
		const logins = await run({ url: `${base}/a/frontend/session`, method: "POST", headers: { "Content-Type": "application/json" }, body: loginBody, connections: 10 });
		row("POST /a/frontend/session (logins, scrypt)", logins);

		// A login storm next to ordinary calls: the ordinary calls must keep flowing.
		const [storm, during] = await Promise.all([
			run({ url: `${base}/a/frontend/session`, method: "POST", headers: { "Content-Type": "application/json" }, body: loginBody, connections: 20 }),
			run({ url: `${base}/a/frontend/state`, headers: auth, connections: 10 }),
		]);
		row("  login storm (20 connections)", storm);
		row("  GET /a/frontend/state during the storm", during, bareState);
	} finally {
		for (const p of procs) p.kill("SIGKILL");
		rmSync(dataDir, { recursive: true, force: true });
	}
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
