// "Upgrade DataSource Format": a structured datasource becomes flat without losing a byte, while it stays in
// use, and a second run (as after a crash) finishes what is left and changes nothing else.
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { S3Client, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";

describe("HTTP: structured to flat conversion", function () {
	this.timeout(60_000);
	const node = useNode();
	let io: S3Client;
	const files: Record<string, string> = { "a.txt": "alpha", "dir/b.txt": "bravo", "dir/sub/c.txt": "charlie" };

	before(async () => {
		assert.equal((await node.api("POST", "/a/config/datasource/conv", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "conv" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-conv", { Label: "Conv", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:conv": { Uuid: "DATASOURCE:conv", Path: "conv" } } }, node.admin)).status, 200);
		io = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: node.admin, secretAccessKey: "gatewaysecret" } });
		for (const [k, v] of Object.entries(files)) await io.send(new PutObjectCommand({ Bucket: "io", Key: `ws-conv/${k}`, Body: v }));
	});

	it("moves every file to its uuid key, keeps content and uuids, and can run again", async () => {
		const dir = join(node.dataDir, "conv");
		assert.equal(readFileSync(join(dir, "dir", "sub", "c.txt"), "utf8"), "charlie");
		const uuids: Record<string, string> = {};
		for (const k of Object.keys(files)) uuids[k] = (await node.api("GET", `/a/tree/stat/${encodeURIComponent(`ws-conv/${k}`)}`, undefined, node.admin)).body.Node.Uuid;
		const user = await node.broker.call("auth.resolve", { token: node.admin });
		const report = await node.broker.call<{ converted: number; failed: unknown[] }, { ds: string }>("tree.convertToFlat", { ds: "conv" }, { meta: { user } });
		assert.equal(report.converted, 3);
		assert.deepEqual(report.failed, []);
		for (const [k, v] of Object.entries(files)) {
			assert.equal(readFileSync(join(dir, uuids[k]), "utf8"), v);
			assert.ok(!existsSync(join(dir, k)), `${k} left its structured place`);
			const got = await io.send(new GetObjectCommand({ Bucket: "io", Key: `ws-conv/${k}` }));
			assert.equal(await got.Body!.transformToString(), v);
			assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent(`ws-conv/${k}`)}`, undefined, node.admin)).body.Node.Uuid, uuids[k]);
		}
		const ds = await node.api("GET", "/a/config/datasource/conv", undefined, node.admin);
		assert.equal(ds.body.FlatStorage, true);
		// New writes are flat; a second run finds nothing left to do.
		await io.send(new PutObjectCommand({ Bucket: "io", Key: "ws-conv/dir/new.txt", Body: "new" }));
		const again = await node.broker.call<{ converted: number; alreadyFlat: number }, { ds: string }>("tree.convertToFlat", { ds: "conv" }, { meta: { user } });
		assert.equal(again.converted, 0);
		assert.equal(again.alreadyFlat, 4);
		assert.ok(readdirSync(dir).filter((f) => /^[0-9a-f-]{36}$/.test(f)).length >= 4);
	});

	it("resumes a conversion cut between a file's move and the index update", async () => {
		assert.equal((await node.api("POST", "/a/config/datasource/conv2", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "conv2" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-conv2", { Label: "Conv2", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:conv2": { Uuid: "DATASOURCE:conv2", Path: "conv2" } } }, node.admin)).status, 200);
		await io.send(new PutObjectCommand({ Bucket: "io", Key: "ws-conv2/d/cut.txt", Body: "cut short" }));
		const uuid = (await node.api("GET", `/a/tree/stat/${encodeURIComponent("ws-conv2/d/cut.txt")}`, undefined, node.admin)).body.Node.Uuid as string;
		// The state a crash leaves: the file already at its uuid key, the index still pointing at its path.
		const dir = join(node.dataDir, "conv2");
		renameSync(join(dir, "d", "cut.txt"), join(dir, uuid));
		const user = await node.broker.call("auth.resolve", { token: node.admin });
		const report = await node.broker.call<{ converted: number; failed: unknown[] }, { ds: string }>("tree.convertToFlat", { ds: "conv2" }, { meta: { user } });
		assert.deepEqual(report.failed, []);
		assert.equal(report.converted, 1);
		const got = await io.send(new GetObjectCommand({ Bucket: "io", Key: "ws-conv2/d/cut.txt" }));
		assert.equal(await got.Body!.transformToString(), "cut short");
	});
});
