// Operating a two-node cluster (Redis transporter, shared PostgreSQL store) through one gateway: both nodes are
// peers with their own processes, a peer's folders are listed by that peer, a log level set through the gateway is
// applied on both nodes, and a service stopped on node B leaves discovery there while the gateway routes to A.
import assert from "node:assert/strict";
import { join } from "node:path";
import { clusterCall, clusterLogin, until, useCluster } from "../helpers/cluster";

describe("cluster operations: peers, configuration and service control over Redis", function () {
	this.timeout(180_000);
	const A = `ops-a-${process.pid}`;
	const B = `ops-b-${process.pid}`;
	const cluster = useCluster("ops", [{ id: A, services: [], gateway: true }, { id: B, services: ["!api", "!install"] }], { env: { REQUEST_TIMEOUT: "10000" } });
	const { procs } = cluster;
	let token = "";
	const api = (method: string, path: string, body?: unknown) => clusterCall(cluster.bases[0], token, method, `/a${path}`, body);
	const ctl = async () => (await api("GET", "/config/ctl")).body.Services as { Name: string; Status: string; RunningPeers?: { Id: string }[] }[];
	const peersOf = async (name: string) => ((await ctl()).find((s) => s.Name === name)?.RunningPeers ?? []).map((p) => p.Id).sort();

	before(async () => {
		await cluster.waitFor(
			"the admin to log in, with discovery and versions on both nodes",
			async () => {
				token = await clusterLogin(cluster.bases[0], "admin", cluster.password);
				if (!token) return false;
				return (await peersOf("discovery")).length === 2 && (await peersOf("versions")).length === 2;
			},
			120_000,
		);
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
		const folders = await api("POST", `/config/peers/${B}`, { Path: cluster.dir });
		assert.equal(folders.status, 200, JSON.stringify(folders.body));
		const made = await api("PUT", `/config/peers/${B}`, { Path: join(cluster.dir, "made-on-b") });
		assert.equal(made.status, 200, JSON.stringify(made.body));
		assert.ok((await api("POST", `/config/peers/${A}`, { Path: cluster.dir })).body.Children.some((c: { Path: string }) => c.Path.endsWith("made-on-b")));
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
