// Helpers shared by the benchmarks: ports, a node started from dist/ (on SQLite or a PostgreSQL DATABASE_URL),
// login, RSS sampling, autocannon runs, and a throwaway PostgreSQL database.
import autocannon from "autocannon";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { join } from "node:path";

export const ROOT = join(__dirname, "..");
export const PASSWORD = "Bench-Admin-1234";

export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
export const since = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const srv = createServer();
		srv.once("error", reject);
		srv.listen(0, "127.0.0.1", () => {
			const { port } = srv.address() as AddressInfo;
			srv.close(() => resolve(port));
		});
	});
}

/** A node as `npm start` runs it; `env` adds to (or overrides) the bench's own settings, DATABASE_URL included. */
export function startNode(port: number, dataDir: string, env: Record<string, string | undefined> = {}, onLine?: (line: string) => void): ChildProcess {
	const child = spawn(process.execPath, ["--max-semi-space-size=2", "dist/bin/start.js", "--config", "dist/moleculer.config.js", "dist/services/**/*.service.js"], {
		cwd: ROOT,
		env: { ...process.env, MALLOC_MMAP_THRESHOLD_: "1048576", PORT: String(port), DATA_DIR: dataDir, ADMIN_PASSWORD: PASSWORD, LOG_LEVEL: "warn", ...env },
		stdio: ["ignore", "pipe", "inherit"],
	});
	if (onLine) child.stdout?.on("data", (b: Buffer) => b.toString().split("\n").forEach(onLine));
	else child.stdout?.resume();
	return child;
}

export const stopNode = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null ? r() : (c.once("exit", () => r()), c.kill("SIGTERM"))));

/** The administrator's JWT, as soon as the node answers. */
export async function login(base: string): Promise<string> {
	for (let i = 0; i < 600; i++) {
		const r = await fetch(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: PASSWORD } }) }).catch(() => null);
		if (r?.ok) return ((await r.json()) as { JWT: string }).JWT;
		await new Promise((res) => setTimeout(res, 100));
	}
	throw new Error("node did not come up");
}

/** Waits until a spawned server accepts connections. */
export async function listening(port: number): Promise<void> {
	for (let i = 0; i < 200; i++) {
		const up = await new Promise<boolean>((resolve) => {
			const s = connect(port, "127.0.0.1", () => {
				s.destroy();
				resolve(true);
			}).on("error", () => resolve(false));
		});
		if (up) return;
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`nothing listens on ${port}`);
}

/** A bare Node server from source (`PORT` replaced), started and listening. */
export async function bareServer(source: string): Promise<{ proc: ChildProcess; url: string }> {
	const port = await freePort();
	const proc = spawn(process.execPath, ["-e", source.replace(/\bPORT\b/g, String(port))], { stdio: "ignore" });
	await listening(port);
	return { proc, url: `http://127.0.0.1:${port}` };
}

/** VmRSS (now) or VmHWM (the peak so far) of a process, in MB. */
export const rssMb = (pid: number, field: "VmRSS" | "VmHWM" = "VmRSS") => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

/** CPU time (user + system) a process used so far, in ms. */
export function cpuMs(pid: number): number {
	const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
	return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Peak RSS of a process, sampled from /proc every 20 ms while `work` runs. */
export async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
	let peak = 0;
	const sample = () => {
		try {
			peak = Math.max(peak, rssMb(pid));
		} catch {
			/* process gone */
		}
	};
	const timer = setInterval(sample, 20);
	try {
		const result = await work();
		sample();
		return { result, peakMb: peak };
	} finally {
		clearInterval(timer);
	}
}

export interface Load {
	rps: number;
	p50: number;
	p99: number;
	errors: number;
}

export function load(opts: autocannon.Options, duration = Number(process.env.BENCH_SECONDS || 8)): Promise<Load> {
	return new Promise((resolve, reject) =>
		autocannon({ connections: 50, duration, ...opts }, (err, r) => (err ? reject(err) : resolve({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx }))),
	);
}

/** BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432) if it answers, else undefined. */
export const PG_SERVER = process.env.BENCH_PG_URL || "postgres://postgres@127.0.0.1:5432";

/** A fresh database `cellar_bench_<random>` for `fn` (its URL), dropped afterwards. */
export async function withPgDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
	const { Client } = await import("pg");
	const name = `cellar_bench_${randomBytes(6).toString("hex")}`;
	const admin = new Client({ connectionString: `${PG_SERVER}/postgres` });
	await admin.connect();
	try {
		await admin.query(`CREATE DATABASE ${name}`);
		try {
			return await fn(`${PG_SERVER}/${name}`);
		} finally {
			await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
		}
	} finally {
		await admin.end();
	}
}

/** Whether the PostgreSQL server answers. */
export async function pgAvailable(): Promise<boolean> {
	const { Client } = await import("pg");
	const c = new Client({ connectionString: `${PG_SERVER}/postgres`, connectionTimeoutMillis: 2000 });
	try {
		await c.connect();
		await c.end();
		return true;
	} catch {
		return false;
	}
}
