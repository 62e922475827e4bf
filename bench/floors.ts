// What no implementation on this stack and this machine can go below, measured in the same run as the store rows
// (bench/store.ts), so that each throughput target can be read against what it leaves per request:
//   - the gateway's floor: moleculer-web with Cellar's broker options (circuit breaker, validator, read retries)
//     and one action answering fixed bytes, driven like the never-cached rows (a new query string each request);
//   - the store's floor: the statements a stat, a 50-child listing and one uploaded file's index write run, timed
//     in this process straight through better-sqlite3 on a database made by Cellar's own migrations (no Kysely,
//     no service, no HTTP);
//   - the bare PUT server's own CPU per file (md5 + write + fsync + rename), which an upload through /io does too.
// A node that is CPU-bound on one core answers at most 1 / (CPU per request): a target of P% of a bare server
// answering R req/s leaves 1 / (P% x R) of CPU per request. When the floors alone exceed that, the target is out
// of reach here whatever Cellar does between them, and the row says so.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../lib/db";
import { openSqliteFile } from "../lib/db/sqlite";
import { ROOT, cpuMs, freePort, listening, load, type Load } from "./common";

/** µs of a call, averaged over `n` runs after a warm-up. */
function timed(n: number, fn: (i: number) => void): number {
	for (let i = 0; i < Math.min(200, n); i++) fn(i);
	const t = process.hrtime.bigint();
	for (let i = 0; i < n; i++) fn(i);
	return Number(process.hrtime.bigint() - t) / 1000 / n;
}

export interface StoreFloors {
	/** The stat's row by (ds, path). */
	statRowUs: number;
	/** A page of 50 children, the listing's columns, by name. */
	childrenUs: number;
	/** One new file's index write: its transaction (parent probe, insert, parent's count, ancestors' size), committed. */
	fileWriteUs: number;
}

/** The store's statements in this process, on a fresh SQLite database with Cellar's schema. */
export async function sqliteFloors(): Promise<StoreFloors> {
	const dir = mkdtempSync(join(tmpdir(), "cellar-bench-floor-"));
	try {
		const file = join(dir, "cellar.db");
		await (await openDatabase({ sqliteFile: file })).close();
		const db = openSqliteFile(file);
		try {
			const now = Math.floor(Date.now() / 1000);
			const insert = db.prepare(`insert into nodes (uuid, ds, parent, name, path, type, size, mtime, etag, mode, key, meta, files, folders) values (?, 'ds', ?, ?, ?, ?, ?, ?, ?, null, ?, ?, 0, 0) returning *`);
			const root = randomUUID();
			const folder = randomUUID();
			insert.run(root, null, "ds", "", "COLLECTION", 0, now, null, null, "{}");
			insert.run(folder, root, "fifty", "fifty", "COLLECTION", 0, now, null, null, "{}");
			const meta = JSON.stringify({ s3_headers: JSON.stringify({ "Content-Type": "text/plain" }) });
			for (let i = 0; i < 50; i++) {
				const u = randomUUID();
				insert.run(u, folder, `f-${String(i).padStart(2, "0")}.txt`, `fifty/f-${String(i).padStart(2, "0")}.txt`, "LEAF", 6, now, "d41d8cd98f00b204e9800998ecf8427e", u, meta);
			}
			const byPath = db.prepare(`select * from nodes where ds = ? and path = ?`);
			const children = db.prepare(`select uuid, ds, name, path, type, size, mtime, etag, mode, key, meta from nodes where parent = ? and substr(name, 1, 1) <> ? order by name asc limit ?`);
			const statRowUs = timed(20_000, () => byPath.get("ds", "fifty/f-07.txt"));
			const childrenUs = timed(5_000, (i) => children.all(folder, ".", 50 + (i % 9950)));
			const parentProbe = db.prepare(`select uuid, type from nodes where ds = ? and path = ?`);
			const count = db.prepare(`update nodes set files = files + ? where uuid = ?`);
			const sizes = db.prepare(`update nodes set size = size + ?, mtime = ? where ds = ? and path in (?, ?)`);
			const begin = db.prepare("begin immediate");
			const commit = db.prepare("commit");
			const fileWriteUs = timed(2_000, (i) => {
				begin.run();
				parentProbe.get("ds", "fifty");
				const u = randomUUID();
				insert.run(u, folder, `p-${i}-${u}.bin`, `fifty/p-${i}-${u}.bin`, "LEAF", 4096, now, "d41d8cd98f00b204e9800998ecf8427e", u, meta);
				count.run(1, folder);
				sizes.run(4096, now, "ds", "", "fifty");
				commit.run();
			});
			return { statRowUs, childrenUs, fileWriteUs };
		} finally {
			db.close();
		}
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

export interface GatewayFloor extends Load {
	/** CPU of the gateway's process (all its threads) per request, µs. */
	cpuUs: number;
}

/** moleculer-web + Cellar's broker options, one validated action answering `bytes`, a new query each request. */
export async function gatewayFloor(bytes: string): Promise<GatewayFloor> {
	const port = await freePort();
	const proc = spawn(process.execPath, ["--import", "tsx", join(__dirname, "floor-gateway.ts")], { cwd: ROOT, env: { ...process.env, PORT: String(port), FLOOR_BYTES: bytes, LOG_LEVEL: "warn" }, stdio: ["ignore", "ignore", "inherit"] });
	try {
		await listening(port);
		const url = `http://127.0.0.1:${port}/a/floor/stat/common-files%2Ffifty%2Ff-07.txt`;
		for (let i = 0; i < 100; i++) {
			const r = await fetch(url).catch(() => null);
			if (r?.ok) break;
			await new Promise((res) => setTimeout(res, 50));
		}
		let n = 0;
		await load({ url }, 2);
		const c0 = cpuMs(proc.pid as number);
		const seconds = Number(process.env.BENCH_SECONDS || 8);
		const f = await load({ url, requests: [{ setupRequest: (r) => ({ ...r, path: `${new URL(url).pathname}?miss=${n++}` }) }] }, seconds);
		return { ...f, cpuUs: ((cpuMs(proc.pid as number) - c0) * 1000) / (f.rps * seconds) };
	} finally {
		proc.kill("SIGKILL");
	}
}

/** CPU per request that a target of `pct`% of a bare server answering `bareRps` leaves a node bound on one core. */
export const budgetUs = (pct: number, bareRps: number): number => 1e6 / ((pct / 100) * bareRps);

/** A row's verdict: the floors against the target's budget. */
export function verdict(budget: number, floor: number): string {
	return floor > budget ? `out of reach here: the floors alone take ${floor.toFixed(0)} µs of the ${budget.toFixed(0)} µs a request the target leaves` : `${(budget - floor).toFixed(0)} µs a request left above the floors (${floor.toFixed(0)} of ${budget.toFixed(0)} µs)`;
}
