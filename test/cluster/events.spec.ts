// Events across a cluster: node "main" runs every service, node "edge" a second gateway and a second activity
// replica. A websocket opened on edge receives the change made through main's gateway (the gateways follow the
// broadcast events), and the activity the change makes is written once although both replicas receive it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { REDIS, requireRedis, startProc, timed, until, type Proc } from "../helpers/cluster";
import { freshPostgres } from "../helpers/db";

describe("cluster over Redis: websocket events and activities across nodes", function () {
	this.timeout(120_000);
	const procs: Proc[] = [];
	let dir = "";
	let pg: { url: string; drop(): Promise<void> } | undefined;
	let main = "";
	let edge = "";
	let admin = "";
	let bob = "";
	const password = "Cluster-Admin-1234";
	const sockets: WebSocket[] = [];

	const call = (base: string, token: string, method: string, path: string, body?: unknown) =>
		timed(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
	const login = async (base: string, login: string, pw: string) => {
		const r = await timed(`${base}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login, password: pw } }) });
		return r.status === 200 ? (r.body.JWT as string) : "";
	};
	const output = () => procs.map((p) => p.out.join("")).join("\n---\n").slice(-6000);

	before(async function () {
		await requireRedis(this);
		pg = await freshPostgres(this);
		const port = 20_000 + Math.floor(Math.random() * 20_000);
		main = `http://127.0.0.1:${port}`;
		edge = `http://127.0.0.1:${port + 1}`;
		const namespace = `cellar-events-${process.pid}-${Date.now()}`;
		dir = mkdtempSync(join(tmpdir(), "cellar-cluster-events-"));
		const common = { DATABASE_URL: pg.url, TRANSPORTER: REDIS, NAMESPACE: namespace, JWT_SECRET: "cluster-test-secret-0123456789abcdef", ADMIN_PASSWORD: password, SCRYPT_N: "1024", LOG_LEVEL: "warn", HEARTBEAT_INTERVAL: "1", HEARTBEAT_TIMEOUT: "5", DATA_DIR: dir };
		procs.push(startProc("main", ["all"], { ...common, PORT: String(port) }));
		procs.push(startProc("edge", ["api", "activity"], { ...common, PORT: String(port + 1) }));
		admin = await until("the admin to log in on main", () => login(main, "admin", password), 60_000).catch((e) => {
			throw new Error(`${e.message}\n${output()}`);
		});
		assert.equal((await call(main, admin, "PUT", "/a/user/bob", { Password: "Bob-Pass-12345", Attributes: { profile: "standard" } })).status, 200);
		bob = await until("bob to log in through edge", () => login(edge, "bob", "Bob-Pass-12345"), 30_000);
		await until("edge to route the activity and tree services", async () => (await call(edge, bob, "POST", "/a/activity/stream", {})).status === 200 && (await call(edge, bob, "POST", "/a/tree/stats", { NodePaths: ["common-files"] })).status === 200, 30_000);
	});

	after(async () => {
		for (const s of sockets) s.terminate();
		for (const p of procs) p.child.kill("SIGKILL");
		await new Promise((r) => setTimeout(r, 200));
		await pg?.drop().catch(() => undefined);
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	it("pushes a change made through main to a websocket on edge, and records its activity once", async () => {
		const made = await call(main, admin, "POST", "/a/tree/create", { Nodes: [{ Path: "common-files/across", Type: "COLLECTION" }] });
		assert.equal(made.status, 200, JSON.stringify(made.body));
		const folder = made.body.Children[0].Uuid as string;
		assert.equal((await call(edge, bob, "POST", "/a/activity/subscribe", { UserId: "bob", ObjectId: folder, Events: ["change"] })).status, 200);

		const ws = new WebSocket(`${edge.replace(/^http/, "ws")}/ws/event`);
		sockets.push(ws);
		const messages: Record<string, any>[] = [];
		ws.on("message", (d) => messages.push(JSON.parse(d.toString())));
		await new Promise<void>((res, rej) => ws.once("open", () => res()).once("error", rej));
		ws.send(JSON.stringify({ "@type": "subscribe", jwt: bob }));
		await new Promise((r) => setTimeout(r, 300));

		const put = await fetch(`${main}/io/common-files/across/from-main.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": admin }, body: "made on main" });
		assert.equal(put.status, 200);
		await until("the node event on edge's websocket", async () => messages.some((m) => m.Target?.Path === "common-files/across/from-main.txt"), 20_000).catch((e) => {
			throw new Error(`${e.message}: ${JSON.stringify(messages)}\n${output()}`);
		});
		await until("the activity on edge's websocket", async () => messages.some((m) => m.JsonType === "activity"), 20_000);

		// Both replicas received the change; bob's inbox has it once, whichever replica answers.
		for (let i = 0; i < 4; i++) {
			const inbox = await call(edge, bob, "POST", "/a/activity/stream", { Context: "USER_ID", ContextData: "bob", BoxName: "inbox" });
			assert.equal(inbox.status, 200);
			assert.deepEqual(
				inbox.body.items.map((a: { type: string; object: { name: string } }) => `${a.type} ${a.object.name}`),
				["Create common-files/across/from-main.txt"],
			);
		}
		await new Promise((r) => setTimeout(r, 500));
		assert.equal(messages.filter((m) => m.JsonType === "activity").length, 1);
	});
});
