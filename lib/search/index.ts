// The search index: every node of every datasource, in memory, in columns (one slot per node; typed arrays for
// numbers, plain arrays for strings), with three access structures:
//   - `sorted`: slots in (datasource, path) order, so a workspace root or a folder is one contiguous run;
//   - `names`: every lower-case name in one string, for substring search;
//   - `content`: word -> nodes for the text of small text files.
// A node has a slot (its row in the columns, renumbered when the columns are laid out again in path order, so
// that scanning a folder reads memory sequentially) and an id (stable while it is indexed: what the name text,
// the postings and the metadata maps refer to, so a re-layout only rewrites the columns).
// Kept correct from `tree.changed` events (lib/search/engine.ts); a folder move or delete covers its subtree.
import { SortedSlots } from "./sorted";
import { NameText } from "./names";
import { foldText } from "../strings";
import { ContentIndex } from "./content";

export type NodeKind = "LEAF" | "COLLECTION";

/** A node as `tree.scan` and `tree.changed` carry it. */
export interface IndexNode {
	Uuid: string;
	ds: string;
	path: string;
	name?: string;
	type: NodeKind;
	size?: number;
	mtime?: number;
	etag?: string;
	meta?: Record<string, string>;
	/** Object key in the datasource store, when the tree sends it. */
	key?: string;
}

export const LEAF = 1;
export const COLLECTION = 2;

export function baseName(path: string): string {
	return path.slice(path.lastIndexOf("/") + 1);
}

/** Number of segments of a datasource path ("" = 0). */
export function depthOf(path: string): number {
	if (path === "") return 0;
	let n = 1;
	for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) n++;
	return n;
}

/** 1-based index of the first "recycle_bin" segment of a path, 0 if none. */
export function binDepthOf(path: string): number {
	if (!path.includes("recycle_bin")) return 0;
	const segs = path.split("/");
	const i = segs.indexOf("recycle_bin");
	return i < 0 ? 0 : i + 1;
}

export function isHiddenPath(path: string): boolean {
	return path.startsWith(".") || path.includes("/.");
}

/** Lower-case extension of a file name ("" when none; a leading dot alone is not an extension). */
export function extensionOf(lowerName: string): string {
	const dot = lowerName.lastIndexOf(".");
	return dot > 0 ? lowerName.slice(dot + 1) : "";
}

/** Decoded, lower-case values of a JSON-encoded meta value; comma-separated lists (tags) also give their items. */
export function metaValues(raw: string): string[] {
	let v: unknown;
	try {
		v = JSON.parse(raw);
	} catch {
		v = raw;
	}
	const flat = (Array.isArray(v) ? v : [v]).map((x) => (typeof x === "string" ? x : x === null || x === undefined ? "" : typeof x === "object" ? JSON.stringify(x) : String(x)));
	const folded = flat.map(foldText);
	const out = new Set<string>();
	for (const s of folded) {
		out.add(s);
		if (s.includes(",")) for (const part of s.split(",")) if (part.trim()) out.add(part.trim());
	}
	return [...out];
}

/** Etags are usually md5 hex: kept as 16 bytes; anything else goes to a side map. */
const HEX32 = /^[0-9a-f]{32}$/;

type Column = Uint8Array | Uint16Array | Int32Array | Float64Array;

export class SearchIndex {
	private cap = 0;
	/** Slots in use are < highWater; freed slots are reused. */
	highWater = 0;
	private free: number[] = [];

	// ---- columns, by slot ----
	uuids: (string | undefined)[] = [];
	/** Datasource-relative paths ("" = the datasource root). */
	paths: string[] = [];
	lnames: string[] = [];
	dsIds = new Uint16Array(0);
	/** 0 = free slot, LEAF, COLLECTION. */
	types = new Uint8Array(0);
	/** 1 when a segment of the path starts with "." */
	hidden = new Uint8Array(0);
	/** Segments in the path, and where its first "recycle_bin" segment is (0: none), to place nodes without reading paths. */
	depths = new Uint16Array(0);
	binDepths = new Uint16Array(0);
	/**
	 * 1 for a slot whose key changed (or that was filled) since the last layout. Two slots that are not displaced
	 * compare like their numbers: the layout numbered them in key order.
	 */
	displaced = new Uint8Array(0);
	exts = new Int32Array(0);
	sizes = new Float64Array(0);
	mtimes = new Float64Array(0);
	/** Etag: 0 none, 1 md5 hex packed in etagBin, 2 in etagOther (by id). */
	private etagKind = new Uint8Array(0);
	private etagBin = new Uint8Array(0);
	private idOfSlot = new Int32Array(0);

	// ---- by node id ----
	private readonly byUuid = new Map<string, number>();
	private slotOfId = new Int32Array(0);
	private freeIds: number[] = [];
	private nextId = 0;
	private etagOther = new Map<number, string>();
	/** Object keys sent by the tree (only when they are not the uuid or the path). */
	private keys = new Map<number, string>();
	/** Raw metadata (JSON-encoded values) of the nodes that have some. */
	private readonly metas = new Map<number, Record<string, string>>();
	/** Decoded lower-case meta values per node, and the reverse: key -> value -> node ids (FreeString queries). */
	private readonly metaLower = new Map<number, Map<string, string[]>>();
	private readonly metaIndex = new Map<string, Map<string, Set<number>>>();
	readonly names = new NameText((id) => {
		const slot = this.slotOfId[id];
		return slot >= 0 && this.types[slot] ? this.lnames[slot] : undefined;
	});
	readonly content = new ContentIndex();

	/** Per-query marks (see `newStamp`). */
	private stamps = new Uint32Array(0);
	private stampGen = 0;
	/** Nodes added since the columns were last laid out in path order. */
	insertsSinceLayout = 0;

	private dsNames: string[] = [];
	private dsMap = new Map<string, number>();
	private extNames: string[] = [""];
	private extMap = new Map<string, number>([["", 0]]);

	readonly sorted = new SortedSlots(
		(s) => this.dsIds[s],
		(s) => this.paths[s],
	);
	/** While bulk loading, `sorted` is not maintained; `endBulk()` sorts once. */
	private bulk = false;

	constructor(initialCapacity = 1024) {
		this.grow(initialCapacity);
	}

	get count(): number {
		return this.byUuid.size;
	}

	private grow(min: number): void {
		if (min <= this.cap) return;
		let n = Math.max(1024, this.cap);
		while (n < min) n *= 2;
		const re = <T extends Column>(a: T, C: new (n: number) => T, width = 1): T => {
			const b = new C(n * width);
			b.set(a);
			return b;
		};
		this.dsIds = re(this.dsIds, Uint16Array);
		this.types = re(this.types, Uint8Array);
		this.hidden = re(this.hidden, Uint8Array);
		this.depths = re(this.depths, Uint16Array);
		this.binDepths = re(this.binDepths, Uint16Array);
		this.displaced = re(this.displaced, Uint8Array);
		this.exts = re(this.exts, Int32Array);
		this.sizes = re(this.sizes, Float64Array);
		this.mtimes = re(this.mtimes, Float64Array);
		this.etagKind = re(this.etagKind, Uint8Array);
		this.etagBin = re(this.etagBin, Uint8Array, 16);
		this.idOfSlot = re(this.idOfSlot, Int32Array);
		this.stamps = new Uint32Array(n);
		this.stampGen = 0;
		this.cap = n;
	}

	dsId(name: string, create = false): number {
		let id = this.dsMap.get(name);
		if (id === undefined) {
			if (!create) return -1;
			id = this.dsNames.length;
			if (id > 0xfffe) throw new Error("Too many datasources");
			this.dsNames.push(name);
			this.dsMap.set(name, id);
		}
		return id;
	}

	dsName(id: number): string {
		return this.dsNames[id];
	}

	extId(ext: string, create = false): number {
		let id = this.extMap.get(ext);
		if (id === undefined) {
			if (!create) return -1;
			id = this.extNames.length;
			this.extNames.push(ext);
			this.extMap.set(ext, id);
		}
		return id;
	}

	get extCount(): number {
		return this.extNames.length;
	}

	slotOf(uuid: string): number {
		const id = this.byUuid.get(uuid);
		return id === undefined ? -1 : this.slotOfId[id];
	}

	/** Every indexed uuid. */
	uuidsIndexed(): IterableIterator<string> {
		return this.byUuid.keys();
	}

	etag(slot: number): string | undefined {
		switch (this.etagKind[slot]) {
			case 1:
				return Buffer.from(this.etagBin.buffer, this.etagBin.byteOffset + slot * 16, 16).toString("hex");
			case 2:
				return this.etagOther.get(this.idOfSlot[slot]);
			default:
				return undefined;
		}
	}

	private setEtag(slot: number, etag: string | undefined): void {
		const id = this.idOfSlot[slot];
		this.etagOther.delete(id);
		if (etag === undefined || etag === null) {
			this.etagKind[slot] = 0;
		} else if (HEX32.test(etag)) {
			this.etagKind[slot] = 1;
			this.etagBin.set(Buffer.from(etag, "hex"), slot * 16);
		} else {
			this.etagKind[slot] = 2;
			this.etagOther.set(id, etag);
		}
	}

	metaOf(slot: number): Record<string, string> | undefined {
		return this.metas.get(this.idOfSlot[slot]);
	}

	/** Decoded lower-case values of one meta key of a node. */
	metaValuesOf(slot: number, key: string): string[] | undefined {
		return this.metaLower.get(this.idOfSlot[slot])?.get(key);
	}

	/** A fresh mark for de-duplicating slots during one query: `mark(gen, slot)` is true the first time only. */
	newStamp(): number {
		if (++this.stampGen === 0xffffffff) {
			this.stamps.fill(0);
			this.stampGen = 1;
		}
		return this.stampGen;
	}

	mark(gen: number, slot: number): boolean {
		if (this.stamps[slot] === gen) return false;
		this.stamps[slot] = gen;
		return true;
	}

	beginBulk(): void {
		this.bulk = true;
	}

	/** Sorts every slot once (after a bulk load) and lays the columns out in that order. */
	endBulk(): void {
		const order: number[] = [];
		for (let s = 0; s < this.highWater; s++) if (this.types[s]) order.push(s);
		const ds = this.dsIds;
		const paths = this.paths;
		order.sort((a, b) => ds[a] - ds[b] || (paths[a] < paths[b] ? -1 : paths[a] > paths[b] ? 1 : 0));
		this.bulk = false;
		for (const [id, lower] of this.metaLower) this.indexMeta(id, lower, true);
		this.layout(order);
		// The name text in path order too: name hits then come out in slot order (sequential column reads).
		this.names.clear();
		for (let slot = 0; slot < this.highWater; slot++) this.names.set(this.idOfSlot[slot], this.lnames[slot]);
		this.names.prepare();
	}

	/**
	 * Lays the columns out again in (datasource, path) order, so that a folder's nodes sit side by side: scanning a
	 * workspace then reads memory sequentially. Nodes added since the last layout got slots at the end.
	 */
	relayout(): void {
		const [from, to] = [this.sorted.lowerBound(0, ""), this.sorted.lowerBound(0xffff, "")];
		this.layout(this.sorted.slice(from, to));
	}

	/** Renumbers the slots: `order[i]` becomes slot i. Only the columns and the id <-> slot maps change. */
	private layout(order: number[]): void {
		const n = order.length;
		const perm = <T>(a: T[]): T[] => {
			const out = new Array<T>(n);
			for (let i = 0; i < n; i++) out[i] = a[order[i]];
			return out;
		};
		const permT = <T extends Column>(a: T): T => {
			const out = new (a.constructor as new (n: number) => T)(a.length);
			for (let i = 0; i < n; i++) out[i] = a[order[i]];
			return out;
		};
		this.uuids = perm(this.uuids);
		this.paths = perm(this.paths);
		this.lnames = perm(this.lnames);
		this.dsIds = permT(this.dsIds);
		this.types = permT(this.types);
		this.hidden = permT(this.hidden);
		this.depths = permT(this.depths);
		this.binDepths = permT(this.binDepths);
		this.exts = permT(this.exts);
		this.sizes = permT(this.sizes);
		this.mtimes = permT(this.mtimes);
		this.etagKind = permT(this.etagKind);
		this.idOfSlot = permT(this.idOfSlot);
		this.displaced = new Uint8Array(this.displaced.length);
		const bin = new Uint8Array(this.etagBin.length);
		const old = this.etagBin;
		for (let i = 0; i < n; i++) for (let b = 0, from = order[i] * 16, to = i * 16; b < 16; b++) bin[to + b] = old[from + b];
		this.etagBin = bin;
		for (let i = 0; i < n; i++) this.slotOfId[this.idOfSlot[i]] = i;
		this.highWater = n;
		this.free = [];
		this.sorted.load(Int32Array.from({ length: n }, (_, i) => i));
		this.insertsSinceLayout = 0;
	}

	/** Adds or updates a node (by uuid). Returns its slot and whether its content changed (new etag). */
	upsert(n: IndexNode): { slot: number; contentChanged: boolean } {
		const known = this.slotOf(n.Uuid);
		const ds = this.dsId(n.ds, true);
		const path = n.path;
		let contentChanged = true;
		let slot: number;
		if (known < 0) {
			// A node already at that place under another uuid is stale (its delete was missed): replace it.
			if (!this.bulk) {
				const other = this.sorted.find(ds, path);
				if (other >= 0) this.removeSlot(other);
			}
			slot = this.free.pop() ?? this.highWater++;
			this.insertsSinceLayout++;
			this.grow(slot + 1);
			const id = this.freeIds.pop() ?? this.nextId++;
			if (id >= this.slotOfId.length) {
				const grown = new Int32Array(Math.max(1024, this.slotOfId.length * 2));
				grown.set(this.slotOfId);
				this.slotOfId = grown;
			}
			this.byUuid.set(n.Uuid, id);
			this.slotOfId[id] = slot;
			this.idOfSlot[slot] = id;
			this.uuids[slot] = n.Uuid;
			this.displaced[slot] = 1;
			this.dsIds[slot] = ds;
			this.paths[slot] = path;
			this.types[slot] = n.type === "COLLECTION" ? COLLECTION : LEAF;
			if (!this.bulk) this.sorted.insert(slot);
		} else {
			slot = known;
			contentChanged = this.etag(slot) !== (n.etag ?? undefined);
			if (this.dsIds[slot] !== ds || this.paths[slot] !== path) {
				if (!this.bulk) {
					this.sorted.remove(slot);
					const other = this.sorted.find(ds, path);
					if (other >= 0) this.removeSlot(other);
				}
				this.dsIds[slot] = ds;
				this.paths[slot] = path;
				this.displaced[slot] = 1;
				if (!this.bulk) this.sorted.insert(slot);
			}
			this.types[slot] = n.type === "COLLECTION" ? COLLECTION : LEAF;
		}
		const id = this.idOfSlot[slot];
		this.placed(slot, path);
		const lname = foldText(n.name || baseName(path));
		if (known < 0 || this.lnames[slot] !== lname) {
			this.lnames[slot] = lname;
			this.names.set(id, lname);
		}
		this.exts[slot] = this.types[slot] === LEAF ? this.extId(extensionOf(lname), true) : 0;
		this.sizes[slot] = n.size ?? 0;
		this.mtimes[slot] = n.mtime ?? 0;
		this.setEtag(slot, n.etag);
		if (n.key && n.key !== n.Uuid && n.key !== path) this.keys.set(id, n.key);
		else this.keys.delete(id);
		this.setMeta(id, n.meta);
		if (contentChanged) this.content.remove(id);
		return { slot, contentChanged };
	}

	private placed(slot: number, path: string): void {
		this.hidden[slot] = isHiddenPath(path) ? 1 : 0;
		this.depths[slot] = Math.min(depthOf(path), 0xffff);
		this.binDepths[slot] = Math.min(binDepthOf(path), 0xffff);
	}

	private indexMeta(id: number, lower: Map<string, string[]>, add: boolean): void {
		for (const [key, values] of lower) {
			let byValue = this.metaIndex.get(key);
			if (!byValue) {
				if (!add) continue;
				this.metaIndex.set(key, (byValue = new Map()));
			}
			for (const v of values) {
				let ids = byValue.get(v);
				if (add) {
					if (!ids) byValue.set(v, (ids = new Set()));
					ids.add(id);
				} else if (ids) {
					ids.delete(id);
					if (!ids.size) byValue.delete(v);
				}
			}
			if (!byValue.size) this.metaIndex.delete(key);
		}
	}

	private setMeta(id: number, meta: Record<string, string> | undefined): void {
		const old = this.metaLower.get(id);
		if (old && !this.bulk) this.indexMeta(id, old, false);
		if (!meta || typeof meta !== "object" || !Object.keys(meta).length) {
			this.metas.delete(id);
			this.metaLower.delete(id);
			return;
		}
		this.metas.set(id, meta);
		const lower = new Map<string, string[]>();
		for (const [k, v] of Object.entries(meta)) if (typeof v === "string") lower.set(k.toLowerCase(), metaValues(v));
		this.metaLower.set(id, lower);
		if (!this.bulk) this.indexMeta(id, lower, true);
	}

	/** Slots whose meta `key` has a value accepted by `test` (or exactly `exact`). */
	metaCandidates(key: string, exact: string | undefined, test: (v: string) => boolean): number[] {
		const byValue = this.metaIndex.get(key);
		if (!byValue) return [];
		const out: number[] = [];
		const add = (ids: Set<number> | undefined) => {
			if (ids) for (const id of ids) out.push(this.slotOfId[id]);
		};
		if (exact !== undefined) add(byValue.get(exact));
		else for (const [v, ids] of byValue) if (test(v)) add(ids);
		return out;
	}

	/** Calls `fn(slot)` for every node whose lower-case name contains `needle`. */
	searchNames(needle: string, fn: (slot: number) => void): void {
		const slotOfId = this.slotOfId;
		this.names.search(needle, (id) => fn(slotOfId[id]));
	}

	hasContent(slot: number): boolean {
		return this.content.has(this.idOfSlot[slot]);
	}

	/** Whether a node's text has a word (a trailing `*`: a word starting with it). */
	contentContains(slot: number, word: string): boolean {
		return this.content.contains(this.idOfSlot[slot], word);
	}

	/** Slots whose text has every word (may hold a slot twice). */
	contentMatchAll(words: string[]): number[] {
		const ids = this.content.matchAll(words);
		const out = new Array<number>(ids.length);
		for (let i = 0; i < ids.length; i++) out[i] = this.slotOfId[ids[i]];
		return out;
	}

	private removeSlot(slot: number): void {
		const uuid = this.uuids[slot];
		if (uuid === undefined || !this.types[slot]) return;
		const id = this.idOfSlot[slot];
		if (!this.bulk) this.sorted.remove(slot);
		this.names.remove(id);
		this.content.remove(id);
		this.setMeta(id, undefined);
		this.setEtag(slot, undefined);
		this.keys.delete(id);
		this.byUuid.delete(uuid);
		this.slotOfId[id] = -1;
		this.freeIds.push(id);
		this.uuids[slot] = undefined;
		this.paths[slot] = "";
		this.lnames[slot] = "";
		this.types[slot] = 0;
		this.free.push(slot);
	}

	/** Number of nodes of a datasource. */
	countIn(ds: string): number {
		const id = this.dsId(ds);
		if (id < 0) return 0;
		const [from, to] = this.sorted.descendants(id, "");
		return this.sorted.rank(to) - this.sorted.rank(from) + (this.sorted.find(id, "") >= 0 ? 1 : 0);
	}

	/** Slots of the descendants of (ds, path), not including the node itself. */
	descendants(ds: string, path: string): number[] {
		const id = this.dsId(ds);
		if (id < 0) return [];
		const [from, to] = this.sorted.descendants(id, path);
		return this.sorted.slice(from, to);
	}

	/** Removes a node and everything below it (by uuid, and by place in case the uuid is unknown). Returns the count. */
	removeTree(uuid: string | undefined, ds: string, path: string): number {
		const victims = new Set(this.descendants(ds, path));
		const byUuid = uuid !== undefined ? this.slotOf(uuid) : -1;
		if (byUuid >= 0) victims.add(byUuid);
		const id = this.dsId(ds);
		if (id >= 0) {
			const atPlace = this.sorted.find(id, path);
			if (atPlace >= 0) victims.add(atPlace);
		}
		for (const s of victims) this.removeSlot(s);
		return victims.size;
	}

	/** Moves the subtree at (fromDs, fromPath) under (node.ds, node.path), then updates the top node itself. */
	moveTree(fromDs: string, fromPath: string, node: IndexNode): { slot: number; contentChanged: boolean } {
		const toDs = this.dsId(node.ds, true);
		const below = this.descendants(fromDs, fromPath);
		if (below.length && !(fromDs === node.ds && fromPath === node.path)) {
			for (const s of below) this.sorted.remove(s);
			// Whatever stale entries sit at the destination go away first.
			for (const s of this.descendants(node.ds, node.path)) this.removeSlot(s);
			for (const s of below) {
				const path = node.path + this.paths[s].slice(fromPath.length);
				this.dsIds[s] = toDs;
				this.paths[s] = path;
				this.displaced[s] = 1;
				this.placed(s, path);
				this.sorted.insert(s);
			}
		}
		if (this.slotOf(node.Uuid) < 0) {
			// The top node is known by its old place only (or not at all).
			const id = this.dsId(fromDs);
			const old = id >= 0 ? this.sorted.find(id, fromPath) : -1;
			if (old >= 0) this.removeSlot(old);
		}
		return this.upsert(node);
	}

	/** Indexes the words of a node's text; ignored when the node changed since (etag differs) or is gone. */
	setContent(uuid: string, etag: string | undefined, words: string[]): boolean {
		const slot = this.slotOf(uuid);
		if (slot < 0 || this.etag(slot) !== etag) return false;
		this.content.set(this.idOfSlot[slot], words);
		return true;
	}

	/** A node as it was indexed (for answers and tests). */
	node(slot: number): IndexNode | null {
		const uuid = this.uuids[slot];
		if (uuid === undefined || !this.types[slot]) return null;
		const id = this.idOfSlot[slot];
		return {
			Uuid: uuid,
			ds: this.dsNames[this.dsIds[slot]],
			path: this.paths[slot],
			name: baseName(this.paths[slot]),
			type: this.types[slot] === COLLECTION ? "COLLECTION" : "LEAF",
			size: this.sizes[slot],
			mtime: this.mtimes[slot],
			etag: this.etag(slot),
			meta: this.metas.get(id),
			key: this.keys.get(id),
		};
	}
}
