// Operating a two-node cluster (Redis transporter, shared PostgreSQL store) through one gateway: both nodes are
// peers with their own processes, a peer's folders are listed by that peer, a log level set through the gateway is
// applied on both nodes, and a service stopped on node B leaves discovery there while the gateway routes to A.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster operations: peers, configuration and service control over Redis", function () {
	this.timeout(180_000);
	const procs: Proc[] = [];
	let dir = "";
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let base = "";
	let token = "";
	const A = `ops-a-${process.pid}`;
	const B = `ops-b-${process.pid}`;
	const password = "Cluster-Admin-1234";
	const headers = () => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });
	const api = (method: string, path: string, body?: unknown) => timed(`${base}/a${path}`, { method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
	const ctl = async () => (await api("GET", "/config/ctl")).body.Services as { Name: string; Status: string; RunningPeers?: { Id: string }[] }[];
	const peersOf = async (name: string) => ((await ctl()).find((s) => s.Name === name)?.RunningPeers ?? []).map((p) => p.Id).sort();

	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		const namespace = `cellar-ops-${process.pid}-${Date.now()}`;
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-ops-"));
		const common = { TRANSPORTER: REDIS, NAMESPACE: namespace, DATABASE_URL: pg.url, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", REQUEST_TIMEOUT: "10000", DATA_DIR: dir };
		procs.push(startProc(A, [], { ...common, PORT: String(port) }));
		procs.push(startProc(B, ["!api", "!install"], common));
		await until(
			"the admin to log in, with discovery and versions on both nodes",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				return (await peersOf("discovery")).length === 2 && (await peersOf("versions")).length === 2;
			},
			120_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
	});

	after(async () => {
		for (const p of procs) p.child.kill("SIGKILL");
		if (dir) rmSync(dir, { recursive: true, force: true });
		await pg?.drop().catch(() => undefined);
	});

	it("lists both nodes as peers, each with its own process, and a peer's folders from that peer", async () => {
		const peers = await api("GET", "/config/peers");
		assert.equal(peers.status, 200);
		assert.deepEqual(peers.body.PeerAddresses, [A, B].sort());
		const nodes = await api("POST", "/config/registry", { options: { types: ["NODE"] } });
		const pids = nodes.body.items.map((i: { metadata: Record<string, string> }) => i.metadata.pid);
		assert.equal(new Set(pids).size, 2);
		const procsB = await api("POST", "/config/processes", { PeerId: B });
		assert.equal(procsB.body.Processes.length, 1);
		assert.equal(procsB.body.Processes[0].ID, String(procs[1].child.pid));
		assert.ok(!procsB.body.Processes[0].Services.includes("api"));
		const folders = await api("POST", `/config/peers/${B}`, { Path: dir });
		assert.equal(folders.status, 200, JSON.stringify(folders.body));
		const made = await api("PUT", `/config/peers/${B}`, { Path: join(dir, "made-on-b") });
		assert.equal(made.status, 200, JSON.stringify(made.body));
		assert.ok((await api("POST", `/config/peers/${A}`, { Path: dir })).body.Children.some((c: { Path: string }) => c.Path.endsWith("made-on-b")));
	});

	it("applies a log level set through the gateway on every node", async () => {
		assert.equal((await api("PUT", "/config/services/config", { Data: JSON.stringify({ logLevel: "error" }) })).status, 200);
		await until(
			"both nodes at level error",
			async () => {
				const r = await api("POST", "/config/registry", { options: { types: ["NODE"] } });
				return r.body.items.length === 2 && r.body.items.every((i: { metadata: Record<string, string> }) => i.metadata.logLevel === "error");
			},
			10_000,
		);
	});

	it("stops a service on node B: discovery shows it on A only, the gateway routes to A; START brings it back", async () => {
		const stop = await api("POST", "/config/ctl", { ServiceName: "versions", NodeName: B, Command: "STOP" });
		assert.equal(stop.status, 200, JSON.stringify(stop.body));
		assert.deepEqual((stop.body.RunningPeers ?? []).map((p: { Id: string }) => p.Id), [A]);
		assert.deepEqual(await peersOf("versions"), [A]);
		for (let i = 0; i < 10; i++) assert.equal((await api("GET", "/config/versioning")).status, 200);
		const start = await api("POST", "/config/ctl", { ServiceName: "versions", NodeName: B, Command: "START" });
		assert.equal(start.status, 200, JSON.stringify(start.body));
		await until("versions on both nodes again", async () => (await peersOf("versions")).length === 2, 20_000);
		// Stopping the gateway of the node this request goes through is refused; another node's services are fair game.
		assert.equal((await api("POST", "/config/ctl", { ServiceName: "api", NodeName: A, Command: "STOP" })).status, 400);
	});
});
