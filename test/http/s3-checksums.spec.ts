// S3 additional checksums through /io: what the AWS SDK sends by default (CRC32, as a header with a buffer, as an
// aws-chunked trailer with a stream) and the other algorithms are checked; a body that does not match its
// checksum is refused with BadDigest and nothing of it is stored.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { crc32 } from "node:zlib";
import { S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand, CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand, ListPartsCommand, type ChecksumAlgorithm } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { useNode } from "../helpers/node";
import { s3Client } from "../helpers/s3";

const crc32b64 = (b: Buffer) => {
	const out = Buffer.alloc(4);
	out.writeUInt32BE(crc32(b));
	return out.toString("base64");
};

describe("HTTP: S3 additional checksums through /io", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;

	before(async () => {
		token = await node.login("admin", node.adminPassword);
		s3 = s3Client(node, token);
	});

	const text = async (Key: string) => (await s3.send(new GetObjectCommand({ Bucket: "io", Key }))).Body!.transformToString();

	it("accepts what the SDK sends by default and answers the checksum it checked", async () => {
		const body = Buffer.from("checked by crc32\n".repeat(500));
		const asBuffer = await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/sums/buffer.txt", Body: body }));
		assert.equal(asBuffer.ChecksumCRC32, crc32b64(body));
		const asStream = await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/sums/stream.txt", Body: Readable.from([body.subarray(0, 1000), body.subarray(1000)]), ContentLength: body.length }));
		assert.equal(asStream.ChecksumCRC32, crc32b64(body), "from the aws-chunked trailer");
		assert.equal(await text("common-files/sums/stream.txt"), body.toString());
		await new Upload({ client: s3, params: { Bucket: "io", Key: "common-files/sums/multi.bin", Body: Readable.from([Buffer.alloc(11 * 1024 * 1024, 5)]) }, partSize: 5 * 1024 * 1024 }).done();
		assert.equal((await s3.send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/sums/multi.bin" }))).ContentLength, 11 * 1024 * 1024);
	});

	it("checks every algorithm the SDK offers", async () => {
		for (const alg of ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"] as ChecksumAlgorithm[]) {
			const Key = `common-files/sums/${alg}.txt`;
			await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: `with ${alg}`, ChecksumAlgorithm: alg }));
			await s3.send(new PutObjectCommand({ Bucket: "io", Key: `${Key}.stream`, Body: Readable.from([Buffer.from(`streamed with ${alg}`)]), ContentLength: `streamed with ${alg}`.length, ChecksumAlgorithm: alg }));
			assert.equal(await text(Key), `with ${alg}`);
			assert.equal(await text(`${Key}.stream`), `streamed with ${alg}`);
		}
	});

	it("refuses a body whose checksum header does not match, keeping what was there", async () => {
		const url = `${node.url}/io/common-files/sums/buffer.txt`;
		const bad = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, "x-amz-checksum-crc32": crc32b64(Buffer.from("something else")) }, body: "new content" });
		assert.equal(bad.status, 400);
		assert.match(await bad.text(), /<Code>BadDigest<\/Code>/);
		assert.equal(await text("common-files/sums/buffer.txt"), "checked by crc32\n".repeat(500));
		const malformed = await fetch(`${node.url}/io/common-files/sums/never.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token, "x-amz-checksum-sha256": "short" }, body: "x" });
		assert.equal(malformed.status, 400);
		assert.match(await malformed.text(), /<Code>InvalidRequest<\/Code>/);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/sums/never.txt")}`, undefined, token)).status, 404);
		const good = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, "x-amz-checksum-crc32": crc32b64(Buffer.from("new content")) }, body: "new content" });
		assert.equal(good.status, 200);
		assert.equal(good.headers.get("x-amz-checksum-crc32"), crc32b64(Buffer.from("new content")));
	});

	it("checks Content-MD5 as S3 does: a wrong one is BadDigest and stores nothing, a malformed one InvalidDigest", async () => {
		const md5 = (b: string) => createHash("md5").update(b).digest("base64");
		const url = `${node.url}/io/common-files/sums/md5.txt`;
		const ok = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-MD5": md5("right") }, body: "right" });
		assert.equal(ok.status, 200, await ok.text());
		const wrong = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-MD5": md5("other") }, body: "wrong" });
		assert.equal(wrong.status, 400);
		assert.match(await wrong.text(), /<Code>BadDigest<\/Code>/);
		assert.equal(await text("common-files/sums/md5.txt"), "right");
		const malformed = await fetch(`${node.url}/io/common-files/sums/md5-never.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-MD5": "not-an-md5" }, body: "x" });
		assert.equal(malformed.status, 400);
		assert.match(await malformed.text(), /<Code>InvalidDigest<\/Code>/);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/sums/md5-never.txt")}`, undefined, token)).status, 404);
	});

	it("refuses an aws-chunked body whose trailer does not match, storing nothing", async () => {
		const payload = Buffer.from("hello trailer");
		const chunked = (trailer: string) => Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from(`\r\n0\r\n${trailer}\r\n\r\n`)]);
		const headers = { "X-Pydio-Bearer": token, "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "content-encoding": "aws-chunked", "x-amz-decoded-content-length": String(payload.length), "x-amz-trailer": "x-amz-checksum-crc32" };
		const bad = await fetch(`${node.url}/io/common-files/sums/trailer.txt`, { method: "PUT", headers, body: chunked(`x-amz-checksum-crc32:${crc32b64(Buffer.from("other"))}`) });
		assert.equal(bad.status, 400);
		assert.match(await bad.text(), /<Code>BadDigest<\/Code>/);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/sums/trailer.txt")}`, undefined, token)).status, 404);
		const good = await fetch(`${node.url}/io/common-files/sums/trailer.txt`, { method: "PUT", headers, body: chunked(`x-amz-checksum-crc32:${crc32b64(payload)}`) });
		assert.equal(good.status, 200);
		await good.arrayBuffer();
		assert.equal(good.headers.get("etag"), `"${createHash("md5").update(payload).digest("hex")}"`);
		assert.equal(await text("common-files/sums/trailer.txt"), "hello trailer");
	});

	it("refuses a part whose checksum does not match: the upload goes on without it", async () => {
		const Key = "common-files/sums/parts.bin";
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key }));
		const part = Buffer.alloc(5 * 1024 * 1024, 7);
		const url = `${node.url}/io/${Key}?partNumber=1&uploadId=${encodeURIComponent(UploadId!)}`;
		const bad = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, "x-amz-checksum-crc32": crc32b64(Buffer.alloc(5, 7)) }, body: part });
		assert.equal(bad.status, 400);
		assert.match(await bad.text(), /<Code>BadDigest<\/Code>/);
		assert.deepEqual((await s3.send(new ListPartsCommand({ Bucket: "io", Key, UploadId }))).Parts ?? [], []);
		// A small body is checked before the store reads it: the failure must reach the client, not the process.
		const wrong: Record<string, string>[] = [{ "x-amz-checksum-crc32": crc32b64(Buffer.from("other")) }, { "x-amz-content-sha256": "0".repeat(64) }];
		for (const headers of wrong) {
			const small = await fetch(url, { method: "PUT", headers: { "X-Pydio-Bearer": token, ...headers }, body: "hello" });
			assert.equal(small.status, 400);
			assert.match(await small.text(), /<Code>(BadDigest|XAmzContentSHA256Mismatch)<\/Code>/);
		}
		const p1 = await s3.send(new UploadPartCommand({ Bucket: "io", Key, UploadId, PartNumber: 1, Body: part }));
		assert.equal(p1.ChecksumCRC32, crc32b64(part));
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.ETag, ChecksumCRC32: p1.ChecksumCRC32 }] } }));
		assert.equal((await s3.send(new HeadObjectCommand({ Bucket: "io", Key }))).ContentLength, part.length);
	});
});
