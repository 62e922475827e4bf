// Composite objects of a LocalStore: a completed multipart upload kept as its parts instead of being assembled
// into one file (the copy of every byte plus the fsync of the whole object were most of the cost of a multipart
// upload). The object's path is then a directory holding `part.NNNNN` files and a manifest listing part numbers
// and sizes; the manifest holds no paths (part file names derive from the numbers) and is validated strictly, so
// a crafted directory is at worst "not an object". Only flat, unencrypted datasources use them: their keys are
// chosen by the server, so no user folder can take that shape (see openStore()).
import { constants, type Stats } from "node:fs";
import { copyFile, link, lstat, mkdir, open, rename, rm, writeFile, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { CellarError, NotFoundError } from "../errors";
import { MAX_PART_NUMBER, RangeNotSatisfiableError } from "./types";

export const COMPOSITE_MANIFEST = ".composite.json";
/** A manifest lists at most 10000 parts; anything much larger is not one. */
const MAX_MANIFEST_BYTES = 1 << 20;
/** Reads covering at most this many parts hold all their descriptors from the start (like an open file). */
const EAGER_PARTS = 4;
const CHUNK = 1 << 19;
const READ_ONLY = constants.O_RDONLY | constants.O_NOFOLLOW;

export interface CompositePart {
	n: number;
	size: number;
}
export interface CompositeManifest {
	v: 1;
	size: number;
	parts: CompositePart[];
}

/** HTTP 500: a composite object whose parts do not match its manifest (lost or altered behind the server's back). */
export class CorruptObjectError extends CellarError {
	constructor(message: string) {
		super(`Stored object is damaged: ${message}`, 500, "storage.corrupt");
	}
}

export function partName(n: number): string {
	return `part.${String(n).padStart(5, "0")}`;
}

export function compositeManifest(parts: CompositePart[]): CompositeManifest {
	return { v: 1, size: parts.reduce((s, p) => s + p.size, 0), parts: parts.map((p) => ({ n: p.n, size: p.size })) };
}

/** The manifest if `text` is exactly one: version 1, 1..10000 parts numbered in ascending order, sizes adding up. */
export function parseCompositeManifest(text: string): CompositeManifest | null {
	let raw: unknown;
	try {
		raw = JSON.parse(text);
	} catch {
		return null;
	}
	if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
	const { v, size, parts } = raw as Record<string, unknown>;
	if (v !== 1 || !Number.isSafeInteger(size) || (size as number) < 0 || Object.keys(raw).length !== 3) return null;
	if (!Array.isArray(parts) || parts.length < 1 || parts.length > MAX_PART_NUMBER) return null;
	let sum = 0;
	let prev = 0;
	const out: CompositePart[] = [];
	for (const p of parts as unknown[]) {
		if (!p || typeof p !== "object" || Array.isArray(p) || Object.keys(p).length !== 2) return null;
		const { n, size: s } = p as Record<string, unknown>;
		if (typeof n !== "number" || !Number.isInteger(n) || n <= prev || n > MAX_PART_NUMBER) return null;
		if (typeof s !== "number" || !Number.isSafeInteger(s) || s < 0) return null;
		sum += s;
		if (!Number.isSafeInteger(sum)) return null;
		prev = n;
		out.push({ n, size: s });
	}
	return sum === size ? { v: 1, size: sum, parts: out } : null;
}

/** The manifest of the composite object at `dir` (and its mtime, the object's), or null if `dir` is not one. */
export async function readCompositeManifest(dir: string): Promise<{ manifest: CompositeManifest; mtime: number } | null> {
	let fh: FileHandle;
	try {
		// A symlink is never an object, not even one to a directory that looks like a composite.
		if (!(await lstat(dir)).isDirectory()) return null;
		fh = await open(join(dir, COMPOSITE_MANIFEST), READ_ONLY);
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		if (code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" || code === "EISDIR") return null;
		throw err;
	}
	try {
		const st = await fh.stat();
		if (!st.isFile() || st.size > MAX_MANIFEST_BYTES) return null;
		const manifest = parseCompositeManifest(await fh.readFile("utf8"));
		return manifest && { manifest, mtime: Math.floor(st.mtimeMs) };
	} finally {
		await fh.close();
	}
}

/** Writes the manifest into a composite being built at `dir`: temp file, fsync, rename. */
export async function writeCompositeManifest(dir: string, manifest: CompositeManifest): Promise<void> {
	const tmp = join(dir, `${COMPOSITE_MANIFEST}.tmp`);
	await writeFile(tmp, JSON.stringify(manifest), { flag: "wx", mode: 0o644, flush: true });
	await rename(tmp, join(dir, COMPOSITE_MANIFEST));
}

/** fsyncs a directory's entries where the platform allows it. */
export async function syncDir(dir: string): Promise<void> {
	let fh: FileHandle | undefined;
	try {
		fh = await open(dir, "r");
		await fh.sync();
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM" && code !== "EBADF") throw err;
	} finally {
		await fh?.close();
	}
}

/** Clones `src` into the new file `dst` (a reflink where the filesystem can, else a kernel copy), fsynced; its size. */
export async function cloneSynced(src: string, dst: string): Promise<number> {
	await copyFile(src, dst, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
	const fh = await open(dst, "r+");
	try {
		await fh.sync();
		return (await fh.stat()).size;
	} finally {
		await fh.close();
	}
}

/**
 * Builds a composite in the new folder `stage` from files holding its parts, moved (a multipart upload's parts,
 * fsynced when written) or cloned (a copy); checks their sizes, writes the manifest, fsyncs the folder. The caller
 * then renames `stage` into place, and calls dismantleComposite() if that fails. `mismatch(n)`: the error for a
 * part that is not a file of its size; `missing(n)`: for one that is not there.
 */
export async function buildComposite(
	stage: string,
	parts: (CompositePart & { file: string })[],
	opts: { move: boolean; mismatch: (n: number) => Error; missing: (n: number) => Promise<Error> },
): Promise<void> {
	await mkdir(stage);
	try {
		for (const p of parts) {
			const dst = join(stage, partName(p.n));
			if (!opts.move) {
				const st = await lstat(p.file).catch((err: unknown) => (errCode(err) === "ENOENT" ? null : Promise.reject(err)));
				if (!st) throw await opts.missing(p.n);
				if (!st.isFile() || st.size !== p.size) throw opts.mismatch(p.n);
			}
			try {
				if (opts.move) await rename(p.file, dst);
				else if ((await cloneSynced(p.file, dst)) !== p.size) throw opts.mismatch(p.n);
			} catch (err) {
				if (errCode(err) === "ENOENT") throw await opts.missing(p.n);
				throw err;
			}
		}
		if (opts.move) {
			for (const p of parts) {
				const st = await lstat(join(stage, partName(p.n)));
				if (!st.isFile() || st.size !== p.size) throw opts.mismatch(p.n);
			}
		}
		await writeCompositeManifest(stage, compositeManifest(parts));
		await syncDir(stage);
	} catch (err) {
		await dismantleComposite(stage, opts.move ? parts : []);
		throw err;
	}
}

/** Undoes buildComposite(): moved parts go back where they came from, the rest is removed. */
export async function dismantleComposite(stage: string, moved: (CompositePart & { file: string })[]): Promise<void> {
	for (const p of moved) await rename(join(stage, partName(p.n)), p.file).catch(() => undefined);
	await rm(stage, { recursive: true, force: true }).catch(() => undefined);
}

/** One part's share of a read: bytes start..end (inclusive) of part `n`. */
interface Segment {
	n: number;
	size: number;
	start: number;
	end: number;
}

/** The parts a read covers; throws RangeNotSatisfiableError for a start past the end, as for a plain file. */
function segmentsOf(m: CompositeManifest, range?: { start: number; end: number }): Segment[] {
	let start = 0;
	let end = m.size - 1;
	if (range) {
		if (range.start >= m.size) throw new RangeNotSatisfiableError(`Range start ${range.start} is past the end of a ${m.size}-byte object`);
		start = range.start;
		end = Math.min(range.end, m.size - 1);
	}
	const out: Segment[] = [];
	let offset = 0;
	for (const p of m.parts) {
		const first = offset;
		const last = offset + p.size - 1;
		offset += p.size;
		if (p.size === 0 || last < start) continue;
		if (first > end) break;
		out.push({ n: p.n, size: p.size, start: Math.max(start, first) - first, end: Math.min(end, last) - first });
	}
	return out;
}

function errCode(err: unknown): string | undefined {
	return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Opens a part, refusing symlinks and anything but a regular file of the manifest's size. */
async function openPart(file: string, seg: Segment, missing: () => Promise<Error>): Promise<FileHandle> {
	let fh: FileHandle;
	try {
		fh = await open(file, READ_ONLY);
	} catch (err) {
		if (errCode(err) === "ENOENT") throw await missing();
		if (errCode(err) === "ELOOP") throw new CorruptObjectError(`part ${seg.n} is not a regular file`);
		throw err;
	}
	const st = await fh.stat().catch(async (err: unknown) => {
		await fh.close();
		throw err;
	});
	if (!st.isFile() || st.size !== seg.size) {
		await fh.close();
		throw new CorruptObjectError(`part ${seg.n} is not a file of ${seg.size} bytes`);
	}
	return fh;
}

/** Concatenation of the segments; `openAt(i)` gives segment i's part, `release` runs once the stream is done. */
class CompositeReadStream extends Readable {
	private i = 0;
	private fh?: FileHandle;
	private pos = 0;

	constructor(
		private readonly segs: Segment[],
		private readonly openAt: (i: number) => Promise<FileHandle>,
		private readonly release: () => Promise<void>,
	) {
		super({ highWaterMark: CHUNK });
	}

	override _read(): void {
		this.pump().catch((err: unknown) => this.destroy(err as Error));
	}

	private async pump(): Promise<void> {
		if (this.i >= this.segs.length) return void this.push(null);
		const seg = this.segs[this.i];
		if (!this.fh) {
			const fh = await this.openAt(this.i);
			if (this.destroyed) return void (await fh.close());
			this.fh = fh;
			this.pos = seg.start;
		}
		const fh = this.fh;
		const len = Math.min(CHUNK, seg.end - this.pos + 1);
		const buf = Buffer.allocUnsafe(len);
		const { bytesRead } = await fh.read(buf, 0, len, this.pos);
		if (this.destroyed) return;
		if (bytesRead === 0) throw new CorruptObjectError(`part ${seg.n} is shorter than its manifest says`);
		this.pos += bytesRead;
		if (this.pos > seg.end) {
			this.fh = undefined;
			this.i++;
			await fh.close();
		}
		this.push(bytesRead === len ? buf : buf.subarray(0, bytesRead));
	}

	override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
		const fh = this.fh;
		this.fh = undefined;
		void (async () => {
			await fh?.close().catch(() => undefined);
			await this.release().catch(() => undefined);
			cb(err);
		})();
	}
}

/**
 * Reads the composite object at `dir` (whole, or an inclusive range). Deleting, replacing or renaming an object
 * must not break a read in progress, as an open file would not: a read of a few parts opens them all before
 * returning; a longer one hard-links its parts into a private folder `pinDir` (in the store's temp area, removed
 * when the stream ends) and opens them one after the other from there. Where hard links are refused (some
 * filesystems), parts are opened in place as the read reaches them and such a read can fail midway.
 */
export async function readComposite(dir: string, m: CompositeManifest, range: { start: number; end: number } | undefined, pinDir: string): Promise<NodeJS.ReadableStream> {
	const segs = segmentsOf(m, range);
	if (segs.length === 0) return Readable.from([]);
	// A part missing: the object went away (NotFound) if its manifest did too, else it is damaged.
	const missing = async (): Promise<Error> => ((await readCompositeManifest(dir).catch(() => null)) ? new CorruptObjectError("a part is missing") : new NotFoundError("Object not found"));

	if (segs.length <= EAGER_PARTS) {
		const fhs: (FileHandle | undefined)[] = [];
		const closeAll = async () => {
			for (const fh of fhs.splice(0)) await fh?.close().catch(() => undefined);
		};
		try {
			for (const seg of segs) fhs.push(await openPart(join(dir, partName(seg.n)), seg, missing));
		} catch (err) {
			await closeAll();
			throw err;
		}
		return new CompositeReadStream(
			segs,
			async (i) => {
				const fh = fhs[i]!;
				fhs[i] = undefined;
				return fh;
			},
			closeAll,
		);
	}

	let pinned = true;
	await mkdir(pinDir);
	try {
		for (const seg of segs) {
			const name = partName(seg.n);
			try {
				await link(join(dir, name), join(pinDir, name));
			} catch (err) {
				if (errCode(err) === "ENOENT") throw await missing();
				if (!["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV", "EMLINK", "EROFS"].includes(errCode(err) ?? "")) throw err;
				pinned = false;
				break;
			}
		}
		const base = pinned ? pinDir : dir;
		for (const seg of segs) {
			const st: Stats | null = await lstat(join(base, partName(seg.n))).catch((err: unknown) => (errCode(err) === "ENOENT" ? null : Promise.reject(err)));
			if (!st) throw await missing();
			if (!st.isFile() || st.size !== seg.size) throw new CorruptObjectError(`part ${seg.n} is not a file of ${seg.size} bytes`);
		}
	} catch (err) {
		await rm(pinDir, { recursive: true, force: true }).catch(() => undefined);
		throw err;
	}
	if (!pinned) await rm(pinDir, { recursive: true, force: true }).catch(() => undefined);
	return new CompositeReadStream(
		segs,
		async (i) => {
			const file = join(pinned ? pinDir : dir, partName(segs[i].n));
			const fh = await openPart(file, segs[i], missing);
			// The descriptor keeps the part: its link can go, which also tells the staging sweep the read is alive.
			if (pinned) await rm(file, { force: true }).catch(() => undefined);
			return fh;
		},
		async () => {
			if (pinned) await rm(pinDir, { recursive: true, force: true });
		},
	);
}
