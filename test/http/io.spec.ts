// The /io S3 gateway driven by the real AWS SDK, as Cells clients use it: endpoint = the server, bucket "io",
// key = <workspace-slug>/<path>, access key = the user's token, secret "gatewaysecret".
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import {
	S3Client,
	PutObjectCommand,
	GetObjectCommand,
	HeadObjectCommand,
	ListObjectsV2Command,
	CopyObjectCommand,
	DeleteObjectCommand,
	CreateMultipartUploadCommand,
	UploadPartCommand,
	CompleteMultipartUploadCommand,
	ListPartsCommand,
	ListBucketsCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { s3Client } from "../helpers/s3";

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

describe("HTTP: the /io S3 gateway", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;

	before(async () => {
		token = await addUser(node, node.admin, "ivy", "Ivy-Pass-12345");
		s3 = s3Client(node, token);
	});

	it("puts an object that a stat finds at once, and gets it back whole and by range", async () => {
		const body = Buffer.from("hello, cellar\n".repeat(1000));
		const put = await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt", Body: body }));
		assert.equal(put.ETag, `"${md5(body)}"`);
		const stat = await node.api("GET", "/a/tree/stat/common-files%2Fio%2Fhello.txt", undefined, token);
		assert.equal(stat.status, 200);
		assert.equal(stat.body.Node.Size, String(body.length));
		const got = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt" }));
		assert.deepEqual(Buffer.from(await got.Body!.transformToByteArray()), body);
		const part = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt", Range: "bytes=7-12" }));
		assert.equal(Buffer.from(await part.Body!.transformToByteArray()).toString(), "cellar");
		assert.equal(part.ContentRange, `bytes 7-12/${body.length}`);
		const head = await s3.send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt" }));
		assert.equal(head.ContentLength, body.length);
		assert.equal(head.ETag, `"${md5(body)}"`);
	});

	it("accepts streamed aws-chunked uploads as current SDKs send them", async () => {
		const body = Buffer.alloc(300_000, 7);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/io/streamed.bin", Body: Readable.from([body.subarray(0, 100_000), body.subarray(100_000)]), ContentLength: body.length }));
		const got = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/io/streamed.bin" }));
		assert.equal(md5(Buffer.from(await got.Body!.transformToByteArray())), md5(body));
	});

	it("lists with prefix and delimiter, and pages with continuation tokens", async () => {
		for (const k of ["a.txt", "b.txt", "sub/c.txt"]) await s3.send(new PutObjectCommand({ Bucket: "io", Key: `common-files/list/${k}`, Body: k }));
		const r = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/list/", Delimiter: "/" }));
		assert.deepEqual(r.Contents?.map((c) => c.Key), ["common-files/list/a.txt", "common-files/list/b.txt"]);
		assert.deepEqual(r.CommonPrefixes?.map((c) => c.Prefix), ["common-files/list/sub/"]);
		const page1 = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/list/", MaxKeys: 2 }));
		assert.equal(page1.IsTruncated, true);
		const page2 = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/list/", MaxKeys: 2, ContinuationToken: page1.NextContinuationToken }));
		assert.deepEqual([...(page1.Contents ?? []), ...(page2.Contents ?? [])].map((c) => c.Key), ["common-files/list/a.txt", "common-files/list/b.txt", "common-files/list/sub/c.txt"]);
		const root = await s3.send(new ListObjectsV2Command({ Bucket: "io", Delimiter: "/" }));
		assert.ok(root.CommonPrefixes?.some((p) => p.Prefix === "common-files/"));
	});

	it("copies server-side and deletes", async () => {
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal-files/copy.txt", CopySource: "io/common-files/list/a.txt" }));
		const got = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "personal-files/copy.txt" }));
		assert.equal(await got.Body!.transformToString(), "a.txt");
		await s3.send(new DeleteObjectCommand({ Bucket: "io", Key: "personal-files/copy.txt" }));
		assert.equal((await node.api("GET", "/a/tree/stat/personal-files%2Fcopy.txt", undefined, token)).status, 404);
		await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: "io", Key: "personal-files/copy.txt" })), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 404);
	});

	it("uploads multipart, parts in parallel and out of order, with lib-storage and by hand", async () => {
		const big = Buffer.alloc(12 * 1024 * 1024);
		for (let i = 0; i < big.length; i += 4096) big.writeUInt32BE(i, i);
		await new Upload({ client: s3, params: { Bucket: "io", Key: "common-files/io/big.bin", Body: Readable.from([big]) }, partSize: 5 * 1024 * 1024, queueSize: 3 }).done();
		const head = await s3.send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/io/big.bin" }));
		assert.equal(head.ContentLength, big.length);
		const back = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/io/big.bin" }));
		assert.equal(md5(Buffer.from(await back.Body!.transformToByteArray())), md5(big));

		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key: "common-files/io/manual.bin" }));
		const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.alloc(5 * 1024 * 1024, 2), Buffer.from("tail")];
		const etags = await Promise.all([2, 0, 1].map(async (i) => ({ i, r: await s3.send(new UploadPartCommand({ Bucket: "io", Key: "common-files/io/manual.bin", UploadId, PartNumber: i + 1, Body: parts[i] })) })));
		const listed = await s3.send(new ListPartsCommand({ Bucket: "io", Key: "common-files/io/manual.bin", UploadId }));
		assert.deepEqual(listed.Parts?.map((p) => p.PartNumber), [1, 2, 3]);
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key: "common-files/io/manual.bin", UploadId, MultipartUpload: { Parts: etags.sort((a, b) => a.i - b.i).map(({ i, r }) => ({ PartNumber: i + 1, ETag: r.ETag })) } }));
		const stat = await node.api("GET", "/a/tree/stat/common-files%2Fio%2Fmanual.bin", undefined, token);
		assert.equal(stat.body.Node.Size, String(10 * 1024 * 1024 + 4));
		await assert.rejects(s3.send(new UploadPartCommand({ Bucket: "io", Key: "common-files/io/other.bin", UploadId, PartNumber: 1, Body: "x" })), (e: { name: string }) => e.name === "NoSuchUpload");
	});

	it("answers ListBuckets on the endpoint's root (aws s3 ls) with the io bucket; the root stays the API's otherwise", async () => {
		const r = await s3.send(new ListBucketsCommand({}));
		assert.deepEqual(r.Buckets?.map((b) => b.Name), ["io"]);
		await assert.rejects(s3Client(node, token, { credentials: { accessKeyId: token, secretAccessKey: "wrong" } }).send(new ListBucketsCommand({})), (e: { name: string }) => e.name === "SignatureDoesNotMatch");
		const plain = await fetch(`${node.url}/`);
		assert.notEqual(plain.headers.get("content-type")?.includes("xml"), true);
	});

	it("takes parallel uploads into the same new folders (each creates them; none fails)", async () => {
		const puts = Array.from({ length: 24 }, (_, i) => s3.send(new PutObjectCommand({ Bucket: "io", Key: `common-files/race/d${i % 3}/deep/f${i}.txt`, Body: `file ${i}` })));
		await Promise.all(puts);
		const list = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/race/" }));
		assert.equal(list.KeyCount, 24);
	});

	it("lands a file whose folder was deleted while it uploaded where it was sent, the folder made again", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/vanish/seed.txt", Body: "seed" }));
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key: "common-files/vanish/late.bin" }));
		const part = await s3.send(new UploadPartCommand({ Bucket: "io", Key: "common-files/vanish/late.bin", UploadId, PartNumber: 1, Body: "late content" }));
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/vanish" }] }, token)).status, 200);
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key: "common-files/vanish/late.bin", UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
		const list = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/vanish", "common-files/vanish/*"] }, token);
		assert.equal(list.status, 200, list.text);
		assert.deepEqual(list.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/vanish", "common-files/vanish/late.bin"]);
		assert.equal(list.body.Nodes[0].Size, String("late content".length), "the folder's size counts the file");
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/recycle_bin/vanish/seed.txt")}`, undefined, token)).status, 200);
	});

	it("refuses an upload that announces more than the storage has left, before writing anything", async () => {
		const { request } = await import("node:http");
		const url = new URL(`${node.url}/io/common-files/toobig/huge.bin`);
		const status = await new Promise<{ code: number; body: string }>((resolve, reject) => {
			const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-Length": String(2 ** 50) } }, (res) => {
				let body = "";
				res.on("data", (d) => (body += d));
				res.on("end", () => {
					resolve({ code: res.statusCode ?? 0, body });
					req.destroy();
				});
			});
			req.on("error", reject);
			req.write("x");
		});
		assert.equal(status.code, 400);
		assert.match(status.body, /EntityTooLarge/);
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Ftoobig", undefined, token)).status, 404, "no folder made for it");
	});

	it("answers parallel deletes of one object as S3 does: every one succeeds", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/race/gone.txt", Body: "bye" }));
		const results = await Promise.all(Array.from({ length: 5 }, () => s3.send(new DeleteObjectCommand({ Bucket: "io", Key: "common-files/race/gone.txt" }))));
		assert.deepEqual(results.map((r) => r.$metadata.httpStatusCode), [204, 204, 204, 204, 204]);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/race/gone.txt")}`, undefined, token)).status, 404);
	});

	it("refuses a wrong secret, a bad token and missing credentials with S3 errors", async () => {
		await assert.rejects(s3Client(node, token, { credentials: { accessKeyId: token, secretAccessKey: "not-the-secret" } }).send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt" })), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 403);
		await assert.rejects(s3Client(node, "not-a-token").send(new GetObjectCommand({ Bucket: "io", Key: "common-files/io/hello.txt" })), (e: { name: string }) => e.name === "AccessDenied");
		const anon = await fetch(`${node.url}/io/common-files/io/hello.txt`);
		assert.equal(anon.status, 403);
		assert.match(await anon.text(), /<Code>AccessDenied<\/Code>/);
	});

	it("accepts X-Pydio-Bearer and ?pydio_jwt=", async () => {
		const a = await fetch(`${node.url}/io/common-files/io/hello.txt`, { headers: { "X-Pydio-Bearer": token, Range: "bytes=0-4" } });
		assert.equal(a.status, 206);
		assert.equal(await a.text(), "hello");
		const b = await fetch(`${node.url}/io/common-files/io/hello.txt?pydio_jwt=${encodeURIComponent(token)}`);
		assert.equal(b.status, 200);
		assert.equal((await b.text()).length, 14_000);
	});

	it("leaves nothing behind when an upload is cut", async () => {
		const { request } = await import("node:http");
		const { readdirSync } = await import("node:fs");
		const { join } = await import("node:path");
		const url = new URL(`${node.url}/io/common-files/io/cut.bin`);
		await new Promise<void>((resolve) => {
			const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-Length": String(1024 * 1024) } });
			req.on("error", () => resolve());
			req.write(Buffer.alloc(100 * 1024, 1));
			setTimeout(() => {
				req.destroy();
				resolve();
			}, 200);
		});
		await new Promise((r) => setTimeout(r, 300));
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fio%2Fcut.bin", undefined, token)).status, 404);
		const tmp = join(node.dataDir, "pydiods1", ".cellar-tmp");
		assert.deepEqual(readdirSync(tmp), [], "no partial file left in the staging area");
	});

	it("keeps paths inside the workspace and honours write rights", async () => {
		await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/../x.txt", Body: "x" })));
		await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "io", Key: "no-such-workspace/x.txt", Body: "x" })), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 404);
	});
});
