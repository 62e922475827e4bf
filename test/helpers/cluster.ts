// Cluster tests' tools: Redis reachability, Cellar nodes started as separate processes exactly as the README
// starts the nodes of a cluster, polling with a deadline, and timed HTTP calls.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createConnection } from "node:net";

const ROOT = join(__dirname, "..", "..");
export const REDIS = process.env.REDIS_URL || "redis://127.0.0.1:6379";

export function redisUp(): Promise<boolean> {
	const u = new URL(REDIS);
	return new Promise((resolve) => {
		const s = createConnection({ host: u.hostname, port: Number(u.port || 6379) });
		s.setTimeout(1000);
		s.once("connect", () => {
			s.write("PING\r\n");
		});
		s.once("data", (d) => {
			s.destroy();
			resolve(d.toString().includes("PONG"));
		});
		s.once("error", () => resolve(false));
		s.once("timeout", () => {
			s.destroy();
			resolve(false);
		});
	});
}

export interface Proc {
	child: ChildProcess;
	out: string[];
}

export function startProc(nodeId: string, services: string[], env: Record<string, string>): Proc {
	// Exactly as the README starts a node of a cluster: npm start's command with SERVICES choosing the services.
	const args = ["--import", "tsx", "bin/start.ts", "--config", "moleculer.config.ts", "services/**/*.service.ts"];
	const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, NODE_ID: nodeId, SERVICES: services.join(",") }, stdio: ["ignore", "pipe", "pipe"] });
	const out: string[] = [];
	child.stdout?.on("data", (d) => out.push(String(d)));
	child.stderr?.on("data", (d) => out.push(String(d)));
	return { child, out };
}

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	let last: unknown;
	while (Date.now() < deadline) {
		try {
			const v = await fn();
			if (v) return v;
		} catch (e) {
			last = e;
		}
		await new Promise((r) => setTimeout(r, 200));
	}
	throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

export async function timed(url: string, init?: RequestInit): Promise<{ status: number; body: any; ms: number }> {
	const t = Date.now();
	const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
	const text = await res.text();
	let body: unknown;
	try {
		body = JSON.parse(text);
	} catch {
		body = text;
	}
	return { status: res.status, body, ms: Date.now() - t };
}

/** Redis is required in CI (a failure); elsewhere its absence skips the suite with the reason printed. */
export async function requireRedis(ctx: Mocha.Context): Promise<void> {
	if (await redisUp()) return;
	if (process.env.CI === "true") throw new Error(`Redis is required in CI and does not answer at ${REDIS}`);
	console.log(`      skipped: Redis does not answer at ${REDIS}`);
	ctx.skip();
}
