// EncryptedStore: encryption at rest for a datasource (EncryptionMode MASTER). Wraps any ObjectStore and keeps
// every object in this authenticated, chunked format:
//
//   header (24 bytes): "CLRE" | version (1) | log2(block size) (1) | 2 reserved zero bytes | salt (16 random bytes)
//   blocks: for i = 0..n-1: AES-256-GCM(plaintext[i*B .. (i+1)*B)) followed by its 16-byte tag
//
// - The AES key of an object is HKDF-SHA256(master key, salt, "cellar-encrypted-object-v1"): each object has its
//   own key, so block nonces can simply be the block index (12 bytes: 4 zero bytes + 64-bit big-endian index).
// - The additional data of every block is the header plus a final-block flag (1 on the last block only): a
//   modified header, a modified/reordered block (index in the nonce), a truncation (the new last block is not
//   flagged final) or appended data all fail the GCM check and surface as an IntegrityError, never as plaintext.
// - n = max(1, ceil(P / B)): an empty object is the header plus one empty final block. The plaintext size P is
//   therefore derived from the ciphertext size and the block size (nothing to rewrite at the end of a stream).
// - A Range read only fetches and decrypts the blocks that cover the range.
// - copy() is a server-side copy of the ciphertext (keys do not depend on the object name).
// - Multipart uploads: each part is staged as an encrypted object under `.cellar-encrypted-uploads/<uploadId>/`
//   (with a small encrypted sidecar holding its plaintext md5 and size); completion streams the parts, decrypted
//   and verified, into one object of the format above (so Range reads work the same), then drops the staging.
//   This costs one more read and write of the data at completion, in exchange for a single simple format.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from "node:crypto";
import { Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import { BadRequestError, CellarError, NotFoundError } from "../errors";
import { bareEtag, checkCompletionParts, checkKey, checkPartNumber, checkRange, HashingStream, quoteEtag } from "./keys";
import { RangeNotSatisfiableError, type MultipartPart, type ObjectInfo, type ObjectStore } from "./types";

export const MAGIC = Buffer.from("CLRE", "latin1");
export const FORMAT_VERSION = 1;
export const HEADER_SIZE = 24;
export const TAG_SIZE = 16;
export const DEFAULT_BLOCK_SIZE = 64 * 1024;
const MIN_BLOCK_LOG2 = 10; // 1 KiB
const MAX_BLOCK_LOG2 = 24; // 16 MiB
const INFO = Buffer.from("cellar-encrypted-object-v1");
/** Staging area of multipart uploads inside the wrapped store; keys under it are refused to callers. */
export const ENCRYPTED_UPLOADS = ".cellar-encrypted-uploads";
const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Stored data that fails its authentication or is not in the encrypted format: never returned as plaintext. */
export class IntegrityError extends CellarError {
	constructor(message: string) {
		super(`Encrypted data failed its integrity check: ${message}`, 500, "encryption.integrity");
	}
}

export interface Header {
	raw: Buffer;
	version: number;
	blockSize: number;
	salt: Buffer;
}

function log2(n: number): number {
	const l = Math.log2(n);
	return Number.isInteger(l) ? l : -1;
}

export function makeHeader(blockSize: number, salt: Buffer = randomBytes(16)): Header {
	const l = log2(blockSize);
	if (l < MIN_BLOCK_LOG2 || l > MAX_BLOCK_LOG2) throw new BadRequestError(`Invalid block size ${blockSize}: a power of two between 1 KiB and 16 MiB`);
	const raw = Buffer.alloc(HEADER_SIZE);
	MAGIC.copy(raw, 0);
	raw[4] = FORMAT_VERSION;
	raw[5] = l;
	salt.copy(raw, 8);
	return { raw, version: FORMAT_VERSION, blockSize, salt: raw.subarray(8, 24) };
}

export function parseHeader(buf: Buffer): Header {
	if (buf.length < HEADER_SIZE) throw new IntegrityError("the object is shorter than the encryption header");
	if (!buf.subarray(0, 4).equals(MAGIC)) throw new IntegrityError("the object is not in the encrypted format");
	if (buf[4] !== FORMAT_VERSION) throw new IntegrityError(`unknown format version ${buf[4]}`);
	const l = buf[5];
	if (l < MIN_BLOCK_LOG2 || l > MAX_BLOCK_LOG2 || buf[6] !== 0 || buf[7] !== 0) throw new IntegrityError("invalid header");
	const raw = Buffer.from(buf.subarray(0, HEADER_SIZE));
	return { raw, version: raw[4], blockSize: 2 ** l, salt: raw.subarray(8, 24) };
}

/** Size of the stored object for `plain` bytes of content. */
export function cipherSize(plain: number, blockSize: number): number {
	const n = Math.max(1, Math.ceil(plain / blockSize));
	return HEADER_SIZE + plain + n * TAG_SIZE;
}

/** Plaintext size and block count of a stored object of `cipher` bytes; throws if no plaintext size gives it. */
export function plainLayout(cipher: number, blockSize: number): { size: number; blocks: number } {
	const body = cipher - HEADER_SIZE;
	if (body < TAG_SIZE) throw new IntegrityError("the object is truncated");
	const full = blockSize + TAG_SIZE;
	const k = Math.floor(body / full);
	const rem = body % full;
	if (rem === 0) return { size: k * blockSize, blocks: k };
	if (rem < TAG_SIZE) throw new IntegrityError("the object has an impossible length (truncated?)");
	return { size: k * blockSize + rem - TAG_SIZE, blocks: k + 1 };
}

function objectKey(master: Buffer, salt: Buffer): Buffer {
	return Buffer.from(hkdfSync("sha256", master, salt, INFO, 32));
}

function nonceOf(index: number): Buffer {
	const nonce = Buffer.alloc(12);
	nonce.writeBigUInt64BE(BigInt(index), 4);
	return nonce;
}

function aadOf(header: Buffer, final: boolean): Buffer {
	return Buffer.concat([header, Buffer.from([final ? 1 : 0])]);
}

export function encryptBlock(key: Buffer, header: Buffer, index: number, final: boolean, plain: Buffer): Buffer {
	const c = createCipheriv("aes-256-gcm", key, nonceOf(index), { authTagLength: TAG_SIZE });
	c.setAAD(aadOf(header, final));
	const out = [c.update(plain), c.final(), c.getAuthTag()];
	return Buffer.concat(out);
}

export function decryptBlock(key: Buffer, header: Buffer, index: number, final: boolean, block: Buffer): Buffer {
	if (block.length < TAG_SIZE) throw new IntegrityError(`block ${index} is truncated`);
	const d = createDecipheriv("aes-256-gcm", key, nonceOf(index), { authTagLength: TAG_SIZE });
	d.setAAD(aadOf(header, final));
	d.setAuthTag(block.subarray(block.length - TAG_SIZE));
	try {
		return Buffer.concat([d.update(block.subarray(0, block.length - TAG_SIZE)), d.final()]);
	} catch {
		throw new IntegrityError(`block ${index} was modified, moved or truncated (or the key is not the one it was written with)`);
	}
}

/** A FIFO of buffers from which exact byte counts can be taken without copying more than needed. */
class ByteQueue {
	private chunks: Buffer[] = [];
	length = 0;
	push(b: Buffer): void {
		if (b.length === 0) return;
		this.chunks.push(b);
		this.length += b.length;
	}
	take(n: number): Buffer {
		n = Math.min(n, this.length);
		const first = this.chunks[0];
		if (first && first.length >= n) {
			const out = first.subarray(0, n);
			if (first.length === n) this.chunks.shift();
			else this.chunks[0] = first.subarray(n);
			this.length -= n;
			return out;
		}
		const out = Buffer.allocUnsafe(n);
		let off = 0;
		while (off < n) {
			const c = this.chunks[0];
			const m = Math.min(c.length, n - off);
			c.copy(out, off, 0, m);
			off += m;
			if (m === c.length) this.chunks.shift();
			else this.chunks[0] = c.subarray(m);
		}
		this.length -= n;
		return out;
	}
}

/** Plaintext in, header + encrypted blocks out. A block is only sealed once it is known whether it is the last. */
export class EncryptStream extends Transform {
	private readonly queue = new ByteQueue();
	private readonly key: Buffer;
	private readonly header: Header;
	private index = 0;
	private started = false;

	constructor(master: Buffer, blockSize = DEFAULT_BLOCK_SIZE) {
		super();
		this.header = makeHeader(blockSize);
		this.key = objectKey(master, this.header.salt);
	}

	private start(): void {
		if (!this.started) {
			this.started = true;
			this.push(this.header.raw);
		}
	}

	override _transform(chunk: Buffer | string, encoding: BufferEncoding, cb: TransformCallback): void {
		try {
			this.start();
			this.queue.push(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk);
			const B = this.header.blockSize;
			// Strictly more than a block: the block taken is not the last one.
			while (this.queue.length > B) this.push(encryptBlock(this.key, this.header.raw, this.index++, false, this.queue.take(B)));
			cb();
		} catch (err) {
			cb(err as Error);
		}
	}

	override _flush(cb: TransformCallback): void {
		try {
			this.start();
			this.push(encryptBlock(this.key, this.header.raw, this.index++, true, this.queue.take(this.queue.length)));
			cb();
		} catch (err) {
			cb(err as Error);
		}
	}
}

export interface DecryptOptions {
	/** Known header (range reads); otherwise it is read from the start of the stream. */
	header?: Header;
	/** Index of the first block in the stream (range reads). */
	firstIndex?: number;
	/** Index of the last block the stream must contain (range reads); otherwise the stream runs to the object's end. */
	lastIndex?: number;
	/** Index of the object's final block (range reads); otherwise the last block of the stream is the final one. */
	finalIndex?: number;
	/** Plaintext bytes to drop at the start, and the most to return. */
	skip?: number;
	limit?: number;
}

/** Header + encrypted blocks in, plaintext out; every block is authenticated before any of its bytes is emitted. */
export class DecryptStream extends Transform {
	private readonly queue = new ByteQueue();
	private header?: Header;
	private key?: Buffer;
	private index: number;
	private skip: number;
	private remaining: number;

	constructor(
		private readonly master: Buffer,
		private readonly opts: DecryptOptions = {},
	) {
		super();
		this.index = opts.firstIndex ?? 0;
		this.skip = opts.skip ?? 0;
		this.remaining = opts.limit ?? Number.POSITIVE_INFINITY;
		if (opts.header) this.useHeader(opts.header);
	}

	private useHeader(h: Header): void {
		this.header = h;
		this.key = objectKey(this.master, h.salt);
	}

	private output(plain: Buffer): void {
		let out = plain;
		if (this.skip > 0) {
			const s = Math.min(this.skip, out.length);
			out = out.subarray(s);
			this.skip -= s;
		}
		if (out.length > this.remaining) out = out.subarray(0, this.remaining);
		this.remaining -= out.length;
		if (out.length) this.push(out);
	}

	private block(data: Buffer, final: boolean): void {
		const h = this.header as Header;
		const index = this.index++;
		if (this.opts.lastIndex !== undefined && index > this.opts.lastIndex) throw new IntegrityError("more data than expected");
		const plain = decryptBlock(this.key as Buffer, h.raw, index, final, data);
		if (final && plain.length === 0 && index > 0) throw new IntegrityError("empty final block");
		if (!final && plain.length !== h.blockSize) throw new IntegrityError(`block ${index} has a wrong length`);
		this.output(plain);
	}

	private isFinal(index: number, endOfStream: boolean): boolean {
		return this.opts.finalIndex === undefined ? endOfStream : index === this.opts.finalIndex;
	}

	override _transform(chunk: Buffer | string, encoding: BufferEncoding, cb: TransformCallback): void {
		try {
			this.queue.push(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk);
			if (!this.header) {
				if (this.queue.length < HEADER_SIZE) return cb();
				this.useHeader(parseHeader(this.queue.take(HEADER_SIZE)));
			}
			const full = (this.header as Header).blockSize + TAG_SIZE;
			while (this.queue.length > full) this.block(this.queue.take(full), this.isFinal(this.index, false));
			cb();
		} catch (err) {
			cb(err as Error);
		}
	}

	override _flush(cb: TransformCallback): void {
		try {
			if (!this.header) throw new IntegrityError("the object is shorter than the encryption header");
			if (this.queue.length === 0) throw new IntegrityError("the object has no data block (truncated)");
			this.block(this.queue.take(this.queue.length), this.isFinal(this.index, true));
			if (this.opts.lastIndex !== undefined && this.index !== this.opts.lastIndex + 1) throw new IntegrityError("the object is truncated");
			cb();
		} catch (err) {
			cb(err as Error);
		}
	}
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
	return Buffer.concat(chunks);
}

/** Pipes `src` into `dest` and returns `dest`; an error on either side destroys both (the reader sees it). */
function piped<T extends Transform>(src: NodeJS.ReadableStream, dest: T): T {
	pipeline(src, dest).catch(() => undefined);
	return dest;
}

interface UploadManifest {
	key: string;
	created: number;
}

export class EncryptedStore implements ObjectStore {
	readonly kind: "LOCAL" | "S3";
	readonly encrypted = true;
	private readonly blockSize: number;

	constructor(
		readonly inner: ObjectStore,
		private readonly master: Buffer,
		opts: { blockSize?: number } = {},
	) {
		if (!Buffer.isBuffer(master) || master.length !== 32) throw new BadRequestError("An encryption key must be 32 bytes (256 bits)");
		this.kind = inner.kind;
		this.blockSize = opts.blockSize ?? DEFAULT_BLOCK_SIZE;
		makeHeader(this.blockSize); // validates it
	}

	/** Keys of callers: anything but the multipart staging area. */
	private userKey(key: string): string {
		if (typeof key === "string" && (key === ENCRYPTED_UPLOADS || key.startsWith(`${ENCRYPTED_UPLOADS}/`))) {
			throw new BadRequestError(`Invalid key: reserved name ${ENCRYPTED_UPLOADS}`);
		}
		return key;
	}

	async put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		return this.putRaw(this.userKey(key), body, opts);
	}

	private async putRaw(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		checkKey(key);
		const hasher = new HashingStream(opts?.size);
		const enc = new EncryptStream(this.master, this.blockSize);
		let sourceError: unknown;
		const feeding = pipeline(body, hasher, enc).catch((err: unknown) => {
			sourceError ??= err;
		});
		const size = opts?.size !== undefined ? cipherSize(opts.size, this.blockSize) : undefined;
		try {
			await this.inner.put(key, enc, { size, contentType: opts?.contentType });
		} catch (err) {
			// If the body failed (client went away, wrong length), that is the real cause; the store's error follows from it.
			const bodyFailed = enc.destroyed;
			if (!bodyFailed) enc.destroy();
			await feeding;
			const premature = (sourceError as NodeJS.ErrnoException | undefined)?.code === "ERR_STREAM_PREMATURE_CLOSE";
			throw bodyFailed && sourceError && !premature ? sourceError : err;
		}
		await feeding;
		if (sourceError) throw sourceError; // cannot happen: the inner store only commits a complete stream
		return { size: hasher.bytes, md5: hasher.md5 };
	}

	private async readHeader(key: string): Promise<Header> {
		let raw: Buffer;
		try {
			raw = await readAll(await this.inner.get(key, { start: 0, end: HEADER_SIZE - 1 }));
		} catch (err) {
			if (err instanceof RangeNotSatisfiableError) throw new IntegrityError("the object is empty");
			throw err;
		}
		return parseHeader(raw);
	}

	async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		return this.getRaw(this.userKey(key), range);
	}

	private async getRaw(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		if (range) checkRange(range);
		if (!range) return piped(await this.inner.get(key), new DecryptStream(this.master));
		const info = await this.inner.head(key);
		if (!info) throw new NotFoundError(`Object not found: ${key}`);
		const header = await this.readHeader(key);
		const B = header.blockSize;
		const { size, blocks } = plainLayout(info.size, B);
		if (range.start >= size) throw new RangeNotSatisfiableError(`Range start ${range.start} is past the end of a ${size}-byte object`);
		const end = Math.min(range.end, size - 1);
		const first = Math.floor(range.start / B);
		const last = Math.floor(end / B);
		const cStart = HEADER_SIZE + first * (B + TAG_SIZE);
		const cEnd = Math.min(info.size, HEADER_SIZE + (last + 1) * (B + TAG_SIZE)) - 1;
		const src = await this.inner.get(key, { start: cStart, end: cEnd });
		return piped(
			src,
			new DecryptStream(this.master, { header, firstIndex: first, lastIndex: last, finalIndex: blocks - 1, skip: range.start - first * B, limit: end - range.start + 1 }),
		);
	}

	/** Plaintext size of a stored object of `cipher` bytes (reads its header for the block size). */
	private async plainSize(key: string, cipher: number): Promise<number> {
		return plainLayout(cipher, (await this.readHeader(key)).blockSize).size;
	}

	async head(key: string): Promise<ObjectInfo | null> {
		const info = await this.inner.head(this.userKey(key));
		if (!info) return null;
		return { key, size: await this.plainSize(key, info.size), mtime: info.mtime };
	}

	async delete(key: string): Promise<void> {
		await this.inner.delete(this.userKey(key));
	}

	/** Server-side copy of the ciphertext: the object key is derived from the object's own header, not its name. */
	async copy(from: string, to: string): Promise<{ size: number }> {
		const out = await this.inner.copy(this.userKey(from), this.userKey(to));
		return { size: await this.plainSize(to, out.size) };
	}

	/** Objects with their plaintext sizes; objects that are not in the encrypted format cannot be read here and are left out. */
	async *list(prefix: string): AsyncIterable<ObjectInfo> {
		for await (const o of this.inner.list(prefix)) {
			if (o.key === ENCRYPTED_UPLOADS || o.key.startsWith(`${ENCRYPTED_UPLOADS}/`)) continue;
			let size: number;
			try {
				size = await this.plainSize(o.key, o.size);
			} catch (err) {
				if (err instanceof IntegrityError || err instanceof NotFoundError) continue;
				throw err;
			}
			yield { key: o.key, size, mtime: o.mtime };
		}
	}

	async mkdir(key: string): Promise<void> {
		await this.inner.mkdir(this.userKey(key));
	}

	async rmdir(key: string): Promise<void> {
		await this.inner.rmdir(this.userKey(key));
	}

	// ---- multipart: parts staged encrypted, re-framed into one object at completion ----

	private stagingOf(uploadId: string): string {
		if (typeof uploadId !== "string" || !UPLOAD_ID.test(uploadId)) throw new NotFoundError("NoSuchUpload: unknown upload id");
		return `${ENCRYPTED_UPLOADS}/${uploadId}`;
	}

	private async readJson<T>(key: string): Promise<T | null> {
		try {
			return JSON.parse((await readAll(await this.getRaw(key))).toString("utf8")) as T;
		} catch (err) {
			if (err instanceof NotFoundError) return null;
			throw err;
		}
	}

	private async manifest(uploadId: string): Promise<{ dir: string; manifest: UploadManifest }> {
		const dir = this.stagingOf(uploadId);
		const manifest = await this.readJson<UploadManifest>(`${dir}/manifest`);
		if (!manifest) throw new NotFoundError("NoSuchUpload: the upload does not exist or was completed/aborted");
		checkKey(manifest.key);
		return { dir, manifest };
	}

	private async putJson(key: string, value: unknown): Promise<void> {
		const buf = Buffer.from(JSON.stringify(value));
		await this.putRaw(key, Readable.from([buf]), { size: buf.length });
	}

	async createMultipart(key: string): Promise<string> {
		checkKey(this.userKey(key));
		const uploadId = randomUUID();
		const manifest: UploadManifest = { key, created: Date.now() };
		await this.putJson(`${this.stagingOf(uploadId)}/manifest`, manifest);
		return uploadId;
	}

	async putPart(uploadId: string, partNumber: number, body: NodeJS.ReadableStream, size?: number): Promise<{ etag: string; size: number }> {
		checkPartNumber(partNumber);
		const { dir } = await this.manifest(uploadId);
		const out = await this.putRaw(`${dir}/${partNumber}`, body, { size });
		await this.putJson(`${dir}/${partNumber}.json`, { md5: out.md5, size: out.size });
		// Aborted or completed meanwhile: do not leave the part behind.
		if (!(await this.inner.head(`${dir}/manifest`))) {
			await this.inner.rmdir(dir).catch(() => undefined);
			throw new NotFoundError("NoSuchUpload: the upload was completed or aborted meanwhile");
		}
		return { etag: quoteEtag(out.md5), size: out.size };
	}

	async listParts(uploadId: string): Promise<MultipartPart[]> {
		const { dir } = await this.manifest(uploadId);
		const parts: MultipartPart[] = [];
		for await (const o of this.inner.list(`${dir}/`)) {
			const m = /\/([1-9][0-9]{0,4})\.json$/.exec(o.key);
			if (!m) continue;
			const meta = await this.readJson<{ md5: string; size: number }>(o.key);
			if (meta) parts.push({ partNumber: Number(m[1]), etag: quoteEtag(meta.md5), size: meta.size });
		}
		return parts.sort((a, b) => a.partNumber - b.partNumber);
	}

	async completeMultipart(uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number; md5?: string; etag: string }> {
		const list = checkCompletionParts(parts);
		const { dir, manifest } = await this.manifest(uploadId);
		for (const p of list) {
			const meta = await this.readJson<{ md5: string }>(`${dir}/${p.partNumber}.json`);
			if (!meta) throw new BadRequestError(`InvalidPart: part ${p.partNumber} was not uploaded`);
			if (meta.md5 !== bareEtag(p.etag)) throw new BadRequestError(`InvalidPart: ETag of part ${p.partNumber} does not match`);
		}
		const digests: Buffer[] = [];
		const getRaw = (key: string) => this.getRaw(key);
		// Decrypted (and authenticated) parts, checked against their ETags before the new object is committed.
		async function* concat(): AsyncGenerator<Buffer> {
			for (const p of list) {
				const h = createHash("md5");
				for await (const chunk of (await getRaw(`${dir}/${p.partNumber}`)) as AsyncIterable<Buffer>) {
					h.update(chunk);
					yield chunk;
				}
				const d = h.digest();
				if (d.toString("hex") !== bareEtag(p.etag)) throw new BadRequestError(`InvalidPart: ETag of part ${p.partNumber} does not match`);
				digests.push(d);
			}
		}
		const out = await this.putRaw(manifest.key, Readable.from(concat()));
		await this.inner.rmdir(dir);
		const etag = `"${createHash("md5").update(Buffer.concat(digests)).digest("hex")}-${list.length}"`;
		return { size: out.size, md5: out.md5, etag };
	}

	async abortMultipart(uploadId: string): Promise<void> {
		await this.inner.rmdir(this.stagingOf(uploadId));
	}

	async freeSpace(): Promise<number> {
		// Sealed content is a few bytes per 64 KiB block larger: the inner store's room is close enough.
		if (!this.inner.freeSpace) return Number.POSITIVE_INFINITY;
		return this.inner.freeSpace();
	}
}
