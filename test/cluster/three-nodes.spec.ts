// Three nodes A, B and C over Redis on one fresh PostgreSQL store, each with its own DATA_DIR, A the only gateway,
// started once for three scenarios: a log level set through A is applied on all three nodes (and taken back); a
// service stopped on A (where B and C also run it) leaves A's gateway answering through B or C, and START brings it
// back; with an S3 datasource (a real s3rver), SIGKILL of B goes unnoticed by uploads and downloads through A (B holds
// nothing of it), while the peers go from three to two, and to three again once B is restarted.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";
import { startS3rver, type TestS3 } from "../helpers/s3rver";

describe("cluster of three nodes over Redis: configuration everywhere, services routed around, a node killed unnoticed", function () {
	this.timeout(180_000);
	const procs: Record<string, Proc> = {};
	const dirs: Record<string, string> = {};
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let s3: TestS3 | undefined;
	let common: Record<string, string> = {};
	let base = "";
	let token = "";
	let startedAt = 0;
	const id = (n: string) => `three-${n.toLowerCase()}-${process.pid}`;
	const password = "Cluster-Admin-1234";
	const api = (method: string, path: string, body?: unknown) =>
		timed(`${base}/a${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
	const io = (method: string, key: string, body?: string) => timed(`${base}/io/s3ws/${key}`, { method, headers: { "X-Pydio-Bearer": token }, body });
	// A runs everything with the only gateway; B and C run every service but the gateway and the first-run install.
	const SERVICES: Record<string, string[]> = { A: [], B: ["!api", "!install"], C: ["!api", "!install"] };
	const start = (n: string, port?: number) => {
		procs[n] = startProc(id(n), SERVICES[n], { ...common, DATA_DIR: dirs[n], ...(port ? { PORT: String(port) } : {}) });
	};
	const output = () => Object.entries(procs).map(([n, p]) => `--- ${n} ---\n${p.out.join("").slice(-3000)}`).join("\n");
	const ctl = async () => (await api("GET", "/config/ctl")).body.Services as { Name: string; RunningPeers?: { Id: string }[] }[];
	const peersOf = async (name: string) => ((await ctl()).find((s) => s.Name === name)?.RunningPeers ?? []).map((p) => p.Id).sort();
	const peers = async () => ((await api("GET", "/config/peers")).body.PeerAddresses ?? []) as string[];
	const levels = async () => {
		const r = await api("POST", "/config/registry", { options: { types: ["NODE"] } });
		return Object.fromEntries((r.body.items ?? []).map((i: { id: string; metadata: Record<string, string> }) => [i.id, i.metadata.logLevel]));
	};
	const all = (level: string) => Object.fromEntries(["A", "B", "C"].map((n) => [id(n), level]));

	before(async function () {
		await requireRedis(this);
		startedAt = Date.now();
		pg = await freshPostgres(this);
		s3 = await startS3rver();
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		base = `http://127.0.0.1:${port}`;
		for (const n of ["A", "B", "C"]) dirs[n] = mkdtempSync(join(tmpdir(), `cellar-three-${n.toLowerCase()}-`));
		common = { TRANSPORTER: REDIS, NAMESPACE: `cellar-three-${process.pid}-${Date.now()}`, DATABASE_URL: pg.url, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "4", REQUEST_TIMEOUT: "10000", HOST: "127.0.0.1" };
		start("A", port);
		start("B");
		start("C");
		await until(
			"the admin to log in through A, three peers, versions on all three",
			async () => {
				const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password } }) });
				if (r.status !== 200) return false;
				token = r.body.JWT;
				return (await peers()).length === 3 && (await peersOf("versions")).length === 3;
			},
			120_000,
		).catch((e) => {
			throw new Error(`${e.message}\n${output()}`);
		});
		console.log(`      three nodes up in ${Date.now() - startedAt} ms`);
	});

	after(async () => {
		for (const p of Object.values(procs)) p.child.kill("SIGKILL");
		await new Promise((r) => setTimeout(r, 200));
		await s3?.stop().catch(() => undefined);
		await pg?.drop().catch(() => undefined);
		for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true });
		if (startedAt) console.log(`      three-node suite took ${Date.now() - startedAt} ms`);
	});

	it("applies a log level set through A on A, B and C, and takes it back", async () => {
		assert.deepEqual(await levels(), all("warn"));
		const put = await api("PUT", "/config/services/config", { Data: JSON.stringify({ logLevel: "debug" }) });
		assert.equal(put.status, 200, JSON.stringify(put.body));
		await until("all three nodes at level debug", async () => isDeepStrictEqual(await levels(), all("debug")), 10_000).catch(async (e) => {
			throw new Error(`${e.message}: ${JSON.stringify(await levels())}`);
		});
		// Without a level in the configuration, every node goes back to its LOG_LEVEL.
		assert.equal((await api("PUT", "/config/services/config", { Data: JSON.stringify({}) })).status, 200);
		await until("all three nodes back at level warn", async () => isDeepStrictEqual(await levels(), all("warn")), 10_000).catch(async (e) => {
			throw new Error(`${e.message}: ${JSON.stringify(await levels())}`);
		});
	});

	it("stops versions on A, the gateway's own node: requests through A are answered by B or C; START brings it back", async () => {
		const stop = await api("POST", "/config/ctl", { ServiceName: "versions", NodeName: id("A"), Command: "STOP" });
		assert.equal(stop.status, 200, JSON.stringify(stop.body));
		assert.deepEqual((stop.body.RunningPeers ?? []).map((p: { Id: string }) => p.Id).sort(), [id("B"), id("C")].sort());
		assert.deepEqual(await peersOf("versions"), [id("B"), id("C")].sort());
		for (let i = 0; i < 10; i++) {
			const r = await api("GET", "/config/versioning");
			assert.equal(r.status, 200, JSON.stringify(r.body));
			assert.ok((r.body.Policies ?? []).length > 0, JSON.stringify(r.body));
			assert.ok(r.ms < 3000, `answered in ${r.ms} ms`);
		}
		const startIt = await api("POST", "/config/ctl", { ServiceName: "versions", NodeName: id("A"), Command: "START" });
		assert.equal(startIt.status, 200, JSON.stringify(startIt.body));
		await until("versions on all three nodes again", async () => (await peersOf("versions")).length === 3, 20_000);
		assert.equal((await api("GET", "/config/versioning")).status, 200);
	});

	it("keeps serving an S3 datasource through A while B is killed, and counts the peers 3, 2, then 3 again", async () => {
		await s3!.createBucket("threeds");
		const ds = await api("POST", "/config/datasource/threeds", { StorageType: "S3", FlatStorage: false, ObjectsBucket: "threeds", ApiKey: s3!.accessKeyId, ApiSecret: s3!.secretAccessKey, StorageConfiguration: { customEndpoint: s3!.endpoint } });
		assert.equal(ds.status, 200, JSON.stringify(ds.body));
		const ws = await api("PUT", "/workspace/s3ws", { Label: "s3ws", Slug: "s3ws", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:threeds": { Uuid: "DATASOURCE:threeds", Path: "threeds" } } });
		assert.equal(ws.status, 200, JSON.stringify(ws.body));
		const roundTrip = async (key: string, content: string) => {
			const put = await io("PUT", key, content);
			assert.equal(put.status, 200, `PUT ${key}: ${put.status} ${JSON.stringify(put.body)}`);
			assert.ok(put.ms < 3000, `PUT ${key} answered in ${put.ms} ms`);
			const got = await io("GET", key);
			assert.equal(got.status, 200, `GET ${key}: ${got.status}`);
			assert.equal(got.body, content);
			assert.ok(got.ms < 3000, `GET ${key} answered in ${got.ms} ms`);
		};
		await roundTrip("docs/before.txt", "stored in S3, not on any node\n".repeat(500));
		assert.deepEqual(await peers(), ["A", "B", "C"].map(id).sort());

		procs.B.child.kill("SIGKILL");
		await new Promise((r) => procs.B.child.once("exit", r));
		// The window that matters is before the heartbeat timeout, while A's registry still counts B as alive.
		const killedAt = Date.now();
		let i = 0;
		for (; ; i++) {
			await roundTrip(`docs/while-down-${i}.txt`, `written while B is dead (${i})\n`);
			const got = await io("GET", "docs/before.txt");
			assert.equal(got.status, 200);
			if ((await peers()).length === 2) break;
			assert.ok(i < 200, "B never left the peers");
		}
		console.log(`      B left the peers ${Date.now() - killedAt} ms after SIGKILL; ${i + 1} uploads and ${2 * (i + 1)} downloads through A meanwhile, all answered`);
		assert.deepEqual(await peers(), [id("A"), id("C")]);
		await roundTrip("docs/after-b-left.txt", "B is gone from the registry");

		start("B");
		await until("B back among the peers", async () => (await peers()).length === 3, 60_000).catch((e) => {
			throw new Error(`${e.message}\n${output()}`);
		});
		assert.deepEqual(await peers(), ["A", "B", "C"].map(id).sort());
		await roundTrip("docs/after-b-back.txt", "B is back");
		const listed = await timed(`${base}/io?list-type=2&prefix=s3ws/docs/`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(listed.status, 200);
		for (const k of ["before.txt", "while-down-0.txt", `while-down-${i}.txt`, "after-b-left.txt", "after-b-back.txt"]) assert.match(String(listed.body), new RegExp(`<Key>s3ws/docs/${k.replace(/\./g, "\\.")}</Key>`));
	});
});
