// Shares in a cluster: a node running every service and a second gateway node (api and tree, with their own
// caches of identities, responses and resolved workspaces). bob reads a cell through the second gateway, alice
// takes him out of it through the first: the second gateway refuses him as soon as the change's events arrive
// over Redis, without waiting for any cache to expire.
import assert from "node:assert/strict";
import { clusterCall as call, clusterLogin, until, useCluster } from "../helpers/cluster";

describe("cluster over Redis: removing a cell member cuts access on every gateway", function () {
	this.timeout(120_000);
	const cluster = useCluster("shares", [
		{ id: "main", services: ["all"], gateway: true },
		{ id: "gw2", services: ["api", "tree"], gateway: true },
	]);
	const password = cluster.password;
	let a = "";
	let b = "";
	const login = async (base: string, user: string, pw: string) => {
		const token = await clusterLogin(base, user, pw);
		assert.ok(token, `${user} logs in through ${base}`);
		return token;
	};

	before(async () => {
		[a, b] = cluster.bases;
		await cluster.waitFor(
			"both gateways to serve the share and tree routes",
			async () => {
				for (const base of [a, b]) {
					const token = await clusterLogin(base, "admin", password);
					if (!token) return false;
					const s = await call(base, token, "POST", "/a/share/resources", {});
					if (s.status !== 200) return false;
				}
				return true;
			},
			60_000,
		);
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
