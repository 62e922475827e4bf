// Shares in a cluster: a node running every service and a second gateway node (api and tree, with their own
// caches of identities, responses and resolved workspaces). bob reads a cell through the second gateway, alice
// takes him out of it through the first: the second gateway refuses him as soon as the change's events arrive
// over Redis, without waiting for any cache to expire.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireRedis, startProc, timed, until, REDIS, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster over Redis: removing a cell member cuts access on every gateway", function () {
	this.timeout(120_000);
	const procs: Proc[] = [];
	let dir = "";
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let a = "";
	let b = "";
	const password = "Cluster-Admin-1234";

	const call = (base: string, token: string, method: string, path: string, body?: unknown) =>
		timed(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
	const login = async (base: string, user: string, pw: string) => {
		const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: user, password: pw } }) });
		assert.equal(r.status, 200, JSON.stringify(r.body));
		return r.body.JWT as string;
	};

	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		a = `http://127.0.0.1:${port}`;
		b = `http://127.0.0.1:${port + 1}`;
		const namespace = `cellar-shares-${process.pid}-${Date.now()}`;
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-shares-"));
		const common = { DATABASE_URL: pg.url, TRANSPORTER: REDIS, NAMESPACE: namespace, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", DATA_DIR: dir };
		procs.push(startProc("main", ["all"], { ...common, PORT: String(port) }));
		procs.push(startProc("gw2", ["api", "tree"], { ...common, PORT: String(port + 1) }));
		await until(
			"both gateways to serve the share and tree routes",
			async () => {
				for (const base of [a, b]) {
					const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
					if (r.status !== 200) return false;
					const s = await call(base, r.body.JWT, "POST", "/a/share/resources", {});
					if (s.status !== 200) return false;
				}
				return true;
			},
			60_000,
		).catch((e) => {
			throw new Error(`${e.message}\n--- node output ---\n${procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000)}`);
		});
	});

	after(async () => {
		for (const p of procs) p.child.kill("SIGKILL");
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	it("bob reads through gateway 2 until alice removes him through gateway 1", async () => {
		const admin = await login(a, "admin", password);
		const uuids: Record<string, string> = {};
		for (const u of ["alice", "bob"]) {
			const r = await call(a, admin, "PUT", `/a/user/${u}`, { Password: `${u}-Pass-12345`, Attributes: { profile: "standard" } });
			assert.equal(r.status, 200, JSON.stringify(r.body));
			uuids[u] = r.body.Uuid;
		}
		const alice = await login(a, "alice", "alice-Pass-12345");
		const bob = await login(b, "bob", "bob-Pass-12345");
		assert.equal((await fetch(`${a}/io/personal-files/p/x.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: "x" })).status, 200);
		const folder = (await call(a, alice, "GET", "/a/tree/stat/personal-files%2Fp")).body.Node.Uuid;
		const member = { [uuids.bob]: { RoleId: uuids.bob, Actions: [{ Name: "read" }, { Name: "write" }] } };
		const cell = await call(a, alice, "PUT", "/a/share/cell", { Room: { Label: "Clustered", RootNodes: [{ Uuid: folder }], ACLs: member } });
		assert.equal(cell.status, 200, JSON.stringify(cell.body));
		// bob's reads through gateway 2 (its caches now hold his identity, the answer and his workspaces).
		await until("bob to see the cell through gateway 2", async () => (await call(b, bob, "POST", "/a/tree/stats", { NodePaths: ["clustered/*"] })).status === 200, 10_000);
		assert.equal((await call(b, bob, "POST", "/a/tree/stats", { NodePaths: ["clustered/*"] })).status, 200);
		assert.equal((await fetch(`${b}/io/clustered/x.txt`, { headers: { "X-Pydio-Bearer": bob } })).status, 200);
		const removed = await call(a, alice, "PUT", "/a/share/cell", { Room: { Uuid: cell.body.Uuid, Label: "Clustered", RootNodes: [{ Uuid: folder }], ACLs: {} } });
		assert.equal(removed.status, 200, JSON.stringify(removed.body));
		const t = Date.now();
		// As soon as the ACL change's broadcast has crossed Redis: well under any cache's lifetime.
		await until("gateway 2 to refuse bob", async () => (await call(b, bob, "POST", "/a/tree/stats", { NodePaths: ["clustered/*"] })).status === 404, 3_000);
		assert.ok(Date.now() - t < 3_000);
		assert.equal((await fetch(`${b}/io/clustered/x.txt`, { headers: { "X-Pydio-Bearer": bob } })).status, 404);
	});
});
