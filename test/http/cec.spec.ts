// What the official Cells CLI (cec v4.0.1) sends, request for request, and what it needs back: its
// `idm list-workspaces`, `ls <file>`, `storage resync-ds <flat datasource>` and `cp 'dir/*' newdir`.
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { useNode } from "../helpers/node";
import { finished } from "../helpers/jobs";

describe("HTTP: what the Cells CLI sends", function () {
	this.timeout(30_000);
	const node = useNode();

	const put = async (path: string, body: string) => {
		const r = await fetch(`${node.url}/io/${path}`, { method: "PUT", headers: { "X-Pydio-Bearer": node.admin }, body });
		assert.equal(r.status, 200, await r.text());
	};
	const stat = (path: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(path)}`, undefined, node.admin);
	const logs = async (jobId: string) => {
		const r = await node.api("POST", "/a/jobs/tasks/logs", { Query: `+OperationUuid:"${jobId}*"` }, node.admin);
		assert.equal(r.status, 200, r.text);
		return (r.body.Logs ?? []).map((l: { Msg: string }) => l.Msg) as string[];
	};

	it("idm list-workspaces: CountOnly with null Queries still lists the workspaces, with their Total", async () => {
		const r = await node.api("POST", "/a/workspace", '{"CountOnly":true,"Queries":null}', node.admin);
		assert.equal(r.status, 200, r.text);
		assert.ok(r.body.Workspaces.length >= 2);
		assert.equal(r.body.Total, r.body.Workspaces.length);
		assert.ok(r.body.Workspaces.some((w: { Slug: string }) => w.Slug === "common-files"));
	});

	it("ls <file>: listing a file's path answers the file itself, once", async () => {
		await put("common-files/cec/f.txt", "hello");
		const r = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["common-files/cec/f.txt", "common-files/cec/f.txt/*"], Limit: 100 }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Nodes.length, 1);
		assert.equal(r.body.Nodes[0].Path, "common-files/cec/f.txt");
		assert.equal(r.body.Nodes[0].Type, "LEAF");
		// The listing alone answers it too; a path that does not exist is still a 404.
		const alone = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["common-files/cec/f.txt/*"] }, node.admin);
		assert.equal(alone.status, 200, alone.text);
		assert.deepEqual(alone.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/cec/f.txt"]);
		assert.equal((await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["common-files/cec/nope.txt/*"] }, node.admin)).status, 404);
	});

	it("storage resync-ds on a flat datasource checks its index against storage and reports it in the task's logs", async () => {
		await put("common-files/check/kept.txt", "kept");
		await put("common-files/check/lost.txt", "lost");
		const lost = (await stat("common-files/check/lost.txt")).body.Node.Uuid as string;
		const root = join(node.dataDir, "pydiods1");
		rmSync(join(root, lost));
		const orphan = randomUUID();
		writeFileSync(join(root, orphan), "nobody points here");
		const { jobId, task } = await finished(node.api, node.admin, "datasource-resync", { dsName: "pydiods1" });
		assert.match(task.StatusMessage, /Checked pydiods1: \d+ files, \d+ objects in storage, 1 missing, 1 unreferenced/);
		const lines = await logs(jobId);
		assert.ok(lines.some((l) => l === "Missing in storage (content lost): check/lost.txt" || l.endsWith("check/lost.txt")), lines.join("\n"));
		assert.ok(lines.some((l) => l.includes(orphan)), lines.join("\n"));
		// Nothing was changed: the file whose content is gone is still listed, the stray object is still there.
		assert.equal((await stat("common-files/check/lost.txt")).status, 200);
		assert.equal((await stat("common-files/check/kept.txt")).status, 200);
	});

	it("cp 'dir/*' newdir: several nodes with targetParent:false go inside newdir, made for them", async () => {
		await put("common-files/src/a.txt", "a");
		await put("common-files/src/b.txt", "b");
		await put("common-files/src/sub/c.txt", "c");
		const listed = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["common-files/src/*"] }, node.admin);
		const nodes = listed.body.Nodes.map((n: { Path: string }) => n.Path).sort();
		assert.deepEqual(nodes, ["common-files/src/a.txt", "common-files/src/b.txt", "common-files/src/sub"]);
		await finished(node.api, node.admin, "copy", { nodes, target: "common-files/newdir", targetParent: false });
		for (const p of ["newdir/a.txt", "newdir/b.txt", "newdir/sub/c.txt", "src/a.txt"]) assert.equal((await stat(`common-files/${p}`)).status, 200, p);
		// mv of several nodes, the same way.
		await finished(node.api, node.admin, "move", { nodes: ["common-files/newdir/a.txt", "common-files/newdir/b.txt"], target: "common-files/moved", targetParent: false });
		for (const p of ["moved/a.txt", "moved/b.txt"]) assert.equal((await stat(`common-files/${p}`)).status, 200, p);
		assert.equal((await stat("common-files/newdir/a.txt")).status, 404);
		// One node with targetParent:false is still a rename to the target's name.
		await finished(node.api, node.admin, "copy", { nodes: ["common-files/src/a.txt"], target: "common-files/renamed.txt", targetParent: false });
		assert.equal((await stat("common-files/renamed.txt")).body.Node.Type, "LEAF");
	});
});
