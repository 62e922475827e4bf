// lib/gateway/websocket without a broker: a real HTTP server and client sockets, the identity and the tree faked.
// Updates of one node merge, a session's messages are rate-limited with a bounded queue, inbox activities reach
// their owner's sessions (found by login), a token that stops resolving closes its session.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { EventSocket } from "../../lib/gateway/websocket";
import type { Identity } from "../../lib/auth/identity";
import type { TreeChange } from "../../lib/contracts/tree";

const person = (login: string): Identity => ({ Uuid: `u-${login}`, Login: login, Profile: "standard", GroupPath: "/", Roles: [`u-${login}`], TokenKind: "session", ExpiresAt: 0 });

describe("websocket sessions (lib/gateway/websocket)", () => {
	let server: Server;
	let sockets: EventSocket;
	let url: string;
	const valid = new Set(["good"]);
	let visibleCalls = 0;
	const clients: WebSocket[] = [];

	before(async () => {
		server = createServer((_req, res) => res.end());
		sockets = new EventSocket({
			identity: async (token) => {
				if (token.startsWith("as-")) return person(token.slice(3));
				if (!valid.has(token)) throw Object.assign(new Error("bad token"), { code: 401 });
				return person("bob");
			},
			visible: async (_user, nodes) => {
				visibleCalls++;
				return nodes.map((n) => ({ Node: n, In: [{ UUID: "ws1", Slug: "ws", Label: "WS", Path: `ws/${n.path}` }] }));
			},
			clientIp: () => "127.0.0.1",
			blocked: () => false,
			log: () => undefined,
			batchMs: 50,
			ratePerSec: 5,
			queueMax: 3,
		});
		sockets.attach(server);
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
		url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/event`;
	});
	after(async () => {
		for (const c of clients) c.terminate();
		sockets.close();
		await new Promise((r) => server.close(r));
	});

	async function client(jwt = "good"): Promise<{ ws: WebSocket; got: Record<string, any>[] }> {
		const ws = new WebSocket(url);
		clients.push(ws);
		const got: Record<string, any>[] = [];
		ws.on("message", (d) => got.push(JSON.parse(d.toString())));
		await new Promise<void>((r) => ws.once("open", () => r()));
		ws.send(JSON.stringify({ "@type": "subscribe", jwt }));
		await new Promise((r) => setTimeout(r, 50));
		return { ws, got };
	}
	const change = (type: TreeChange["type"], path: string, size = 1): TreeChange => ({ type, node: { Uuid: `n-${path}`, ds: "ds", path, name: path, type: "LEAF", size, mtime: 1 } as TreeChange["node"] });

	it("merges a creation and its updates into one CREATE, checked in one tree call", async () => {
		const c = await client();
		const before = visibleCalls;
		sockets.treeChanged(change("create", "a.txt", 0));
		sockets.treeChanged(change("content", "a.txt", 5));
		sockets.treeChanged(change("meta", "a.txt", 5));
		sockets.treeChanged(change("create", "b.txt", 2));
		await new Promise((r) => setTimeout(r, 200));
		assert.deepEqual(c.got.map((m) => [m.Type, m.Target.Path, m.Target.Size]), [[undefined, "ws/a.txt", "5"], [undefined, "ws/b.txt", "2"]]);
		assert.equal(visibleCalls - before, 1);
		c.ws.close();
	});

	it("sends a burst, then a bounded queue at the session's rate, dropping the oldest", async () => {
		const c = await client();
		for (let i = 0; i < 20; i++) sockets.treeChanged(change("delete", `d${i}.txt`));
		await new Promise((r) => setTimeout(r, 100));
		assert.equal(c.got.length, 10, "the burst");
		await new Promise((r) => setTimeout(r, 900));
		assert.equal(c.got.length, 13, "then the queue, no more");
		assert.deepEqual(c.got.slice(10).map((m) => m.Source.Path), ["ws/d17.txt", "ws/d18.txt", "ws/d19.txt"]);
		assert.equal(c.got[0].Type, "DELETE");
		c.ws.close();
	});

	it("pushes an inbox activity to its owner's sessions only, as they subscribe, move and close", async () => {
		const [bob1, bob2, carol, dave, erin] = await Promise.all([client(), client(), client("as-carol"), client("as-dave"), client("as-erin")]);
		dave.ws.send(JSON.stringify({ "@type": "unsubscribe" }));
		// Erin's session subscribes again as frank: it is frank's now.
		erin.ws.send(JSON.stringify({ "@type": "subscribe", jwt: "as-frank" }));
		await new Promise((r) => setTimeout(r, 50));
		const by = (owner: string, actor = "alice") => ({ ownerId: owner, activity: { type: "Create", actor: { type: "Person", id: actor }, object: { type: "Document", name: "ws/a/b.txt" } } });
		sockets.activityPosted(["bob", "carol", "dave", "erin", "frank", "zed"].map((o) => by(o, o === "carol" ? "carol" : "alice")));
		await new Promise((r) => setTimeout(r, 50));
		const owners = (c: { got: Record<string, any>[] }) => c.got.filter((m) => m.JsonType === "activity").map((m) => m.OwnerId);
		assert.deepEqual([bob1, bob2, carol, dave, erin].map(owners), [["bob"], ["bob"], [], [], ["frank"]]);
		assert.equal(bob1.got[0].Activity.object.name, "b.txt");
		const closed = new Promise((r) => bob2.ws.once("close", r));
		bob2.ws.close();
		await closed;
		await new Promise((r) => setTimeout(r, 20));
		sockets.activityPosted([by("bob")]);
		await new Promise((r) => setTimeout(r, 50));
		assert.deepEqual([bob1, bob2].map((c) => owners(c).length), [2, 1]);
		for (const c of [bob1, carol, dave, erin]) c.ws.close();
	});

	it("closes a session whose token no longer resolves", async () => {
		const c = await client();
		const closed = new Promise<number>((r) => c.ws.once("close", (code) => r(code)));
		valid.delete("good");
		sockets.recheck();
		assert.equal(await closed, 1008);
		assert.match(c.got[0].error, /invalid jwt/);
		valid.add("good");
	});
});
