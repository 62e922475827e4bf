// A large file uploaded in parts with the AWS SDK onto the default flat LOCAL datasource is kept as a composite
// object (its parts under one manifest, never assembled): everything a user does with it through the real
// gateway must behave as with any file.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { S3Client, GetObjectCommand, PutObjectCommand, CopyObjectCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { bufferSource, openEntry, openZip } from "../../lib/jobs/zip";
import { useNode } from "../helpers/node";
import { finished } from "../helpers/jobs";

const MB = 1024 * 1024;
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

/** Composite objects (folders holding a manifest) under a datasource folder. */
function composites(root: string): string[] {
	if (!existsSync(root)) return [];
	return readdirSync(root).filter((n) => !n.startsWith(".") && statSync(join(root, n)).isDirectory() && existsSync(join(root, n, ".composite.json")));
}

describe("HTTP: multipart uploads kept as composite objects", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;
	const big = randomBytes(12 * MB);
	const key = "common-files/composite/big.bin";
	const bytes = async (k: string, extra: { Range?: string; VersionId?: string } = {}) =>
		Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: "io", Key: k, ...extra }))).Body!.transformToByteArray());

	before(async () => {
		token = await node.login("admin", node.adminPassword);
		s3 = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
	});

	it("stores the parts as one object that reads whole and by ranges across parts", async () => {
		const ds = join(node.dataDir, "pydiods1");
		const before = composites(ds).length;
		await new Upload({ client: s3, params: { Bucket: "io", Key: key, Body: Readable.from([big]) }, partSize: 5 * MB, queueSize: 3 }).done();
		assert.equal(composites(ds).length, before + 1, "the upload is a composite object on disk");
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent(key)}`, undefined, token);
		assert.equal(stat.status, 200);
		assert.equal(stat.body.Node.Size, String(big.length));
		assert.ok(md5(await bytes(key)) === md5(big));
		// Across the first boundary, across two, and the tail.
		assert.deepEqual(await bytes(key, { Range: `bytes=${5 * MB - 10}-${5 * MB + 9}` }), big.subarray(5 * MB - 10, 5 * MB + 10));
		assert.deepEqual(await bytes(key, { Range: `bytes=${5 * MB - 1}-${10 * MB}` }), big.subarray(5 * MB - 1, 10 * MB + 1));
		assert.deepEqual(await bytes(key, { Range: "bytes=-7" }), big.subarray(big.length - 7));
	});

	it("copies, moves and zips like any file", async () => {
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "common-files/composite/copy.bin", CopySource: `io/${key}` }));
		assert.equal(md5(await bytes("common-files/composite/copy.bin")), md5(big));
		await finished(node.api, token, "move", { nodes: ["common-files/composite/copy.bin"], target: "common-files/composite/moved.bin", targetParent: false });
		assert.equal(md5(await bytes("common-files/composite/moved.bin")), md5(big));
		await finished(node.api, token, "compress", { nodes: ["common-files/composite/moved.bin"], archiveName: "common-files/composite/moved.zip", format: "zip" });
		const src = bufferSource(await bytes("common-files/composite/moved.zip"));
		const entries = [];
		for await (const e of (await openZip(src)).entries()) entries.push(e);
		assert.deepEqual(entries.map((e) => e.name), ["moved.bin"]);
		const chunks: Buffer[] = [];
		for await (const c of await openEntry(src, entries[0])) chunks.push(c as Buffer);
		assert.equal(md5(Buffer.concat(chunks)), md5(big));
	});

	it("keeps the composite as a version when overwritten, and restores it", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: "small now" }));
		assert.equal((await bytes(key)).toString(), "small now");
		const r = await node.api("POST", "/a/tree/stats", { NodePaths: [key], Versions: true }, token);
		assert.equal(r.status, 200, r.text);
		const old = (r.body.Nodes as { Size: string; Commits: { Uuid: string }[] }[]).find((v) => v.Size === String(big.length));
		assert.ok(old, "the multipart content is listed as a version");
		assert.equal(md5(await bytes(key, { VersionId: old.Commits[0].Uuid })), md5(big));
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: key, CopySource: `io/${key}?versionId=${old.Commits[0].Uuid}` }));
		assert.equal(md5(await bytes(key)), md5(big));
	});

	it("deleting for good removes the parts from the disk", async () => {
		const ds = join(node.dataDir, "pydiods1");
		const before = composites(ds).length;
		assert.ok(before >= 1);
		const gone = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/composite/moved.bin" }], RemovePermanently: true }, token);
		assert.equal(gone.status, 200, gone.text);
		for (let i = 0; i < 100 && composites(ds).length === before; i++) await new Promise((r) => setTimeout(r, 50));
		assert.equal(composites(ds).length, before - 1);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/composite/moved.bin")}`, undefined, token)).status, 404);
	});
});
