// Structured datasources are resynchronised when a node starts, as in Cells: files other tools dropped into the
// storage while the server was down appear, files they removed disappear; SkipSyncOnRestart opts out.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";

describe("HTTP: resync of structured datasources at start", function () {
	this.timeout(60_000);
	const dataDir = mkdtempSync(join(tmpdir(), "cellar-resync-restart-"));
	let node: TestNode | undefined;

	after(async () => {
		await node?.stop();
		rmSync(dataDir, { recursive: true, force: true });
	});

	const names = async (n: TestNode, token: string, folder: string) => {
		const r = await n.api("POST", "/a/tree/stats", { NodePaths: [`${folder}/*`] }, token);
		assert.equal(r.status, 200, r.text);
		return ((r.body.Nodes ?? []) as { Path: string }[]).map((x) => x.Path.split("/").pop()).sort();
	};

	it("shows what changed in the storage while the node was down", async () => {
		node = await startNode({ env: { DATA_DIR: dataDir } });
		let admin = await node.login("admin", node.adminPassword);
		for (const [name, skip] of [["rs1", false], ["rs2", true]] as const) {
			assert.equal((await node.api("POST", `/a/config/datasource/${name}`, { StorageType: "LOCAL", FlatStorage: false, SkipSyncOnRestart: skip, StorageConfiguration: { folder: name } }, admin)).status, 200);
			assert.equal((await node.api("PUT", `/a/workspace/ws-${name}`, { Label: name, Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { [`DATASOURCE:${name}`]: { Uuid: `DATASOURCE:${name}`, Path: name } } }, admin)).status, 200);
			const put: Response = await fetch(`${node.url}/io/ws-${name}/docs/old.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": admin }, body: "old" });
			assert.equal(put.status, 200);
		}
		await node.stop();
		node = undefined;
		// Another tool works on the folders meanwhile.
		for (const name of ["rs1", "rs2"]) {
			mkdirSync(join(dataDir, name, "docs"), { recursive: true });
			writeFileSync(join(dataDir, name, "docs", "dropped.txt"), "from another tool");
			unlinkSync(join(dataDir, name, "docs", "old.txt"));
		}
		node = await startNode({ env: { DATA_DIR: dataDir } });
		admin = await node.login("admin", node.adminPassword);
		let seen: (string | undefined)[] = [];
		for (let i = 0; i < 200; i++) {
			seen = await names(node, admin, "ws-rs1/docs");
			if (seen.includes("dropped.txt") && !seen.includes("old.txt")) break;
			await new Promise((r) => setTimeout(r, 50));
		}
		assert.deepEqual(seen, ["dropped.txt"]);
		const got = await fetch(`${node.url}/io/ws-rs1/docs/dropped.txt`, { headers: { "X-Pydio-Bearer": admin } });
		assert.equal(await got.text(), "from another tool");
		// The job ran as the system user, visible to administrators.
		const jobs = await node.api("POST", "/a/jobs/user", { Owner: "*" }, admin);
		assert.ok((jobs.body.Jobs as { Label: string; Owner: string }[]).some((j) => j.Label.includes("rs1") && j.Owner === "pydio.system.user"), jobs.text);
		// An administrator asking for that job by id gets it, whoever owns it (a resync they start of the same
		// datasource while the server's runs answers with that job).
		const byId = await node.api("POST", "/a/jobs/user", { JobIDs: ["resync-ds-rs1"] }, admin);
		assert.equal((byId.body.Jobs as { Owner: string }[] | undefined)?.[0]?.Owner, "pydio.system.user", byId.text);
		// The datasource that opted out was left as the index knew it.
		assert.deepEqual(await names(node, admin, "ws-rs2/docs"), ["old.txt"]);
	});
});
