// Cluster tests' tools: Redis reachability, Cellar nodes started as separate processes exactly as the README
// starts the nodes of a cluster, polling with a deadline, and timed HTTP calls.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConnection } from "node:net";
import { ServiceBroker } from "moleculer";
import { freshPostgres } from "./db";

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

export const CLUSTER_PASSWORD = "Cluster-Admin-1234";

export interface ClusterNodeSpec {
	id: string;
	services: string[];
	/** Serves HTTP: the gateways get consecutive ports, in the order they are listed. */
	gateway?: boolean;
}

export interface Cluster {
	procs: Proc[];
	/** The DATA_DIR every node shares (with `ownDataDirs`, the folder of theirs: `<dir>/<node id>`). */
	dir: string;
	/** Base URLs of the gateway nodes, in the order they are listed. */
	bases: string[];
	password: string;
	namespace: string;
	/** With `observer: true`, a broker in the cluster's namespace running no service, started before the nodes. */
	observer?: ServiceBroker;
	/** The last lines the nodes wrote, for a failure message. */
	output(): string;
	/** Polls like `until`, and on a timeout adds the nodes' output to the error. */
	waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T>;
}

/**
 * A cluster over Redis on a fresh PostgreSQL store, its nodes started as separate processes sharing one DATA_DIR
 * (or, with `ownDataDirs`, each with its own):
 * registers the suite's before hook that starts it and the after hook that kills the nodes, drops the database
 * and removes the directory (an observer broker, when asked for, stops first). Call it inside `describe`, before the suite's own hooks (which then see it started).
 */
export function useCluster(name: string, nodes: ClusterNodeSpec[], opts: { env?: Record<string, string>; observer?: boolean; ownDataDirs?: boolean } = {}): Cluster {
	const c: Cluster = {
		procs: [],
		dir: "",
		bases: [],
		password: CLUSTER_PASSWORD,
		namespace: "",
		output: () => c.procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000),
		waitFor: (what, fn, timeoutMs) =>
			until(what, fn, timeoutMs).catch((e) => {
				throw new Error(`${e.message}\n--- node output ---\n${c.output()}`);
			}),
	};
	let pg: { url: string; drop(): Promise<void> } | undefined;
	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		c.namespace = `cellar-${name}-${process.pid}-${Date.now()}`;
		if (opts.observer) {
			c.observer = new ServiceBroker({ logger: false, transporter: REDIS as unknown as "Redis", namespace: c.namespace, nodeID: "observer", heartbeatInterval: 1, heartbeatTimeout: 5, requestTimeout: 10_000 });
			await c.observer.start();
		}
		c.dir = mkdtempSync(join(tmpdir(), `cellar-cluster-${name}-`));
		const common = { DATABASE_URL: pg.url, TRANSPORTER: REDIS, NAMESPACE: c.namespace, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: c.password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", ...opts.env, DATA_DIR: c.dir };
		for (const n of nodes) {
			const env = opts.ownDataDirs ? { ...common, DATA_DIR: join(c.dir, n.id) } : common;
			if (!n.gateway) {
				c.procs.push(startProc(n.id, n.services, env));
				continue;
			}
			const p = port + c.bases.length;
			c.bases.push(`http://127.0.0.1:${p}`);
			c.procs.push(startProc(n.id, n.services, { ...env, PORT: String(p) }));
		}
	});
	after(async () => {
		await c.observer?.stop();
		for (const p of c.procs) p.child.kill("SIGKILL");
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		if (c.dir) rmSync(c.dir, { recursive: true, force: true });
	});
	return c;
}

/** The credentials login through a gateway: the JWT, or "" when it is refused. */
export async function clusterLogin(base: string, login: string, password: string): Promise<string> {
	const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login, password } }) });
	return r.status === 200 ? (r.body.JWT as string) : "";
}

/** A JSON call through a gateway with a bearer token. */
export function clusterCall(base: string, token: string, method: string, path: string, body?: unknown) {
	return timed(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
}
