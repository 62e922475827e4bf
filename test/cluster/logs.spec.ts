// The cluster's log over Redis on a shared PostgreSQL store, nodes in separate processes as the README starts
// them: node A (the gateway and every service) and node B (every service but the gateway). Lines node B logs
// are shipped over the transporter to a log service and read through node A's gateway, filtered by node; a
// failed login through A is in the audit trail whichever log service instance stored it.
import assert from "node:assert/strict";
import { clusterCall, clusterLogin, timed, until, useCluster } from "../helpers/cluster";

describe("cluster log: lines from every node, read through any gateway", function () {
	this.timeout(180_000);
	const nodeB = `logs-b-${process.pid}`;
	const cluster = useCluster("logs", [{ id: `logs-a-${process.pid}`, services: [], gateway: true }, { id: nodeB, services: ["!api", "!install"] }], { env: { LOG_SHIP_LEVEL: "info", REQUEST_TIMEOUT: "10000" } });
	let token = "";
	const post = (path: string, body: unknown) => clusterCall(cluster.bases[0], token, "POST", path, body);

	before(async () => {
		token = await cluster.waitFor("the admin to log in through node A", () => clusterLogin(cluster.bases[0], "admin", cluster.password), 90_000);
	});

	it("reads node B's lines through node A's gateway, by node", async () => {
		// Node B's broker says when its services have started (info): shipped to a log service over Redis.
		const lines = await until(
			"node B's lines",
			async () => {
				const r = await post("/a/log/sys", { Query: `+Node:${nodeB}`, Size: 50 });
				assert.equal(r.status, 200, JSON.stringify(r.body));
				return r.body.Logs?.length ? r.body.Logs : undefined;
			},
			60_000,
		);
		assert.ok(lines.every((l: { JsonZaps: string }) => JSON.parse(l.JsonZaps).Node === nodeB));
		assert.ok(lines.some((l: { Logger: string; Msg: string }) => l.Logger === "broker" && /started/i.test(l.Msg)), JSON.stringify(lines.slice(0, 5)));
		// Node A's own lines are there too, told apart by node.
		// (shipped in their own batches: they may land a moment after B's).
		const aLines = await until(
			"node A's lines",
			async () => {
				const r = await post("/a/log/sys", { Query: `-Node:${nodeB}`, Size: 5 });
				return r.body.Logs?.length ? r.body.Logs : undefined;
			},
			30_000,
		);
		assert.ok(aLines.every((l: { JsonZaps: string }) => JSON.parse(l.JsonZaps).Node !== nodeB));
	});

	it("keeps a failed login through node A in the audit trail, once", async () => {
		const login = `nobody-${Date.now()}`;
		const r = await timed(`${cluster.bases[0]}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login, password: "Wrong-Pass-1234" } }) });
		assert.equal(r.status, 401);
		const logs = await until(
			"the audit entry",
			async () => {
				const a = await post("/a/log/audit", { Query: `+MsgId:login.failed +UserName:${login}` });
				return a.body.Logs?.length ? a.body.Logs : undefined;
			},
			20_000,
		);
		await new Promise((res) => setTimeout(res, 1000));
		const again = await post("/a/log/audit", { Query: `+MsgId:login.failed +UserName:${login}` });
		assert.equal(again.body.Logs.length, 1, "stored by one of the two log service instances");
		assert.match(logs[0].RemoteAddress, /127\.0\.0\.1/);
	});
});
