// S3's additional checksums on uploads (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256): sent as a
// header with the body, or as a trailer after an aws-chunked body (what current AWS SDKs do by default, CRC32).
// S3 checks them and refuses a body that does not match (BadDigest): so does the gateway, while the bytes stream
// through, before anything is committed. CRC32 runs in zlib (native, ~5 GB/s here); the CRCs zlib lacks are
// table-driven JavaScript (CRC32C, CRC64NVME), only paid by clients that choose them.
import { createHash, type Hash } from "node:crypto";
import * as zlib from "node:zlib";
import { Transform, type TransformCallback } from "node:stream";
import type { Headers, PayloadInfo } from "./request";
import { headerValue } from "./request";
import { S3Error } from "./xml";

export const CHECKSUM_ALGORITHMS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { crc32: 4, crc32c: 4, crc64nvme: 8, sha1: 20, sha256: 32 };

/** The checksum a request announces for its body. */
export interface RequestChecksum {
	algorithm: ChecksumAlgorithm;
	/** `x-amz-checksum-<algorithm>`: the header (or trailer) carrying the value. */
	name: string;
	/** The value given as a header; absent when it comes as a trailer of an aws-chunked body. */
	expected?: string;
}

export interface Checksum {
	update(data: Buffer): void;
	digest(): Buffer;
}

// ---- CRC32 (zlib's, native; a table for runtimes without zlib.crc32) ----
type Crc32Fn = (data: Buffer, value?: number) => number;
const zlibCrc32: Crc32Fn | undefined = typeof (zlib as { crc32?: Crc32Fn }).crc32 === "function" ? (zlib as { crc32: Crc32Fn }).crc32 : undefined;

function crc32Table(poly: number): Uint32Array {
	const t = new Uint32Array(256);
	for (let i = 0; i < 256; i++) {
		let c = i;
		for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
		t[i] = c >>> 0;
	}
	return t;
}
let crc32Fallback: Uint32Array | undefined;
let crc32cTable: Uint32Array | undefined;

class Crc32Family implements Checksum {
	private crc = 0;
	constructor(private readonly table: (() => Uint32Array) | null) {}
	update(data: Buffer): void {
		if (!this.table && zlibCrc32) {
			this.crc = zlibCrc32(data, this.crc);
			return;
		}
		const t = this.table ? this.table() : (crc32Fallback ??= crc32Table(0xedb88320));
		let c = ~this.crc;
		for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8);
		this.crc = ~c >>> 0;
	}
	digest(): Buffer {
		const b = Buffer.alloc(4);
		b.writeUInt32BE(this.crc >>> 0);
		return b;
	}
}

// ---- CRC64NVME (reflected, polynomial 0x9a6c9329ac4bc9b5), as two 32-bit halves ----
let crc64Tables: { hi: Uint32Array; lo: Uint32Array } | undefined;
function crc64NvmeTables(): { hi: Uint32Array; lo: Uint32Array } {
	if (crc64Tables) return crc64Tables;
	const hi = new Uint32Array(256);
	const lo = new Uint32Array(256);
	const polyHi = 0x9a6c9329;
	const polyLo = 0xac4bc9b5;
	for (let i = 0; i < 256; i++) {
		let h = 0;
		let l = i;
		for (let k = 0; k < 8; k++) {
			const odd = l & 1;
			l = ((l >>> 1) | ((h & 1) << 31)) >>> 0;
			h = h >>> 1;
			if (odd) {
				h = (h ^ polyHi) >>> 0;
				l = (l ^ polyLo) >>> 0;
			}
		}
		hi[i] = h;
		lo[i] = l;
	}
	return (crc64Tables = { hi, lo });
}

class Crc64Nvme implements Checksum {
	private hi = 0xffffffff;
	private lo = 0xffffffff;
	update(data: Buffer): void {
		const t = crc64NvmeTables();
		let h = this.hi;
		let l = this.lo;
		for (let i = 0; i < data.length; i++) {
			const idx = (l ^ data[i]) & 0xff;
			l = ((l >>> 8) | (h << 24)) ^ t.lo[idx];
			h = (h >>> 8) ^ t.hi[idx];
		}
		this.hi = h >>> 0;
		this.lo = l >>> 0;
	}
	digest(): Buffer {
		const b = Buffer.alloc(8);
		b.writeUInt32BE(~this.hi >>> 0, 0);
		b.writeUInt32BE(~this.lo >>> 0, 4);
		return b;
	}
}

class NodeHash implements Checksum {
	private readonly h: Hash;
	constructor(alg: "sha1" | "sha256") {
		this.h = createHash(alg);
	}
	update(data: Buffer): void {
		this.h.update(data);
	}
	digest(): Buffer {
		return this.h.digest();
	}
}

export function newChecksum(algorithm: ChecksumAlgorithm): Checksum {
	switch (algorithm) {
		case "crc32":
			return new Crc32Family(null);
		case "crc32c":
			return new Crc32Family(() => (crc32cTable ??= crc32Table(0x82f63b78)));
		case "crc64nvme":
			return new Crc64Nvme();
		case "sha1":
		case "sha256":
			return new NodeHash(algorithm);
	}
}

const invalidValue = (name: string) => new S3Error("InvalidRequest", `Value for ${name} header is invalid.`);

/** A base64 checksum value as S3 accepts it: the algorithm's digest length exactly. */
function decodeValue(c: RequestChecksum, value: string): Buffer {
	const v = value.trim();
	if (!/^[A-Za-z0-9+/]+={0,2}$/.test(v)) throw invalidValue(c.name);
	const b = Buffer.from(v, "base64");
	if (b.length !== DIGEST_BYTES[c.algorithm] || b.toString("base64") !== v) throw invalidValue(c.name);
	return b;
}

/**
 * The checksum a request asks the gateway to check: an `x-amz-checksum-<algorithm>` header (at most one), or the
 * trailer its aws-chunked body announces in x-amz-trailer. InvalidRequest for several, or a malformed value.
 */
export function requestChecksum(headers: Headers, payload: PayloadInfo): RequestChecksum | undefined {
	const given: RequestChecksum[] = [];
	for (const algorithm of CHECKSUM_ALGORITHMS) {
		const name = `x-amz-checksum-${algorithm}`;
		const v = headerValue(headers, name);
		if (v !== undefined && v.trim() !== "") given.push({ algorithm, name, expected: v.trim() });
	}
	if (given.length > 1) throw new S3Error("InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
	if (given.length === 1) {
		decodeValue(given[0], given[0].expected as string);
		return given[0];
	}
	if (!payload.mode.endsWith("trailer")) return undefined;
	const trailers = payload.trailer.filter((t) => t.startsWith("x-amz-checksum-"));
	if (trailers.length > 1) throw new S3Error("InvalidRequest", "Expecting a single x-amz-checksum- trailer. Multiple checksum Types are not allowed.");
	const algorithm = trailers[0]?.slice("x-amz-checksum-".length);
	return (CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm ?? "") ? { algorithm: algorithm as ChecksumAlgorithm, name: trailers[0] } : undefined;
}

/**
 * Compares the computed digest with the value sent (header or trailer): BadDigest when they differ, as S3 answers;
 * InvalidRequest when an announced trailer never came or is malformed.
 */
export function checkChecksum(c: RequestChecksum, computed: Buffer, trailers: Record<string, string> = {}): void {
	const value = c.expected ?? trailers[c.name];
	if (value === undefined) throw new S3Error("InvalidRequest", `The ${c.name} trailer announced in x-amz-trailer was not sent`);
	if (!decodeValue(c, value).equals(computed)) throw new S3Error("BadDigest", `The ${c.algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
}

/** Pass-through that checks a body against the checksum header sent with it, at the end. */
export class ChecksumVerifier extends Transform {
	private readonly sum: Checksum;
	constructor(private readonly checksum: RequestChecksum) {
		super();
		this.sum = newChecksum(checksum.algorithm);
	}
	override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
		const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		this.sum.update(buf);
		cb(null, buf);
	}
	override _flush(cb: TransformCallback): void {
		try {
			checkChecksum(this.checksum, this.sum.digest());
			cb();
		} catch (e) {
			cb(e as Error);
		}
	}
}

/**
 * Content-MD5 (RFC 1864: base64 of the body's 16-byte md5), which S3 checks on PutObject and UploadPart: the
 * digest expected, undefined when the header is absent, InvalidDigest when it is not an md5 at all.
 */
export function contentMd5(headers: Headers): Buffer | undefined {
	const v = headerValue(headers, "content-md5")?.trim();
	if (v === undefined) return undefined;
	const b = /^[A-Za-z0-9+/]{22}==$/.test(v) ? Buffer.from(v, "base64") : Buffer.alloc(0);
	if (b.length !== 16) throw new S3Error("InvalidDigest", "The Content-MD5 you specified was invalid.");
	return b;
}

/** Pass-through that fails with BadDigest at the end when the body's md5 is not `expected`: nothing is stored. */
export class Md5Verifier extends Transform {
	private readonly hash: Hash = createHash("md5");
	constructor(private readonly expected: Buffer) {
		super();
	}
	override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
		const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		this.hash.update(buf);
		cb(null, buf);
	}
	override _flush(cb: TransformCallback): void {
		if (this.hash.digest().equals(this.expected)) cb();
		else cb(new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received."));
	}
}

/** `body`, followed by a Content-MD5 check when the request has one (errors of either reach the result). */
export function withContentMd5(body: Transform, headers: Headers): Transform {
	const expected = contentMd5(headers);
	if (!expected) return body;
	const check = new Md5Verifier(expected);
	body.on("error", (e) => check.destroy(e));
	return body.pipe(check);
}
