// The node index: one document per file or folder, looked up by datasource path or uuid. Folder sizes are the
// sum of their content, kept up to date on every write by increments along the ancestors.
import { randomUUID } from "node:crypto";
import type { Store } from "../../mixins/db.mixin";
import { ConflictError, NotFoundError } from "../errors";
import { ancestors, baseName, parentOf } from "./paths";
import { dsKey, rootUuid, type NodeDoc, type NodeType } from "./model";
import { ChildListings, type ChildEntry } from "./listings";
import { escapeRegExp } from "../strings";

const now = () => Math.floor(Date.now() / 1000);
/** A node as callers may change it: the store's own objects stay as they are (values are flat but for meta). */
const copyDoc = (d: NodeDoc): NodeDoc => ({ ...d, meta: { ...d.meta } });

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

export class TreeIndex {
	readonly listings = new ChildListings();

	constructor(private readonly store: Store<NodeDoc>) {}

	private listed(d: NodeDoc): void {
		this.listings.add(d.parentKey, { name: d.name, id: d._id, type: d.type });
	}

	private unlisted(d: NodeDoc): void {
		this.listings.remove(d.parentKey, d.name);
		if (d.type === "COLLECTION") this.listings.drop(d.dsPath);
	}

	/** Sorted visible children of a folder, from memory (loaded once per folder). */
	private async childList(parentKey: string): Promise<ChildEntry[]> {
		const hit = this.listings.get(parentKey);
		if (hit) return hit;
		// An in-memory store hands its own documents over without copying them (a copy of 100,000 cost ~200 ms).
		const docs = this.store.memory?.matching("parentKey", parentKey) ?? (await this.store.find({ query: { parentKey } }));
		return this.listings.set(parentKey, docs.map((d) => ({ name: d.name, id: d._id, type: d.type })));
	}

	/**
	 * Sorts the listings of large folders once, at start, when the store holds every node in memory anyway: the
	 * first request for a page of a 100,000-child folder then finds it ready instead of sorting it (~70 ms).
	 * Smaller folders are listed on first use, in well under a millisecond.
	 */
	async preloadListings(minChildren = 1000): Promise<{ folders: number; entries: number }> {
		const memory = this.store.memory;
		if (!memory) return { folders: 0, entries: 0 };
		const counts = new Map<string, number>();
		for (const d of memory.all()) counts.set(d.parentKey, (counts.get(d.parentKey) ?? 0) + 1);
		let folders = 0;
		let entries = 0;
		for (const [parentKey, n] of counts) {
			if (n < minChildren || !parentKey) continue;
			entries += (await this.childList(parentKey)).length;
			folders++;
		}
		return { folders, entries };
	}

	/** One node by an indexed field: straight from memory when the store holds it (no query), else a query. */
	private async one(field: "dsPath" | "_id", value: string): Promise<NodeDoc | null> {
		const hit = this.store.memory?.matching(field, value);
		if (hit) return hit.length ? copyDoc(hit[0]) : null;
		return field === "_id" ? this.store.get(value) : this.store.findOne({ [field]: value });
	}

	async get(ds: string, path: string): Promise<NodeDoc | null> {
		return this.one("dsPath", dsKey(ds, path));
	}

	async byUuid(uuid: string): Promise<NodeDoc | null> {
		return this.one("_id", uuid);
	}

	async ensureRoot(ds: string): Promise<NodeDoc> {
		const existing = await this.store.findOne({ dsPath: ds });
		if (existing) return existing;
		const root: NodeDoc = { _id: rootUuid(ds), ds, path: "", dsPath: ds, parentKey: "", name: ds, type: "COLLECTION", size: 0, mtime: now(), meta: {} };
		try {
			return await this.store.insert(root);
		} catch {
			return (await this.store.findOne({ dsPath: ds })) as NodeDoc;
		}
	}

	async children(ds: string, path: string, opts: ListOptions = {}): Promise<{ nodes: NodeDoc[]; total: number }> {
		if (opts.includeHidden) {
			const query: Record<string, unknown> = { parentKey: dsKey(ds, path) };
			if (opts.type) query.type = opts.type;
			const total = await this.store.count(query);
			return { nodes: await this.store.find({ query, sort: ["name"], offset: opts.offset, limit: opts.limit }), total };
		}
		const offset = opts.offset ?? 0;
		const end = opts.limit ? offset + opts.limit : undefined;
		const field = opts.sort?.field ?? "name";
		if (field !== "name") return this.childrenBy(dsKey(ds, path), field, !!opts.sort?.desc, opts.type, offset, end);
		let list = await this.childList(dsKey(ds, path));
		if (opts.type) list = list.filter((e) => e.type === opts.type);
		// Names are kept sorted: a descending page is read from the end.
		const page = opts.sort?.desc ? list.slice(Math.max(0, list.length - (end ?? list.length)), list.length - offset).reverse() : list.slice(offset, end);
		if (!page.length) return { nodes: [], total: list.length };
		const nodes = (await Promise.all(page.map((e) => this.byUuid(e.id)))).filter((d): d is NodeDoc => !!d);
		return { nodes, total: list.length };
	}

	/** Visible children ordered by size or date (then name): sorted per request, from memory when the store holds it. */
	private async childrenBy(parentKey: string, field: "size" | "mtime", desc: boolean, type: NodeType | undefined, offset: number, end: number | undefined): Promise<{ nodes: NodeDoc[]; total: number }> {
		const all = this.store.memory?.matching("parentKey", parentKey) ?? (await this.store.find({ query: { parentKey } }));
		const docs = all.filter((d) => !d.name.startsWith(".") && (!type || d.type === type));
		const dir = desc ? -1 : 1;
		docs.sort((a, b) => (a[field] - b[field]) * dir || (a.name < b.name ? -dir : a.name > b.name ? dir : 0));
		return { nodes: docs.slice(offset, end).map(copyDoc), total: docs.length };
	}

	/** Number of files and folders directly inside a folder (dot-files excluded). */
	async childCounts(ds: string, path: string): Promise<{ files: number; folders: number }> {
		return this.listings.counts(await this.childList(dsKey(ds, path)));
	}

	/** Drops what memory holds about a folder's children (another replica changed them). */
	forgetFolder(ds: string, path: string): void {
		this.listings.drop(dsKey(ds, path));
	}

	/** Creates a folder (and, if `recursive`, its missing parents). An existing folder is returned as is. */
	async mkdir(ds: string, path: string, recursive: boolean): Promise<{ node: NodeDoc; created: NodeDoc[] }> {
		await this.ensureRoot(ds);
		const created: NodeDoc[] = [];
		const chain = [...ancestors(path).slice(1), path];
		let last: NodeDoc | null = await this.get(ds, "");
		for (let i = 0; i < chain.length; i++) {
			const p = chain[i];
			const existing = await this.get(ds, p);
			if (existing) {
				if (existing.type !== "COLLECTION") throw new ConflictError(`${p} exists and is a file`, "node.exists");
				last = existing;
				continue;
			}
			if (i < chain.length - 1 && !recursive) throw new NotFoundError(`Parent folder ${parentOf(path) || ds} does not exist`, "node.notfound");
			try {
				last = await this.insertNode({ ds, path: p, type: "COLLECTION", size: 0 });
				created.push(last);
			} catch (err) {
				// Concurrent uploads into a new folder all create it: the one that lost the race uses the winner's.
				const now = err instanceof ConflictError ? await this.get(ds, p) : null;
				if (now?.type !== "COLLECTION") throw err;
				last = now;
			}
		}
		return { node: last as NodeDoc, created };
	}

	private async insertNode(n: { ds: string; path: string; type: NodeType; size: number; uuid?: string; key?: string; etag?: string; mtime?: number; meta?: Record<string, string> }): Promise<NodeDoc> {
		const doc: NodeDoc = {
			_id: n.uuid ?? randomUUID(),
			ds: n.ds,
			path: n.path,
			dsPath: dsKey(n.ds, n.path),
			parentKey: dsKey(n.ds, parentOf(n.path)),
			name: baseName(n.path),
			type: n.type,
			size: n.size,
			mtime: n.mtime ?? now(),
			meta: n.meta ?? {},
		};
		if (n.key !== undefined) doc.key = n.key;
		if (n.etag !== undefined) doc.etag = n.etag;
		try {
			const inserted = await this.store.insert(doc);
			this.listed(inserted);
			return inserted;
		} catch (e) {
			if (/unique/i.test(String((e as Error).message)) || (e as { errorType?: string }).errorType === "uniqueViolated") throw new ConflictError(`${n.path} already exists`, "node.exists");
			throw e;
		}
	}

	/** Adds `delta` bytes to every folder above `path` and touches their modification time. */
	async addSize(ds: string, path: string, delta: number): Promise<void> {
		const keys = ancestors(path).map((p) => dsKey(ds, p));
		if (!keys.length) return;
		await this.store.updateMany({ dsPath: { $in: keys } }, delta ? { $inc: { size: delta }, $set: { mtime: now() } } : { $set: { mtime: now() } });
	}

	/**
	 * Makes written content visible: a new file, or a new version of an existing one (same uuid). `meta` is merged
	 * into the node's metadata; a key set to undefined is removed.
	 */
	async commitFile(ds: string, path: string, content: { uuid: string; key: string; size: number; etag: string; mtime?: number; meta?: Record<string, string | undefined> }): Promise<{ node: NodeDoc; previous: NodeDoc | null }> {
		const previous = await this.get(ds, path);
		if (previous && previous.type === "COLLECTION") throw new ConflictError(`${path} is a folder`, "node.exists");
		const mtime = content.mtime ?? now();
		const meta: Record<string, string> = { ...(previous?.meta ?? {}) };
		for (const [k, v] of Object.entries(content.meta ?? {})) {
			if (v === undefined) delete meta[k];
			else meta[k] = v;
		}
		let node: NodeDoc;
		if (previous) {
			node = { ...previous, size: content.size, etag: content.etag, key: content.key, mtime, meta };
			await this.store.replace(node);
		} else {
			node = await this.insertNode({ ds, path, type: "LEAF", size: content.size, uuid: content.uuid, key: content.key, etag: content.etag, mtime, meta });
		}
		await this.addSize(ds, path, content.size - (previous?.size ?? 0));
		return { node, previous };
	}

	/** The node and everything below it (nothing when it does not exist). */
	async subtree(ds: string, path: string): Promise<NodeDoc[]> {
		if (path === "") return this.store.find({ query: { ds } });
		const top = await this.get(ds, path);
		if (!top || top.type === "LEAF") return top ? [top] : [];
		// In memory: down the folder-children index, visiting only the subtree (a path-prefix query has to test
		// every node of the index: 200 ms per delete at 100,000 nodes). Callers get copies, as from a query.
		const memory = this.store.memory;
		if (memory?.matching("parentKey", top.dsPath)) {
			const out = [top];
			const folders = [top.dsPath];
			for (let key = folders.pop(); key !== undefined; key = folders.pop()) {
				for (const d of memory.matching("parentKey", key) ?? []) {
					out.push(copyDoc(d));
					if (d.type === "COLLECTION") folders.push(d.dsPath);
				}
			}
			return out;
		}
		// MongoDB answers an anchored prefix from its dsPath index.
		return [top, ...(await this.store.find({ query: { dsPath: new RegExp(`^${escapeRegExp(top.dsPath)}/`) } }))];
	}

	/** Renames `from` to `to` (same or another datasource) with everything below it; uuids are kept. */
	async move(ds: string, from: string, toDs: string, to: string): Promise<NodeDoc[]> {
		const docs = await this.subtree(ds, from);
		const top = docs.find((d) => d.path === from);
		if (!top) throw new NotFoundError(`${from} not found`, "node.notfound");
		if (await this.get(toDs, to)) throw new ConflictError(`${to} already exists`, "node.exists");
		const moved: NodeDoc[] = [];
		for (const d of docs) {
			const path = to + d.path.slice(from.length);
			const next: NodeDoc = { ...d, ds: toDs, path, dsPath: dsKey(toDs, path), parentKey: dsKey(toDs, parentOf(path)), name: baseName(path) };
			if (d.path === from) next.mtime = now();
			await this.store.replace(next);
			this.unlisted(d);
			this.listed(next);
			moved.push(next);
		}
		await this.addSize(ds, from, -top.size);
		await this.addSize(toDs, to, top.size);
		return moved;
	}

	/** Removes a node and everything below it from the index; returns the removed documents. */
	async remove(ds: string, path: string): Promise<NodeDoc[]> {
		const docs = await this.subtree(ds, path);
		const top = docs.find((d) => d.path === path);
		if (!top) throw new NotFoundError(`${path} not found`, "node.notfound");
		for (const d of docs) {
			await this.store.remove(d._id);
			this.unlisted(d);
		}
		await this.addSize(ds, path, -top.size);
		return docs;
	}

	/** Whether anything, hidden or not, is directly inside a folder. */
	async hasChildren(ds: string, path: string): Promise<boolean> {
		const key = dsKey(ds, path);
		const inMemory = this.store.memory?.matching("parentKey", key);
		return inMemory ? inMemory.length > 0 : (await this.store.count({ parentKey: key })) > 0;
	}

	/**
	 * Removes one node's own document, a file or a folder with nothing inside, and never anything else: a child
	 * committed into a folder while this runs is left in place (the folder can be made again at its path), not
	 * removed with it. Nothing is removed unless the node at `path` is still of `type` (and `uuid`, when given).
	 */
	async removeSingle(ds: string, path: string, type: NodeType, uuid?: string): Promise<NodeDoc | null> {
		const top = await this.get(ds, path);
		if (!top || top.type !== type || (uuid && top._id !== uuid) || path === "") return null;
		if (type === "COLLECTION" && (await this.hasChildren(ds, path))) return null;
		if (!(await this.store.remove(top._id))) return null;
		this.unlisted(top);
		await this.addSize(ds, path, -top.size);
		return top;
	}

	/** Object keys of up to `limit` files of a datasource. */
	async sampleKeys(ds: string, limit: number): Promise<string[]> {
		const docs = await this.store.find({ query: { ds, type: "LEAF" }, limit });
		return docs.map((d) => d.key).filter((k): k is string => !!k);
	}

	/** Number of files of a datasource. */
	async fileCount(ds: string): Promise<number> {
		return this.store.count({ ds, type: "LEAF" });
	}

	/** Forgets a datasource's whole tree (its configuration is being deleted); the count of nodes removed. */
	async dropDatasource(ds: string): Promise<number> {
		const n = await this.store.removeMany({ ds });
		this.listings.clear();
		return n;
	}

	/** The object keys the files of a datasource point to. */
	async keysOf(ds: string): Promise<Set<string>> {
		const docs = this.store.memory?.all() ?? (await this.store.find({ query: { ds, type: "LEAF" } }));
		const keys = new Set<string>();
		for (const d of docs) if (d.ds === ds && d.key) keys.add(d.key);
		return keys;
	}

	/** Every committed node, in uuid order, a page at a time (for rebuilding derived indexes). */
	async scan(after: string | undefined, limit: number): Promise<NodeDoc[]> {
		// In memory: walk the uuid index from `after`, never visiting the rest (a range query would collect all of
		// it per page, making a full scan quadratic). Callers get copies, as from a query.
		const memory = this.store.memory;
		if (memory) return memory.idsAfter(after, limit).map(copyDoc);
		// Sorting the rest of a large index on every page would make a full scan quadratic.
		const sort = this.store.idOrdered ? undefined : ["_id"];
		return this.store.find({ query: { _id: { $gt: after ?? "" } }, sort, limit });
	}

	async setKey(uuid: string, key: string): Promise<void> {
		await this.store.patch(uuid, { key } as Partial<NodeDoc>);
	}

	async setMeta(uuid: string, meta: Record<string, string | undefined>): Promise<NodeDoc> {
		const doc = await this.byUuid(uuid);
		if (!doc) throw new NotFoundError("Node not found", "node.notfound");
		const next = { ...doc.meta };
		for (const [k, v] of Object.entries(meta)) {
			if (v === undefined) delete next[k];
			else next[k] = v;
		}
		return this.store.replace({ ...doc, meta: next });
	}
}
