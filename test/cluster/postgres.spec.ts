// A cluster sharing one PostgreSQL store (DATABASE_URL) over Redis: a gateway node, and two nodes each running
// the users and tree services (and the rest), with one data folder for the LOCAL datasources' bytes (a shared
// volume). Concurrent creates of one login, balanced over the two users replicas, make one user; concurrent
// uploads of one path, balanced over the two tree replicas, leave one node holding one upload whole. Both
// replicas see the same tree.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster over Redis on a shared PostgreSQL store", function () {
	this.timeout(180_000);
	const procs: Proc[] = [];
	let dir = "";
	let observer: ServiceBroker | undefined;
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let base = "";
	let token = "";
	const password = "Cluster-Admin-1234";
	const headers = () => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });

	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		const namespace = `cellar-pg-${process.pid}-${Date.now()}`;
		observer = new ServiceBroker({ logger: false, transporter: REDIS as unknown as "Redis", namespace, nodeID: "observer", heartbeatInterval: 1, heartbeatTimeout: 5, requestTimeout: 10_000 });
		await observer.start();
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-pg-"));
		const common = { TRANSPORTER: REDIS, NAMESPACE: namespace, DATABASE_URL: pg.url, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", REQUEST_TIMEOUT: "10000", DATA_DIR: dir };
		procs.push(startProc("gw", ["api"], { ...common, PORT: String(port) }));
		procs.push(startProc("n1", ["!api"], common));
		procs.push(startProc("n2", ["!api", "!install"], common));
		await until(
			"the admin to log in through the gateway, with both replicas of users and tree registered",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				const list = observer!.registry.getServiceList({ onlyAvailable: true });
				const on = (name: string) => new Set(list.filter((s) => s.name === name).map((s) => s.nodeID));
				return on("users").size === 2 && on("tree").size === 2 && (await timed(`${base}/a/tree/stat/common-files`, { headers: headers() })).status === 200;
			},
			90_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
	});

	after(async () => {
		await observer?.stop();
		for (const p of procs) p.child.kill("SIGKILL");
		if (dir) rmSync(dir, { recursive: true, force: true });
		await pg?.drop().catch(() => undefined);
	});

	it("twenty concurrent creates of one login across two users replicas make one user", async () => {
		const tries = await Promise.all(
			Array.from({ length: 20 }, (_, i) => timed(`${base}/a/user/raced`, { method: "PUT", headers: headers(), body: JSON.stringify({ Password: `Raced-Pass-${1000 + i}`, Attributes: { profile: "standard", displayName: `try ${i}` } }) })),
		);
		const statuses = tries.map((t) => t.status);
		assert.equal(statuses.filter((s) => s === 200).length, 1, statuses.join(","));
		assert.ok(statuses.every((s) => s === 200 || s === 409), statuses.join(","));
		const found = await timed(`${base}/a/user`, { method: "POST", headers: headers(), body: JSON.stringify({ Queries: [{ Login: "raced" }] }) });
		assert.equal(found.body.Users.length, 1);
	});

	it("concurrent uploads of one path across two tree replicas leave one node holding one upload whole", async () => {
		const bodies = Array.from({ length: 8 }, (_, i) => Buffer.alloc(256 * 1024 + i, 65 + i));
		const puts = await Promise.all(bodies.map((b) => fetch(`${base}/io/common-files/raced/file.bin`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: b })));
		assert.ok(puts.every((r) => r.status === 200), (await Promise.all(puts.map(async (r) => `${r.status} ${await r.text()}`))).join("\n"));
		const listed = await timed(`${base}/a/meta/bulk/get`, { method: "POST", headers: headers(), body: JSON.stringify({ NodePaths: ["common-files/raced/*"] }) });
		assert.equal(listed.status, 200);
		assert.deepEqual(listed.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/raced/file.bin"]);
		const got = Buffer.from(await (await fetch(`${base}/io/common-files/raced/file.bin`, { headers: { "X-Pydio-Bearer": token } })).arrayBuffer());
		const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
		assert.ok(bodies.some((b) => md5(b) === md5(got)), `the file is none of the uploads whole (${got.length} bytes)`);
		const node = listed.body.Nodes[0];
		assert.equal(node.Etag, md5(got));
		assert.equal(Number(node.Size), got.length);
		// Both tree replicas answer the same for it (each request is balanced: ask several times).
		for (let i = 0; i < 6; i++) {
			const s = await timed(`${base}/a/tree/stat/${encodeURIComponent("common-files/raced/file.bin")}?n=${i}`, { headers: headers() });
			assert.equal(s.body.Node.Etag, md5(got));
		}
	});
});
