// LocalStore: a datasource kept in a folder of the server's filesystem. Writes go to `<root>/.cellar-tmp/` (same
// filesystem), are fsynced and renamed into place, so a reader never sees a partial file and a failed stream leaves
// nothing. Multipart parts are staged in `<root>/.cellar-uploads/<uploadId>/` with a manifest, which makes an
// upload survive a restart.
import { createHash, randomUUID } from "node:crypto";
import { constants, createReadStream, createWriteStream, type Dirent, type WriteStream } from "node:fs";
import { copyFile, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile, type FileHandle } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { BadRequestError, ConflictError, NotFoundError } from "../errors";
import {
	bareEtag,
	checkCompletionParts,
	checkFolderKey,
	checkKey,
	checkPartNumber,
	checkPrefix,
	checkRange,
	HashingStream,
	quoteEtag,
	TMP_DIR,
	UPLOADS_DIR,
} from "./keys";
import { RangeNotSatisfiableError, type MultipartPart, type ObjectInfo, type ObjectStore } from "./types";

const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MANIFEST = "manifest.json";

interface Manifest {
	key: string;
	created: number;
}
interface PartMeta {
	md5: string;
	size: number;
}

function errCode(err: unknown): string | undefined {
	return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Bytewise (UTF-8) order, like S3 key order. */
function compareKeys(a: string, b: string): number {
	return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export class LocalStore implements ObjectStore {
	readonly kind = "LOCAL" as const;
	readonly root: string;
	private readonly tmpDir: string;
	private readonly uploadsDir: string;
	private readyPromise?: Promise<void>;

	constructor(rootFolder: string) {
		if (typeof rootFolder !== "string" || rootFolder === "") throw new BadRequestError("LOCAL datasource needs a folder");
		this.root = resolve(rootFolder);
		this.tmpDir = join(this.root, TMP_DIR);
		this.uploadsDir = join(this.root, UPLOADS_DIR);
	}

	/** Creates the root and the staging folders once. */
	private ready(): Promise<void> {
		this.readyPromise ??= (async () => {
			await mkdir(this.tmpDir, { recursive: true });
			await mkdir(this.uploadsDir, { recursive: true });
		})().catch((err) => {
			this.readyPromise = undefined;
			throw err;
		});
		return this.readyPromise;
	}

	/** Absolute path of a key, refusing anything that would resolve outside the root. */
	private pathOf(key: string, folder = false): string {
		const segments = folder ? checkFolderKey(key) : checkKey(key);
		const p = resolve(this.root, ...segments);
		if (!p.startsWith(this.root + sep)) throw new BadRequestError("Invalid key: outside of the datasource");
		return p;
	}

	async put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		const target = this.pathOf(key);
		await this.ready();
		const hasher = new HashingStream(opts?.size);
		const tmp = await this.writeTemp(async (ws) => {
			await pipeline(body, hasher, ws);
		});
		await this.commit(tmp, target);
		return { size: hasher.bytes, md5: hasher.md5 };
	}

	/** Writes a new temp file in the staging area through `write` (fsynced before close); removes it on any failure. */
	private async writeTemp(write: (ws: WriteStream) => Promise<void>, dir = this.tmpDir): Promise<string> {
		const tmp = join(dir, `${randomUUID()}.tmp`);
		const ws = createWriteStream(tmp, { flags: "wx", mode: 0o644, flush: true, highWaterMark: 1 << 20 });
		try {
			await write(ws);
			if (!ws.closed) await new Promise<void>((done, fail) => ws.once("close", done).once("error", fail));
			return tmp;
		} catch (err) {
			// Wait for the descriptor to be closed (the file may still be being opened) before removing it.
			if (!ws.closed) await new Promise<void>((done) => ws.once("close", () => done()).destroy());
			await rm(tmp, { force: true }).catch(() => undefined);
			throw err;
		}
	}

	/** Moves a finished temp file into place (creating parent folders); removes the temp on failure. */
	private async commit(tmp: string, target: string): Promise<void> {
		try {
			await mkdir(dirname(target), { recursive: true });
			await rename(tmp, target);
		} catch (err) {
			await rm(tmp, { force: true }).catch(() => undefined);
			const code = errCode(err);
			if (code === "EISDIR" || code === "ENOTDIR" || code === "EEXIST" || code === "ENOTEMPTY") {
				throw new ConflictError("A folder and a file would have the same name");
			}
			if (code === "ENAMETOOLONG") throw new BadRequestError("Name too long");
			throw err;
		}
	}

	async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		const p = this.pathOf(key);
		if (range) checkRange(range);
		let fh: FileHandle;
		try {
			fh = await open(p, "r");
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR") throw new NotFoundError(`Object not found: ${key}`);
			throw err;
		}
		try {
			const st = await fh.stat();
			if (!st.isFile()) throw new NotFoundError(`Object not found: ${key}`);
			if (!range) return fh.createReadStream({ highWaterMark: 1 << 19 });
			if (range.start >= st.size) throw new RangeNotSatisfiableError(`Range start ${range.start} is past the end of a ${st.size}-byte object`);
			return fh.createReadStream({ start: range.start, end: Math.min(range.end, st.size - 1), highWaterMark: 1 << 19 });
		} catch (err) {
			await fh.close().catch(() => undefined);
			throw err;
		}
	}

	async head(key: string): Promise<ObjectInfo | null> {
		const p = this.pathOf(key);
		try {
			const st = await stat(p);
			if (!st.isFile()) return null;
			return { key, size: st.size, mtime: Math.floor(st.mtimeMs) };
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR") return null;
			throw err;
		}
	}

	async delete(key: string): Promise<void> {
		const p = this.pathOf(key);
		try {
			await unlink(p);
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR") return;
			if (code === "EISDIR" || code === "EPERM") {
				// A folder: only an empty one goes this way (rmdir is the recursive delete).
				try {
					await rmdir(p);
					return;
				} catch (e) {
					if (errCode(e) === "ENOTEMPTY" || errCode(e) === "EEXIST") throw new ConflictError(`Folder is not empty: ${key}`);
					if (errCode(e) === "ENOENT") return;
					throw e;
				}
			}
			throw err;
		}
	}

	async rename(from: string, to: string): Promise<void> {
		const src = this.pathOf(from);
		await this.ready();
		await this.commit(src, this.pathOf(to)).catch((err) => {
			if (errCode(err) === "ENOENT") throw new NotFoundError(`Object not found: ${from}`);
			throw err;
		});
	}

	async copy(from: string, to: string): Promise<{ size: number }> {
		const src = this.pathOf(from);
		const dst = this.pathOf(to);
		await this.ready();
		const st = await stat(src).catch((err) => {
			if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return null;
			throw err;
		});
		if (!st?.isFile()) throw new NotFoundError(`Object not found: ${from}`);
		if (src === dst) return { size: st.size };
		const tmp = join(this.tmpDir, `${randomUUID()}.tmp`);
		let size: number;
		try {
			// FICLONE: a reflink where the filesystem supports it, a plain copy otherwise.
			await copyFile(src, tmp, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
			const fh = await open(tmp, "r+");
			try {
				await fh.sync();
				size = (await fh.stat()).size;
			} finally {
				await fh.close();
			}
		} catch (err) {
			await rm(tmp, { force: true }).catch(() => undefined);
			if (errCode(err) === "ENOENT") throw new NotFoundError(`Object not found: ${from}`);
			throw err;
		}
		await this.commit(tmp, dst);
		return { size };
	}

	async *list(prefix: string): AsyncIterable<ObjectInfo> {
		const folder = checkPrefix(prefix);
		const start = folder === "" ? this.root : this.pathOf(folder);
		yield* this.walk(start, folder === "" ? "" : `${folder}/`, prefix);
	}

	/** Depth-first walk in key order: a folder "d" sorts as "d/" among its siblings. Symlinks are not followed. */
	private async *walk(dir: string, keyPrefix: string, prefix: string): AsyncGenerator<ObjectInfo> {
		let entries: Dirent[];
		try {
			entries = await readdir(dir, { withFileTypes: true });
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR") return;
			throw err;
		}
		const items: { name: string; sortKey: string; isDir: boolean }[] = [];
		for (const e of entries) {
			if (keyPrefix === "" && (e.name === TMP_DIR || e.name === UPLOADS_DIR)) continue;
			if (e.isDirectory()) items.push({ name: e.name, sortKey: `${keyPrefix}${e.name}/`, isDir: true });
			else if (e.isFile()) items.push({ name: e.name, sortKey: `${keyPrefix}${e.name}`, isDir: false });
		}
		items.sort((a, b) => compareKeys(a.sortKey, b.sortKey));
		for (const item of items) {
			const key = item.sortKey;
			if (item.isDir) {
				// Descend only where keys can still match the prefix.
				if (key.startsWith(prefix) || prefix.startsWith(key)) yield* this.walk(join(dir, item.name), key, prefix);
				continue;
			}
			if (!key.startsWith(prefix)) continue;
			try {
				const st = await lstat(join(dir, item.name));
				if (st.isFile()) yield { key, size: st.size, mtime: Math.floor(st.mtimeMs) };
			} catch (err) {
				if (errCode(err) !== "ENOENT") throw err; // removed while listing
			}
		}
	}

	async mkdir(key: string): Promise<void> {
		const p = this.pathOf(key, true);
		try {
			await mkdir(p, { recursive: true });
		} catch (err) {
			const code = errCode(err);
			if (code === "EEXIST" || code === "ENOTDIR") throw new ConflictError(`A file has the same name as folder ${key}`);
			throw err;
		}
	}

	async rmdir(key: string): Promise<void> {
		const p = this.pathOf(key, true);
		let st;
		try {
			st = await lstat(p);
		} catch (err) {
			if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return;
			throw err;
		}
		if (!st.isDirectory()) throw new ConflictError(`Not a folder: ${key}`);
		await rm(p, { recursive: true, force: true });
	}

	// ---- multipart ----

	private uploadDir(uploadId: string): string {
		if (typeof uploadId !== "string" || !UPLOAD_ID.test(uploadId)) throw new NotFoundError("NoSuchUpload: unknown upload id");
		return join(this.uploadsDir, uploadId);
	}

	private async manifest(uploadId: string): Promise<{ dir: string; manifest: Manifest }> {
		const dir = this.uploadDir(uploadId);
		let manifest: Manifest;
		try {
			manifest = JSON.parse(await readFile(join(dir, MANIFEST), "utf8")) as Manifest;
		} catch (err) {
			if (errCode(err) === "ENOENT") throw new NotFoundError("NoSuchUpload: the upload does not exist or was completed/aborted");
			throw err;
		}
		checkKey(manifest.key);
		return { dir, manifest };
	}

	async createMultipart(key: string): Promise<string> {
		this.pathOf(key);
		await this.ready();
		const uploadId = randomUUID();
		const dir = join(this.uploadsDir, uploadId);
		await mkdir(dir);
		const manifest: Manifest = { key, created: Date.now() };
		const tmp = join(dir, `${MANIFEST}.tmp`);
		await writeFile(tmp, JSON.stringify(manifest));
		await rename(tmp, join(dir, MANIFEST));
		return uploadId;
	}

	async putPart(uploadId: string, partNumber: number, body: NodeJS.ReadableStream, size?: number): Promise<{ etag: string; size: number }> {
		checkPartNumber(partNumber);
		const { dir } = await this.manifest(uploadId);
		const hasher = new HashingStream(size);
		const tmp = await this.writeTemp(async (ws) => {
			await pipeline(body, hasher, ws);
		}, dir).catch((err: unknown) => {
			if (errCode(err) === "ENOENT") throw new NotFoundError("NoSuchUpload: the upload was completed or aborted meanwhile");
			throw err;
		});
		const meta: PartMeta = { md5: hasher.md5, size: hasher.bytes };
		try {
			await rename(tmp, join(dir, String(partNumber)));
			const metaTmp = join(dir, `${randomUUID()}.tmp`);
			await writeFile(metaTmp, JSON.stringify(meta));
			await rename(metaTmp, join(dir, `${partNumber}.json`));
		} catch (err) {
			await rm(tmp, { force: true }).catch(() => undefined);
			if (errCode(err) === "ENOENT") throw new NotFoundError("NoSuchUpload: the upload was completed or aborted meanwhile");
			throw err;
		}
		return { etag: quoteEtag(meta.md5), size: meta.size };
	}

	/** md5/size of a staged part: from its sidecar, or recomputed when the sidecar is missing or stale. */
	private async partMeta(dir: string, n: number): Promise<PartMeta | null> {
		const file = join(dir, String(n));
		let st;
		try {
			st = await stat(file);
		} catch (err) {
			if (errCode(err) === "ENOENT") return null;
			throw err;
		}
		try {
			const meta = JSON.parse(await readFile(join(dir, `${n}.json`), "utf8")) as PartMeta;
			if (meta.size === st.size && typeof meta.md5 === "string") return meta;
		} catch {
			// fall through: recompute
		}
		const hash = createHash("md5");
		await pipeline(createReadStream(file), hash);
		return { md5: hash.digest("hex"), size: st.size };
	}

	async listParts(uploadId: string): Promise<MultipartPart[]> {
		const { dir } = await this.manifest(uploadId);
		const numbers = (await readdir(dir)).filter((n) => /^[1-9][0-9]{0,4}$/.test(n)).map(Number).sort((a, b) => a - b);
		const parts: MultipartPart[] = [];
		for (const n of numbers) {
			const meta = await this.partMeta(dir, n);
			if (meta) parts.push({ partNumber: n, etag: quoteEtag(meta.md5), size: meta.size });
		}
		return parts;
	}

	async completeMultipart(uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number; md5?: string; etag: string }> {
		const list = checkCompletionParts(parts);
		const { dir, manifest } = await this.manifest(uploadId);
		const target = this.pathOf(manifest.key);
		// Parts were hashed as they arrived (sidecars, recomputed if missing or stale): check them against the
		// ETags given, then assemble without hashing again. The object's ETag is S3's md5-of-md5s.
		const metas: PartMeta[] = [];
		for (const p of list) {
			const meta = await this.partMeta(dir, p.partNumber);
			if (!meta) throw new BadRequestError(`InvalidPart: part ${p.partNumber} was not uploaded`);
			if (meta.md5 !== bareEtag(p.etag)) throw new BadRequestError(`InvalidPart: ETag of part ${p.partNumber} does not match`);
			metas.push(meta);
		}
		await this.ready();
		const tmp = join(this.tmpDir, `${randomUUID()}.tmp`);
		try {
			// The first part is copied by the kernel (a reflink where the filesystem can), the others appended.
			await copyFile(join(dir, String(list[0].partNumber)), tmp, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
			const fh = await open(tmp, "a");
			try {
				const buf = Buffer.allocUnsafe(1 << 20);
				for (const p of list.slice(1)) {
					const src = await open(join(dir, String(p.partNumber)), "r");
					try {
						for (;;) {
							const { bytesRead } = await src.read(buf, 0, buf.length, null);
							if (!bytesRead) break;
							await fh.write(buf, 0, bytesRead);
						}
					} finally {
						await src.close();
					}
				}
				await fh.sync();
			} finally {
				await fh.close();
			}
		} catch (err) {
			await rm(tmp, { force: true }).catch(() => undefined);
			if (errCode(err) === "ENOENT") throw new BadRequestError("InvalidPart: a part disappeared during completion");
			throw err;
		}
		const size = metas.reduce((n, m) => n + m.size, 0);
		if ((await stat(tmp)).size !== size) {
			await rm(tmp, { force: true });
			throw new BadRequestError("InvalidPart: a part changed during completion");
		}
		await this.commit(tmp, target);
		await rm(dir, { recursive: true, force: true });
		const etag = `"${createHash("md5").update(Buffer.concat(metas.map((m) => Buffer.from(m.md5, "hex")))).digest("hex")}-${list.length}"`;
		return { size, etag };
	}

	async abortMultipart(uploadId: string): Promise<void> {
		await rm(this.uploadDir(uploadId), { recursive: true, force: true });
	}

	/** Removes staging leftovers (temp files of crashed writes, uploads never completed) older than `maxAgeMs`. */
	async cleanupStaging(maxAgeMs: number): Promise<{ removed: number }> {
		await this.ready();
		const limit = Date.now() - maxAgeMs;
		let removed = 0;
		for (const base of [this.tmpDir, this.uploadsDir]) {
			for (const name of await readdir(base)) {
				const p = join(base, name);
				const st = await stat(p).catch(() => null);
				if (st && st.mtimeMs < limit) {
					await rm(p, { recursive: true, force: true });
					removed++;
				}
			}
		}
		return { removed };
	}
}
