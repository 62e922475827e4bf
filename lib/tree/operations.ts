// File operations over the index and the datasources' stores. The index is the truth for flat datasources
// (objects named by uuid, so moves never touch bytes); structured datasources mirror the tree in storage.
// Content is written before the index shows it, and removed from the index before it is deleted, so a crash
// leaves at worst an unreferenced object, never a node without content.
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { checkRoom, type ObjectStore } from "../storage/types";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";
import { TreeIndex } from "./index";
import { baseName, joinPath, parentOf } from "./paths";
import { RECYCLE_BIN, type NodeDoc } from "./model";
import { S3_HEADERS } from "./meta";
import { isFlatKey } from "./convert";

/** Where structured datasources receive uploads before they are renamed onto their path. */
export const STAGING = ".cellar-staging";
/** The keys content gets in flat datasources: the node's uuid, with a nonce for each later version. */
const FLAT_OBJECT = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.[0-9a-z]{1,40})?$/;

export interface FlatCheck {
	files: number;
	objects: number;
	/** Files whose object is not in storage, and the first of their paths. */
	missing: number;
	missingPaths: string[];
	/** Objects with a key this service writes that no node points to, and the first of them. */
	orphans: number;
	orphanKeys: string[];
	/** Objects with any other key (not written by Cellar): left alone. */
	foreign: number;
}

export interface DatasourceHandle {
	name: string;
	flat: boolean;
	store: ObjectStore;
}

export class TreeOperations {
	constructor(
		readonly index: TreeIndex,
		private readonly datasource: (name: string) => Promise<DatasourceHandle>,
		/** Called before content is replaced or deleted for good, while it is still readable (versioning keeps it). */
		private readonly beforeLoss: (ds: string, previous: NodeDoc, reason: "overwrite" | "delete", owner?: string) => Promise<void> = async () => undefined,
		/** Told about every folder created, explicitly or as a missing parent (derived indexes follow), and by whom. */
		private readonly foldersCreated: (created: NodeDoc[], by?: string) => void = () => undefined,
	) {}

	/** Who the folders created through this object are announced as made by (see authoredBy). */
	private author?: string;

	/**
	 * These operations (the same index, stores and commit locks: a view, not a copy) announcing the folders they
	 * create, missing parents included, as made by `by`. Passed along explicitly rather than through an
	 * AsyncLocalStorage, whose promise hooks cost every request of the node once enabled.
	 */
	authoredBy(by: string): TreeOperations {
		const view = Object.create(this) as TreeOperations;
		view.author = by;
		return view;
	}

	keyFor(ds: DatasourceHandle, uuid: string, path: string): string {
		return ds.flat ? uuid : path;
	}

	async mkdir(dsName: string, path: string, recursive: boolean): Promise<NodeDoc> {
		const ds = await this.datasource(dsName);
		const { node, created } = await this.index.mkdir(dsName, path, recursive);
		if (!ds.flat) for (const c of created) await ds.store.mkdir(c.path);
		if (created.length) this.foldersCreated(created, this.author);
		return node;
	}

	/** Writes a whole file: content first (atomic in the store), then the index. Overwrites keep the uuid. */
	async writeFile(dsName: string, path: string, body: NodeJS.ReadableStream, opts: { size?: number; contentType?: string; meta?: Record<string, string> } = {}): Promise<NodeDoc> {
		const ds = await this.datasource(dsName);
		const target = await this.prepareWrite(dsName, path);
		const written = await ds.store.put(target.key, body, { size: opts.size, contentType: opts.contentType });
		return this.commitWrite(dsName, path, { uuid: target.uuid, key: target.key, size: written.size, etag: written.md5, meta: opts.meta });
	}

	async createEmptyFile(dsName: string, path: string): Promise<NodeDoc> {
		if (await this.index.get(dsName, path)) throw new ConflictError(`${path} already exists`, "node.exists");
		return this.writeFile(dsName, path, Readable.from([]), { size: 0 });
	}

	/** A new file with the given content (a document template), refused like an empty one over an existing node. */
	async createFileWith(dsName: string, path: string, content: Buffer, contentType?: string): Promise<NodeDoc> {
		if (await this.index.get(dsName, path)) throw new ConflictError(`${path} already exists`, "node.exists");
		return this.writeFile(dsName, path, Readable.from(content.length ? [content] : []), { size: content.length, contentType });
	}

	/** Where new content for `path` goes: the node's uuid and the object key, the parent folders created. */
	async prepareWrite(dsName: string, path: string, size?: number): Promise<{ uuid: string; key: string; flat: boolean }> {
		const ds = await this.datasource(dsName);
		// An announced size that the storage cannot hold is refused before the missing folders are made: a refused
		// upload leaves nothing.
		await checkRoom(ds.store, size);
		await this.mkdir(dsName, parentOf(path), true);
		const existing = await this.index.get(dsName, path);
		if (existing?.type === "COLLECTION") throw new ConflictError(`${path} is a folder`, "node.exists");
		const uuid = existing?._id ?? randomUUID();
		// Flat: a new object per version, swapped in by the index. Structured: content lands in a staging
		// object and is renamed onto its path at commit, under the path's lock, so that storage and index
		// agree on which of two concurrent uploads won.
		const nonce = `${Date.now().toString(36)}${randomUUID().slice(0, 8)}`;
		const key = ds.flat ? (existing ? `${uuid}.${nonce}` : uuid) : `${STAGING}/${uuid}.${nonce}`;
		return { uuid, key, flat: ds.flat };
	}

	/**
	 * Makes content written at `key` the content of `path`; the replaced object, if another, is deleted. The S3
	 * headers stored with the content are replaced by `headers` (the stored JSON), or dropped: the ones of the
	 * replaced content (its md5 in x-amz-meta-md5chksum, its type) would describe other bytes.
	 */
	async commitWrite(dsName: string, path: string, c: { uuid: string; key: string; size: number; etag: string; meta?: Record<string, string>; headers?: string }, owner?: string): Promise<NodeDoc> {
		return (await this.commitWriteOver(dsName, path, c, owner)).node;
	}

	/** commitWrite, telling also what it replaced (null: the file is new). */
	async commitWriteOver(dsName: string, path: string, c: { uuid: string; key: string; size: number; etag: string; meta?: Record<string, string>; headers?: string }, owner?: string): Promise<{ node: NodeDoc; previous: NodeDoc | null }> {
		const ds = await this.datasource(dsName);
		return this.locked(`${dsName}/${path}`, async () => {
			// The parent folder may have been deleted or moved while the content was uploaded: the file lands
			// where it was sent, as S3 keys do, and never without a parent in the index.
			await this.mkdir(dsName, parentOf(path), true);
			// The content being replaced is kept as a version now that the new one is complete (a cut upload
			// replaces nothing), and only when it really changes.
			const current = await this.index.get(dsName, path);
			if (current?.type === "LEAF" && current.key && current.etag !== c.etag) await this.beforeLoss(dsName, current, "overwrite", owner);
			let key = c.key;
			if (!ds.flat && key !== path) {
				if (ds.store.rename) await ds.store.rename(key, path);
				else {
					await ds.store.copy(key, path);
					await ds.store.delete(key).catch(() => undefined);
				}
				key = path;
			}
			const { headers, ...content } = c;
			// Nothing found above, under this path's lock: the index inserts without looking again.
			const { node, previous } = await this.index.commitFile(dsName, path, { ...content, key, meta: { ...c.meta, [S3_HEADERS]: headers } }, current === null);
			if (previous?.key && previous.key !== key) await ds.store.delete(previous.key).catch(() => undefined);
			// An S3 delete may have removed the folder as empty just before this file landed in it: made again.
			if (!(await this.index.get(dsName, parentOf(path)))) await this.mkdir(dsName, parentOf(path), true);
			return { node, previous };
		});
	}

	private locks = new Map<string, Promise<unknown>>();

	/** Runs `fn` after any other commit of the same path has finished (in this process). */
	private async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
		const before = this.locks.get(key) ?? Promise.resolve();
		const run = before.catch(() => undefined).then(fn);
		this.locks.set(key, run);
		try {
			return await run;
		} finally {
			if (this.locks.get(key) === run) this.locks.delete(key);
		}
	}

	/**
	 * Server-side copy of one file to a new node, with the S3 headers stored with the source, or `headers` instead
	 * (the stored JSON; "" for none) as S3's CopyObject with x-amz-metadata-directive REPLACE asks.
	 */
	async copyFile(fromDs: string, from: string, toDs: string, to: string, headers?: string): Promise<NodeDoc> {
		const src = await this.datasource(fromDs);
		const doc = await this.index.get(fromDs, from);
		if (!doc || doc.type !== "LEAF" || !doc.key) throw new NotFoundError(`${from} not found`, "node.notfound");
		const target = await this.prepareWrite(toDs, to);
		const dst = await this.datasource(toDs);
		const size = src === dst ? (await dst.store.copy(doc.key, target.key)).size : await this.transfer(src, doc, dst, target.key);
		return this.commitWrite(toDs, to, { uuid: target.uuid, key: target.key, size, etag: doc.etag ?? "", headers: headers === undefined ? doc.meta[S3_HEADERS] : headers || undefined });
	}

	/**
	 * S3's CopyObject of a file onto itself with new headers: only the headers and the modification time change
	 * (rclone sets a file's time this way), the bytes stay where they are.
	 */
	async replaceHeaders(dsName: string, path: string, headers: string | undefined): Promise<NodeDoc> {
		return this.locked(`${dsName}/${path}`, async () => {
			const doc = await this.index.get(dsName, path);
			if (!doc || doc.type !== "LEAF" || !doc.key) throw new NotFoundError(`${path} not found`, "node.notfound");
			return (await this.index.commitFile(dsName, path, { uuid: doc._id, key: doc.key, size: doc.size, etag: doc.etag ?? "", meta: { [S3_HEADERS]: headers } })).node;
		});
	}

	/** Copies a file or a whole folder to `to` (new nodes, new uuids); returns the created nodes, top first. */
	async copyTree(fromDs: string, from: string, toDs: string, to: string): Promise<NodeDoc[]> {
		if (toDs === fromDs && (to + "/").startsWith(from + "/")) throw new ForbiddenError("A folder cannot be copied inside itself", "node.copy.inside");
		if (await this.index.get(toDs, to)) throw new ConflictError(`${to} already exists`, "node.exists");
		const docs = (await this.index.subtree(fromDs, from)).sort((a, b) => a.path.length - b.path.length);
		if (!docs.length) throw new NotFoundError(`${from} not found`, "node.notfound");
		const created: NodeDoc[] = [];
		for (const d of docs) {
			const target = to + d.path.slice(from.length);
			const copy = d.type === "COLLECTION" ? await this.mkdir(toDs, target, true) : await this.copyFile(fromDs, d.path, toDs, target);
			// Metadata travels with the copy; where it came from out of a recycle bin does not.
			const { recycle_restore, ...meta } = d.meta;
			created.push(Object.keys(meta).length ? await this.index.setMeta(copy._id, meta) : copy);
		}
		return created;
	}

	/**
	 * Brings a structured datasource's index in line with what its storage holds (a resync): files found in
	 * storage are added or updated in place (same uuid), index entries whose object is gone are removed.
	 */
	async resyncApply(dsName: string, add: { path: string; size: number; mtime: number; etag: string }[], remove: string[]): Promise<{ added: NodeDoc[]; updated: NodeDoc[]; removed: NodeDoc[] }> {
		const ds = await this.datasource(dsName);
		if (ds.flat) throw new BadRequestError(`${dsName} is a flat datasource: its tree lives in the index, not in storage`);
		const out = { added: [] as NodeDoc[], updated: [] as NodeDoc[], removed: [] as NodeDoc[] };
		for (const path of remove) {
			const doc = await this.index.get(dsName, path);
			if (doc?.type === "LEAF") out.removed.push(...(await this.index.remove(dsName, path)));
		}
		for (const f of add) {
			await this.mkdir(dsName, parentOf(f.path), true);
			const existing = await this.index.get(dsName, f.path);
			if (existing?.type === "COLLECTION") continue;
			// Content changed in storage behind our back: the S3 headers stored with the old content no longer apply.
			const meta = existing && existing.etag !== f.etag ? { [S3_HEADERS]: undefined } : undefined;
			const { node } = await this.index.commitFile(dsName, f.path, { uuid: existing?._id ?? randomUUID(), key: f.path, size: f.size, etag: f.etag, mtime: f.mtime, meta });
			(existing ? out.updated : out.added).push(node);
		}
		return out;
	}

	/**
	 * Streams a file's content to another datasource and checks it arrived whole: same size, and the same md5
	 * when the source's Etag is a plain md5 (multipart Etags are not a content hash). A bad copy is removed.
	 */
	private async transfer(src: DatasourceHandle, doc: NodeDoc, dst: DatasourceHandle, key: string): Promise<number> {
		if (!doc.key) throw new NotFoundError(`${doc.path} has no content`, "node.notfound");
		const written = await dst.store.put(key, await src.store.get(doc.key), { size: doc.size });
		if (written.size !== doc.size || (doc.etag && /^[0-9a-f]{32}$/.test(doc.etag) && written.md5 !== doc.etag)) {
			await dst.store.delete(key).catch(() => undefined);
			throw new ConflictError(`Copy of ${doc.path} does not match its source (size or hash): nothing was moved`, "copy.mismatch");
		}
		return written.size;
	}

	/** Moves a node (and its subtree) to `to`; across datasources the bytes are copied, then removed. */
	async move(fromDs: string, from: string, toDs: string, to: string): Promise<NodeDoc> {
		if (to === from && toDs === fromDs) throw new ConflictError("Source and target are the same", "node.exists");
		if (toDs === fromDs && (to + "/").startsWith(from + "/")) throw new ForbiddenError("A folder cannot be moved inside itself", "node.move.inside");
		const src = await this.datasource(fromDs);
		const dst = await this.datasource(toDs);
		const parent = await this.index.get(toDs, parentOf(to));
		if (!parent || parent.type !== "COLLECTION") throw new NotFoundError(`Target folder ${parentOf(to) || toDs} does not exist`, "node.notfound");
		const before = await this.index.subtree(fromDs, from);
		if (!before.length) throw new NotFoundError(`${from} not found`, "node.notfound");
		if (src === dst && src.flat) {
			await this.index.move(fromDs, from, toDs, to);
		} else {
			// Bytes first (copy to the new keys), then the index, then the old bytes.
			for (const d of before.sort((a, b) => a.path.length - b.path.length)) {
				const newPath = to + d.path.slice(from.length);
				if (d.type === "COLLECTION") {
					if (!dst.flat) await dst.store.mkdir(newPath);
				} else if (d.key) {
					const newKey = this.keyFor(dst, d._id, newPath);
					if (src === dst) await dst.store.copy(d.key, newKey);
					else await this.transfer(src, d, dst, newKey);
				}
			}
			// Copying took a while: the target folder may have gone meanwhile (as for an upload, it is made again).
			await this.mkdir(toDs, parentOf(to), true);
			await this.index.move(fromDs, from, toDs, to);
			for (const d of before) if (d.type === "LEAF") await this.index.setKey(d._id, this.keyFor(dst, d._id, to + d.path.slice(from.length)));
			for (const d of before) if (d.type === "LEAF" && d.key && (src !== dst || d.key !== this.keyFor(dst, d._id, to + d.path.slice(from.length)))) await src.store.delete(d.key).catch(() => undefined);
			if (!src.flat) await src.store.rmdir(from).catch(() => undefined);
		}
		return (await this.index.get(toDs, to)) as NodeDoc;
	}

	/** Deletes for good: index first, then content. */
	async removePermanently(dsName: string, path: string, owner?: string): Promise<number> {
		const ds = await this.datasource(dsName);
		// Under the path's lock: two deletes of one file keep one version of it, and the second finds nothing.
		return this.locked(`${dsName}/${path}`, async () => {
			for (const d of await this.index.subtree(dsName, path)) if (d.type === "LEAF" && d.key) await this.beforeLoss(dsName, d, "delete", owner);
			const removed = await this.index.remove(dsName, path);
			for (const d of removed) if (d.type === "LEAF" && d.key) await ds.store.delete(d.key).catch(() => undefined);
			if (!ds.flat && removed.some((d) => d.type === "COLLECTION")) await ds.store.rmdir(path).catch(() => undefined);
			return removed.length;
		});
	}

	/**
	 * S3's DeleteObject of a file: that file alone, for good. A path naming a folder names no S3 object: nothing is
	 * removed then, whatever the folder holds. Returns the removed file, or null.
	 */
	async deleteFile(dsName: string, path: string, owner?: string): Promise<NodeDoc | null> {
		const ds = await this.datasource(dsName);
		return this.locked(`${dsName}/${path}`, async () => {
			const doc = await this.index.get(dsName, path);
			if (doc?.type !== "LEAF") return null;
			if (doc.key) await this.beforeLoss(dsName, doc, "delete", owner);
			const removed = await this.index.removeSingle(dsName, path, "LEAF", doc._id);
			if (removed?.key) await ds.store.delete(removed.key).catch(() => undefined);
			return removed;
		});
	}

	/**
	 * S3's DeleteObject of `folder/`, the folder's marker: the folder goes when nothing is inside it and `kept` does
	 * not hold it (a folder an ACL points to); one holding anything stays, whatever it holds.
	 */
	async deleteFolderMarker(dsName: string, path: string, kept: (doc: NodeDoc) => Promise<boolean>): Promise<NodeDoc | null> {
		return this.locked(`${dsName}/${path}`, async () => {
			const doc = await this.index.get(dsName, path);
			if (doc?.type !== "COLLECTION" || (await this.index.hasChildren(dsName, path)) || (await kept(doc))) return null;
			return this.dropEmptyFolder(dsName, path);
		});
	}

	/**
	 * After an S3 delete in `folder`: removes it, then its parents, below `stop` (the workspace root; its recycle bin
	 * stays too), while each is left empty, as S3 prefixes go with their last object. A folder carrying metadata or
	 * held by `kept` stays. Returns the folders removed.
	 */
	async pruneEmptyFolders(dsName: string, folder: string, stop: string, kept: (doc: NodeDoc) => Promise<boolean>): Promise<NodeDoc[]> {
		const out: NodeDoc[] = [];
		for (let p = folder; p !== stop && p.length > stop.length && p !== joinPath(stop, RECYCLE_BIN); p = parentOf(p)) {
			// Under the folder's lock: an upload committing into it finds it gone and makes it again, or is seen here.
			const gone = await this.locked(`${dsName}/${p}`, async () => {
				const doc = await this.index.get(dsName, p);
				if (doc?.type !== "COLLECTION" || Object.keys(doc.meta).length || (await this.index.hasChildren(dsName, p)) || (await kept(doc))) return null;
				return this.dropEmptyFolder(dsName, p);
			});
			if (!gone) break;
			out.push(gone);
		}
		return out;
	}

	/** An empty folder out of the index, then out of storage (structured), when nothing is inside it. */
	private async dropEmptyFolder(dsName: string, path: string): Promise<NodeDoc | null> {
		const gone = await this.index.removeSingle(dsName, path, "COLLECTION");
		if (!gone) return null;
		const ds = await this.datasource(dsName);
		// delete, not the recursive rmdir: a file renamed into the folder meanwhile stays where it is.
		if (!ds.flat) await ds.store.delete(path).catch(() => undefined);
		// A file committed into it meanwhile (its commit found the folder before it went) gets its folder back.
		if (await this.index.hasChildren(dsName, path)) await this.mkdir(dsName, path, true);
		return gone;
	}

	/** Moves a node into `<root>/recycle_bin`, remembering where it came from. */
	async recycle(dsName: string, rootPath: string, path: string, restoreTo: string): Promise<NodeDoc> {
		const bin = joinPath(rootPath, RECYCLE_BIN);
		await this.mkdir(dsName, bin, true);
		const node = await this.index.get(dsName, path);
		const target = await this.freeName(dsName, joinPath(bin, baseName(path)), node?.type === "COLLECTION");
		const moved = await this.move(dsName, path, dsName, target);
		return this.index.setMeta(moved._id, { recycle_restore: JSON.stringify(restoreTo) });
	}

	/**
	 * Removes what interrupted writes left in a datasource's storage: staged structured uploads and the store's
	 * own temp files and multipart parts, once older than `maxAgeMs` (uploads still running are younger).
	 */
	async sweepStaging(dsName: string, maxAgeMs: number): Promise<number> {
		const ds = await this.datasource(dsName);
		let removed = 0;
		const limit = Date.now() - maxAgeMs;
		if (!ds.flat) {
			for await (const o of ds.store.list(`${STAGING}/`)) {
				if (o.mtime < limit) {
					await ds.store.delete(o.key).catch(() => undefined);
					removed++;
				}
			}
		}
		const own = ds.store as { cleanupStaging?: (ms: number) => Promise<{ removed: number }> };
		if (own.cleanupStaging) removed += (await own.cleanupStaging(maxAgeMs)).removed;
		return removed;
	}

	/** Staging leftovers of every datasource; with `orphans`, also unreferenced objects of the tree's flat ones. */
	async sweepAll(list: { Name: string; StorageConfiguration?: Record<string, string> }[], maxAgeMs: number, orphans: boolean, warn: (ds: string, e: Error) => void): Promise<number> {
		const failed = (ds: string) => (e: Error) => (warn(ds, e), 0);
		let removed = 0;
		for (const d of list) {
			removed += await this.sweepStaging(d.Name, maxAgeMs).catch(failed(d.Name));
			// Internal datasources (versions, thumbnails) hold objects the tree does not index.
			if (orphans && d.StorageConfiguration?.cellsInternal !== "true") removed += await this.sweepOrphans(d.Name, maxAgeMs).catch(failed(d.Name));
		}
		return removed;
	}

	/**
	 * Removes objects of a flat datasource that no node of it points to, once older than `maxAgeMs`: content of an
	 * upload whose node was never committed, or replaced or deleted content whose removal a crash interrupted.
	 * Only keys shaped like the ones this service writes there (`<uuid>`, `<uuid>.<nonce>`) are candidates; an
	 * object whose node still has a structured key is a conversion under way and is kept.
	 */
	async sweepOrphans(dsName: string, maxAgeMs: number): Promise<number> {
		const ds = await this.datasource(dsName);
		if (!ds.flat) return 0;
		const limit = Date.now() - maxAgeMs;
		// Taken before listing: an object committed meanwhile is younger than `limit` anyway.
		const referenced = await this.index.keysOf(dsName);
		let removed = 0;
		for await (const o of ds.store.list("")) {
			const uuid = FLAT_OBJECT.exec(o.key)?.[1];
			if (!uuid || o.mtime >= limit || referenced.has(o.key)) continue;
			// Checked again one by one: the node may have been pointed at it since the set was taken.
			const node = await this.index.byUuid(uuid);
			if (node && node.ds === dsName && (node.key === o.key || !isFlatKey(node))) continue;
			await ds.store.delete(o.key).catch(() => undefined);
			removed++;
		}
		return removed;
	}

	/**
	 * Checks a flat datasource's index against its storage without changing either: the files whose object is
	 * missing (their content is lost), and the objects shaped like ours that no node points to (the daily sweep
	 * removes them once old enough). A flat index cannot be rebuilt from storage, whose keys are uuids: this is
	 * what a resync of a flat datasource can tell an administrator. At most `sample` paths and keys are named.
	 */
	async checkFlat(dsName: string, sample = 100): Promise<FlatCheck> {
		const ds = await this.datasource(dsName);
		if (!ds.flat) throw new ConflictError(`Datasource ${dsName} is structured: resync it instead`, "datasource.structured");
		// Taken before listing, as for the sweep: an object committed meanwhile appears in the listing only. Keys,
		// not nodes, are kept in memory, and the files are read again page by page afterwards.
		const referenced = new Set<string>();
		let files = 0;
		for await (const page of this.index.files(dsName)) {
			for (const d of page) {
				if (!d.key) continue;
				referenced.add(d.key);
				files++;
			}
		}
		const present = new Set<string>();
		const out: FlatCheck = { files, objects: 0, missing: 0, missingPaths: [], orphans: 0, orphanKeys: [], foreign: 0 };
		for await (const o of ds.store.list("")) {
			out.objects++;
			present.add(o.key);
			if (referenced.has(o.key)) continue;
			if (!FLAT_OBJECT.test(o.key)) out.foreign++;
			else if (++out.orphans <= sample) out.orphanKeys.push(o.key);
		}
		referenced.clear();
		for await (const page of this.index.files(dsName)) {
			for (const d of page) {
				if (!d.key || present.has(d.key)) continue;
				// Listed before the node was committed? Its object is there now.
				if (await ds.store.head(d.key).catch(() => null)) continue;
				// Deleted or overwritten since the index was read: its old object went with it.
				const current = await this.index.byUuid(d._id);
				if (!current || current.key !== d.key) continue;
				if (++out.missing <= sample) out.missingPaths.push(d.path);
			}
		}
		return out;
	}

	/**
	 * Forgets a datasource's tree before its configuration is deleted. A flat datasource's index is the only
	 * record of its files' names and folders (its objects are named by uuid): it is refused while it holds files.
	 * A structured one's storage keeps them: adding it again (and a resync) gives them back.
	 */
	async dropDatasource(dsName: string): Promise<{ removed: number; root: NodeDoc }> {
		const ds = await this.datasource(dsName);
		const files = await this.index.fileCount(dsName);
		if (ds.flat && files > 0) throw new ConflictError(`Datasource ${dsName} stores ${files} file(s) by uuid only (flat): delete or move them first`, "datasource.not.empty");
		const root = await this.index.ensureRoot(dsName);
		return { removed: await this.index.dropDatasource(dsName), root };
	}

	/** A free name next to `path` ("a.txt" -> "a-1.txt", folder "v1.2" -> "v1.2-1") when it is taken. */
	async freeName(dsName: string, path: string, folder = false): Promise<string> {
		if (!(await this.index.get(dsName, path))) return path;
		// A file keeps its extension ("a-1.txt"), and with it its type; a folder's name is a name ("v1.2-1").
		const dot = folder ? -1 : baseName(path).lastIndexOf(".");
		const stem = dot > 0 ? path.slice(0, path.length - (baseName(path).length - dot)) : path;
		const ext = dot > 0 ? baseName(path).slice(dot) : "";
		for (let i = 1; ; i++) {
			const candidate = `${stem}-${i}${ext}`;
			if (!(await this.index.get(dsName, candidate))) return candidate;
		}
	}
}
