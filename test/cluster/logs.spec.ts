// The cluster's log over Redis on a shared PostgreSQL store, nodes in separate processes as the README starts
// them: node A (the gateway and every service) and node B (every service but the gateway). Lines node B logs
// are shipped over the transporter to a log service and read through node A's gateway, filtered by node; a
// failed login through A is in the audit trail whichever log service instance stored it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster log: lines from every node, read through any gateway", function () {
	this.timeout(180_000);
	const procs: Proc[] = [];
	let dir = "";
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let base = "";
	let token = "";
	const password = "Cluster-Admin-1234";
	const nodeB = `logs-b-${process.pid}`;
	const headers = () => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });
	const post = (path: string, body: unknown) => timed(`${base}${path}`, { method: "POST", headers: headers(), body: JSON.stringify(body) });

	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		const namespace = `cellar-logs-${process.pid}-${Date.now()}`;
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-logs-"));
		const common = { TRANSPORTER: REDIS, NAMESPACE: namespace, DATABASE_URL: pg.url, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", LOG_SHIP_LEVEL: "info", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", REQUEST_TIMEOUT: "10000", DATA_DIR: dir };
		procs.push(startProc(`logs-a-${process.pid}`, [], { ...common, PORT: String(port) }));
		procs.push(startProc(nodeB, ["!api", "!install"], common));
		await until(
			"the admin to log in through node A",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				return true;
			},
			90_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
	});

	after(async () => {
		for (const p of procs) p.child.kill("SIGKILL");
		if (dir) rmSync(dir, { recursive: true, force: true });
		await pg?.drop().catch(() => undefined);
	});

	it("reads node B's lines through node A's gateway, by node", async () => {
		// Node B's broker says when its services have started (info): shipped to a log service over Redis.
		const lines = await until(
			"node B's lines",
			async () => {
				const r = await post("/a/log/sys", { Query: `+Node:${nodeB}`, Size: 50 });
				assert.equal(r.status, 200, JSON.stringify(r.body));
				return r.body.Logs?.length ? r.body.Logs : undefined;
			},
			60_000,
		);
		assert.ok(lines.every((l: { JsonZaps: string }) => JSON.parse(l.JsonZaps).Node === nodeB));
		assert.ok(lines.some((l: { Logger: string; Msg: string }) => l.Logger === "broker" && /started/i.test(l.Msg)), JSON.stringify(lines.slice(0, 5)));
		// Node A's own lines are there too, told apart by node.
		const a = await post("/a/log/sys", { Query: `-Node:${nodeB}`, Size: 5 });
		assert.ok(a.body.Logs.length > 0);
		assert.ok(a.body.Logs.every((l: { JsonZaps: string }) => JSON.parse(l.JsonZaps).Node !== nodeB));
	});

	it("keeps a failed login through node A in the audit trail, once", async () => {
		const login = `nobody-${Date.now()}`;
		const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login, password: "Wrong-Pass-1234" } }) });
		assert.equal(r.status, 401);
		const logs = await until(
			"the audit entry",
			async () => {
				const a = await post("/a/log/audit", { Query: `+MsgId:login.failed +UserName:${login}` });
				return a.body.Logs?.length ? a.body.Logs : undefined;
			},
			20_000,
		);
		await new Promise((res) => setTimeout(res, 1000));
		const again = await post("/a/log/audit", { Query: `+MsgId:login.failed +UserName:${login}` });
		assert.equal(again.body.Logs.length, 1, "stored by one of the two log service instances");
		assert.match(logs[0].RemoteAddress, /127\.0\.0\.1/);
	});
});
