// LocalStore: a datasource kept in a folder of the server's filesystem. Writes go to `<root>/.cellar-tmp/` (same
// filesystem), are fsynced and renamed into place, so a reader never sees a partial file and a failed stream leaves
// nothing. Multipart parts are staged in `<root>/.cellar-uploads/<uploadId>/` with a manifest, which makes an
// upload survive a restart. A store opened with `composite` (flat, unencrypted datasources) completes multipart
// uploads as composite objects (lib/storage/composite.ts): the parts are moved into place, not copied into one
// file; every operation treats such a directory as one object.
import { createHash, randomUUID } from "node:crypto";
import { constants, createReadStream, createWriteStream, type Dirent, type WriteStream } from "node:fs";
import { copyFile, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, statfs, unlink, writeFile, type FileHandle } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { BadRequestError, ConflictError, NotFoundError } from "../errors";
import { buildComposite, cloneSynced, CorruptObjectError, dismantleComposite, partName, readComposite, readCompositeManifest, type CompositeManifest } from "./composite";
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

const SAME_NAME = "A folder and a file would have the same name";

/** Bytewise (UTF-8) order, like S3 key order. */
function compareKeys(a: string, b: string): number {
	return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export class LocalStore implements ObjectStore {
	readonly kind = "LOCAL" as const;
	readonly root: string;
	private readonly tmpDir: string;
	private readonly uploadsDir: string;
	/** Whether multipart uploads complete as composite objects, and directories holding a composite manifest are objects. */
	readonly composite: boolean;
	private readyPromise?: Promise<void>;

	constructor(rootFolder: string, opts: { composite?: boolean } = {}) {
		if (typeof rootFolder !== "string" || rootFolder === "") throw new BadRequestError("LOCAL datasource needs a folder");
		this.root = resolve(rootFolder);
		this.composite = opts.composite === true;
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

	/** The composite object at `p` (composite stores only), or null when `p` is anything else. */
	private async compositeAt(p: string): Promise<{ manifest: CompositeManifest; mtime: number } | null> {
		return this.composite ? readCompositeManifest(p) : null;
	}

	/** Whether a parent of `key` is a composite object (whose insides are never reachable through a key). */
	private async inComposite(key: string): Promise<boolean> {
		if (!this.composite || !key.includes("/")) return false;
		const segments = checkKey(key.endsWith("/") ? key.slice(0, -1) : key);
		for (let i = 1; i < segments.length; i++) if (await readCompositeManifest(join(this.root, ...segments.slice(0, i)))) return true;
		return false;
	}

	/** What is at `p`: nothing, a plain file, a composite object, a folder (or something else, e.g. a symlink). */
	private async kindOf(p: string): Promise<"none" | "file" | "composite" | "folder" | "other"> {
		let st;
		try {
			st = await lstat(p);
		} catch (err) {
			if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return "none";
			throw err;
		}
		if (st.isFile()) return "file";
		if (!st.isDirectory()) return "other";
		return (await this.compositeAt(p)) ? "composite" : "folder";
	}

	async put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		const target = this.pathOf(key);
		await this.ready();
		const hasher = new HashingStream(opts?.size);
		const tmp = await this.writeTemp(async (ws) => {
			await pipeline(body, hasher, ws);
		});
		await this.commit(tmp, target, key);
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

	/** Moves a finished temp file (or composite) into place; removes it on failure. */
	private async commit(tmp: string, target: string, key: string, isComposite = false): Promise<void> {
		try {
			await this.place(tmp, target, key, isComposite);
		} catch (err) {
			await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
			throw err;
		}
	}

	/**
	 * Renames `src` onto `target` (creating parent folders): atomic over nothing or over a plain file. A composite
	 * object cannot be replaced by one rename (a directory and a file, or a non-empty directory): it is moved aside
	 * first, so during that instant the key reads as absent; readers already streaming it are not affected.
	 */
	private async place(src: string, target: string, key: string, srcComposite: boolean): Promise<void> {
		try {
			if (await this.inComposite(key)) throw new ConflictError(SAME_NAME);
			await mkdir(dirname(target), { recursive: true });
			const existing = this.composite ? await this.kindOf(target) : "none";
			// Renaming a directory onto an empty folder would silently replace the folder.
			if (srcComposite && existing === "folder") throw new ConflictError(SAME_NAME);
			if (existing === "composite" || (srcComposite && existing === "file")) {
				const aside = join(this.tmpDir, `${randomUUID()}.replaced`);
				await rename(target, aside);
				try {
					await rename(src, target);
				} catch (err) {
					await rename(aside, target).catch(() => undefined);
					throw err;
				}
				await rm(aside, { recursive: true, force: true }).catch(() => undefined);
				return;
			}
			await rename(src, target);
		} catch (err) {
			const code = errCode(err);
			if (code === "EISDIR" || code === "ENOTDIR" || code === "EEXIST" || code === "ENOTEMPTY") throw new ConflictError(SAME_NAME);
			if (code === "ENAMETOOLONG") throw new BadRequestError("Name too long");
			throw err;
		}
	}

	async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		const p = this.pathOf(key);
		if (range) checkRange(range);
		if (await this.inComposite(key)) throw new NotFoundError(`Object not found: ${key}`);
		let fh: FileHandle;
		try {
			fh = await open(p, "r");
		} catch (err) {
			const code = errCode(err);
			if (code === "EISDIR") return this.getComposite(key, p, range);
			if (code === "ENOENT" || code === "ENOTDIR") throw new NotFoundError(`Object not found: ${key}`);
			throw err;
		}
		try {
			const st = await fh.stat();
			if (st.isDirectory()) {
				await fh.close();
				return await this.getComposite(key, p, range);
			}
			if (!st.isFile()) throw new NotFoundError(`Object not found: ${key}`);
			if (!range) return fh.createReadStream({ highWaterMark: 1 << 19 });
			if (range.start >= st.size) throw new RangeNotSatisfiableError(`Range start ${range.start} is past the end of a ${st.size}-byte object`);
			return fh.createReadStream({ start: range.start, end: Math.min(range.end, st.size - 1), highWaterMark: 1 << 19 });
		} catch (err) {
			await fh.close().catch(() => undefined);
			throw err;
		}
	}

	private async getComposite(key: string, p: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		const c = await this.compositeAt(p);
		if (!c) throw new NotFoundError(`Object not found: ${key}`);
		await this.ready();
		return readComposite(p, c.manifest, range, join(this.tmpDir, `${randomUUID()}.pin`)).catch((err: unknown) => {
			if (err instanceof NotFoundError) throw new NotFoundError(`Object not found: ${key}`);
			if (err instanceof CorruptObjectError) throw new CorruptObjectError(`${key}: ${err.message}`);
			throw err;
		});
	}

	async head(key: string): Promise<ObjectInfo | null> {
		const p = this.pathOf(key);
		if (await this.inComposite(key)) return null;
		try {
			const st = await stat(p);
			if (st.isDirectory()) {
				// The manifest is trusted here; get() checks the parts.
				const c = await this.compositeAt(p);
				return c && { key, size: c.manifest.size, mtime: c.mtime };
			}
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
		if (await this.inComposite(key)) return;
		try {
			await unlink(p);
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR") return;
			if (code === "EISDIR" || code === "EPERM") {
				if (await this.compositeAt(p)) {
					// Out of sight in one rename, then removed: nobody sees a composite with some parts gone.
					await this.ready();
					const aside = join(this.tmpDir, `${randomUUID()}.deleted`);
					try {
						await rename(p, aside);
					} catch (e) {
						if (errCode(e) === "ENOENT") return;
						throw e;
					}
					await rm(aside, { recursive: true, force: true });
					return;
				}
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
		const dst = this.pathOf(to);
		await this.ready();
		if (await this.inComposite(from)) throw new NotFoundError(`Object not found: ${from}`);
		const srcComposite = (await this.kindOf(src)) === "composite";
		if (srcComposite && src === dst) return;
		// (The source stays where it was when the rename fails.)
		await this.place(src, dst, to, srcComposite).catch((err) => {
			if (errCode(err) === "ENOENT") throw new NotFoundError(`Object not found: ${from}`);
			throw err;
		});
	}

	async copy(from: string, to: string): Promise<{ size: number }> {
		const src = this.pathOf(from);
		const dst = this.pathOf(to);
		await this.ready();
		if (await this.inComposite(from)) throw new NotFoundError(`Object not found: ${from}`);
		const st = await stat(src).catch((err) => {
			if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return null;
			throw err;
		});
		if (st?.isDirectory()) {
			const c = await this.compositeAt(src);
			if (!c) throw new NotFoundError(`Object not found: ${from}`);
			if (src !== dst) await this.copyComposite(from, src, c.manifest, to, dst);
			return { size: c.manifest.size };
		}
		if (!st?.isFile()) throw new NotFoundError(`Object not found: ${from}`);
		if (src === dst) return { size: st.size };
		const tmp = join(this.tmpDir, `${randomUUID()}.tmp`);
		let size: number;
		try {
			size = await cloneSynced(src, tmp);
		} catch (err) {
			await rm(tmp, { force: true }).catch(() => undefined);
			if (errCode(err) === "ENOENT") throw new NotFoundError(`Object not found: ${from}`);
			throw err;
		}
		await this.commit(tmp, dst, to);
		return { size };
	}

	/** A composite is copied as a composite: its parts cloned (reflinks where the filesystem can) into a new one. */
	private async copyComposite(from: string, src: string, manifest: CompositeManifest, to: string, dst: string): Promise<void> {
		const stage = join(this.tmpDir, `${randomUUID()}.composite`);
		await buildComposite(
			stage,
			manifest.parts.map((p) => ({ ...p, file: join(src, partName(p.n)) })),
			{
				move: false,
				mismatch: (n) => new CorruptObjectError(`${from}: part ${n} is not a file of the size its manifest says`),
				missing: async (n) => ((await this.compositeAt(src)) ? new CorruptObjectError(`${from}: part ${n} is missing`) : new NotFoundError(`Object not found: ${from}`)),
			},
		);
		await this.commit(stage, dst, to, true);
	}

	async *list(prefix: string): AsyncIterable<ObjectInfo> {
		const folder = checkPrefix(prefix);
		const start = folder === "" ? this.root : this.pathOf(folder);
		if (folder !== "" && ((await this.inComposite(`${folder}/`)) || (await this.compositeAt(start)))) return;
		yield* this.walk(start, folder === "" ? "" : `${folder}/`, prefix);
	}

	/**
	 * Depth-first walk in key order: a folder "d" sorts as "d/" among its siblings, a composite object "d" as "d".
	 * Symlinks are not followed.
	 */
	private async *walk(dir: string, keyPrefix: string, prefix: string): AsyncGenerator<ObjectInfo> {
		let entries: Dirent[];
		try {
			entries = await readdir(dir, { withFileTypes: true });
		} catch (err) {
			const code = errCode(err);
			if (code === "ENOENT" || code === "ENOTDIR") return;
			throw err;
		}
		const items: { name: string; sortKey: string; isDir: boolean; info?: ObjectInfo }[] = [];
		for (const e of entries) {
			if (keyPrefix === "" && (e.name === TMP_DIR || e.name === UPLOADS_DIR)) continue;
			const key = `${keyPrefix}${e.name}`;
			if (e.isDirectory()) {
				// Only where keys can still match the prefix (which spares reading manifests elsewhere).
				if (!key.startsWith(prefix) && !prefix.startsWith(`${key}/`)) continue;
				const c = await this.compositeAt(join(dir, e.name)).catch((err: unknown) => (errCode(err) === "ENOENT" ? null : Promise.reject(err)));
				if (c) {
					if (key.startsWith(prefix)) items.push({ name: e.name, sortKey: key, isDir: false, info: { key, size: c.manifest.size, mtime: c.mtime } });
				} else items.push({ name: e.name, sortKey: `${key}/`, isDir: true });
			} else if (e.isFile()) items.push({ name: e.name, sortKey: key, isDir: false });
		}
		items.sort((a, b) => compareKeys(a.sortKey, b.sortKey));
		for (const item of items) {
			const key = item.sortKey;
			if (item.isDir) {
				yield* this.walk(join(dir, item.name), key, prefix);
				continue;
			}
			if (item.info) {
				yield item.info;
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
		if ((await this.inComposite(key)) || (await this.compositeAt(p))) throw new ConflictError(`A file has the same name as folder ${key}`);
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
		if (await this.inComposite(key)) return;
		let st;
		try {
			st = await lstat(p);
		} catch (err) {
			if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") return;
			throw err;
		}
		if (!st.isDirectory() || (await this.compositeAt(p))) throw new ConflictError(`Not a folder: ${key}`);
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
		const size = metas.reduce((n, m) => n + m.size, 0);
		const numbers = list.map((p) => p.partNumber);
		// On flat datasources the key is fresh: the parts become the object. Anything already there (which flat
		// keys never meet) is handled by assembling, as structured datasources always do.
		if (this.composite && !(await this.inComposite(manifest.key)) && (await this.kindOf(target)) === "none") {
			await this.completeComposite(dir, numbers, metas, manifest.key, target);
		} else {
			await this.assemble(dir, numbers, size, manifest.key, target);
		}
		await rm(dir, { recursive: true, force: true });
		const etag = `"${createHash("md5").update(Buffer.concat(metas.map((m) => Buffer.from(m.md5, "hex")))).digest("hex")}-${list.length}"`;
		return { size, etag };
	}

	/** Copies the parts into one new file, fsynced, and moves it into place. */
	private async assemble(dir: string, numbers: number[], size: number, key: string, target: string): Promise<void> {
		const tmp = join(this.tmpDir, `${randomUUID()}.tmp`);
		try {
			// The first part is copied by the kernel (a reflink where the filesystem can), the others appended.
			await copyFile(join(dir, String(numbers[0])), tmp, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
			const fh = await open(tmp, "a");
			try {
				const buf = Buffer.allocUnsafe(1 << 20);
				for (const n of numbers.slice(1)) {
					const src = await open(join(dir, String(n)), "r");
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
		if ((await stat(tmp)).size !== size) {
			await rm(tmp, { force: true });
			throw new BadRequestError("InvalidPart: a part changed during completion");
		}
		await this.commit(tmp, target, key);
	}

	/**
	 * Moves the parts (fsynced when written) into a new composite in the temp area, adds its manifest, and renames
	 * the whole into place: one rename makes the object appear complete. On failure the parts go back to the upload.
	 */
	private async completeComposite(dir: string, numbers: number[], metas: PartMeta[], key: string, target: string): Promise<void> {
		const stage = join(this.tmpDir, `${randomUUID()}.composite`);
		const parts = numbers.map((n, i) => ({ n, size: metas[i].size, file: join(dir, String(n)) }));
		await buildComposite(stage, parts, {
			move: true,
			mismatch: () => new BadRequestError("InvalidPart: a part changed during completion"),
			missing: async () => new BadRequestError("InvalidPart: a part disappeared during completion"),
		});
		try {
			await this.place(stage, target, key, true);
		} catch (err) {
			await dismantleComposite(stage, parts);
			throw err;
		}
	}

	async abortMultipart(uploadId: string): Promise<void> {
		await rm(this.uploadDir(uploadId), { recursive: true, force: true });
	}

	/** Bytes an unprivileged writer may still put on this store's filesystem. */
	async freeSpace(): Promise<number> {
		// Every upload asks (to refuse early what cannot fit): concurrent ones share one statfs, and its answer
		// stands for half a second. The check is a courtesy either way: uploads racing each other could each fit
		// alone, and a full disk still fails the write itself.
		const now = Date.now();
		if (!this.free || now - this.free.at > 500) {
			const asked = (async () => {
				await this.ready();
				const s = await statfs(this.root);
				return s.bavail * s.bsize;
			})();
			this.free = { at: now, value: asked };
			asked.catch(() => {
				if (this.free?.value === asked) this.free = undefined;
			});
		}
		return this.free.value;
	}

	private free: { at: number; value: Promise<number> } | undefined;

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
