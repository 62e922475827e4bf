// A gateway node and two nodes that each run every other service (tree, auth, users, acl, workspaces…), over Redis
// on one PostgreSQL store, with the production heartbeat timing (5 s, 15 s). Clients loop listings and stats through
// the gateway, and uploads and new folders, while one of the two nodes is SIGKILLed: every read answers 200, quickly
// (the reads that were on the dead node are tried again on the other one), and each write answers 200 or a clear
// 503; an upload is whole or absent afterwards (never listed without its content).
import assert from "node:assert/strict";
import { clusterCall, clusterLogin, timed, until, useCluster } from "../helpers/cluster";

describe("cluster over Redis: reads retried on the other replica when a node is killed mid-call", function () {
	this.timeout(90_000);
	const gw = `failover-gw-${process.pid}`;
	const replicas = [`failover-t1-${process.pid}`, `failover-t2-${process.pid}`];
	const cluster = useCluster(
		"failover",
		[
			// discovery answers GET /a/config/ctl from the gateway's own registry (its view is the one that matters).
			{ id: gw, services: ["api", "install", "discovery"], gateway: true },
			{ id: replicas[0], services: ["!api", "!install"] },
			{ id: replicas[1], services: ["!api", "!install"] },
		],
		// The production timing: the heartbeat timeout is not what makes the failover fast.
		{ env: { HEARTBEAT_INTERVAL: "5", HEARTBEAT_TIMEOUT: "15", HOST: "127.0.0.1" } },
	);
	let base = "";
	let token = "";
	const api = (method: string, path: string, body?: unknown) => clusterCall(base, token, method, path, body);
	const io = (method: string, key: string, body?: string) => timed(`${base}/io/common-files/${key}`, { method, headers: { "X-Pydio-Bearer": token }, body });
	const treeNodes = async () => {
		const ctl = (await api("GET", "/a/config/ctl")).body.Services as { Name: string; RunningPeers?: { Id: string }[] }[] | undefined;
		return (ctl?.find((s) => s.Name === "tree")?.RunningPeers ?? []).map((p) => p.Id).sort();
	};

	before(async () => {
		base = cluster.bases[0];
		token = await cluster.waitFor("the admin to log in through the gateway", () => clusterLogin(base, "admin", cluster.password), 60_000);
		await cluster.waitFor("tree on both replicas", async () => (await treeNodes()).join() === [...replicas].sort().join(), 30_000);
		// The default datasources get their holder from the first node running api (a moment after the start).
		for (let i = 0; i < 5; i++) await cluster.waitFor(`seed ${i} uploaded`, async () => (await io("PUT", `ha/seed-${i}.txt`, `seed ${i}\n`)).status === 200, 30_000);
	});

	it("answers every read, and each write with a 200 or a 503, while a replica is SIGKILLed", async () => {
		const reads: { what: string; status: number; ms: number; body: unknown }[] = [];
		const writes: { key: string; content: string; status: number; ms: number }[] = [];
		let n = 0;
		let stop = false;
		// A distinct Limit per listing: the gateway's response cache never answers in the replicas' place.
		const reader = async () => {
			while (!stop) {
				const i = n++;
				const r =
					i % 3 === 0
						? await api("POST", "/a/tree/stats", { NodePaths: ["common-files/ha/*"], Limit: 100 + i })
						: i % 3 === 1
							? await api("POST", "/a/tree/stats", { NodePaths: [`common-files/ha/seed-${i % 5}.txt`], Limit: 100 + i })
							: await timed(`${base}/io?list-type=2&prefix=common-files/ha/&max-keys=${100 + (i % 800)}`, { headers: { "X-Pydio-Bearer": token } });
				reads.push({ what: i % 3 === 0 ? "listing" : i % 3 === 1 ? "stat" : "io listing", status: r.status, ms: r.ms, body: r.status === 200 ? undefined : r.body });
			}
		};
		const writer = async () => {
			for (let i = 0; !stop; i++) {
				const key = `ha/during-${i}.txt`;
				const content = `written while a replica dies (${i})\n`.repeat(20);
				const r = await io("PUT", key, content);
				writes.push({ key, content, status: r.status, ms: r.ms });
			}
		};
		const folders: { path: string; status: number; body: unknown }[] = [];
		const mkdirs = async () => {
			for (let i = 0; !stop; i++) {
				const path = `common-files/ha/dir-${i}`;
				const r = await api("POST", "/a/tree/create", { Nodes: [{ Path: path, Type: "COLLECTION" }] });
				folders.push({ path, status: r.status, body: r.body });
			}
		};
		const loops = [reader(), reader(), reader(), reader(), writer(), mkdirs()];
		await new Promise((r) => setTimeout(r, 1500));
		const victim = cluster.procs[1];
		const before = reads.length;
		victim.child.kill("SIGKILL");
		await new Promise((r) => victim.child.once("exit", r));
		const killedAt = Date.now();
		const detected = until("the gateway to route tree to the survivor only", async () => (await treeNodes()).join() === replicas[1] && Date.now() - killedAt, 20_000);
		// At least 4 s, and enough reads after the kill to say they go on (a loaded machine answers fewer a second).
		for (let t = Date.now(); Date.now() - t < 30_000 && (Date.now() - t < 4000 || reads.length - before <= 10); ) await new Promise((r) => setTimeout(r, 200));
		stop = true;
		await Promise.all(loops);
		const detectedMs = await detected;

		const failed = reads.filter((r) => r.status !== 200);
		const slowest = Math.max(...reads.slice(before).map((r) => r.ms));
		const gatewayLog = cluster.procs[0].out.join("");
		const retried = gatewayLog.split("trying again on another one").length - 1;
		console.log(`      ${reads.length} reads (${reads.length - before} after the kill, slowest ${slowest} ms, ${retried} calls retried by the gateway), ${writes.length} uploads and ${folders.length} new folders (${writes.filter((w) => w.status !== 200).length} and ${folders.filter((f) => f.status !== 200).length} answered 503); the gateway's registry dropped the dead node in ${detectedMs} ms`);
		// The gateway saw the node gone from Redis (not from a heartbeat timeout, 15 s here), and the calls that were on
		// it went to the survivor.
		assert.match(gatewayLog, /no longer listens on Redis/);
		assert.ok(retried > 0, "no call was retried");
		assert.ok(detectedMs < 10_000, `the gateway routed to the dead node for ${detectedMs} ms`);
		assert.deepEqual(failed, [], `reads that failed: ${JSON.stringify(failed.slice(0, 5))}`);
		assert.ok(reads.length - before > 10, `only ${reads.length - before} reads after the kill`);
		assert.ok(slowest < 5000, `a read took ${slowest} ms`);
		for (const w of writes) assert.ok(w.status === 200 || w.status === 503, `upload ${w.key}: ${w.status}`);
		for (const f of folders) {
			assert.ok(f.status === 200 || f.status === 503, `folder ${f.path}: ${f.status} ${JSON.stringify(f.body)}`);
			if (f.status === 503) assert.equal((f.body as { Code?: string }).Code, "service.unavailable");
			// A 503 may or may not have created it (its reply can be lost with the node): only a 200 is sure to be there.
			const stat = await api("POST", "/a/tree/stats", { NodePaths: [f.path] });
			const there = ((stat.body as { Nodes?: { Type?: string }[] }).Nodes ?? []).filter((n) => n.Type === "COLLECTION").length === 1;
			if (f.status === 200) assert.ok(there, `${f.path} answered 200 but is not there`);
		}

		// Each upload is whole or absent: one that answered 200 reads back as written; one that answered 503 either
		// never happened or happened whole (its reply was lost with the node), never a listed name without content.
		const listed = await timed(`${base}/io?list-type=2&prefix=common-files/ha/during-`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(listed.status, 200);
		for (const w of writes) {
			const got = await io("GET", w.key);
			const inListing = String(listed.body).includes(`<Key>common-files/${w.key}</Key>`);
			if (w.status === 200) assert.equal(got.status, 200, `${w.key} answered 200 but reads ${got.status}`);
			else assert.ok(got.status === 200 || got.status === 404, `${w.key} (503) reads ${got.status}`);
			if (got.status === 200) assert.equal(got.body, w.content, `${w.key} is not whole`);
			assert.equal(inListing, got.status === 200, `${w.key} listed: ${inListing}, reads ${got.status}`);
		}
		// And the cluster goes on: a write now lands on the survivor.
		assert.equal((await io("PUT", "ha/after.txt", "after")).status, 200);
		assert.equal((await api("POST", "/a/tree/stats", { NodePaths: ["common-files/ha/after.txt"] })).status, 200);
	});
});
