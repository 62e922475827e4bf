// Three Cellar nodes as separate processes on the Redis transporter, sharing one PostgreSQL store: a gateway node, an identity node, and a
// second node carrying the stateless read services (auth, mfa, frontend). One of the replicated nodes is SIGKILLed
// mid-run: reads keep working (balanced, retried at the caller), the registry drops the dead node within the
// heartbeat timeout, and no request hangs.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster over Redis (separate processes)", function () {
	this.timeout(120_000);
	const procs: Proc[] = [];
	const dirs: string[] = [];
	// A broker of the test's own joins the cluster to watch its registry.
	let observer: ServiceBroker | undefined;
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let base = "";
	const password = "Cluster-Admin-1234";

	before(async function () {
		await requireRedis(this);
		// The nodes share one PostgreSQL store, as a cluster's nodes do.
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		const namespace = `cellar-test-${process.pid}-${Date.now()}`;
		observer = new ServiceBroker({ logger: false, transporter: REDIS as unknown as "Redis", namespace, nodeID: "observer", heartbeatInterval: 1, heartbeatTimeout: 5 });
		await observer.start();
		const common = {
			DATABASE_URL: pg.url,
			TRANSPORTER: REDIS,
			NAMESPACE: namespace,
			JWT_SECRET: "cluster-test-secret-0123456789abcdef",
			ADMIN_PASSWORD: password,
			SCRYPT_N: "1024",
			LOG_LEVEL: "warn",
			HEARTBEAT_INTERVAL: "1",
			HEARTBEAT_TIMEOUT: "5",
			REQUEST_TIMEOUT: "3000",
		};
		const dir = () => {
			const d = mkdtempSync(join(tmpdir(), "cellar-cluster-"));
			dirs.push(d);
			return d;
		};
		procs.push(startProc("gw", ["api"], { ...common, PORT: String(port), DATA_DIR: dir() }));
		procs.push(startProc("id1", ["users", "roles", "acl", "workspaces", "policy", "tokens", "install", "auth", "mfa", "frontend"], { ...common, DATA_DIR: dir() }));
		procs.push(startProc("id2", ["auth", "mfa", "frontend"], { ...common, DATA_DIR: dir() }));
		await until(
			"the admin to log in and the user routes to be published through the gateway",
			async () => {
				// The gateway publishes a route once the node holding its service has announced itself: a login
				// can work (auth and users known) a moment before the users' REST aliases are regenerated.
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				const me = await timed(`${base}/a/user/admin?ready=1`, { headers: { Authorization: `Bearer ${r.body.JWT}` } });
				return me.status === 200;
			},
			60_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
	});

	after(async () => {
		await observer?.stop();
		for (const p of procs) p.child.kill("SIGKILL");
		// The nodes are gone (SIGKILL): their connections with them.
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		for (const d of dirs) rmSync(d, { recursive: true, force: true });
	});

	it("logs in, creates and reads users through the gateway; survives SIGKILL of a replica", async () => {
		const login = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
		assert.equal(login.status, 200);
		const auth = { Authorization: `Bearer ${login.body.JWT}`, "Content-Type": "application/json" };
		const created = await timed(`${base}/a/user/cluster-user`, { method: "PUT", headers: auth, body: JSON.stringify({ Password: "Cluster-User-1234", Attributes: { profile: "standard" } }) });
		assert.equal(created.status, 200, JSON.stringify(created.body));
		const read = await timed(`${base}/a/user/cluster-user`, { headers: auth });
		assert.equal(read.status, 200);
		assert.equal(read.body.Login, "cluster-user");

		// Both replicas answer bootconf before the kill (a loaded machine may still be settling the registry).
		await until("bootconf through the gateway", async () => (await timed(`${base}/a/frontend/bootconf?settle=1`)).status === 200, 20_000);
		await until("id2's frontend in the registry", async () => observer!.registry.getServiceList({ onlyAvailable: true }).some((s) => s.name === "frontend" && s.nodeID === "id2"), 20_000);
		for (let i = 0; i < 10; i++) assert.equal((await timed(`${base}/a/frontend/bootconf?before=${i}`)).status, 200);

		await until("id2 to be seen by the observer", async () => observer!.registry.nodes.get("id2")?.available, 10_000);
		const killedAt = Date.now();
		procs[2].child.kill("SIGKILL");
		const dropped = until("the registry to drop id2", async () => observer!.registry.nodes.get("id2")?.available === false && Date.now(), 20_000);
		const timings: number[] = [];
		for (let i = 0; i < 30; i++) {
			// A distinct query each time: the gateway's response cache must not answer for the dead node.
			const r = await timed(`${base}/a/frontend/bootconf?probe=${i}`);
			assert.equal(r.status, 200, `read ${i} after the kill failed: ${JSON.stringify(r.body)}`);
			timings.push(r.ms);
			const u = await timed(`${base}/a/user/cluster-user?probe=${i}`, { headers: auth });
			assert.equal(u.status, 200);
		}
		// Retried reads wait at most one request timeout plus back-off: nothing hangs.
		assert.ok(Math.max(...timings) < 3000 + 2000, `slowest read took ${Math.max(...timings)} ms`);
		// Heartbeat timeout 5 s: the check runs every timeout period, so a dead node goes within about twice that.
		const droppedAfter = (await dropped) - killedAt;
		assert.ok(droppedAfter <= 2 * 5000 + 1500, `the dead node was dropped after ${droppedAfter} ms`);

		// A fresh login needs auth.resolve / auth.session on the surviving replica once the dead node is dropped.
		await until(
			"the dead node to leave the registry",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "cluster-user", password: "Cluster-User-1234" } }) });
				return r.status === 200;
			},
			2 * 5000 + 8000,
		);
		assert.ok(Date.now() - killedAt < 25_000);
	});
});
