// A small streaming ZIP writer and a random-access ZIP reader, enough for the compress / extract jobs.
// Writer: entries are streamed (stored or deflated) behind a local header with the "data descriptor" flag, so
// sizes and CRCs are written after the data and nothing is buffered; ZIP64 records are added when sizes,
// offsets or the entry count need them. Reader: the central directory is read from the end of the archive in
// windows, entries are streamed from their offset and checked (CRC, size) while they are read.
import { crc32, createDeflateRaw, createInflateRaw } from "node:zlib";
import { PassThrough, Readable, Transform, pipeline, type TransformCallback } from "node:stream";
import { BadRequestError } from "../errors";

const SIG_LOCAL = 0x04034b50;
const SIG_DESCRIPTOR = 0x08074b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const FLAG_DESCRIPTOR = 0x0008;
const FLAG_UTF8 = 0x0800;
const FLAG_ENCRYPTED = 0x0001;
export const METHOD_STORE = 0;
export const METHOD_DEFLATE = 8;

/** Extensions whose content is already compressed: stored as is. */
const COMPRESSED = /\.(zip|gz|tgz|bz2|xz|zst|7z|rar|jpe?g|png|gif|webp|heic|avif|mp3|mp4|m4a|m4v|mov|mkv|avi|webm|ogg|flac|docx|xlsx|pptx|odt|ods|odp|jar|apk|pdf)$/i;

export interface ZipEntryOptions {
	/** Modification time (Date or unix ms); now by default. */
	mtime?: Date | number;
	/** Unix permission bits (0o644 files, 0o755 folders by default). */
	mode?: number;
	/** "auto" (default): deflate unless the name looks already compressed. */
	method?: "store" | "deflate" | "auto";
	/** Expected size, if known: a file announced past 4 GiB gets ZIP64 fields in its local header too. */
	size?: number;
}

interface CentralRecord {
	name: Buffer;
	flags: number;
	method: number;
	dosTime: number;
	dosDate: number;
	unixTime: number;
	crc: number;
	compressedSize: number;
	size: number;
	offset: number;
	external: number;
	zip64Local: boolean;
}

function dosDateTime(d: Date): { time: number; date: number } {
	const year = d.getFullYear();
	if (year < 1980) return { time: 0, date: (1 << 5) | 1 };
	if (year > 2107) return { time: (23 << 11) | (59 << 5) | 29, date: (127 << 9) | (12 << 5) | 31 };
	return {
		time: (d.getHours() << 11) | (d.getMinutes() << 5) | Math.floor(d.getSeconds() / 2),
		date: ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
	};
}

/** The extended timestamp extra field (0x5455): modification time in unix seconds. */
function timeExtra(unix: number): Buffer {
	const b = Buffer.alloc(9);
	b.writeUInt16LE(0x5455, 0);
	b.writeUInt16LE(5, 2);
	b.writeUInt8(1, 4);
	b.writeUInt32LE(Math.max(0, Math.min(MAX32, unix)) >>> 0, 5);
	return b;
}

function u64(b: Buffer, v: number, at: number): void {
	b.writeBigUInt64LE(BigInt(v), at);
}

export class ZipClosedError extends Error {
	constructor() {
		super("The archive output was closed before the archive was complete");
	}
}

/**
 * Streams a ZIP archive to `output` (read it, e.g. hand it to `store.put`). Entries are added one at a time:
 * await each `addFile` / `addDirectory`, then `finish()`. Backpressure from the reader of `output` is honoured.
 */
export class ZipWriter {
	readonly output: PassThrough;
	private offset = 0;
	private readonly records: CentralRecord[] = [];
	private readonly names = new Set<string>();
	private busy = false;
	private done = false;

	constructor(private readonly opts: { level?: number; forceZip64?: boolean; signal?: AbortSignal } = {}) {
		this.output = new PassThrough({ highWaterMark: 1 << 20 });
		// The reader reports its own errors; an abort after it went away must not crash the process.
		this.output.on("error", () => undefined);
	}

	/** Bytes written so far. */
	get bytes(): number {
		return this.offset;
	}

	get entryCount(): number {
		return this.records.length;
	}

	has(name: string): boolean {
		return this.names.has(name);
	}

	async addDirectory(name: string, opts: ZipEntryOptions = {}): Promise<void> {
		const n = name.endsWith("/") ? name : `${name}/`;
		await this.entry(n, null, { ...opts, method: "store" }, ((opts.mode ?? 0o755) | 0o040000) * 0x10000 + 0x10);
	}

	async addFile(name: string, source: NodeJS.ReadableStream | AsyncIterable<Buffer | Uint8Array | string> | Buffer | string, opts: ZipEntryOptions = {}): Promise<{ size: number; compressedSize: number; crc: number }> {
		if (name.endsWith("/")) throw new BadRequestError(`A file entry name cannot end with "/": ${name}`);
		const src = typeof source === "string" || Buffer.isBuffer(source) ? Readable.from([Buffer.from(source)]) : source;
		return this.entry(name, src, opts, ((opts.mode ?? 0o644) | 0o100000) * 0x10000);
	}

	/** Writes the central directory and ends `output`; returns the archive size. */
	async finish(): Promise<number> {
		this.enter();
		try {
			const cdStart = this.offset;
			for (const r of this.records) await this.write(this.centralHeader(r));
			const cdSize = this.offset - cdStart;
			const count = this.records.length;
			const needs64 = this.opts.forceZip64 || count > MAX16 - 1 || cdSize >= MAX32 || cdStart >= MAX32;
			if (needs64) {
				const z = Buffer.alloc(56);
				z.writeUInt32LE(SIG_ZIP64_EOCD, 0);
				u64(z, 44, 4);
				z.writeUInt16LE((3 << 8) | 45, 12);
				z.writeUInt16LE(45, 14);
				z.writeUInt32LE(0, 16);
				z.writeUInt32LE(0, 20);
				u64(z, count, 24);
				u64(z, count, 32);
				u64(z, cdSize, 40);
				u64(z, cdStart, 48);
				const zipEocdAt = this.offset;
				await this.write(z);
				const loc = Buffer.alloc(20);
				loc.writeUInt32LE(SIG_ZIP64_LOCATOR, 0);
				loc.writeUInt32LE(0, 4);
				u64(loc, zipEocdAt, 8);
				loc.writeUInt32LE(1, 16);
				await this.write(loc);
			}
			const e = Buffer.alloc(22);
			e.writeUInt32LE(SIG_EOCD, 0);
			e.writeUInt16LE(0, 4);
			e.writeUInt16LE(0, 6);
			e.writeUInt16LE(needs64 ? MAX16 : count, 8);
			e.writeUInt16LE(needs64 ? MAX16 : count, 10);
			e.writeUInt32LE(needs64 ? MAX32 : cdSize, 12);
			e.writeUInt32LE(needs64 ? MAX32 : cdStart, 16);
			e.writeUInt16LE(0, 20);
			await this.write(e);
			this.done = true;
			this.output.end();
			return this.offset;
		} finally {
			this.busy = false;
		}
	}

	/** Ends `output` with an error (the consumer, e.g. a store upload, then discards what it received). */
	abort(err: Error): void {
		this.done = true;
		this.output.destroy(err);
	}

	private enter(): void {
		if (this.done) throw new Error("The archive is already finished");
		if (this.busy) throw new Error("Entries must be added one at a time");
		this.busy = true;
	}

	private async entry(name: string, source: NodeJS.ReadableStream | AsyncIterable<Buffer | Uint8Array | string> | null, opts: ZipEntryOptions, external: number): Promise<{ size: number; compressedSize: number; crc: number }> {
		if (!name || name.startsWith("/") || name.split("/").some((s) => s === "..")) throw new BadRequestError(`Invalid entry name ${name}`);
		if (this.names.has(name)) throw new BadRequestError(`Duplicate entry ${name}`);
		this.enter();
		try {
			const nameBuf = Buffer.from(name, "utf8");
			if (nameBuf.length > MAX16) throw new BadRequestError("Entry name too long");
			const mtime = opts.mtime === undefined ? new Date() : new Date(opts.mtime);
			const { time, date } = dosDateTime(mtime);
			const unixTime = Math.floor(mtime.getTime() / 1000);
			const method = source === null || opts.method === "store" || (opts.method !== "deflate" && COMPRESSED.test(name)) ? METHOD_STORE : METHOD_DEFLATE;
			const zip64Local = !!this.opts.forceZip64 || (opts.size ?? 0) > 0xffff0000;
			const flags = FLAG_UTF8 | (source === null ? 0 : FLAG_DESCRIPTOR);
			const rec: CentralRecord = { name: nameBuf, flags, method, dosTime: time, dosDate: date, unixTime, crc: 0, compressedSize: 0, size: 0, offset: this.offset, external, zip64Local };

			const extras = [timeExtra(unixTime)];
			if (zip64Local) {
				const z = Buffer.alloc(20);
				z.writeUInt16LE(0x0001, 0);
				z.writeUInt16LE(16, 2);
				extras.push(z); // sizes are zero here: they follow in the data descriptor
			}
			const extra = Buffer.concat(extras);
			const h = Buffer.alloc(30);
			h.writeUInt32LE(SIG_LOCAL, 0);
			h.writeUInt16LE(zip64Local ? 45 : 20, 4);
			h.writeUInt16LE(flags, 6);
			h.writeUInt16LE(method, 8);
			h.writeUInt16LE(time, 10);
			h.writeUInt16LE(date, 12);
			h.writeUInt32LE(0, 14);
			h.writeUInt32LE(zip64Local ? MAX32 : 0, 18);
			h.writeUInt32LE(zip64Local ? MAX32 : 0, 22);
			h.writeUInt16LE(nameBuf.length, 26);
			h.writeUInt16LE(extra.length, 28);
			await this.write(Buffer.concat([h, nameBuf, extra]));

			if (source !== null) {
				const start = this.offset;
				let crc = 0;
				let size = 0;
				const signal = this.opts.signal;
				async function* tap(src: AsyncIterable<Buffer | Uint8Array | string>): AsyncGenerator<Buffer> {
					for await (const c of src) {
						if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error("Aborted");
						const b = typeof c === "string" ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
						crc = crc32(b, crc);
						size += b.length;
						yield b;
					}
				}
				const raw = Readable.from(tap(source as AsyncIterable<Buffer>), { objectMode: false });
				const body: AsyncIterable<Buffer> = method === METHOD_DEFLATE ? pipeline(raw, createDeflateRaw({ level: this.opts.level ?? 6 }), () => undefined) : raw;
				try {
					for await (const chunk of body) await this.write(chunk);
				} finally {
					raw.destroy();
				}
				rec.crc = crc >>> 0;
				rec.size = size;
				rec.compressedSize = this.offset - start;
				const big = zip64Local || size >= MAX32 || rec.compressedSize >= MAX32;
				const d = Buffer.alloc(big ? 24 : 16);
				d.writeUInt32LE(SIG_DESCRIPTOR, 0);
				d.writeUInt32LE(rec.crc, 4);
				if (big) {
					u64(d, rec.compressedSize, 8);
					u64(d, size, 16);
				} else {
					d.writeUInt32LE(rec.compressedSize, 8);
					d.writeUInt32LE(size, 12);
				}
				await this.write(d);
			}
			this.records.push(rec);
			this.names.add(name);
			return { size: rec.size, compressedSize: rec.compressedSize, crc: rec.crc };
		} finally {
			this.busy = false;
		}
	}

	private centralHeader(r: CentralRecord): Buffer {
		const z64: Buffer[] = [];
		const force = !!this.opts.forceZip64 || r.zip64Local;
		const sizeOver = force || r.size >= MAX32;
		const compOver = force || r.compressedSize >= MAX32;
		const offOver = force || r.offset >= MAX32;
		for (const [over, v] of [
			[sizeOver, r.size],
			[compOver, r.compressedSize],
			[offOver, r.offset],
		] as const) {
			if (!over) continue;
			const b = Buffer.alloc(8);
			u64(b, v, 0);
			z64.push(b);
		}
		const extras = [timeExtra(r.unixTime)];
		if (z64.length) {
			const head = Buffer.alloc(4);
			head.writeUInt16LE(0x0001, 0);
			head.writeUInt16LE(z64.length * 8, 2);
			extras.push(head, ...z64);
		}
		const extra = Buffer.concat(extras);
		const version = z64.length ? 45 : 20;
		const h = Buffer.alloc(46);
		h.writeUInt32LE(SIG_CENTRAL, 0);
		h.writeUInt16LE((3 << 8) | version, 4);
		h.writeUInt16LE(version, 6);
		h.writeUInt16LE(r.flags, 8);
		h.writeUInt16LE(r.method, 10);
		h.writeUInt16LE(r.dosTime, 12);
		h.writeUInt16LE(r.dosDate, 14);
		h.writeUInt32LE(r.crc, 16);
		h.writeUInt32LE(compOver ? MAX32 : r.compressedSize, 20);
		h.writeUInt32LE(sizeOver ? MAX32 : r.size, 24);
		h.writeUInt16LE(r.name.length, 28);
		h.writeUInt16LE(extra.length, 30);
		h.writeUInt16LE(0, 32);
		h.writeUInt16LE(0, 34);
		h.writeUInt16LE(0, 36);
		h.writeUInt32LE(r.external >>> 0, 38);
		h.writeUInt32LE(offOver ? MAX32 : r.offset, 42);
		return Buffer.concat([h, r.name, extra]);
	}

	private async write(buf: Buffer): Promise<void> {
		this.offset += buf.length;
		await writeWithBackpressure(this.output, buf);
	}
}

/** Writes to an archive's output, waiting for the reader to drain it; a closed output ends the archive. */
export async function writeWithBackpressure(out: NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean }, buf: Buffer): Promise<void> {
	if (out.destroyed || out.writableEnded) throw new ZipClosedError();
	if (out.write(buf)) return;
	await new Promise<void>((resolve, reject) => {
		const cleanup = () => {
			out.off("drain", ok);
			out.off("close", closed);
			out.off("error", closed);
		};
		const ok = () => {
			cleanup();
			resolve();
		};
		const closed = () => {
			cleanup();
			reject(new ZipClosedError());
		};
		out.on("drain", ok);
		out.on("close", closed);
		out.on("error", closed);
	});
}

// ---------------------------------------------------------------------------------------------------------
// Reader

/** Random access to the bytes of an archive (a store object read by ranges). */
export interface RandomAccess {
	size: number;
	read(start: number, length: number): Promise<Buffer>;
	stream(start: number, length: number): Promise<NodeJS.ReadableStream>;
}

export interface ZipEntry {
	/** The name as stored (decoded). */
	name: string;
	dir: boolean;
	symlink: boolean;
	encrypted: boolean;
	method: number;
	crc: number;
	compressedSize: number;
	size: number;
	localOffset: number;
	mtime: Date;
	mode: number;
}

export class ZipFormatError extends BadRequestError {}

/** A RandomAccess over a Buffer (tests, small archives). */
export function bufferSource(buf: Buffer): RandomAccess {
	return {
		size: buf.length,
		async read(start, length) {
			return buf.subarray(start, start + length);
		},
		async stream(start, length) {
			return Readable.from([buf.subarray(start, start + length)]);
		},
	};
}

const CP437 =
	"ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0";
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function decodeName(b: Buffer, utf8: boolean): string {
	if (utf8) return b.toString("utf8");
	try {
		return strictUtf8.decode(b); // most tools write UTF-8 without setting the flag
	} catch {
		let s = "";
		for (const c of b) s += c < 0x80 ? String.fromCharCode(c) : CP437[c - 0x80];
		return s;
	}
}

function dosToDate(time: number, date: number): Date {
	return new Date(((date >> 9) & 0x7f) + 1980, ((date >> 5) & 0x0f) - 1, date & 0x1f, (time >> 11) & 0x1f, (time >> 5) & 0x3f, (time & 0x1f) * 2);
}

/** Reads windows of a byte range in order. */
class Cursor {
	private buf: Buffer = Buffer.alloc(0);
	private pos: number;
	constructor(
		private readonly src: RandomAccess,
		start: number,
		private readonly end: number,
		private readonly window = 1 << 20,
	) {
		this.pos = start;
	}
	get remaining(): number {
		return this.end - this.pos + this.buf.length;
	}
	async take(n: number): Promise<Buffer> {
		while (this.buf.length < n) {
			if (this.pos >= this.end) throw new ZipFormatError("The archive's central directory is truncated");
			const len = Math.min(Math.max(this.window, n - this.buf.length), this.end - this.pos);
			const more = await this.src.read(this.pos, len);
			if (more.length !== len) throw new ZipFormatError("The archive is truncated");
			this.pos += len;
			this.buf = this.buf.length ? Buffer.concat([this.buf, more]) : more;
		}
		const out = this.buf.subarray(0, n);
		this.buf = this.buf.subarray(n);
		return out;
	}
}

export interface ZipDirectory {
	count: number;
	entries(): AsyncGenerator<ZipEntry>;
}

/** Finds the central directory of an archive. */
export async function openZip(src: RandomAccess, limits: { maxEntries?: number } = {}): Promise<ZipDirectory> {
	if (src.size < 22) throw new ZipFormatError("Not a zip archive (too small)");
	const tailLen = Math.min(src.size, 22 + MAX16 + 20);
	const tailStart = src.size - tailLen;
	const tail = await src.read(tailStart, tailLen);
	let at = -1;
	for (let i = tail.length - 22; i >= 0; i--) {
		if (tail.readUInt32LE(i) === SIG_EOCD && i + 22 + tail.readUInt16LE(i + 20) <= tail.length) {
			at = i;
			break;
		}
	}
	if (at < 0) throw new ZipFormatError("Not a zip archive (no end of central directory)");
	let count = tail.readUInt16LE(at + 10);
	let cdSize = tail.readUInt32LE(at + 12);
	let cdOffset = tail.readUInt32LE(at + 16);
	if (tail.readUInt16LE(at + 4) !== 0 || tail.readUInt16LE(at + 6) !== 0) throw new ZipFormatError("Multi-volume archives are not supported");
	let cdEnd = tailStart + at;
	if (at >= 20 && tail.readUInt32LE(at - 20) === SIG_ZIP64_LOCATOR) {
		const z64At = Number(tail.readBigUInt64LE(at - 12));
		if (z64At + 56 > src.size) throw new ZipFormatError("Corrupt ZIP64 locator");
		const z = await src.read(z64At, 56);
		if (z.readUInt32LE(0) !== SIG_ZIP64_EOCD) throw new ZipFormatError("Corrupt ZIP64 end of central directory");
		count = Number(z.readBigUInt64LE(32));
		cdSize = Number(z.readBigUInt64LE(40));
		cdOffset = Number(z.readBigUInt64LE(48));
		cdEnd = z64At;
	}
	if (cdOffset + cdSize > cdEnd) throw new ZipFormatError("Corrupt central directory (out of the archive)");
	if (limits.maxEntries !== undefined && count > limits.maxEntries) throw new ZipFormatError(`The archive has ${count} entries, more than the ${limits.maxEntries} allowed`);
	return {
		count,
		async *entries() {
			const cur = new Cursor(src, cdOffset, cdOffset + cdSize);
			for (let i = 0; i < count; i++) {
				const h = await cur.take(46);
				if (h.readUInt32LE(0) !== SIG_CENTRAL) throw new ZipFormatError("Corrupt central directory entry");
				const madeBy = h.readUInt16LE(4) >> 8;
				const flags = h.readUInt16LE(8);
				const method = h.readUInt16LE(10);
				const nameLen = h.readUInt16LE(28);
				const extraLen = h.readUInt16LE(30);
				const commentLen = h.readUInt16LE(32);
				const external = h.readUInt32LE(38);
				const rest = await cur.take(nameLen + extraLen + commentLen);
				const name = decodeName(rest.subarray(0, nameLen), (flags & FLAG_UTF8) !== 0);
				let size = h.readUInt32LE(24);
				let compressedSize = h.readUInt32LE(20);
				let localOffset = h.readUInt32LE(42);
				let mtime = dosToDate(h.readUInt16LE(12), h.readUInt16LE(14));
				const extra = rest.subarray(nameLen, nameLen + extraLen);
				for (let p = 0; p + 4 <= extra.length; ) {
					const id = extra.readUInt16LE(p);
					const len = extra.readUInt16LE(p + 2);
					const data = extra.subarray(p + 4, p + 4 + len);
					if (id === 0x0001) {
						let q = 0;
						const next = () => {
							if (q + 8 > data.length) throw new ZipFormatError("Corrupt ZIP64 extra field");
							const v = Number(data.readBigUInt64LE(q));
							q += 8;
							return v;
						};
						if (size === MAX32) size = next();
						if (compressedSize === MAX32) compressedSize = next();
						if (localOffset === MAX32) localOffset = next();
					} else if (id === 0x5455 && len >= 5 && data[0] & 1) {
						mtime = new Date(data.readUInt32LE(1) * 1000);
					}
					p += 4 + len;
				}
				const unixMode = madeBy === 3 ? external >>> 16 : 0;
				const dir = name.endsWith("/") || (unixMode & 0o170000) === 0o040000 || (external & 0x10) !== 0;
				yield {
					name,
					dir,
					symlink: (unixMode & 0o170000) === 0o120000,
					encrypted: (flags & FLAG_ENCRYPTED) !== 0,
					method,
					crc: h.readUInt32LE(16),
					compressedSize,
					size,
					localOffset,
					mtime,
					mode: unixMode & 0o7777,
				};
			}
		},
	};
}

/**
 * Checks the CRC and the size of an entry's content as it flows, and stops the inflater at the declared size.
 * The latest chunk is held back until the end is checked: a reader only ever gets all the declared bytes of an
 * intact entry, so one that was announced the size (an HTTP answer's Content-Length) sees any failure as a short
 * body instead of a complete-looking wrong one.
 */
class EntryCheck extends Transform {
	private crc = 0;
	private n = 0;
	private held: Buffer | undefined;
	constructor(private readonly entry: ZipEntry) {
		super();
	}
	_transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
		this.n += chunk.length;
		if (this.n > this.entry.size) return cb(new ZipFormatError(`${this.entry.name}: more data than its declared size of ${this.entry.size} bytes, the archive is corrupt`));
		this.crc = crc32(chunk, this.crc);
		const previous = this.held;
		this.held = chunk;
		cb(null, previous);
	}
	_flush(cb: TransformCallback): void {
		if (this.n !== this.entry.size) return cb(new ZipFormatError(`${this.entry.name}: truncated content`));
		if (this.crc >>> 0 !== this.entry.crc) return cb(new ZipFormatError(`${this.entry.name}: CRC mismatch, the archive is corrupt`));
		cb(null, this.held);
	}
}

/** The content of a file entry, decompressed and checked (errors are emitted on the stream). */
export async function openEntry(src: RandomAccess, entry: ZipEntry): Promise<Readable> {
	if (entry.encrypted) throw new ZipFormatError(`${entry.name}: encrypted entries are not supported`);
	if (entry.method !== METHOD_STORE && entry.method !== METHOD_DEFLATE) throw new ZipFormatError(`${entry.name}: compression method ${entry.method} is not supported`);
	if (entry.localOffset + 30 > src.size) throw new ZipFormatError(`${entry.name}: offset out of the archive`);
	const h = await src.read(entry.localOffset, 30);
	if (h.readUInt32LE(0) !== SIG_LOCAL) throw new ZipFormatError(`${entry.name}: corrupt local header`);
	const dataStart = entry.localOffset + 30 + h.readUInt16LE(26) + h.readUInt16LE(28);
	if (dataStart + entry.compressedSize > src.size) throw new ZipFormatError(`${entry.name}: content out of the archive`);
	if (entry.method === METHOD_STORE && entry.compressedSize !== entry.size) throw new ZipFormatError(`${entry.name}: stored size mismatch`);
	const raw = entry.compressedSize === 0 ? Readable.from([]) : await src.stream(dataStart, entry.compressedSize);
	const check = new EntryCheck(entry);
	if (entry.method === METHOD_DEFLATE) return pipeline(raw, createInflateRaw(), check, () => undefined);
	return pipeline(raw, check, () => undefined);
}

/** Zip-slip guard: the entry's path relative to the extraction folder, or an error for absolute / `..` names. */
export function safeEntryPath(name: string): string {
	const n = name.replace(/\\/g, "/");
	if (n.startsWith("/") || /^[A-Za-z]:/.test(n)) throw new ZipFormatError(`Refusing archive entry with an absolute path: ${name.slice(0, 200)}`);
	const segs = n.split("/").filter((s) => s !== "" && s !== ".");
	if (segs.some((s) => s === "..")) throw new ZipFormatError(`Refusing archive entry that points outside the extraction folder: ${name.slice(0, 200)}`);
	// eslint-disable-next-line no-control-regex
	if (segs.some((s) => /[\u0000-\u001f\u007f]/.test(s))) throw new ZipFormatError(`Refusing archive entry with control characters in its name: ${JSON.stringify(name.slice(0, 200))}`);
	return segs.join("/");
}
