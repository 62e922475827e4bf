// Discovery through the real gateway: endpoints (public), the OpenAPI document generated from the live registry,
// service forms, peers and their folders (confined to the allowed roots), registry items, processes, and service
// control (a stopped service really leaves the registry and its routes, and comes back on START).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, symlinkSync, rmSync, existsSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

describe("HTTP: discovery, peers, registry, processes, ctl", function () {
	this.timeout(90_000);
	const node = useNode();
	let user: string;
	let outside: string;

	before(async () => {
		user = await addUser(node, node.admin, "dora", "Dora-Pass-12345");
		outside = mkdtempSync(join(tmpdir(), "cellar-outside-"));
		mkdirSync(join(node.dataDir, "pick", "a"), { recursive: true });
		mkdirSync(join(node.dataDir, "pick", "b"), { recursive: true });
		symlinkSync(outside, join(node.dataDir, "pick", "escape"));
	});
	after(() => rmSync(outside, { recursive: true, force: true }));

	it("answers discovery to logged-in callers only (401 without credentials)", async () => {
		const anon = await node.api("GET", "/a/config/discovery");
		assert.equal(anon.status, 401, anon.text);
		const logged = await node.api("GET", "/a/config/discovery", undefined, user);
		assert.equal(logged.status, 200, logged.text);
		assert.match(logged.body.Version, /^\d+\.\d+\.\d+/);
	});

	it("generates the OpenAPI document from the live registry", async () => {
		const r = await node.api("GET", "/a/config/discovery/openapi", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		const doc = JSON.parse(Buffer.from(r.body.Data, "base64").toString("utf8"));
		assert.equal(doc.swagger, "2.0");
		assert.equal(doc.basePath, "/a");
		assert.equal(doc.paths["/config/ctl"].post.operationId, "discovery.controlService");
		const put = doc.paths["/config/versioning/{Uuid}"].post;
		assert.deepEqual(put.parameters[0], { name: "Uuid", in: "path", required: true, type: "string" });
		assert.equal(put.parameters[1].schema.properties.NodeDeletedStrategy.type, "string");
		assert.ok(put.parameters[1].schema.properties.NodeDeletedStrategy.enum.length > 0);
		assert.ok(doc.paths["/tree/stat/{Node}"].get);
	});

	it("serves a service's configuration form from the schema it declares", async () => {
		const r = await node.api("GET", "/a/config/discovery/forms/config", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.match(r.text, /<global_param name="logLevel" type="select"[^>]*choices="fatal\|fatal,/);
		assert.equal((await node.api("GET", "/a/config/discovery/forms/nope", undefined, node.admin)).status, 404);
		assert.equal((await node.api("GET", "/a/config/discovery/forms/config", undefined, user)).status, 403);
	});

	it("lists the peers, and the folders of a peer within its allowed roots only", async () => {
		const peers = await node.api("GET", "/a/config/peers", undefined, node.admin);
		assert.equal(peers.status, 200, peers.text);
		assert.deepEqual(peers.body.PeerAddresses, [node.broker.nodeID]);
		assert.equal((await node.api("GET", "/a/config/peers", undefined, user)).status, 403);
		const peer = encodeURIComponent(node.broker.nodeID);
		const roots = await node.api("POST", `/a/config/peers/${peer}`, { Path: "/" }, node.admin);
		assert.equal(roots.status, 200, roots.text);
		assert.ok(roots.body.Children.some((c: { Path: string }) => c.Path.endsWith(node.dataDir.split("/").pop() as string)));
		const pick = await node.api("POST", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick") }, node.admin);
		assert.equal(pick.status, 200, pick.text);
		// The link that leads out of the roots is not listed.
		assert.deepEqual(pick.body.Children.map((c: { Path: string }) => c.Path.split("/").pop()), ["a", "b"]);
		assert.equal(pick.body.Children[0].Type, "COLLECTION");
		assert.equal((await node.api("POST", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick", "escape") }, node.admin)).status, 403);
		assert.equal((await node.api("POST", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "..") }, node.admin)).status, 403);
		assert.equal((await node.api("POST", `/a/config/peers/${peer}`, { Path: "/etc" }, node.admin)).status, 403);
		assert.equal((await node.api("POST", `/a/config/peers/${peer}`, { Path: "relative/path" }, node.admin)).status, 400);
		assert.equal((await node.api("POST", "/a/config/peers/no-such-node", { Path: "/" }, node.admin)).status, 404);
		// A peer may also be named by its host name or address when that names one node.
		assert.equal((await node.api("POST", `/a/config/peers/${encodeURIComponent(hostname())}`, { Path: "/" }, node.admin)).status, 200);

		const made = await node.api("PUT", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick", "c") }, node.admin);
		assert.equal(made.status, 200, made.text);
		assert.equal(made.body.Success, true);
		assert.ok(existsSync(join(node.dataDir, "pick", "c")));
		assert.equal((await node.api("PUT", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick", "c") }, node.admin)).status, 409);
		assert.equal((await node.api("PUT", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick", "escape", "x") }, node.admin)).status, 403);
		assert.equal(existsSync(join(outside, "x")), false);
		assert.equal((await node.api("PUT", `/a/config/peers/${peer}`, { Path: join(node.dataDir, "pick", "d") }, user)).status, 403);
	});

	it("lists registry items by type and name, and processes", async () => {
		const nodes = await node.api("POST", "/a/config/registry", { options: { types: ["NODE"] } }, node.admin);
		assert.equal(nodes.status, 200, nodes.text);
		assert.equal(nodes.body.items.length, 1);
		const meta = nodes.body.items[0].metadata;
		assert.equal(meta.pid, String(process.pid));
		assert.ok(Number(meta.memoryRss) > 0);
		assert.ok(Number(meta.uptime) >= 0);
		assert.match(meta.services, /discovery/);
		assert.ok(nodes.body.items[0].node.hostname);
		const svc = await node.api("POST", "/a/config/registry", { options: { types: ["SERVICE"], names: ["tree"] } }, node.admin);
		assert.deepEqual(svc.body.items.map((i: { name: string }) => i.name), ["tree"]);
		assert.equal(svc.body.items[0].metadata.nodes, node.broker.nodeID);
		const procs = await node.api("POST", "/a/config/processes", { ServiceName: "tree" }, node.admin);
		assert.equal(procs.status, 200, procs.text);
		assert.equal(procs.body.Processes[0].ID, String(process.pid));
		assert.equal(procs.body.Processes[0].PeerId, node.broker.nodeID);
		assert.ok(procs.body.Processes[0].Services.includes("tree"));
		assert.equal((await node.api("POST", "/a/config/processes", { ServiceName: "nope" }, node.admin)).body.Processes, undefined);
		assert.equal((await node.api("POST", "/a/config/registry", {}, user)).status, 403);
	});

	it("stops and starts a service: the registry, the routes and the service list follow", async () => {
		const list = async (filter = "ANY") => (await node.api("GET", `/a/config/ctl?StatusFilter=${filter}`, undefined, node.admin)).body;
		const before = await list();
		const versions = before.Services.find((s: { Name: string }) => s.Name === "versions");
		assert.equal(versions.Status, "STARTED");
		assert.match(versions.Description, /^file versioning/);
		assert.deepEqual(versions.RunningPeers.map((p: { Id: string }) => p.Id), [node.broker.nodeID]);
		assert.equal(before.Total, before.Services.length);

		const stop = await node.api("POST", "/a/config/ctl", { ServiceName: "versions", NodeName: node.broker.nodeID, Command: "STOP" }, node.admin);
		assert.equal(stop.status, 200, stop.text);
		assert.equal(stop.body.Status, "STOPPED");
		assert.equal(node.broker.getLocalService("versions"), undefined);
		assert.ok((await list("STOPPED")).Services.some((s: { Name: string }) => s.Name === "versions"));
		// Its routes are gone: nothing serves them any more.
		let gone = 0;
		for (let i = 0; i < 30 && gone !== 404; i++) {
			gone = (await node.api("GET", "/a/config/versioning/default", undefined, node.admin)).status;
			if (gone !== 404) await new Promise((r) => setTimeout(r, 100));
		}
		assert.equal(gone, 404);
		assert.equal(node.broker.registry.getServiceList({}).some((s) => s.name === "versions"), false);

		const start = await node.api("POST", "/a/config/ctl", { ServiceName: "versions", NodeName: node.broker.nodeID, Command: "START" }, node.admin);
		assert.equal(start.status, 200, start.text);
		assert.equal(start.body.Status, "STARTED");
		let back = 0;
		for (let i = 0; i < 30 && back !== 200; i++) {
			back = (await node.api("GET", "/a/config/versioning", undefined, node.admin)).status;
			if (back !== 200) await new Promise((r) => setTimeout(r, 100));
		}
		assert.equal(back, 200);
	});

	it("refuses to stop what would cut the caller off, with a clear 400", async () => {
		for (const name of ["api", "$node", "discovery", "policy", "auth"]) {
			const r = await node.api("POST", "/a/config/ctl", { ServiceName: name, Command: "STOP" }, node.admin);
			assert.equal(r.status, 400, `${name}: ${r.text}`);
			assert.ok(r.body.Title.length > 10);
		}
		assert.equal((await node.api("POST", "/a/config/ctl", { ServiceName: "nope", Command: "START" }, node.admin)).status, 404);
		assert.equal((await node.api("POST", "/a/config/ctl", { ServiceName: "versions", Command: "STOP" }, user)).status, 403);
		assert.ok(node.broker.getLocalService("api"));
	});
});
