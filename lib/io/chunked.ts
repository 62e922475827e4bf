// Request body decoders for the /io gateway.
//  - AwsChunkedDecoder: `Content-Encoding: aws-chunked` bodies, i.e. x-amz-content-sha256 =
//    STREAMING-AWS4-HMAC-SHA256-PAYLOAD (`<hex>;chunk-signature=<sig>\r\n<data>\r\n … 0;chunk-signature=<sig>\r\n\r\n`),
//    STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (same + trailer lines + `x-amz-trailer-signature`), and
//    STREAMING-UNSIGNED-PAYLOAD-TRAILER (`<hex>\r\n<data>\r\n … 0\r\n<name>:<value>\r\n\r\n`, what current AWS SDKs
//    send for stream bodies, with a CRC32 trailer). Outputs only the payload bytes. Memory stays flat: payload
//    bytes are forwarded as slices of the input as they arrive (only a chunk-header/trailer line, ≤ 4 KiB, is ever
//    buffered), chunks of any size can be split anywhere across input buffers. Chunk signatures are verified when a
//    signing context is given (SignatureDoesNotMatch). A chunk's bytes are forwarded before its signature (which
//    follows the data) can be checked: the stream then errors, so consumers must treat an errored body as void
//    (as for any failed upload) — the final signature is checked before the stream ends.
//  - Sha256Verifier: plain bodies whose x-amz-content-sha256 is a digest (XAmzContentSHA256Mismatch at the end).
//  - createBodyDecoder(): picks the right one from the request's PayloadInfo and verified SigV4 context.
// Trailing checksums (x-amz-checksum-crc32 …) are collected in `trailers`; the one createBodyDecoder() is given
// (from the request's header or x-amz-trailer, see checksums.ts) is computed as the bytes pass and checked at the
// end: BadDigest before the stream ends, so nothing is committed.
import { createHash, createHmac, timingSafeEqual, type Hash } from "node:crypto";
import { PassThrough, Transform, type TransformCallback } from "node:stream";
import type { PayloadInfo } from "./request";
import { EMPTY_SHA256, isSignedStreaming, sha256Hex, type VerifyOk } from "./sigv4";
import { ChecksumVerifier, checkChecksum, newChecksum, type Checksum, type RequestChecksum } from "./checksums";
import { S3Error } from "./xml";

export interface ChunkSigningContext {
	signingKey: Buffer;
	/** The request's own signature (seed of the chain). */
	seedSignature: string;
	/** YYYYMMDDTHHMMSSZ of the request. */
	amzDate: string;
	/** `<date>/<region>/s3/aws4_request`. */
	scope: string;
}

export interface AwsChunkedOptions {
	/** Chunk headers carry `;chunk-signature=` (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]). */
	signed: boolean;
	/** Trailer lines follow the final chunk (…-TRAILER modes). */
	trailer: boolean;
	/** Verify chunk (and trailer) signatures with this context; without it signatures are only parsed. */
	signing?: ChunkSigningContext;
	/** x-amz-decoded-content-length: the decoded size must equal it (IncompleteBody otherwise). */
	decodedContentLength?: number;
	/** Largest accepted chunk (default 64 MiB). */
	maxChunkSize?: number;
	/** The additional checksum to compute over the payload and check against its header or trailer. */
	checksum?: RequestChecksum;
}

export const MAX_LINE = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;
const DEFAULT_MAX_CHUNK = 64 * 1024 * 1024;

/** Signature of one chunk: HMAC(key, "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n<prev>\n<sha256('')>\n<sha256(chunk)>"). */
export function chunkSignature(signingKey: Buffer, amzDate: string, scope: string, previousSignature: string, chunkSha256Hex: string): string {
	const sts = ["AWS4-HMAC-SHA256-PAYLOAD", amzDate, scope, previousSignature, EMPTY_SHA256, chunkSha256Hex].join("\n");
	return createHmac("sha256", signingKey).update(sts, "utf8").digest("hex");
}

/** Signature of the trailer block: HMAC(key, "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n<prev>\n<sha256(canonical trailers)>"). */
export function trailerSignature(signingKey: Buffer, amzDate: string, scope: string, previousSignature: string, canonicalTrailers: string): string {
	const sts = ["AWS4-HMAC-SHA256-TRAILER", amzDate, scope, previousSignature, sha256Hex(canonicalTrailers)].join("\n");
	return createHmac("sha256", signingKey).update(sts, "utf8").digest("hex");
}

function sameHex(a: string, b: string): boolean {
	const ba = Buffer.from(a.toLowerCase());
	const bb = Buffer.from(b.toLowerCase());
	return ba.length === bb.length && timingSafeEqual(ba, bb);
}

type State = "header" | "data" | "data-crlf" | "trailer" | "done";

const malformed = (why: string) => new S3Error("InvalidRequest", `Malformed aws-chunked body: ${why}`);
const badSignature = () => new S3Error("SignatureDoesNotMatch", "The chunk signature we calculated does not match the signature you provided.");

export class AwsChunkedDecoder extends Transform {
	/** Trailer headers received after the final chunk (lower-case names), x-amz-trailer-signature excluded. */
	readonly trailers: Record<string, string> = {};
	/** Payload bytes output so far. */
	decodedBytes = 0;
	/** Chunks seen, final zero-length chunk included. */
	chunkCount = 0;

	private readonly opts: AwsChunkedOptions;
	private readonly maxChunk: number;
	private state: State = "header";
	private line: Buffer[] = [];
	private lineLen = 0;
	private remaining = 0;
	private crlf = 0;
	private hash: Hash | undefined;
	private chunkSig = "";
	private prevSig: string;
	private trailerBytes = 0;
	private canonicalTrailers = "";
	private trailerSig: string | undefined;
	private sawTrailerLine = false;
	private readonly sum: Checksum | undefined;

	constructor(opts: AwsChunkedOptions) {
		super();
		this.opts = opts;
		this.maxChunk = opts.maxChunkSize ?? DEFAULT_MAX_CHUNK;
		this.prevSig = opts.signing?.seedSignature.toLowerCase() ?? "";
		this.sum = opts.checksum && newChecksum(opts.checksum.algorithm);
	}

	override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
		const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		try {
			this.consume(buf);
			cb();
		} catch (e) {
			cb(e as Error);
		}
	}

	override _flush(cb: TransformCallback): void {
		try {
			if (this.state !== "done") {
				// Tolerate a missing final CRLF after the last chunk when nothing else was expected.
				const lenient = this.state === "trailer" && this.lineLen === 0 && !this.sawTrailerLine && !(this.opts.signed && this.opts.trailer);
				if (!lenient) throw new S3Error("IncompleteBody", "The aws-chunked body ended before its final chunk");
				this.state = "done";
			}
			const want = this.opts.decodedContentLength;
			if (want !== undefined && want !== this.decodedBytes)
				throw new S3Error("IncompleteBody", `Decoded ${this.decodedBytes} bytes but x-amz-decoded-content-length is ${want}`);
			if (this.opts.checksum && this.sum) checkChecksum(this.opts.checksum, this.sum.digest(), this.trailers);
			cb();
		} catch (e) {
			cb(e as Error);
		}
	}

	private consume(buf: Buffer): void {
		let off = 0;
		while (off < buf.length) {
			switch (this.state) {
				case "header":
				case "trailer": {
					const nl = buf.indexOf(0x0a, off);
					const end = nl < 0 ? buf.length : nl + 1;
					this.lineLen += end - off;
					if (this.lineLen > MAX_LINE) throw malformed("line too long");
					this.line.push(buf.subarray(off, end));
					off = end;
					if (nl < 0) break;
					const whole = Buffer.concat(this.line);
					this.line = [];
					this.lineLen = 0;
					if (whole.length < 2 || whole[whole.length - 2] !== 0x0d) throw malformed("line not terminated by CRLF");
					const text = whole.subarray(0, whole.length - 2).toString("latin1");
					if (this.state === "header") this.onHeader(text);
					else this.onTrailerLine(text);
					break;
				}
				case "data": {
					const n = Math.min(this.remaining, buf.length - off);
					const part = buf.subarray(off, off + n);
					off += n;
					this.remaining -= n;
					this.hash?.update(part);
					this.sum?.update(part);
					this.decodedBytes += n;
					const want = this.opts.decodedContentLength;
					if (want !== undefined && this.decodedBytes > want) throw new S3Error("IncompleteBody", `More payload than x-amz-decoded-content-length (${want})`);
					this.push(part);
					if (this.remaining === 0) {
						this.state = "data-crlf";
						this.crlf = 0;
					}
					break;
				}
				case "data-crlf": {
					const expected = this.crlf === 0 ? 0x0d : 0x0a;
					if (buf[off] !== expected) throw malformed("chunk data not followed by CRLF");
					off++;
					if (++this.crlf === 2) {
						this.endChunk();
						this.state = "header";
					}
					break;
				}
				case "done":
					throw malformed("data after the final chunk");
			}
		}
	}

	private onHeader(text: string): void {
		const semi = text.indexOf(";");
		const sizeHex = (semi >= 0 ? text.slice(0, semi) : text).trim();
		if (!/^[0-9a-fA-F]{1,16}$/.test(sizeHex)) throw malformed("bad chunk size");
		const size = parseInt(sizeHex, 16);
		if (!Number.isSafeInteger(size) || size > this.maxChunk) throw malformed("chunk too large");
		this.chunkSig = "";
		if (this.opts.signed) {
			const m = /(?:^|;)\s*chunk-signature=([0-9a-fA-F]{64})\s*(?:;|$)/.exec(semi >= 0 ? text.slice(semi) : "");
			if (!m) throw malformed("missing chunk-signature");
			this.chunkSig = m[1].toLowerCase();
		}
		this.chunkCount++;
		this.hash = this.opts.signing ? createHash("sha256") : undefined;
		if (size === 0) {
			this.endChunk();
			this.state = "trailer";
			return;
		}
		this.remaining = size;
		this.state = "data";
	}

	/** Verifies the signature of the chunk just read (data hashed in `this.hash`). */
	private endChunk(): void {
		const s = this.opts.signing;
		if (!s || !this.opts.signed) return;
		const digest = this.hash ? this.hash.digest("hex") : EMPTY_SHA256;
		this.hash = undefined;
		const expected = chunkSignature(s.signingKey, s.amzDate, s.scope, this.prevSig, digest);
		if (!sameHex(expected, this.chunkSig)) throw badSignature();
		this.prevSig = expected;
	}

	private onTrailerLine(text: string): void {
		if (text === "") {
			if (this.opts.signed && this.opts.trailer && this.opts.signing) {
				if (this.trailerSig === undefined) throw malformed("missing x-amz-trailer-signature");
				const s = this.opts.signing;
				const expected = trailerSignature(s.signingKey, s.amzDate, s.scope, this.prevSig, this.canonicalTrailers);
				if (!sameHex(expected, this.trailerSig)) throw badSignature();
			}
			this.state = "done";
			return;
		}
		if (!this.opts.trailer) throw malformed("unexpected trailer after the final chunk");
		this.sawTrailerLine = true;
		this.trailerBytes += text.length;
		if (this.trailerBytes > MAX_TRAILER_BYTES) throw malformed("trailers too large");
		const colon = text.indexOf(":");
		if (colon <= 0) throw malformed("bad trailer line");
		const name = text.slice(0, colon).trim().toLowerCase();
		const value = text.slice(colon + 1).trim();
		if (!/^[a-z0-9-]+$/.test(name)) throw malformed("bad trailer name");
		if (name === "x-amz-trailer-signature") {
			if (!/^[0-9a-fA-F]{64}$/.test(value)) throw malformed("bad x-amz-trailer-signature");
			this.trailerSig = value.toLowerCase();
			return;
		}
		if (this.trailerSig !== undefined) throw malformed("trailer after x-amz-trailer-signature");
		this.trailers[name] = value;
		this.canonicalTrailers += `${name}:${value}\n`;
	}
}

export function createAwsChunkedDecoder(opts: AwsChunkedOptions): AwsChunkedDecoder {
	return new AwsChunkedDecoder(opts);
}

/** Pass-through that checks the body's sha256 (and optionally its length, and an additional checksum) at the end. */
export class Sha256Verifier extends Transform {
	private readonly hash = createHash("sha256");
	private readonly expected: string;
	private readonly length: number | undefined;
	private readonly sum: Checksum | undefined;
	bytes = 0;
	constructor(expectedHex: string, expectedLength?: number, private readonly checksum?: RequestChecksum) {
		super();
		this.expected = expectedHex.toLowerCase();
		this.length = expectedLength;
		this.sum = checksum && newChecksum(checksum.algorithm);
	}
	override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
		const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		this.bytes += buf.length;
		if (this.length !== undefined && this.bytes > this.length) return cb(new S3Error("IncompleteBody", "More bytes than Content-Length"));
		this.hash.update(buf);
		this.sum?.update(buf);
		cb(null, buf);
	}
	override _flush(cb: TransformCallback): void {
		if (this.length !== undefined && this.bytes !== this.length) return cb(new S3Error("IncompleteBody"));
		if (!sameHex(this.hash.digest("hex"), this.expected)) return cb(new S3Error("XAmzContentSHA256Mismatch"));
		try {
			if (this.checksum && this.sum) checkChecksum(this.checksum, this.sum.digest());
			cb();
		} catch (e) {
			cb(e as Error);
		}
	}
}

/**
 * The transform to pipe a request body through before storing it:
 * - aws-chunked modes -> AwsChunkedDecoder (chunk signatures verified when `auth` is a verified SigV4 request
 *   that signed a STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER] payload);
 * - a sha256 digest -> Sha256Verifier (when `verifyDigest`, default true);
 * - unsigned -> PassThrough;
 * each also checking `checksum` (requestChecksum() of the request's headers) when given.
 */
export function createBodyDecoder(payload: PayloadInfo, auth?: VerifyOk | null, opts: { verifyDigest?: boolean; maxChunkSize?: number; checksum?: RequestChecksum } = {}): Transform {
	const t = pickBodyDecoder(payload, auth, opts);
	// A small body is decoded whole, and checked, while the store is still getting ready to read it: an error then
	// has no listener yet and would be thrown out of the process. Stores read with pipeline(), which still gets it
	// (a stream that already failed).
	t.on("error", () => undefined);
	return t;
}

function pickBodyDecoder(payload: PayloadInfo, auth: VerifyOk | null | undefined, opts: { verifyDigest?: boolean; maxChunkSize?: number; checksum?: RequestChecksum }): Transform {
	switch (payload.mode) {
		case "streaming-signed":
		case "streaming-signed-trailer":
		case "streaming-unsigned-trailer": {
			const signed = payload.mode !== "streaming-unsigned-trailer";
			const o: AwsChunkedOptions = { signed, trailer: payload.mode.endsWith("trailer") };
			if (signed && auth && isSignedStreaming(auth.payloadHash))
				o.signing = { signingKey: auth.signingKey, seedSignature: auth.seedSignature, amzDate: auth.amzDate, scope: auth.scope };
			if (payload.decodedContentLength !== undefined) o.decodedContentLength = payload.decodedContentLength;
			if (opts.maxChunkSize !== undefined) o.maxChunkSize = opts.maxChunkSize;
			if (opts.checksum) o.checksum = opts.checksum;
			return new AwsChunkedDecoder(o);
		}
		case "sha256":
			if (opts.verifyDigest !== false && payload.contentSha256) return new Sha256Verifier(payload.contentSha256, undefined, opts.checksum);
			return opts.checksum ? new ChecksumVerifier(opts.checksum) : new PassThrough();
		default:
			return opts.checksum ? new ChecksumVerifier(opts.checksum) : new PassThrough();
	}
}

/** The checksum a body was checked against, answered back as S3 does once the body is stored (empty when none). */
export function checkedChecksumHeader(c: RequestChecksum | undefined, body: Transform): Record<string, string> {
	const value = c && (c.expected ?? (body instanceof AwsChunkedDecoder ? body.trailers[c.name] : undefined));
	return c && value ? { [c.name]: value.trim() } : {};
}
