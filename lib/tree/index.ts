// The node index: one record per file or folder, looked up by datasource path or uuid, in lib/db's NodesRepo
// (SQLite or PostgreSQL). The database keeps what this once kept in memory: ordered children (an index per sort
// order), unique paths, folder sizes and counts of children (updated in the transaction of each write). Nothing
// is loaded at start, nothing is cached here but the cursors of listings being paged.
import { ConflictError, NotFoundError } from "../errors";
import type { ChildCursor, NodeRecord, NodesRepo } from "../db/nodes";
import { ancestors, parentOf } from "./paths";
import type { NodeDoc, NodeType } from "./model";

const now = () => Math.floor(Date.now() / 1000);

/** Orders a listing can be asked in (Cells' SortField); by name within equal values. */
export const SORT_FIELDS = ["name", "size", "mtime"] as const;
export type SortField = (typeof SORT_FIELDS)[number];

export interface ListOptions {
	offset?: number;
	limit?: number;
	type?: NodeType;
	includeHidden?: boolean;
	sort?: { field: SortField; desc?: boolean };
}

/** The index's record as the tree's code reads it. */
export function toDoc(n: NodeRecord): NodeDoc {
	const d: NodeDoc = { _id: n.uuid, ds: n.ds, path: n.path, name: n.name, type: n.type, size: n.size, mtime: n.mtime, meta: n.meta };
	if (n.etag !== undefined) d.etag = n.etag;
	if (n.mode !== undefined) d.mode = n.mode;
	if (n.key !== undefined) d.key = n.key;
	return d;
}

const orNull = (n: NodeRecord | null): NodeDoc | null => (n ? toDoc(n) : null);

/** The node at a path as a listing reads it (TreeIndex.folderAt), passed on to `children` to be read once. */
export type FolderAt = NonNullable<Awaited<ReturnType<NodesRepo["byPathCounted"]>>>;

/** Largest page the repository reads at once; longer listings are read page after page. */
const PAGE = 10_000;

/**
 * Where listings left off, so that the next page (Cells pages by Offset) resumes from the index at that name
 * instead of reading and skipping every earlier child. Small and forgotten in use order: a miss only costs an
 * OFFSET query.
 */
class Cursors {
	private readonly map = new Map<string, ChildCursor>();

	constructor(private readonly max = 1000) {}

	get(key: string): ChildCursor | undefined {
		const c = this.map.get(key);
		if (c) this.map.delete(key);
		return c;
	}

	set(key: string, c: ChildCursor): void {
		this.map.delete(key);
		this.map.set(key, c);
		if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
	}
}

export class TreeIndex {
	private readonly cursors = new Cursors();

	constructor(readonly nodes: NodesRepo) {}

	async get(ds: string, path: string): Promise<NodeDoc | null> {
		return orNull(await this.nodes.byPath(ds, path));
	}

	/** What a listing reads first: the node at a path, with (for a folder) its counts of visible children. */
	async folderAt(ds: string, path: string): Promise<FolderAt | null> {
		return this.nodes.byPathCounted(ds, path);
	}

	async byUuid(uuid: string): Promise<NodeDoc | null> {
		return orNull(await this.nodes.byUuid(uuid));
	}

	/** The files under a datasource path most recently modified, newest first. */
	async recent(ds: string, under: string, limit: number): Promise<NodeDoc[]> {
		return (await this.nodes.recentFiles(ds, under, limit)).map(toDoc);
	}

	async ensureRoot(ds: string): Promise<NodeDoc> {
		return toDoc(await this.nodes.ensureRoot(ds));
	}

	/**
	 * A page of a folder's children and how many there are. Visible children (no dot-names) in the order asked,
	 * or, with `includeHidden`, all of them by name (the administrators' view).
	 */
	async children(ds: string, path: string, opts: ListOptions = {}, at?: FolderAt | null): Promise<{ nodes: NodeDoc[]; total: number }> {
		const found = at === undefined ? await this.nodes.byPathCounted(ds, path) : at;
		if (!found || found.node.type !== "COLLECTION") return { nodes: [], total: 0 };
		const folder = found.node;
		const hidden = opts.includeHidden ? undefined : false;
		const sort = opts.includeHidden ? "name" : (opts.sort?.field ?? "name");
		const desc = !opts.includeHidden && !!opts.sort?.desc;
		// Visible children are counted on the folder's own row, read with it.
		const counts = hidden === false ? found.visible : await this.nodes.countChildren(folder.uuid, { hidden });
		const total = opts.type === "LEAF" ? counts.files : opts.type === "COLLECTION" ? counts.folders : counts.files + counts.folders;
		let offset = Math.max(0, Math.floor(opts.offset ?? 0));
		const wanted = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
		if (offset >= total) return { nodes: [], total };
		const listing = `${folder.uuid}\u0000${sort}\u0000${desc}\u0000${opts.type ?? ""}\u0000${hidden ?? ""}`;
		let after = offset ? this.cursors.get(`${listing}\u0000${offset}`) : undefined;
		const out: NodeDoc[] = [];
		while (out.length < wanted) {
			const page = await this.nodes.childrenPage(folder.uuid, { after, offset: after ? undefined : offset, limit: Math.min(PAGE, wanted - out.length), sort, desc, type: opts.type, hidden });
			for (const n of page.nodes) out.push(toDoc(n));
			offset += page.nodes.length;
			after = page.next;
			if (!after) break;
		}
		if (after) this.cursors.set(`${listing}\u0000${offset}`, after);
		return { nodes: out, total };
	}

	/** Up to `limit` children of a folder (hidden ones included) by name, after `afterName`. */
	async childrenAfter(folderUuid: string, afterName: string | undefined, limit: number): Promise<NodeDoc[]> {
		return (await this.nodes.childrenPage(folderUuid, { after: afterName === undefined ? undefined : { name: afterName }, limit })).nodes.map(toDoc);
	}

	/** The children of a folder with these names, by name. */
	async childrenNamed(folderUuid: string, names: readonly string[]): Promise<NodeDoc[]> {
		return (await this.nodes.childrenNamed(folderUuid, names)).map(toDoc);
	}

	/** Whether anything, hidden or not, is inside the folder with this uuid. */
	async holdsAnything(folderUuid: string): Promise<boolean> {
		return this.nodes.hasChildren(folderUuid);
	}

	/** Number of files and folders directly inside a folder (dot-files excluded). */
	async childCounts(ds: string, path: string): Promise<{ files: number; folders: number }> {
		const folder = await this.nodes.byPath(ds, path);
		return folder ? this.nodes.countChildren(folder.uuid, { hidden: false }) : { files: 0, folders: 0 };
	}

	/** Creates a folder (and, if `recursive`, its missing parents). An existing folder is returned as is. */
	async mkdir(ds: string, path: string, recursive: boolean): Promise<{ node: NodeDoc; created: NodeDoc[] }> {
		const existing = path === "" ? null : await this.nodes.byPath(ds, path);
		if (existing) {
			if (existing.type !== "COLLECTION") throw new ConflictError(`${path} exists and is a file`, "node.exists");
			return { node: toDoc(existing), created: [] };
		}
		let last = await this.nodes.ensureRoot(ds);
		const created: NodeDoc[] = [];
		const chain = [...ancestors(path).slice(1), path].filter((p) => p !== "");
		for (let i = 0; i < chain.length; i++) {
			const p = chain[i];
			const found = await this.nodes.byPath(ds, p);
			if (found) {
				if (found.type !== "COLLECTION") throw new ConflictError(`${p} exists and is a file`, "node.exists");
				last = found;
				continue;
			}
			if (i < chain.length - 1 && !recursive) throw new NotFoundError(`Parent folder ${parentOf(path) || ds} does not exist`, "node.notfound");
			try {
				last = await this.nodes.insert({ ds, path: p, type: "COLLECTION" });
				created.push(toDoc(last));
			} catch (err) {
				// Concurrent uploads into a new folder all create it: the unique index lets one win, the others use its folder.
				const now = err instanceof ConflictError ? await this.nodes.byPath(ds, p) : null;
				if (now?.type !== "COLLECTION") throw err;
				last = now;
			}
		}
		return { node: toDoc(last), created };
	}

	/**
	 * Makes written content visible: a new file, or a new version of an existing one (same uuid). `meta` is merged
	 * into the node's metadata; a key set to undefined is removed.
	 */
	async commitFile(ds: string, path: string, content: { uuid: string; key: string; size: number; etag: string; mtime?: number; meta?: Record<string, string | undefined> }, knownAbsent = false): Promise<{ node: NodeDoc; previous: NodeDoc | null }> {
		// `knownAbsent`: the caller found nothing at this path under its per-path lock, so a new file is inserted
		// without reading again (a node created there meanwhile makes the insert conflict: handled below). A file
		// that was there is read again: it may have been moved or deleted since, and its content is not to follow it.
		const previous = knownAbsent ? null : await this.get(ds, path);
		if (previous && previous.type === "COLLECTION") throw new ConflictError(`${path} is a folder`, "node.exists");
		const mtime = content.mtime ?? now();
		if (previous) {
			const node = await this.nodes.setContent(previous._id, { size: content.size, etag: content.etag, key: content.key, mtime, meta: content.meta });
			return { node: toDoc(node), previous };
		}
		const meta: Record<string, string> = {};
		for (const [k, v] of Object.entries(content.meta ?? {})) if (v !== undefined) meta[k] = v;
		try {
			const node = await this.nodes.insert({ uuid: content.uuid, ds, path, type: "LEAF", size: content.size, key: content.key, etag: content.etag, mtime, meta });
			return { node: toDoc(node), previous: null };
		} catch (err) {
			// Another node committed a first version of this path meanwhile (the per-path lock is per process):
			// this upload is the later one, and replaces that content as any overwrite does.
			const winner = err instanceof ConflictError ? await this.get(ds, path) : null;
			if (!winner || winner.type !== "LEAF") throw err;
			const node = await this.nodes.setContent(winner._id, { size: content.size, etag: content.etag, key: content.key, mtime, meta: content.meta });
			return { node: toDoc(node), previous: winner };
		}
	}

	/** The node and everything below it, a folder before what it holds (nothing when it does not exist). */
	async subtree(ds: string, path: string): Promise<NodeDoc[]> {
		return (await this.nodes.subtree(ds, path)).map(toDoc);
	}

	/** Renames `from` to `to` (same or another datasource) with everything below it, in one transaction; uuids are kept. */
	async move(ds: string, from: string, toDs: string, to: string): Promise<NodeDoc> {
		return toDoc((await this.nodes.moveSubtree(ds, from, toDs, to)).node);
	}

	/** Removes a node and everything below it from the index, in one transaction; returns the removed nodes. */
	async remove(ds: string, path: string): Promise<NodeDoc[]> {
		return (await this.nodes.deleteSubtree(ds, path)).map(toDoc);
	}

	/** Whether anything, hidden or not, is directly inside a folder. */
	async hasChildren(ds: string, path: string): Promise<boolean> {
		const folder = await this.nodes.byPath(ds, path);
		return !!folder && (await this.nodes.hasChildren(folder.uuid));
	}

	/**
	 * Removes one node's own record, a file or a folder with nothing inside, and never anything else: a child
	 * committed into a folder while this runs is left in place (the folder can be made again at its path), not
	 * removed with it. Nothing is removed unless the node at `path` is still of `type` (and `uuid`, when given).
	 */
	async removeSingle(ds: string, path: string, type: NodeType, uuid?: string): Promise<NodeDoc | null> {
		return orNull(await this.nodes.deleteOne(ds, path, { type, uuid }));
	}

	/** Object keys of up to `limit` files of a datasource. */
	async sampleKeys(ds: string, limit: number): Promise<string[]> {
		return this.nodes.sampleKeys(ds, limit);
	}

	/** Number of files of a datasource. */
	async fileCount(ds: string): Promise<number> {
		return this.nodes.countFiles(ds);
	}

	/** Forgets a datasource's whole tree (its configuration is being deleted); the count of nodes removed. */
	async dropDatasource(ds: string): Promise<number> {
		if (!(await this.nodes.byPath(ds, ""))) return 0;
		return this.nodes.dropSubtree(ds, "");
	}

	/** The files of a datasource, a page at a time (bounded memory however many there are). */
	async *files(ds: string, pageSize = 5000): AsyncGenerator<NodeDoc[]> {
		let after: string | undefined;
		for (;;) {
			const page = await this.nodes.filesPage(ds, after, pageSize);
			if (!page.length) return;
			yield page.map(toDoc);
			after = page[page.length - 1].uuid;
		}
	}

	/** The object keys the files of a datasource point to. */
	async keysOf(ds: string): Promise<Set<string>> {
		const keys = new Set<string>();
		for await (const page of this.files(ds)) for (const d of page) if (d.key) keys.add(d.key);
		return keys;
	}

	/** Every node, in uuid order, a page at a time (for rebuilding derived indexes). */
	async scan(after: string | undefined, limit: number): Promise<NodeDoc[]> {
		return (await this.nodes.scan(after, limit)).map(toDoc);
	}

	async setKey(uuid: string, key: string): Promise<void> {
		await this.nodes.setKey(uuid, key);
	}

	async setMeta(uuid: string, meta: Record<string, string | undefined>): Promise<NodeDoc> {
		return toDoc(await this.nodes.setMeta(uuid, meta));
	}
}
