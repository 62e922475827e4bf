// The install's default datasources in a cluster whose nodes each have their own DATA_DIR (over Redis, on one
// PostgreSQL store): they get one holder, a node running api, so a file uploaded through one gateway is read
// through the other with the same bytes, and lies on the holder's disk only.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { clusterCall, clusterLogin, useCluster } from "../helpers/cluster";
import { DEFAULT_DATASOURCES } from "../../lib/datasources/model";

/** The sizes of every file under `dir` (none when it does not exist). */
function fileSizes(dir: string): number[] {
	if (!existsSync(dir)) return [];
	return readdirSync(dir, { recursive: true, encoding: "utf8" })
		.map((f) => statSync(join(dir, f)))
		.filter((s) => s.isFile())
		.map((s) => s.size);
}

describe("cluster over Redis: the default datasources have one holder", function () {
	this.timeout(120_000);
	const A = `holders-a-${process.pid}`;
	const B = `holders-b-${process.pid}`;
	const cluster = useCluster(
		"holders",
		[
			{ id: A, services: ["all"], gateway: true },
			{ id: B, services: ["api", "discovery"], gateway: true },
		],
		{ ownDataDirs: true, env: { HOST: "127.0.0.1", REQUEST_TIMEOUT: "10000" } },
	);
	const dirOf = (node: string) => join(cluster.dir, node);
	let token = "";
	let holders: Record<string, string | undefined> = {};

	before(async () => {
		await cluster.waitFor(
			"the admin to log in through both gateways, and every default datasource to have a holder",
			async () => {
				token = await clusterLogin(cluster.bases[0], "admin", cluster.password);
				if (!token || !(await clusterLogin(cluster.bases[1], "admin", cluster.password))) return false;
				const r = await clusterCall(cluster.bases[1], token, "GET", "/a/config/datasource");
				if (r.status !== 200) return false;
				holders = Object.fromEntries((r.body.DataSources as { Name: string; PeerAddress?: string }[]).map((d) => [d.Name, d.PeerAddress]));
				return DEFAULT_DATASOURCES.every((d) => holders[d.name]);
			},
			90_000,
		);
	});

	it("holds each default on a node running api, and serves an upload through A to B (and back) with the same bytes", async () => {
		for (const d of DEFAULT_DATASOURCES) assert.ok([A, B].includes(holders[d.name] ?? ""), `${d.name}: ${holders[d.name]}`);

		for (const [ws, ds, from, to] of [
			["common-files", "pydiods1", 0, 1],
			["personal-files", "personal", 1, 0],
		] as const) {
			const bytes = randomBytes(300_000 + from);
			const key = `${ws}/held/${ds}.bin`;
			const put = await cluster.waitFor(
				`the upload to ${ws} through gateway ${from}`,
				async () => {
					const r = await fetch(`${cluster.bases[from]}/io/${key}`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: bytes });
					assert.ok(r.status === 200 || r.status === 503, `${r.status} ${await r.text()}`);
					return r.status === 200 && r;
				},
				30_000,
			);
			assert.equal(put.status, 200);
			const got = await fetch(`${cluster.bases[to]}/io/${key}`, { headers: { "X-Pydio-Bearer": token } });
			assert.equal(got.status, 200);
			assert.ok(Buffer.from(await got.arrayBuffer()).equals(bytes), `${key}: other bytes through gateway ${to}`);

			// On the holder's disk, and on no other node's.
			const holder = holders[ds] ?? "";
			const other = holder === A ? B : A;
			assert.ok(fileSizes(join(dirOf(holder), ds)).includes(bytes.length), `${key} is not in ${holder}'s DATA_DIR`);
			assert.ok(!fileSizes(join(dirOf(other), ds)).includes(bytes.length), `${key} is in ${other}'s DATA_DIR too`);
		}
	});
});
