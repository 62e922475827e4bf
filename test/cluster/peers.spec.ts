// Three nodes over Redis, then the same over NATS (nats://127.0.0.1:4222, or CLUSTER_NATS), with the shared PostgreSQL store,
// each with its own DATA_DIR: a LOCAL datasource whose folder is on node B, created, written and read through
// node A's gateway (the bytes go between A and B over direct signed HTTP, and land in B's folder). When B is
// killed, A answers that datasource's downloads and uploads with a quick 503; when B is back, they work again.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConnection } from "node:net";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";


function natsUp(url: string): Promise<boolean> {
	const u = new URL(url);
	return new Promise((resolve) => {
		const s = createConnection({ host: u.hostname, port: Number(u.port || 4222) });
		s.setTimeout(1000);
		s.once("data", (d) => {
			s.destroy();
			resolve(d.toString().startsWith("INFO"));
		});
		s.once("error", () => resolve(false));
		s.once("timeout", () => {
			s.destroy();
			resolve(false);
		});
	});
}

// The transporter is a setting: one suite, run on both.
for (const TRANSPORTER of [REDIS, process.env.CLUSTER_NATS || "nats://127.0.0.1:4222"]) peersSuite(TRANSPORTER);

function peersSuite(TRANSPORTER: string): void {
describe(`cluster peers: a LOCAL datasource held by another node (${TRANSPORTER.split(":")[0]})`, function () {
	this.timeout(180_000);
	const procs: Record<string, Proc> = {};
	const dirs: Record<string, string> = {};
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let common: Record<string, string> = {};
	const ports: Record<string, number> = {};
	let token = "";
	const id = (n: string) => `peers-${n.toLowerCase()}-${process.pid}`;
	const password = "Cluster-Admin-1234";
	const base = (n: string) => `http://127.0.0.1:${ports[n]}`;
	const api = (method: string, path: string, body?: unknown) =>
		timed(`${base("A")}/a${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
	const io = (method: string, key: string, body?: string) => timed(`${base("A")}/io/peerws/${key}`, { method, headers: { "X-Pydio-Bearer": token }, body });
	// B runs its gateway (which serves the folder it holds to the others) and little else; C is a third peer.
	const SERVICES: Record<string, string[]> = { A: [], B: ["api", "discovery"], C: ["discovery"] };
	const start = (n: string) => {
		procs[n] = startProc(id(n), SERVICES[n], { ...common, DATA_DIR: dirs[n], PORT: String(ports[n]) });
	};
	const output = () => Object.entries(procs).map(([n, p]) => `--- ${n} ---\n${p.out.join("").slice(-3000)}`).join("\n");

	before(async function () {
		if (TRANSPORTER.startsWith("nats:")) {
			// Moleculer's NATS transporter needs the `nats` client package, not a dependency of Cellar's.
			try {
				require.resolve("nats");
			} catch {
				if (process.env.CI === "true") throw new Error("the nats package is missing (npm ci installs it)");
				console.log("      skipped: the nats package is not installed (npm install nats to run this suite on NATS)");
				return this.skip();
			}
			if (!(await natsUp(TRANSPORTER))) {
				if (process.env.CI === "true") throw new Error(`NATS does not answer at ${TRANSPORTER}`);
				console.log(`      skipped: NATS does not answer at ${TRANSPORTER}`);
				return this.skip();
			}
		} else await requireRedis(this);
		pg = await freshPostgres(this);
		const p = 20_000 + Math.floor(Math.random() * 20_000);
		for (const [i, n] of ["A", "B", "C"].entries()) {
			ports[n] = p + i;
			dirs[n] = mkdtempSync(join(tmpdir(), `cellar-peers-${n.toLowerCase()}-`));
		}
		common = { TRANSPORTER, NAMESPACE: `cellar-peers-${process.pid}-${Date.now()}`, DATABASE_URL: pg.url, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "4", REQUEST_TIMEOUT: "10000", HOST: "127.0.0.1" };
		for (const n of ["A", "B", "C"]) start(n);
		await until(
			"the admin to log in through A, and three peers",
			async () => {
				const r = await timed(`${base("A")}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				return (await api("GET", "/config/peers")).body.PeerAddresses?.length === 3;
			},
			120_000,
		).catch((e) => {
			throw new Error(`${e.message}\n${output()}`);
		});
	});

	after(async () => {
		for (const p of Object.values(procs)) p.child.kill("SIGKILL");
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true });
	});

	it("lists three peers, and serves a datasource held by B through A's gateway, failing fast while B is down", async () => {
		const peers = await api("GET", "/config/peers");
		assert.deepEqual(peers.body.PeerAddresses, ["A", "B", "C"].map(id).sort());

		const typo = await api("POST", "/config/datasource/peerds", { StorageType: "LOCAL", StorageConfiguration: { folder: "peerds" }, PeerAddress: "no-such-node" });
		assert.equal(typo.status, 400, JSON.stringify(typo.body));
		const ds = await api("POST", "/config/datasource/peerds", { StorageType: "LOCAL", StorageConfiguration: { folder: "peerds" }, PeerAddress: id("B") });
		assert.equal(ds.status, 200, JSON.stringify(ds.body));
		assert.equal(ds.body.PeerAddress, id("B"));
		const ws = await api("PUT", "/workspace/peerws", { Label: "peerws", Slug: "peerws", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:peerds": { Uuid: "DATASOURCE:peerds", Path: "peerds" } } });
		assert.equal(ws.status, 200, JSON.stringify(ws.body));

		const content = "bytes that live on node B\n".repeat(1000);
		// B may still be discovering the services it asks (a 503 then: retry, as clients do).
		const put = await until("the first upload through A", async () => {
			const r = await io("PUT", "docs/on-b.txt", content);
			assert.ok(r.status === 200 || r.status === 503, `${r.status} ${JSON.stringify(r.body)}`);
			return r.status === 200 && r;
		}, 30_000);
		assert.equal(put.status, 200);
		// In B's folder, not A's.
		assert.equal(readFileSync(join(dirs.B, "peerds", "docs", "on-b.txt"), "utf8"), content);
		assert.ok(!existsSync(join(dirs.A, "peerds", "docs")));
		const got = await io("GET", "docs/on-b.txt");
		assert.equal(got.status, 200);
		assert.equal(got.body, content);
		const listed = await timed(`${base("A")}/io?list-type=2&prefix=peerws/docs/`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(listed.status, 200);
		assert.match(String(listed.body), /<Key>peerws\/docs\/on-b\.txt<\/Key>/);

		procs.B.child.kill("SIGKILL");
		await new Promise((r) => procs.B.child.once("exit", r));
		for (const call of [() => io("GET", "docs/on-b.txt"), () => io("PUT", "docs/while-down.txt", "x")]) {
			const r = await call();
			assert.equal(r.status, 503, `${r.status} ${JSON.stringify(r.body)}`);
			assert.ok(r.ms < 3000, `answered in ${r.ms} ms`);
		}
		// Listings come from the index in the shared store: they do not wait for B either.
		const whileDown = await timed(`${base("A")}/io?list-type=2&prefix=peerws/docs/`, { headers: { "X-Pydio-Bearer": token } });
		assert.ok([200, 503].includes(whileDown.status) && whileDown.ms < 3000, `${whileDown.status} in ${whileDown.ms} ms`);
		// Once the registry has lost B too (heartbeat timeout), still a 503 at once.
		await until("B to leave the peers", async () => (await api("GET", "/config/peers")).body.PeerAddresses?.length === 2, 20_000);
		const gone = await io("GET", "docs/on-b.txt");
		assert.equal(gone.status, 503);
		assert.ok(gone.ms < 3000);

		start("B");
		await until("the file through A once B is back", async () => (await io("GET", "docs/on-b.txt")).body === content, 60_000).catch((e) => {
			throw new Error(`${e.message}\n${output()}`);
		});
		assert.equal((await io("PUT", "docs/after.txt", "back")).status, 200);
		assert.equal(readFileSync(join(dirs.B, "peerds", "docs", "after.txt"), "utf8"), "back");
	});
});
}
