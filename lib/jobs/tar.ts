// Streaming tar (ustar + PAX) writer and reader, optionally gzipped, for the compress / extract jobs.
// Writer: a file's size must be known before its content (it is in the header); long or non-ASCII names and
// sizes past 8 GiB go in PAX headers. Reader: a sequential walk of the headers; each file's content is a stream
// to read (or leave) before asking for the next entry.
import { PassThrough, Readable, pipeline } from "node:stream";
import { createGzip } from "node:zlib";
import { writeWithBackpressure } from "./zip";
import { BadRequestError } from "../errors";

const BLOCK = 512;
const MAX_OCTAL_SIZE = 0o77777777777; // 11 octal digits

export class TarFormatError extends BadRequestError {}

function octal(n: number, width: number): string {
	return `${Math.max(0, Math.floor(n)).toString(8).padStart(width - 1, "0")}\0`;
}

/** "<len> key=value\n", where len counts the whole record, itself included. */
function paxRecord(key: string, value: string): Buffer {
	const body = ` ${key}=${value}\n`;
	const base = Buffer.byteLength(body);
	let len = base + String(base).length;
	if (String(len).length !== String(base).length) len = base + String(len).length;
	return Buffer.from(`${len}${body}`, "utf8");
}

function header(name: string, o: { size: number; mtime: number; mode: number; type: string }): Buffer {
	const h = Buffer.alloc(BLOCK);
	h.write(name, 0, 100, "utf8");
	h.write(octal(o.mode, 8), 100, "ascii");
	h.write(octal(0, 8), 108, "ascii");
	h.write(octal(0, 8), 116, "ascii");
	h.write(octal(o.size > MAX_OCTAL_SIZE ? 0 : o.size, 12), 124, "ascii");
	h.write(octal(o.mtime, 12), 136, "ascii");
	h.write(o.type, 156, "ascii");
	h.write("ustar\0", 257, "ascii");
	h.write("00", 263, "ascii");
	h.fill(" ", 148, 156);
	let sum = 0;
	for (const b of h) sum += b;
	h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
	return h;
}

export interface TarEntryOptions {
	/** unix ms or Date */
	mtime?: Date | number;
	mode?: number;
}

export class TarWriter {
	/** The archive (gzipped if asked). */
	readonly output: Readable;
	private readonly raw: PassThrough;
	private done = false;
	private busy = false;
	private readonly names = new Set<string>();

	constructor(private readonly opts: { gzip?: boolean; signal?: AbortSignal } = {}) {
		this.raw = new PassThrough({ highWaterMark: 1 << 20 });
		this.output = opts.gzip ? pipeline(this.raw, createGzip(), () => undefined) : this.raw;
		// The reader reports its own errors; an abort after it went away must not crash the process.
		this.output.on("error", () => undefined);
		this.raw.on("error", () => undefined);
	}

	has(name: string): boolean {
		return this.names.has(name);
	}

	async addDirectory(name: string, opts: TarEntryOptions = {}): Promise<void> {
		await this.entry(name.endsWith("/") ? name : `${name}/`, "5", 0, null, { mode: 0o755, ...opts });
	}

	/** `size` is required: tar writes it before the content (a stream of another length fails the archive). */
	async addFile(name: string, source: NodeJS.ReadableStream | AsyncIterable<Buffer | Uint8Array | string> | Buffer | string, size: number, opts: TarEntryOptions = {}): Promise<void> {
		const src = typeof source === "string" || Buffer.isBuffer(source) ? Readable.from([Buffer.from(source)]) : source;
		await this.entry(name, "0", size, src, { mode: 0o644, ...opts });
	}

	async finish(): Promise<void> {
		this.enter();
		try {
			await this.write(Buffer.alloc(BLOCK * 2));
			this.done = true;
			this.raw.end();
		} finally {
			this.busy = false;
		}
	}

	abort(err: Error): void {
		this.done = true;
		this.raw.destroy(err);
		if (this.output !== this.raw) this.output.destroy(err);
	}

	private enter(): void {
		if (this.done) throw new Error("The archive is already finished");
		if (this.busy) throw new Error("Entries must be added one at a time");
		this.busy = true;
	}

	private async entry(name: string, type: string, size: number, source: AsyncIterable<Buffer | Uint8Array | string> | NodeJS.ReadableStream | null, opts: TarEntryOptions): Promise<void> {
		if (!name || name.startsWith("/") || name.split("/").some((s) => s === "..")) throw new BadRequestError(`Invalid entry name ${name}`);
		if (this.names.has(name)) throw new BadRequestError(`Duplicate entry ${name}`);
		this.enter();
		try {
			const mtime = Math.floor((opts.mtime === undefined ? Date.now() : new Date(opts.mtime).getTime()) / 1000);
			const pax: Buffer[] = [];
			const ascii = /^[\x20-\x7e]*$/.test(name);
			if (!ascii || Buffer.byteLength(name) > 100) pax.push(paxRecord("path", name));
			if (size > MAX_OCTAL_SIZE) pax.push(paxRecord("size", String(size)));
			const safeName = name.replace(/[^\x20-\x7e]/g, "_");
			if (pax.length) {
				const data = Buffer.concat(pax);
				await this.write(header(`PaxHeaders/${safeName.slice(-80)}`, { size: data.length, mtime, mode: 0o644, type: "x" }));
				await this.write(data);
				await this.pad(data.length);
			}
			await this.write(header(safeName.slice(0, 100), { size, mtime, mode: opts.mode ?? 0o644, type }));
			this.names.add(name);
			if (!source) return;
			let n = 0;
			for await (const c of source as AsyncIterable<Buffer | Uint8Array | string>) {
				if (this.opts.signal?.aborted) throw this.opts.signal.reason instanceof Error ? this.opts.signal.reason : new Error("Aborted");
				const b = typeof c === "string" ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
				n += b.length;
				if (n > size) throw new Error(`${name} is larger than announced (${size} bytes): it changed while being archived`);
				await this.write(b);
			}
			if (n !== size) throw new Error(`${name} is smaller than announced (${n} of ${size} bytes): it changed while being archived`);
			await this.pad(size);
		} finally {
			this.busy = false;
		}
	}

	private async pad(size: number): Promise<void> {
		const rest = size % BLOCK;
		if (rest) await this.write(Buffer.alloc(BLOCK - rest));
	}

	private async write(buf: Buffer): Promise<void> {
		await writeWithBackpressure(this.raw, buf);
	}
}

// ---------------------------------------------------------------------------------------------------------
// Reader

export interface TarEntry {
	name: string;
	type: "file" | "dir" | "symlink" | "other";
	size: number;
	mtime: Date;
	mode: number;
	/** The content (empty for anything but files); read it before moving on to the next entry. */
	body: Readable;
}

const toBuffer = (c: Buffer | Uint8Array | string): Buffer => (typeof c === "string" ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength));

class ByteReader {
	private buf: Buffer = Buffer.alloc(0);
	private ended = false;
	constructor(private readonly it: AsyncIterator<Buffer | Uint8Array | string>) {}

	private async more(): Promise<boolean> {
		if (this.ended) return false;
		const r = await this.it.next();
		if (r.done) {
			this.ended = true;
			return false;
		}
		const b = toBuffer(r.value);
		this.buf = this.buf.length ? Buffer.concat([this.buf, b]) : b;
		return true;
	}

	/** Exactly n bytes, or null at a clean end of input. */
	async read(n: number): Promise<Buffer | null> {
		while (this.buf.length < n) if (!(await this.more())) break;
		if (this.buf.length === 0) return null;
		if (this.buf.length < n) throw new TarFormatError("The tar archive is truncated");
		const out = this.buf.subarray(0, n);
		this.buf = this.buf.subarray(n);
		return out;
	}

	/** `counter.left` bytes as chunks. */
	async *take(counter: { left: number }): AsyncGenerator<Buffer> {
		while (counter.left > 0) {
			if (!this.buf.length && !(await this.more())) throw new TarFormatError("The tar archive is truncated");
			const k = Math.min(counter.left, this.buf.length);
			const out = this.buf.subarray(0, k);
			this.buf = this.buf.subarray(k);
			counter.left -= k;
			yield out;
		}
	}

	async skip(n: number): Promise<void> {
		for await (const _ of this.take({ left: n })) void _;
	}
}

function cstr(b: Buffer): string {
	const z = b.indexOf(0);
	return (z < 0 ? b : b.subarray(0, z)).toString("utf8");
}

function num(b: Buffer): number {
	if (b[0] & 0x80) {
		// base-256 (GNU) for big values
		let v = b[0] & 0x3f;
		for (let i = 1; i < b.length; i++) v = v * 256 + b[i];
		return v;
	}
	const s = cstr(b).trim();
	if (s && !/^[0-7]+$/.test(s)) throw new TarFormatError("Not a tar archive (bad number in a header)");
	return s ? parseInt(s, 8) : 0;
}

function parsePax(data: Buffer): Record<string, string> {
	const out: Record<string, string> = {};
	let p = 0;
	while (p < data.length) {
		const sp = data.indexOf(0x20, p);
		if (sp < 0) break;
		const len = parseInt(data.subarray(p, sp).toString("ascii"), 10);
		if (!Number.isFinite(len) || len <= 0 || p + len > data.length) throw new TarFormatError("Corrupt PAX header");
		const rec = data.subarray(sp + 1, p + len - 1).toString("utf8");
		const eq = rec.indexOf("=");
		if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
		p += len;
	}
	return out;
}

/** Walks a tar stream (already gunzipped). */
export async function* readTar(input: AsyncIterable<Buffer | Uint8Array | string>, limits: { maxMeta?: number } = {}): AsyncGenerator<TarEntry> {
	const r = new ByteReader(input[Symbol.asyncIterator]());
	const maxMeta = limits.maxMeta ?? 1 << 20;
	let pax: Record<string, string> = {};
	let longName: string | undefined;
	for (let first = true; ; first = false) {
		const h = await r.read(BLOCK).catch((e: unknown) => {
			throw first ? new TarFormatError("Not a tar archive (too short)") : e;
		});
		if (!h || h.every((b) => b === 0)) return;
		let sum = 0;
		for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
		if (num(h.subarray(148, 156)) !== sum) throw new TarFormatError("Not a tar archive (bad header checksum)");
		const flag = String.fromCharCode(h[156] || 0x30);
		let size = num(h.subarray(124, 136));
		if (flag === "x" || flag === "g" || flag === "L" || flag === "K") {
			if (size > maxMeta) throw new TarFormatError("Tar metadata header too large");
			const data = (await r.read(size + ((BLOCK - (size % BLOCK)) % BLOCK))) ?? Buffer.alloc(0);
			if (flag === "x") pax = { ...pax, ...parsePax(data.subarray(0, size)) };
			else if (flag === "L") longName = cstr(data.subarray(0, size));
			continue;
		}
		const prefix = h.subarray(257, 262).toString("ascii") === "ustar" ? cstr(h.subarray(345, 500)) : "";
		let name = longName ?? (prefix ? `${prefix}/${cstr(h.subarray(0, 100))}` : cstr(h.subarray(0, 100)));
		if (pax.path) name = pax.path;
		if (pax.size) size = Number(pax.size);
		const mtime = new Date((pax.mtime ? Number(pax.mtime) : num(h.subarray(136, 148))) * 1000);
		pax = {};
		longName = undefined;
		const type = flag === "0" || flag === "7" ? "file" : flag === "5" ? "dir" : flag === "2" ? "symlink" : "other";
		// Only files have content to hand out; other entries' data (hard links: none) is skipped.
		const counter = { left: type === "file" ? size : 0 };
		const chunks = r.take(counter);
		// One read at a time from the shared input: the walk waits for the last one before it moves on.
		let inflight: Promise<void> = Promise.resolve();
		const body = new Readable({
			read() {
				inflight = chunks.next().then(
					(res) => void this.push(res.done ? null : res.value),
					(err: Error) => void this.destroy(err),
				);
			},
		});
		yield { name, type, size, mtime, mode: num(h.subarray(100, 108)) & 0o7777, body };
		await inflight;
		if (counter.left > 0 && !body.destroyed) body.destroy();
		// What the caller did not read is skipped, then the padding.
		await r.skip((type === "file" ? counter.left : size) + ((BLOCK - (size % BLOCK)) % BLOCK));
	}
}
