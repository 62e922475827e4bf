// Files in a cluster: a node running every service, gateway and files included, and a second node running only
// a search replica (sharing the first one's data folder, as a shared volume would, and the PostgreSQL store). The
// replica searches the index in the shared store (one of the two runs the start's catch-up, under a lease) and
// follows every change through the broadcast `tree.changed` events: it answers the same as the local one after an
// upload, a move and a delete; when it is killed, searches go on.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster over Redis: files and a remote search replica", function () {
	this.timeout(120_000);
	const procs: Proc[] = [];
	let dir = "";
	let observer: ServiceBroker | undefined;
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let base = "";
	let token = "";
	let user: unknown;
	const password = "Cluster-Admin-1234";

	before(async function () {
		await requireRedis(this);
		// The nodes share one PostgreSQL store, as a cluster's nodes do.
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		const namespace = `cellar-files-${process.pid}-${Date.now()}`;
		observer = new ServiceBroker({ logger: false, transporter: REDIS as unknown as "Redis", namespace, nodeID: "observer", heartbeatInterval: 1, heartbeatTimeout: 5, requestTimeout: 10_000 });
		await observer.start();
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-files-"));
		const common = { DATABASE_URL: pg.url, TRANSPORTER: REDIS, NAMESPACE: namespace, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "info", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", DATA_DIR: dir };
		procs.push(startProc("main", ["all"], { ...common, PORT: String(port) }));
		procs.push(startProc("search2", ["search"], common));
		await until(
			"the admin to log in and the tree and search routes to be published",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				const s = await timed(`${base}/a/search/nodes`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ Query: { FileName: "ready" } }) });
				return s.status === 200;
			},
			60_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
		user = await until("the observer to reach auth", () => observer!.call("auth.resolve", { token }), 20_000);
		await until("search2 to have built its index", async () => (await observer!.call<{ Ready: boolean }, unknown>("search.status", {}, { nodeID: "search2" })).Ready, 30_000);
	});

	after(async () => {
		await observer?.stop();
		for (const p of procs) p.child.kill("SIGKILL");
		// The nodes are gone (SIGKILL): their connections with them.
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	/** What the replica on search2 finds, asked directly on that node. */
	const remote = async (query: Record<string, unknown>): Promise<string[]> => {
		const r = await observer!.call<{ Results?: { Path: string }[] }, unknown>("search.nodes", { Query: query, Size: 50 }, { nodeID: "search2", meta: { user } });
		return (r.Results ?? []).map((n) => n.Path).sort();
	};
	const api = (method: string, path: string, body?: unknown) =>
		timed(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });

	it("keeps a search replica on another node in step with uploads, moves and deletes", async () => {
		const put = await fetch(`${base}/io/common-files/cluster/report-alpha.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: "zebra quantum notes" });
		assert.equal(put.status, 200);
		await until("the replica to find the upload by name", async () => (await remote({ FileName: "report-alpha" })).includes("common-files/cluster/report-alpha.txt"), 20_000);
		// Reading the text is queued behind whatever else the replica's node is doing: on a loaded machine (the whole
		// suite in one process beside it) it has taken more than 20 s. Its log says why when it does not come.
		await until("the replica to find it by content", async () => (await remote({ Content: "quantum" })).includes("common-files/cluster/report-alpha.txt"), 45_000).catch((e) => {
			throw new Error(`${e.message}\n--- search2 output ---\n${procs[1].out.join("").slice(-4000)}`);
		});

		const moved = await api("PUT", "/a/jobs/user/move", { JsonParameters: JSON.stringify({ nodes: ["common-files/cluster/report-alpha.txt"], target: "common-files/cluster/renamed-beta.txt", targetParent: false }) });
		assert.equal(moved.status, 200, JSON.stringify(moved.body));
		await until("the replica to see the move", async () => {
			const found = await remote({ FileName: "renamed-beta" });
			return found.includes("common-files/cluster/renamed-beta.txt") && !(await remote({ FileName: "report-alpha" })).length;
		}, 20_000);

		const removed = await api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/cluster/renamed-beta.txt" }], RemovePermanently: true });
		assert.equal(removed.status, 200, JSON.stringify(removed.body));
		await until("the replica to drop the deleted file", async () => !(await remote({ FileName: "renamed-beta" })).length, 20_000);

		// Through the gateway the same answers, whichever replica serves them; then without the remote one.
		const local = await api("POST", "/a/search/nodes", { Query: { FileName: "renamed-beta" } });
		assert.equal(local.status, 200);
		assert.equal(local.body.Total ?? 0, 0);
		procs[1].child.kill("SIGKILL");
		for (let i = 0; i < 5; i++) {
			const r = await api("POST", "/a/search/nodes", { Query: { FileName: `cluster-${i}` } });
			assert.equal(r.status, 200, JSON.stringify(r.body));
		}
	});
});
