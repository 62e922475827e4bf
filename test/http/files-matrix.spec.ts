// The same file scenario, as a user would run it, on every kind of datasource: LOCAL and S3 (s3rver), flat and
// structured, clear and encrypted. Bytes go through /io with the AWS SDK; listing, moves, copies, recycle bin,
// zip jobs, search and versions through the REST API.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { S3Client, PutObjectCommand, GetObjectCommand, ListObjectsV2Command, CopyObjectCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { Readable } from "node:stream";
import { bufferSource, openZip } from "../../lib/jobs/zip";
import { useNode } from "../helpers/node";
import { finished } from "../helpers/jobs";
import { startS3rver, type TestS3 } from "../helpers/s3rver";

const md5 = (b: Buffer | string) => createHash("md5").update(b).digest("hex");

describe("HTTP: files on LOCAL and S3 datasources, flat and structured", function () {
	this.timeout(60_000);
	const node = useNode();
	let s3server: TestS3;
	let io: S3Client;

	const kinds = [
		{ name: "localflat", body: { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "localflat" } } },
		{ name: "localstruct", body: { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "localstruct" } } },
		{ name: "s3flat", s3: true, body: { StorageType: "S3", FlatStorage: true, ObjectsBucket: "s3flat" } },
		{ name: "s3struct", s3: true, body: { StorageType: "S3", FlatStorage: false, ObjectsBucket: "s3struct" } },
		{ name: "localenc", body: { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "localenc" }, EncryptionMode: "MASTER", EncryptionKey: "matrix-key" } },
		{ name: "s3enc", s3: true, body: { StorageType: "S3", FlatStorage: false, ObjectsBucket: "s3enc", EncryptionMode: "MASTER", EncryptionKey: "matrix-key" } },
	];

	before(async () => {
		s3server = await startS3rver();
		assert.equal((await node.api("POST", "/a/config/encryption/create", { KeyID: "matrix-key", Label: "Matrix" }, node.admin)).status, 200);
		for (const k of kinds) {
			const body: Record<string, unknown> = { ...k.body, VersioningPolicyName: "default-policy" };
			if (k.s3) {
				await s3server.createBucket(k.body.ObjectsBucket as string);
				Object.assign(body, { ApiKey: s3server.accessKeyId, ApiSecret: s3server.secretAccessKey, StorageConfiguration: { customEndpoint: s3server.endpoint } });
			}
			const ds = await node.api("POST", `/a/config/datasource/${k.name}`, body, node.admin);
			assert.equal(ds.status, 200, `${k.name}: ${ds.text}`);
			const ws = await node.api("PUT", `/a/workspace/ws-${k.name}`, { Label: `WS ${k.name}`, Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { [`DATASOURCE:${k.name}`]: { Uuid: `DATASOURCE:${k.name}`, Path: k.name } } }, node.admin);
			assert.equal(ws.status, 200, `${k.name}: ${ws.text}`);
		}
		io = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: node.admin, secretAccessKey: "gatewaysecret" } });
	});
	after(() => s3server?.stop());

	for (const k of kinds) {
		describe(k.name, () => {
			const ws = `ws-${k.name}`;
			const stat = (p: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(p)}`, undefined, node.admin);

			it("uploads a folder tree with the S3 SDK and lists it", async () => {
				for (const [p, c] of [["docs/a.txt", "alpha"], ["docs/sub/b.txt", "bravo"], ["docs/sub/deep/c.txt", "charlie"]]) {
					await io.send(new PutObjectCommand({ Bucket: "io", Key: `${ws}/${p}`, Body: c }));
				}
				const list = await node.api("POST", "/a/meta/bulk/get", { NodePaths: [`${ws}/docs`, `${ws}/docs/*`] }, node.admin);
				assert.equal(list.status, 200, list.text);
				assert.deepEqual(list.body.Nodes.map((n: { Path: string }) => n.Path), [`${ws}/docs`, `${ws}/docs/a.txt`, `${ws}/docs/sub`]);
				assert.equal(list.body.Nodes[0].Size, String("alpha".length + "bravo".length + "charlie".length));
				const s3list = await io.send(new ListObjectsV2Command({ Bucket: "io", Prefix: `${ws}/docs/` }));
				assert.equal(s3list.KeyCount, 3);
			});

			it("downloads with Range", async () => {
				const r = await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/docs/sub/deep/c.txt`, Range: "bytes=2-4" }));
				assert.equal(await r.Body!.transformToString(), "arl");
			});

			it("uploads a large file in parts with the SDK; it reads back whole and across the parts", async () => {
				const big = Buffer.alloc(11 * 1024 * 1024);
				for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
				await new Upload({ client: io, params: { Bucket: "io", Key: `${ws}/big/parts.bin`, Body: Readable.from([big]) }, partSize: 5 * 1024 * 1024, queueSize: 2 }).done();
				assert.equal((await stat(`${ws}/big/parts.bin`)).body.Node.Size, String(big.length));
				const whole = Buffer.from(await (await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/big/parts.bin` }))).Body!.transformToByteArray());
				assert.ok(whole.equals(big), "the same bytes");
				const from = 5 * 1024 * 1024 - 6;
				const across = Buffer.from(await (await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/big/parts.bin`, Range: `bytes=${from}-${from + 11}` }))).Body!.transformToByteArray());
				assert.ok(across.equals(big.subarray(from, from + 12)));
			});

			it("moves a folder (index-only on flat: the bytes stay where they are) and copies it", async () => {
				const before = await stat(`${ws}/docs/sub/b.txt`);
				const user = await node.broker.call("auth.resolve", { token: node.admin });
				await node.broker.call("tree.move", { From: `${ws}/docs/sub`, To: `${ws}/moved` }, { meta: { user } });
				assert.equal((await stat(`${ws}/docs/sub/b.txt`)).status, 404);
				const after = await stat(`${ws}/moved/b.txt`);
				assert.equal(after.status, 200);
				assert.equal(after.body.Node.Uuid, before.body.Node.Uuid);
				if (k.name === "localflat") assert.ok(existsSync(join(node.dataDir, "localflat", before.body.Node.Uuid)), "flat object keeps its uuid key");
				if (k.name === "localenc") assert.ok(!readFileSync(join(node.dataDir, "localenc", before.body.Node.Uuid)).includes("bravo"), "content is encrypted at rest");
				if (k.name === "localstruct") {
					assert.equal(readFileSync(join(node.dataDir, "localstruct", "moved", "b.txt"), "utf8"), "bravo");
					assert.ok(!existsSync(join(node.dataDir, "localstruct", "docs", "sub")));
				}
				await node.broker.call("tree.copy", { From: `${ws}/moved`, To: `${ws}/copied` }, { meta: { user } });
				const copied = await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/copied/deep/c.txt` }));
				assert.equal(await copied.Body!.transformToString(), "charlie");
				assert.notEqual((await stat(`${ws}/copied/b.txt`)).body.Node.Uuid, after.body.Node.Uuid);
			});

			it("deletes to the recycle bin and restores", async () => {
				assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: `${ws}/copied` }] }, node.admin)).status, 200);
				assert.equal((await stat(`${ws}/copied`)).status, 404);
				assert.equal((await stat(`${ws}/recycle_bin/copied/b.txt`)).status, 200);
				assert.equal((await node.api("POST", "/a/tree/restore", { Nodes: [{ Path: `${ws}/recycle_bin/copied` }] }, node.admin)).status, 200);
				const back = await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/copied/b.txt` }));
				assert.equal(await back.Body!.transformToString(), "bravo");
			});

			it("zips a folder with a job and the archive downloads whole", async () => {
				await finished(node.api, node.admin, "compress", { nodes: [`${ws}/moved`], archiveName: `${ws}/moved.zip`, format: "zip" });
				const zip = Buffer.from(await (await io.send(new GetObjectCommand({ Bucket: "io", Key: `${ws}/moved.zip` }))).Body!.transformToByteArray());
				const names: string[] = [];
				const src = bufferSource(zip);
				for await (const e of (await openZip(src)).entries()) if (!e.dir) names.push(e.name);
				assert.deepEqual(names.sort(), ["moved/b.txt", "moved/deep/c.txt"]);
			});

			it("finds files with search, in user paths", async () => {
				let found: string[] = [];
				for (let i = 0; i < 100 && !found.length; i++) {
					const r = await node.api("POST", "/a/search/nodes", { Query: { FileName: "c.txt", PathPrefix: [ws] } }, node.admin);
					found = (r.body.Results ?? []).map((n: { Path: string }) => n.Path).sort();
					if (!found.length) await new Promise((res) => setTimeout(res, 50));
				}
				assert.deepEqual(found, [`${ws}/copied/deep/c.txt`, `${ws}/moved/deep/c.txt`]);
			});

			it("overwrites a file: one complete version, the new one", async () => {
				const key = `${ws}/docs/a.txt`;
				await Promise.all(["one".repeat(1000), "two".repeat(2000), "three".repeat(500)].map((b) => io.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: b }))));
				const r = await io.send(new GetObjectCommand({ Bucket: "io", Key: key }));
				const text = await r.Body!.transformToString();
				assert.ok(["one".repeat(1000), "two".repeat(2000), "three".repeat(500)].includes(text), "content is one of the uploads, whole");
				const s = await stat(key);
				assert.equal(s.body.Node.Etag, md5(text));
				assert.equal(s.body.Node.Size, String(text.length));
			});

			it("lists the previous contents as versions and restores one", async () => {
				const key = `${ws}/docs/versioned.txt`;
				for (const b of ["v1", "v2", "v3"]) await io.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: b }));
				const list = await node.api("POST", "/a/tree/stats", { NodePaths: [key], Versions: true }, node.admin);
				assert.equal(list.status, 200, list.text);
				const ids = (list.body.Nodes ?? []).map((n: { MetaStore: Record<string, string> }) => JSON.parse(n.MetaStore.versionId) as string);
				assert.equal(ids.length, 2);
				const oldest = ids[ids.length - 1];
				assert.equal(await (await io.send(new GetObjectCommand({ Bucket: "io", Key: key, VersionId: oldest }))).Body!.transformToString(), "v1");
				await io.send(new CopyObjectCommand({ Bucket: "io", Key: key, CopySource: `io/${key}?versionId=${oldest}` }));
				assert.equal(await (await io.send(new GetObjectCommand({ Bucket: "io", Key: key }))).Body!.transformToString(), "v1");
			});
		});
	}
});
