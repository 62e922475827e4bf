// The node index (files and folders of every datasource) in SQL. A node is reachable three ways, each indexed:
// by uuid (primary key), by (ds, path), and as a child of its parent folder by name. The parent link is the
// structure (a foreign key: no node points at a folder that is gone); `path` is kept alongside so that a lookup by
// path is one probe, not a walk from the root. Both are unique: two files cannot take one path, whatever the race.
//
// Folder sizes are the sum of their content, maintained in the same transaction as the write that changes them
// (insert, new content, move, delete): a crash or a failed statement never leaves a size that disagrees with the
// files. Every ancestor's modification time is touched with it, as the tree index does today. A folder's count of
// visible children (files, folders) is kept the same way: listings and stats read it instead of counting.
//
// Subtrees are found through the parent links with a recursive query (WITH RECURSIVE ... on both dialects), not by
// path prefix: PostgreSQL's path index is a hash (paths may exceed what a btree entry holds), which answers
// equality only.
//
// On PostgreSQL, writers first lock the folders above what they change, root first (`lockAncestors`): concurrent
// writes in one tree then queue on the root instead of deadlocking on each other's folders; the remaining
// deadlocks (two moves crossing) are retried by Db.transaction. SQLite runs one transaction at a time.
//
// better-sqlite3 runs every statement on the event loop: work proportional to a subtree (walking, moving, deleting
// 100,000 nodes) is done a chunk of rows at a time, inside its one transaction, giving the loop a turn between
// chunks so that the node keeps sending heartbeats and answering what does not need the database meanwhile.
import { randomUUID } from "node:crypto";
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { BadRequestError, ConflictError, NotFoundError } from "../errors";
import { ancestors, baseName, parentOf } from "../tree/paths";
import { isForeignKeyViolation } from "./errors";
import type { Db } from "./index";
import type { Database, NodesTable } from "./schema";
import { CompiledShapes, fromJson, lazy, orNull, prefixEnd } from "./sql";

export type NodeType = "LEAF" | "COLLECTION";

export interface NodeRecord {
	uuid: string;
	ds: string;
	/** Uuid of the folder holding it; null for a datasource root. */
	parent: string | null;
	name: string;
	/** Datasource-relative; "" is the root. */
	path: string;
	type: NodeType;
	size: number;
	/** Unix seconds. */
	mtime: number;
	etag?: string;
	mode?: number;
	/** Where the content lives in the datasource's store (the uuid when flat, the path when structured). */
	key?: string;
	/** Metadata namespaces, each value JSON-encoded as Cells' MetaStore has it. */
	meta: Record<string, string>;
}

export interface NewNode {
	/** Generated when absent. */
	uuid?: string;
	ds: string;
	path: string;
	type: NodeType;
	size?: number;
	mtime?: number;
	etag?: string;
	mode?: number;
	key?: string;
	meta?: Record<string, string>;
}

export type SortField = "name" | "size" | "mtime";

/** Where a page ended: the last node's name, and its size or mtime when the listing is ordered by those. */
export interface ChildCursor {
	name: string;
	value?: number;
}

export interface ChildPageOptions {
	/** Start after this node (a previous page's `next`); absent: the first page. */
	after?: ChildCursor;
	/** Without `after`: skip this many children first (Cells' Offset; reads and skips them in the index). */
	offset?: number;
	/** 1 to 10,000; default 100. */
	limit?: number;
	/** Then by name within equal values. Default name. */
	sort?: SortField;
	desc?: boolean;
	type?: NodeType;
	/** false: leave out names starting with a dot. Default true. */
	hidden?: boolean;
}

export interface ChildPage {
	nodes: NodeRecord[];
	/** Present when more children follow. */
	next?: ChildCursor;
}

type Row = Selectable<NodesTable>;
/** sort|dir|type filter|visible only|after a cursor|offset: one compiled query each (childrenPage). */
type ChildrenShape = `${SortField}|${"asc" | "desc"}|${"t" | ""}|${"v" | ""}|${"a" | ""}|${"o" | ""}`;
type Trx = Transaction<Database>;
type Executor = Kysely<Database>;

/** Names starting with a dot are hidden: listed to administrators only, not counted in a folder's children. */
const visible = (name: string): boolean => !name.startsWith(".");

/** Rows handled between two turns of the event loop. */
const CHUNK = 2000;
/** Lets timers and I/O run (heartbeats, other requests) between two chunks of a long operation. */
export const breathe = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The columns a record is made of but its parent, which a listing of children knows already. */
const CHILD_COLUMNS = ["uuid", "ds", "name", "path", "type", "size", "mtime", "etag", "mode", "key", "meta"] as const;
type ChildRow = Pick<Row, (typeof CHILD_COLUMNS)[number]>;

function toRecord(r: Row): NodeRecord {
	return childRecord(r, r.parent);
}

function childRecord(r: ChildRow, parent: string | null): NodeRecord {
	const n: NodeRecord = { uuid: r.uuid, ds: r.ds, parent, name: r.name, path: r.path, type: r.type, size: Number(r.size), mtime: Number(r.mtime), meta: fromJson<Record<string, string>>(r.meta, {}) };
	if (r.etag !== null) n.etag = r.etag;
	if (r.mode !== null) n.mode = r.mode;
	if (r.key !== null) n.key = r.key;
	return n;
}

export const rootUuidOf = (ds: string): string => `DATASOURCE:${ds}`;

/** A row `lockAncestors` read and locked. */
interface LockedRow {
	uuid: string;
	ds: string;
	path: string;
	type: NodeType;
}

/** A folder row as a parent: undefined when absent, ConflictError when it is a file. */
function folderOf(row: { uuid: string; type: string } | undefined, name: string): { uuid: string } | undefined {
	if (!row) return undefined;
	if (row.type !== "COLLECTION") throw new ConflictError(`${name} is a file`, "node.exists");
	return { uuid: row.uuid };
}

function merged(meta: Record<string, string>, changes: Record<string, string | undefined>): Record<string, string> {
	const out = { ...meta };
	for (const [k, v] of Object.entries(changes)) {
		if (v === undefined) delete out[k];
		else out[k] = v;
	}
	return out;
}

export class NodesRepo {
	private readonly now: () => number;

	constructor(
		private readonly db: Db,
		opts: { now?: () => number } = {},
	) {
		this.now = opts.now ?? (() => Math.floor(Date.now() / 1000));
	}

	private get pg(): boolean {
		return this.db.dialect === "postgres";
	}

	/** The root of a datasource, created on first use (concurrent callers all get the same one). */
	async ensureRoot(ds: string, uuid = rootUuidOf(ds)): Promise<NodeRecord> {
		// Read first: every file operation makes sure of its root, and a write (even one that changes nothing) would
		// take the database's write lock each time.
		const existing = await this.byPath(ds, "");
		if (existing) return existing;
		await this.db.kysely
			.insertInto("nodes")
			.values({ uuid, ds, parent: null, name: ds, path: "", type: "COLLECTION", size: 0, mtime: this.now(), etag: null, mode: null, key: null, meta: "{}", files: 0, folders: 0 })
			.onConflict((oc) => oc.doNothing())
			.execute();
		return (await this.byPath(ds, "")) as NodeRecord;
	}

	// The two lookups every request makes several times (a stat one, an upload six): built and compiled by Kysely
	// once, then run with each call's values. Building and compiling the same query cost as much CPU as running it.
	private readonly byPathQuery = lazy(() => this.db.kysely.selectFrom("nodes").selectAll().where("ds", "=", "").where("path", "=", "").compile());
	private readonly byUuidQuery = lazy(() => this.db.kysely.selectFrom("nodes").selectAll().where("uuid", "=", "").compile());

	async byPath(ds: string, path: string): Promise<NodeRecord | null> {
		const q = this.byPathQuery();
		const [row] = (await this.db.kysely.executeQuery<Row>({ ...q, parameters: [ds, path] })).rows;
		return row ? toRecord(row) : null;
	}

	/** The node at a path and, kept on every folder, its counts of visible children: a listing's one probe. */
	async byPathCounted(ds: string, path: string): Promise<{ node: NodeRecord; visible: { files: number; folders: number } } | null> {
		const q = this.byPathQuery();
		const [row] = (await this.db.kysely.executeQuery<Row>({ ...q, parameters: [ds, path] })).rows;
		return row ? { node: toRecord(row), visible: { files: Number(row.files), folders: Number(row.folders) } } : null;
	}

	async byUuid(uuid: string): Promise<NodeRecord | null> {
		const q = this.byUuidQuery();
		const [row] = (await this.db.kysely.executeQuery<Row>({ ...q, parameters: [uuid] })).rows;
		return row ? toRecord(row) : null;
	}

	/**
	 * Adds a node under its existing parent folder and adds its size to every folder above. NotFoundError when the
	 * parent folder does not exist (or is deleted meanwhile), ConflictError when the path is taken or the parent
	 * is a file.
	 */
	async insert(n: NewNode): Promise<NodeRecord> {
		if (n.path === "") throw new BadRequestError("A datasource root is created with ensureRoot");
		const mtime = n.mtime ?? this.now();
		const size = n.size ?? 0;
		return this.db.transaction(async (trx) => {
			// On PostgreSQL the lock's own read gives the parent folder (one round trip fewer under the root's lock).
			const locked = await this.lockAncestors(trx, n.ds, [n.path]);
			const parentPath = parentOf(n.path);
			const parent = folderOf(locked.find((r) => r.ds === n.ds && r.path === parentPath), parentPath || n.ds) ?? (await this.folder(trx, n.ds, parentPath));
			let row: Row;
			try {
				row = await trx
					.insertInto("nodes")
					.values({
						uuid: n.uuid ?? randomUUID(),
						ds: n.ds,
						parent: parent.uuid,
						name: baseName(n.path),
						path: n.path,
						type: n.type,
						size,
						mtime,
						etag: orNull(n.etag),
						mode: orNull(n.mode),
						key: orNull(n.key),
						meta: JSON.stringify(n.meta ?? {}),
						files: 0,
						folders: 0,
					})
					.returningAll()
					.executeTakeFirstOrThrow();
			} catch (err) {
				if (isForeignKeyViolation(err)) throw new NotFoundError(`Parent folder of ${n.path} does not exist`, "node.notfound");
				throw err;
			}
			// The parent's count of children and every ancestor's size and time: one statement.
			await this.addToAncestors(trx, n.ds, n.path, size, mtime, visible(row.name) ? { folder: parent.uuid, column: row.type === "LEAF" ? "files" : "folders", delta: 1 } : undefined);
			return toRecord(row);
		});
	}

	/**
	 * New content for a file (same uuid); the folders above take the size difference. `meta` is merged into the
	 * node's metadata, a namespace set to undefined is removed.
	 */
	async setContent(uuid: string, c: { size: number; etag: string; key: string; mtime?: number; meta?: Record<string, string | undefined> }): Promise<NodeRecord> {
		const mtime = c.mtime ?? this.now();
		return this.db.transaction(async (trx) => {
			const before = await this.lockedByUuid(trx, uuid);
			if (before.type !== "LEAF") throw new ConflictError(`${before.path} is a folder`, "node.exists");
			await this.lockAncestors(trx, before.ds, [before.path]);
			const meta = c.meta ? JSON.stringify(merged(before.meta, c.meta)) : undefined;
			const row = await trx
				.updateTable("nodes")
				.set({ size: c.size, etag: c.etag, key: c.key, mtime, ...(meta === undefined ? {} : { meta }) })
				.where("uuid", "=", uuid)
				.returningAll()
				.executeTakeFirstOrThrow();
			await this.addToAncestors(trx, before.ds, before.path, c.size - before.size, mtime);
			return toRecord(row);
		});
	}

	/** Sets (string) or removes (undefined) metadata namespaces of a node. */
	async setMeta(uuid: string, changes: Record<string, string | undefined>): Promise<NodeRecord> {
		return this.db.transaction(async (trx) => {
			const before = await this.lockedByUuid(trx, uuid);
			const row = await trx.updateTable("nodes").set({ meta: JSON.stringify(merged(before.meta, changes)) }).where("uuid", "=", uuid).returningAll().executeTakeFirstOrThrow();
			return toRecord(row);
		});
	}

	/**
	 * One page of a folder's children, in `sort` order then by name, starting after `after`. Keyset pagination:
	 * each page is a range scan of one index — (parent, name), (parent, size, name) or (parent, mtime, name) —
	 * whatever the depth of the page, where an offset would read and skip every earlier child (`offset` is there
	 * for clients that page by number without a cursor: Cells' Offset).
	 */
	async childrenPage(parentUuid: string, opts: ChildPageOptions = {}): Promise<ChildPage> {
		const limit = Math.max(1, Math.min(Math.floor(opts.limit ?? 100), 10_000));
		const sort = opts.sort ?? "name";
		const after = opts.after;
		const offset = !after && opts.offset ? Math.floor(opts.offset) : 0;
		// In the order the shape's query takes them (see childrenQuery).
		const params: unknown[] = [parentUuid];
		if (opts.type) params.push(opts.type);
		if (opts.hidden === false) params.push(".");
		if (after) {
			if (sort !== "name") params.push(after.value ?? 0);
			params.push(after.name);
		}
		params.push(limit + 1);
		if (offset) params.push(offset);
		const shape: ChildrenShape = `${sort}|${opts.desc ? "desc" : "asc"}|${opts.type ? "t" : ""}|${opts.hidden === false ? "v" : ""}|${after ? "a" : ""}|${offset ? "o" : ""}`;
		const rows = (await this.db.kysely.executeQuery<ChildRow>(this.childrenQueries.with(shape, params))).rows;
		const nodes = rows.slice(0, limit).map((r) => childRecord(r, parentUuid));
		if (rows.length <= limit) return { nodes };
		const last = nodes[nodes.length - 1];
		return { nodes, next: sort === "name" ? { name: last.name } : { name: last.name, value: last[sort] } };
	}

	/** childrenPage's query for one shape, with placeholder values in the order childrenPage passes the real ones. */
	private readonly childrenQueries = new CompiledShapes<ChildrenShape>((shape) => {
		const [sort, dir, type, visibleOnly, after, offset] = shape.split("|") as [SortField, "asc" | "desc", string, string, string, string];
		const cmp = dir === "desc" ? "<" : ">";
		// Only the columns a record needs (each column of each row costs): a page is the largest read of a listing.
		let q = this.db.kysely.selectFrom("nodes").select(CHILD_COLUMNS).where("parent", "=", "");
		if (type) q = q.where("type", "=", "LEAF");
		if (visibleOnly) q = q.where(sql<string>`substr(name, 1, 1)`, "<>", ".");
		if (after) {
			if (sort === "name") q = q.where("name", cmp, "");
			else q = q.where((eb) => eb(eb.refTuple(sort, "name"), cmp, eb.tuple(0, "")));
		}
		if (sort !== "name") q = q.orderBy(sort, dir);
		q = q.orderBy("name", dir).limit(1);
		if (offset) q = q.offset(1);
		return q.compile();
	});

	// Read on every listing: the folder's own counts of visible children, compiled once.
	private readonly visibleCountsQuery = lazy(() => this.db.kysely.selectFrom("nodes").select(["files", "folders"]).where("uuid", "=", "").compile());

	/** Files and folders directly inside a folder; without hidden ones, read from the folder's own counts. */
	async countChildren(parentUuid: string, opts: { hidden?: boolean } = {}): Promise<{ files: number; folders: number }> {
		if (opts.hidden === false) {
			const [f] = (await this.db.kysely.executeQuery<Pick<Row, "files" | "folders">>({ ...this.visibleCountsQuery(), parameters: [parentUuid] })).rows;
			return { files: Number(f?.files ?? 0), folders: Number(f?.folders ?? 0) };
		}
		const rows = await this.db.kysely
			.selectFrom("nodes")
			.select((eb) => ["type", eb.fn.countAll<number>().as("n")])
			.where("parent", "=", parentUuid)
			.groupBy("type")
			.execute();
		const of = (t: NodeType) => Number(rows.find((r) => r.type === t)?.n ?? 0);
		return { files: of("LEAF"), folders: of("COLLECTION") };
	}

	/** Files of a datasource. */
	async countFiles(ds: string): Promise<number> {
		const r = await this.db.kysely
			.selectFrom("nodes")
			.select((eb) => eb.fn.countAll<number>().as("n"))
			.where("ds", "=", ds)
			.where("type", "=", "LEAF")
			.executeTakeFirstOrThrow();
		return Number(r.n);
	}

	/**
	 * Adds complete records as they are (parent uuids, folder sizes and times included: sizes are not recomputed;
	 * the folders' counts of visible children are), in one transaction, many rows per statement: for importing an
	 * existing index (the NeDB upgrade) or a bench.
	 * Parents must come before their children, in this call or an earlier one. A record whose uuid or path exists
	 * fails the whole call with ConflictError.
	 */
	async importNodes(records: readonly NodeRecord[]): Promise<void> {
		await this.db.transaction((trx) => insertRecords(trx, records));
	}

	/** Every node in uuid order, a page at a time (to rebuild derived indexes). */
	async scan(after: string | undefined, limit: number): Promise<NodeRecord[]> {
		let q = this.db.kysely.selectFrom("nodes").selectAll();
		if (after !== undefined) q = q.where("uuid", ">", after);
		return (await q.orderBy("uuid").limit(limit).execute()).map(toRecord);
	}

	/** The files of a datasource in uuid order, a page at a time. */
	async filesPage(ds: string, after: string | undefined, limit: number): Promise<NodeRecord[]> {
		let q = this.db.kysely.selectFrom("nodes").selectAll().where("ds", "=", ds).where("type", "=", "LEAF");
		if (after !== undefined) q = q.where("uuid", ">", after);
		return (await q.orderBy("uuid").limit(limit).execute()).map(toRecord);
	}

	/**
	 * The `limit` files of a datasource most recently modified, under `under` ("" = anywhere), newest first (the
	 * "recent files" of a user's workspaces). Served by the (ds, type, …) index and a sort of that datasource's files.
	 */
	async recentFiles(ds: string, under: string, limit: number): Promise<NodeRecord[]> {
		let q = this.db.kysely.selectFrom("nodes").selectAll().where("ds", "=", ds).where("type", "=", "LEAF");
		if (under) {
			q = q.where("path", ">=", `${under}/`);
			const end = prefixEnd(`${under}/`);
			if (end) q = q.where("path", "<", end);
		}
		return (await q.orderBy("mtime", "desc").orderBy("uuid").limit(limit).execute()).map(toRecord);
	}

	/** Object keys of up to `limit` files of a datasource, any of them. */
	async sampleKeys(ds: string, limit: number): Promise<string[]> {
		const rows = await this.db.kysely.selectFrom("nodes").select("key").where("ds", "=", ds).where("type", "=", "LEAF").where("key", "is not", null).limit(limit).execute();
		return rows.map((r) => r.key).filter((k): k is string => !!k);
	}

	/** The children of a folder with these names (those that exist), by name. */
	async childrenNamed(parentUuid: string, names: readonly string[]): Promise<NodeRecord[]> {
		if (!names.length) return [];
		const rows = await this.db.kysely.selectFrom("nodes").selectAll().where("parent", "=", parentUuid).where("name", "in", names).orderBy("name").execute();
		return rows.map(toRecord);
	}

	/** Whether anything, hidden or not, is directly inside a folder. */
	async hasChildren(uuid: string): Promise<boolean> {
		return !!(await this.db.kysely.selectFrom("nodes").select("uuid").where("parent", "=", uuid).limit(1).executeTakeFirst());
	}

	/** Points a file at another object (the content itself is unchanged: same size, etag and time). */
	async setKey(uuid: string, key: string): Promise<void> {
		await this.db.kysely.updateTable("nodes").set({ key }).where("uuid", "=", uuid).execute();
	}

	/**
	 * The node at `path` and everything below it (the whole tree of a datasource for ""), top first, then folder by
	 * folder, in chunks; nothing when it does not exist. Not a snapshot: outside a transaction, writes made while
	 * the walk runs may or may not be seen.
	 */
	async *walk(ds: string, path: string): AsyncGenerator<NodeRecord[]> {
		const top = await this.byPath(ds, path);
		if (top) yield* walkFrom(this.db.kysely, top);
	}

	/** The node at `path` and everything below it, top first (see walk). */
	async subtree(ds: string, path: string): Promise<NodeRecord[]> {
		const out: NodeRecord[] = [];
		for await (const chunk of this.walk(ds, path)) out.push(...chunk);
		return out;
	}

	/**
	 * Moves (renames) `from` with everything below it to `to`, in the same or another datasource, in one
	 * transaction: every path under it is rewritten, uuids are kept, folder sizes on both sides follow. NotFoundError
	 * when `from` or `to`'s parent folder is missing, ConflictError when `to` is taken.
	 */
	async moveSubtree(ds: string, from: string, toDs: string, to: string): Promise<{ node: NodeRecord; moved: number }> {
		if (from === "" || to === "") throw new BadRequestError("A datasource root cannot be moved or replaced");
		if (ds === toDs && (to === from || to.startsWith(`${from}/`))) throw new BadRequestError(`Cannot move ${from} into itself`);
		const mtime = this.now();
		return this.db.transaction(async (trx) => {
			await this.lockAncestors(trx, ds, [from], toDs, [to]);
			const top = await this.lockedByPath(trx, ds, from);
			const parent = await this.folder(trx, toDs, parentOf(to));
			// Checked first so that a taken target costs nothing; the unique index would refuse it anyway.
			if (await trx.selectFrom("nodes").select("uuid").where("ds", "=", toDs).where("path", "=", to).executeTakeFirst()) throw new ConflictError("A file or folder already exists at this path", "node.exists");
			// Characters (code points), as substr() counts them on both dialects.
			const cut = Array.from(from).length + 1;
			let moved = 0;
			// Nothing is under `to` (it does not exist): rewriting the paths a chunk at a time never collides.
			for await (const chunk of walkFrom(trx, top)) {
				const r = await trx
					.updateTable("nodes")
					.set({ ds: toDs, path: sql<string>`${to} || substr(path, ${cut})` })
					.where("uuid", "in", chunk.map((n) => n.uuid))
					.executeTakeFirst();
				moved += Number(r.numUpdatedRows);
			}
			try {
				await trx.updateTable("nodes").set({ parent: parent.uuid, name: baseName(to), mtime }).where("uuid", "=", top.uuid).execute();
			} catch (err) {
				if (isForeignKeyViolation(err)) throw new NotFoundError(`Folder ${parentOf(to) || toDs} does not exist`, "node.notfound");
				throw err;
			}
			if (top.parent !== null) await this.count(trx, top.parent, top.type, top.name, -1);
			await this.count(trx, parent.uuid, top.type, baseName(to), 1);
			await this.addToAncestors(trx, ds, from, -top.size, mtime);
			await this.addToAncestors(trx, toDs, to, top.size, mtime);
			const node = await trx.selectFrom("nodes").selectAll().where("uuid", "=", top.uuid).executeTakeFirstOrThrow();
			return { node: toRecord(node), moved };
		});
	}

	/**
	 * Removes a node and everything below it (a whole datasource's tree for path ""), in one transaction, and takes
	 * its size off the folders above; the removed nodes, top first. Children go before their folders, a chunk at a
	 * time. A child added under the subtree meanwhile (on PostgreSQL, below the locked folders) makes its folder's
	 * removal fail on the foreign key rather than leave the child orphaned: the removal is then run again, child
	 * included.
	 */
	async deleteSubtree(ds: string, path: string): Promise<NodeRecord[]> {
		return (await this.removeSubtree(ds, path, true)).removed;
	}

	/** deleteSubtree without the removed nodes: how many there were (only their uuids are held meanwhile). */
	async dropSubtree(ds: string, path: string): Promise<number> {
		return (await this.removeSubtree(ds, path, false)).count;
	}

	private async removeSubtree(ds: string, path: string, keep: boolean): Promise<{ count: number; removed: NodeRecord[] }> {
		for (let attempt = 1; ; attempt++) {
			try {
				return await this.db.transaction(async (trx) => {
					await this.lockAncestors(trx, ds, [path]);
					const top = await this.lockedByPath(trx, ds, path);
					const ids: string[] = [];
					const removed: NodeRecord[] = [];
					for await (const chunk of walkFrom(trx, top)) {
						for (const n of chunk) ids.push(n.uuid);
						if (keep) removed.push(...chunk);
					}
					// The walk lists every folder before what it holds: from the end, children go first.
					const DELETE_CHUNK = 500;
					for (let end = ids.length; end > 0; end -= DELETE_CHUNK) {
						await trx.deleteFrom("nodes").where("uuid", "in", ids.slice(Math.max(0, end - DELETE_CHUNK), end)).execute();
						if (ids.length > DELETE_CHUNK) await breathe();
					}
					if (top.parent !== null) await this.count(trx, top.parent, top.type, top.name, -1);
					await this.addToAncestors(trx, ds, path, -top.size, this.now());
					return { count: ids.length, removed };
				});
			} catch (err) {
				if (attempt >= 3 || !isForeignKeyViolation(err)) throw err;
			}
		}
	}

	/**
	 * Removes one node, a file or a folder with nothing inside, never anything else, and takes its size off the
	 * folders above. Nothing is removed (null) unless the node at `path` is still of `type` (and `uuid`, when
	 * given) and, for a folder, empty.
	 */
	async deleteOne(ds: string, path: string, want: { type: NodeType; uuid?: string }): Promise<NodeRecord | null> {
		if (path === "") return null;
		try {
			return await this.db.transaction(async (trx) => {
				await this.lockAncestors(trx, ds, [path]);
				const row = await this.lockRow(trx, ds, path);
				if (!row || row.type !== want.type || (want.uuid !== undefined && row.uuid !== want.uuid)) return null;
				if (row.type === "COLLECTION" && (await trx.selectFrom("nodes").select("uuid").where("parent", "=", row.uuid).limit(1).executeTakeFirst())) return null;
				await trx.deleteFrom("nodes").where("uuid", "=", row.uuid).execute();
				if (row.parent !== null) await this.count(trx, row.parent, row.type, row.name, -1);
				await this.addToAncestors(trx, ds, path, -Number(row.size), this.now());
				return toRecord(row);
			});
		} catch (err) {
			// A child committed into the folder meanwhile: the folder holds something, it stays.
			if (isForeignKeyViolation(err)) return null;
			throw err;
		}
	}

	// ---- inside transactions ----

	/** The folder at `path`: NotFoundError when missing, ConflictError when it is a file. */
	private async folder(trx: Trx, ds: string, path: string): Promise<{ uuid: string }> {
		const p = await trx.selectFrom("nodes").select(["uuid", "type"]).where("ds", "=", ds).where("path", "=", path).executeTakeFirst();
		const f = folderOf(p, path || ds);
		if (!f) throw new NotFoundError(`Folder ${path || ds} does not exist`, "node.notfound");
		return f;
	}

	/** The row at `path`, locked for the transaction on PostgreSQL (SQLite's writer holds the whole file). */
	private lockRow(trx: Trx, ds: string, path: string) {
		return trx.selectFrom("nodes").selectAll().where("ds", "=", ds).where("path", "=", path).$if(this.pg, (q) => q.forUpdate()).executeTakeFirst();
	}

	private async lockedByPath(trx: Trx, ds: string, path: string): Promise<NodeRecord> {
		const row = await this.lockRow(trx, ds, path);
		if (!row) throw new NotFoundError(`${path || ds} not found`, "node.notfound");
		return toRecord(row);
	}

	private async lockedByUuid(trx: Trx, uuid: string): Promise<NodeRecord> {
		const row = await trx
			.selectFrom("nodes")
			.selectAll()
			.where("uuid", "=", uuid)
			.$if(this.pg, (q) => q.forUpdate())
			.executeTakeFirst();
		if (!row) throw new NotFoundError("Node not found", "node.notfound");
		return toRecord(row);
	}

	/** PostgreSQL: locks the folders above `paths` (and above `paths2` in `ds2`), root first. */
	/** The rows locked (PostgreSQL; none on SQLite, whose writers run one at a time), root first. */
	private async lockAncestors(trx: Trx, ds: string, paths: string[], ds2?: string, paths2?: string[]): Promise<LockedRow[]> {
		if (!this.pg) return [];
		const keys = new Set<string>();
		const wanted: { ds: string; path: string }[] = [];
		const add = (d: string, p: string) => {
			for (const a of ancestors(p)) if (!keys.has(`${d}\u0000${a}`)) keys.add(`${d}\u0000${a}`), wanted.push({ ds: d, path: a });
		};
		for (const p of paths) add(ds, p);
		if (ds2 !== undefined) for (const p of paths2 ?? []) add(ds2, p);
		if (!wanted.length) return [];
		return trx
			.selectFrom("nodes")
			.select(["uuid", "ds", "path", "type"])
			.where((eb) => eb.or(wanted.map((w) => eb.and([eb("ds", "=", w.ds), eb("path", "=", w.path)]))))
			.orderBy("ds")
			.orderBy("path")
			.forUpdate()
			.execute();
	}

	/** A visible child more (1) or less (-1) in its folder's counts. */
	private async count(trx: Trx, folder: string, type: NodeType, name: string, delta: 1 | -1): Promise<void> {
		if (!visible(name)) return;
		const column = type === "LEAF" ? "files" : "folders";
		await trx
			.updateTable("nodes")
			.set((eb) => ({ [column]: eb(column, "+", delta) }))
			.where("uuid", "=", folder)
			.execute();
	}

	/** Every ancestor's size and time; with `child`, the parent folder's count of children too, in the same statement. */
	private async addToAncestors(trx: Trx, ds: string, path: string, delta: number, mtime: number, child?: { folder: string; column: "files" | "folders"; delta: 1 | -1 }): Promise<void> {
		const paths = ancestors(path);
		if (!paths.length) return;
		await trx
			.updateTable("nodes")
			.set((eb) => ({
				size: eb("size", "+", delta),
				mtime,
				...(child ? { [child.column]: eb(child.column, "+", eb.case().when("uuid", "=", child.folder).then(child.delta).else(0).end()) } : {}),
			}))
			.where("ds", "=", ds)
			.where("path", "in", paths)
			.execute();
	}
}

/**
 * Adds complete records in `trx`, many rows per statement, giving the event loop a turn between chunks;
 * `progress` is told the rows written so far after each chunk.
 */
export async function insertRecords(trx: Trx, records: readonly NodeRecord[], progress?: (written: number) => void): Promise<void> {
	// 12 parameters a row: well under SQLite's 32,766 and PostgreSQL's 65,535 per statement.
	const ROWS = 1000;
	for (let i = 0; i < records.length; i += ROWS) {
		const rows = records.slice(i, i + ROWS).map((n) => ({
			uuid: n.uuid,
			ds: n.ds,
			parent: n.parent,
			name: n.name,
			path: n.path,
			type: n.type,
			size: n.size,
			mtime: n.mtime,
			etag: orNull(n.etag),
			mode: orNull(n.mode),
			key: orNull(n.key),
			meta: JSON.stringify(n.meta ?? {}),
			files: 0,
			folders: 0,
		}));
		await trx.insertInto("nodes").values(rows).execute();
		progress?.(Math.min(records.length, i + ROWS));
		if (records.length > ROWS) await breathe();
	}
	// The folders that gained children count them, whether they came in this call or an earlier one.
	await recountChildren(trx, [...new Set(records.map((n) => n.parent).filter((p): p is string => p !== null))]);
}

/** Sets the files and folders counts of these folders from the visible children they hold. */
export async function recountChildren(trx: Trx, folders: readonly string[]): Promise<void> {
	const visibleChildren = (type: NodeType) => sql<number>`(select count(*) from nodes c where c.parent = nodes.uuid and c.type = ${type} and substr(c.name, 1, 1) <> '.')`;
	for (let i = 0; i < folders.length; i += 500) {
		await trx
			.updateTable("nodes")
			.set({ files: visibleChildren("LEAF"), folders: visibleChildren("COLLECTION") })
			.where("uuid", "in", folders.slice(i, i + 500))
			.execute();
		await breathe();
	}
}

/**
 * `top` and everything below it, top first, then folder by folder (a folder always before what it holds), in
 * chunks of about CHUNK rows read through the (parent, name) index, a turn of the event loop between chunks.
 */
async function* walkFrom(q: Executor, top: NodeRecord): AsyncGenerator<NodeRecord[]> {
	let out: NodeRecord[] = [top];
	const folders: string[] = top.type === "COLLECTION" ? [top.uuid] : [];
	for (let i = 0; i < folders.length; i++) {
		let after: string | undefined;
		for (;;) {
			let page = q.selectFrom("nodes").selectAll().where("parent", "=", folders[i]);
			if (after !== undefined) page = page.where("name", ">", after);
			const rows = await page.orderBy("name").limit(CHUNK).execute();
			for (const r of rows) {
				const n = toRecord(r);
				out.push(n);
				if (n.type === "COLLECTION") folders.push(n.uuid);
			}
			if (out.length >= CHUNK) {
				yield out;
				out = [];
				await breathe();
			}
			if (rows.length < CHUNK) break;
			after = rows[rows.length - 1].name;
		}
		// Folders already walked are not needed again.
		if (i >= 10_000) {
			folders.splice(0, i + 1);
			i = -1;
		}
	}
	if (out.length) yield out;
}
