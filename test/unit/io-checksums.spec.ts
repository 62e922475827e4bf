// S3 additional checksums (lib/io/checksums.ts): the algorithms against known answers and bitwise references,
// what a request announces, and the body decoders refusing a body that does not match.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable, type Transform } from "node:stream";
import { newChecksum, requestChecksum, type ChecksumAlgorithm } from "../../lib/io/checksums";
import { createBodyDecoder, checkedChecksumHeader } from "../../lib/io/chunked";
import { payloadInfo, type Headers } from "../../lib/io/request";
import { S3Error, type S3ErrorCode } from "../../lib/io/xml";

const digest = (alg: ChecksumAlgorithm, parts: Buffer[]) => {
	const c = newChecksum(alg);
	for (const p of parts) c.update(p);
	return c.digest();
};

/** Bit by bit, as the specifications define them: what the table-driven versions must equal. */
function crcReference(data: Buffer, bits: 32 | 64, poly: bigint): bigint {
	const mask = (1n << BigInt(bits)) - 1n;
	let crc = mask;
	for (const byte of data) {
		crc ^= BigInt(byte);
		for (let k = 0; k < 8; k++) crc = crc & 1n ? (crc >> 1n) ^ poly : crc >> 1n;
	}
	return crc ^ mask;
}

async function run(t: Transform, chunks: Buffer[]): Promise<Buffer> {
	const out: Buffer[] = [];
	t.on("data", (b: Buffer) => out.push(b));
	const done = new Promise<void>((resolve, reject) => {
		t.on("end", resolve);
		t.on("error", reject);
	});
	Readable.from(chunks).pipe(t);
	await done;
	return Buffer.concat(out);
}

const code = (c: S3ErrorCode) => (e: unknown) => e instanceof S3Error && e.code === c;

describe("lib/io/checksums: S3 additional checksums", () => {
	const check = Buffer.from("123456789");

	it("computes the five algorithms' known answers", () => {
		assert.equal(digest("crc32", [check]).toString("hex"), "cbf43926");
		assert.equal(digest("crc32c", [check]).toString("hex"), "e3069283");
		assert.equal(digest("crc64nvme", [check]).toString("hex"), "ae8b14860a799888");
		assert.equal(digest("sha1", [check]).toString("hex"), createHash("sha1").update(check).digest("hex"));
		assert.equal(digest("sha256", [check]).toString("hex"), createHash("sha256").update(check).digest("hex"));
		assert.equal(digest("crc32", []).toString("hex"), "00000000");
		assert.equal(digest("crc64nvme", []).toString("hex"), "0000000000000000");
	});

	it("matches the bitwise definitions on random data, however it is split", () => {
		const data = randomBytes(3000);
		const splits = [[data], [data.subarray(0, 1), data.subarray(1, 1777), data.subarray(1777)], [...data].map((b) => Buffer.from([b]))];
		for (const parts of splits) {
			assert.equal(digest("crc32", parts).readUInt32BE(), Number(crcReference(data, 32, 0xedb88320n)));
			assert.equal(digest("crc32c", parts).readUInt32BE(), Number(crcReference(data, 32, 0x82f63b78n)));
			assert.equal(digest("crc64nvme", parts).readBigUInt64BE(), crcReference(data, 64, 0x9a6c9329ac4bc9b5n));
		}
	});

	it("reads the checksum a request announces: one header, or the trailer of an aws-chunked body", () => {
		const crc = digest("crc32", [check]).toString("base64");
		const plain = (h: Headers) => requestChecksum(h, payloadInfo(h));
		assert.deepEqual(plain({ "x-amz-checksum-crc32": crc }), { algorithm: "crc32", name: "x-amz-checksum-crc32", expected: crc });
		assert.equal(plain({ "x-amz-checksum-mode": "ENABLED", "x-amz-checksum-algorithm": "CRC32", "x-amz-sdk-checksum-algorithm": "CRC32" }), undefined, "not checksum values");
		assert.throws(() => plain({ "x-amz-checksum-crc32": crc, "x-amz-checksum-sha1": digest("sha1", [check]).toString("base64") }), code("InvalidRequest"));
		assert.throws(() => plain({ "x-amz-checksum-crc32": "not base64!" }), code("InvalidRequest"));
		assert.throws(() => plain({ "x-amz-checksum-crc32": Buffer.alloc(8).toString("base64") }), code("InvalidRequest"), "wrong length");
		const trailer = { "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "9", "x-amz-trailer": "x-amz-checksum-crc64nvme" };
		assert.deepEqual(plain(trailer), { algorithm: "crc64nvme", name: "x-amz-checksum-crc64nvme" });
		assert.equal(plain({ ...trailer, "x-amz-trailer": "x-amz-checksum-md4" }), undefined, "an algorithm S3 does not know is not checked");
		assert.throws(() => plain({ ...trailer, "x-amz-trailer": "x-amz-checksum-crc32,x-amz-checksum-sha1" }), code("InvalidRequest"));
	});

	it("refuses a plain or signed-digest body whose checksum header does not match (BadDigest), passes a matching one", async () => {
		for (const alg of ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"] as const) {
			const h = { [`x-amz-checksum-${alg}`]: digest(alg, [check]).toString("base64") };
			const p = payloadInfo(h);
			const c = requestChecksum(h, p);
			const d = createBodyDecoder(p, null, { checksum: c });
			assert.equal((await run(d, [check.subarray(0, 4), check.subarray(4)])).toString(), "123456789", alg);
			assert.deepEqual(checkedChecksumHeader(c, d), h);
			await assert.rejects(run(createBodyDecoder(p, null, { checksum: c }), [Buffer.from("123456780")]), code("BadDigest"), alg);
		}
		const signed = { "x-amz-content-sha256": createHash("sha256").update(check).digest("hex"), "x-amz-checksum-crc32": Buffer.alloc(4).toString("base64") };
		const p = payloadInfo(signed);
		await assert.rejects(run(createBodyDecoder(p, null, { checksum: requestChecksum(signed, p) }), [check]), code("BadDigest"), "the sha256 matches, the CRC32 does not");
	});

	it("checks the trailer of an aws-chunked body, and refuses one that was announced but not sent", async () => {
		const h = { "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "9", "x-amz-trailer": "x-amz-checksum-crc32" };
		const p = payloadInfo(h);
		const c = requestChecksum(h, p);
		const body = (trailer: string) => [Buffer.from(`4\r\n1234\r\n5\r\n56789\r\n0\r\n${trailer}\r\n`)];
		const good = createBodyDecoder(p, null, { checksum: c });
		assert.equal((await run(good, body(`x-amz-checksum-crc32:${digest("crc32", [check]).toString("base64")}\r\n`))).toString(), "123456789");
		assert.deepEqual(checkedChecksumHeader(c, good), { "x-amz-checksum-crc32": digest("crc32", [check]).toString("base64") });
		await assert.rejects(run(createBodyDecoder(p, null, { checksum: c }), body("x-amz-checksum-crc32:AAAAAA==\r\n")), code("BadDigest"));
		await assert.rejects(run(createBodyDecoder(p, null, { checksum: c }), body("x-amz-checksum-crc32:AAAA\r\n")), code("InvalidRequest"));
		await assert.rejects(run(createBodyDecoder(p, null, { checksum: c }), body("")), code("InvalidRequest"));
		// Without a checksum to check, trailers are collected as before.
		assert.equal((await run(createBodyDecoder(p, null), body("x-amz-checksum-crc32:AAAAAA==\r\n"))).toString(), "123456789");
	});
});
