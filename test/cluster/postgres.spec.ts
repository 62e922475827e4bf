// A cluster sharing one PostgreSQL store (DATABASE_URL) over Redis: a gateway node, and two nodes each running
// the users and tree services (and the rest), with one data folder for the LOCAL datasources' bytes (a shared
// volume). Concurrent creates of one login, balanced over the two users replicas, make one user; concurrent
// uploads of one path, balanced over the two tree replicas, leave one node holding one upload whole. Both
// replicas see the same tree.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { clusterLogin, timed, useCluster } from "../helpers/cluster";

describe("cluster over Redis on a shared PostgreSQL store", function () {
	this.timeout(180_000);
	const cluster = useCluster(
		"pg",
		[
			{ id: "gw", services: ["api"], gateway: true },
			{ id: "n1", services: ["!api"] },
			{ id: "n2", services: ["!api", "!install"] },
		],
		{ env: { REQUEST_TIMEOUT: "10000" }, observer: true },
	);
	let base = "";
	let token = "";
	const headers = () => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });

	before(async () => {
		[base] = cluster.bases;
		await cluster.waitFor(
			"the admin to log in through the gateway, with both replicas of users and tree registered",
			async () => {
				token = await clusterLogin(base, "admin", cluster.password);
				if (!token) return false;
				const list = cluster.observer!.registry.getServiceList({ onlyAvailable: true });
				const on = (name: string) => new Set(list.filter((s) => s.name === name).map((s) => s.nodeID));
				return on("users").size === 2 && on("tree").size === 2 && (await timed(`${base}/a/tree/stat/common-files`, { headers: headers() })).status === 200;
			},
			90_000,
		);
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
