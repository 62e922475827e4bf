// Events across a cluster: node "main" runs every service, node "edge" a second gateway and a second activity
// replica. A websocket opened on edge receives the change made through main's gateway (the gateways follow the
// broadcast events), and the activity the change makes is written once although both replicas receive it.
import assert from "node:assert/strict";
import WebSocket from "ws";
import { clusterCall as call, clusterLogin as login, until, useCluster } from "../helpers/cluster";

describe("cluster over Redis: websocket events and activities across nodes", function () {
	this.timeout(120_000);
	const sockets: WebSocket[] = [];
	// Registered before the cluster's own after hook so that the sockets close before the nodes are killed.
	after(() => {
		for (const s of sockets) s.terminate();
	});
	const cluster = useCluster("events", [
		{ id: "main", services: ["all"], gateway: true },
		{ id: "edge", services: ["api", "activity"], gateway: true },
	]);
	const output = cluster.output;
	let main = "";
	let edge = "";
	let admin = "";
	let bob = "";

	before(async () => {
		[main, edge] = cluster.bases;
		admin = await cluster.waitFor("the admin to log in on main", () => login(main, "admin", cluster.password), 60_000);
		assert.equal((await call(main, admin, "PUT", "/a/user/bob", { Password: "Bob-Pass-12345", Attributes: { profile: "standard" } })).status, 200);
		bob = await until("bob to log in through edge", () => login(edge, "bob", "Bob-Pass-12345"), 30_000);
		await until("edge to route the activity and tree services", async () => (await call(edge, bob, "POST", "/a/activity/stream", {})).status === 200 && (await call(edge, bob, "POST", "/a/tree/stats", { NodePaths: ["common-files"] })).status === 200, 30_000);
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
