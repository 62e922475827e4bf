// Storage for a service: moleculer-db on an NeDB file under DATA_DIR by default, on MongoDB when MONGO_URI is
// set. moleculer-db's generated CRUD actions are switched off: services publish Cells' routes only and reach
// the store through the small typed helpers below, which behave the same on both adapters.
import DbService from "moleculer-db";
import type MongoAdapterClass from "moleculer-db-adapter-mongo";
import type { ServiceSchema } from "moleculer";
import { join } from "node:path";
import { ensureDir, loadConfig } from "../lib/config";

export interface Doc {
	_id: string;
	[key: string]: unknown;
}

export interface FindOptions {
	query?: Record<string, unknown>;
	sort?: string[];
	limit?: number;
	offset?: number;
}

/** The store calls a service makes; moleculer-db's adapter, typed. */
export interface Store<T extends Doc> {
	find(opts?: FindOptions): Promise<T[]>;
	findOne(query: Record<string, unknown>): Promise<T | null>;
	get(id: string): Promise<T | null>;
	count(query?: Record<string, unknown>): Promise<number>;
	insert(doc: T): Promise<T>;
	replace(doc: T): Promise<T>;
	patch(id: string, fields: Partial<T>): Promise<T | null>;
	/** Mongo update operators ($set, $inc, $unset) on every match; the number of documents changed. */
	updateMany(query: Record<string, unknown>, update: Record<string, unknown>): Promise<number>;
	remove(id: string): Promise<boolean>;
	removeMany(query: Record<string, unknown>): Promise<number>;
}

interface NedbDatastore {
	getAllData(): unknown[];
}

interface RawAdapter {
	find(p: { query?: object; sort?: string[]; limit?: number; offset?: number }): Promise<unknown[]>;
	findOne(q: object): Promise<unknown>;
	findById(id: string): Promise<unknown>;
	count(p: { query?: object }): Promise<number>;
	insert(doc: object): Promise<unknown>;
	updateById(id: string, update: object): Promise<unknown>;
	removeById(id: string): Promise<unknown>;
	updateMany(q: object, update: object): Promise<unknown>;
	removeMany(q: object): Promise<unknown>;
}

// Both adapters hand back fresh plain objects (NeDB deep-copies, the Mongo driver builds new ones), and our
// documents hold only JSON values with string ids: no second copy is needed (it cost more than the query).
function clean<T>(doc: unknown): T | null {
	return doc && typeof doc === "object" ? (doc as T) : null;
}

/**
 * NeDB appends a line to its file for every write and rewrites the file only when it loads it: a busy store's
 * file would grow without bound between restarts, and the next start would read all of that history. The file is
 * compacted once the writes since the last compaction reach twice the number of documents (at least
 * `minWrites`): its size stays within a few times the data's, and each compaction (a pause of ~0.4 s per
 * 100,000 documents, NeDB serialises on the main thread) is paid for by as many writes.
 */
function compactor(adapter: RawAdapter, minWrites: number): (writes: number) => void {
	let writes = 0;
	let docs = -1;
	let running = false;
	return (n) => {
		const db = (adapter as { db?: NedbDatastore & { compactDatafileAsync?: () => Promise<void> }; collection?: unknown }).db;
		if (!db?.compactDatafileAsync || (adapter as { collection?: unknown }).collection || !n) return;
		writes += n;
		if (docs < 0) docs = db.getAllData().length;
		if (running || writes < Math.max(minWrites, 2 * docs)) return;
		running = true;
		writes = 0;
		db.compactDatafileAsync()
			.then(() => (docs = db.getAllData().length))
			.catch(() => undefined)
			.finally(() => (running = false));
	};
}

export function makeStore<T extends Doc>(adapter: RawAdapter, opts: { compactAfter?: number } = {}): Store<T> {
	const wrote = compactor(adapter, opts.compactAfter ?? 20_000);
	/** Counts one written document when the write happened. */
	const one = <R>(r: R): R => (wrote(r ? 1 : 0), r);
	const many = (n: number): number => (wrote(n), n);
	return {
		async find(opts = {}) {
			return (await adapter.find({ query: opts.query ?? {}, sort: opts.sort, limit: opts.limit, offset: opts.offset })).map((d) => clean<T>(d) as T);
		},
		async findOne(query) {
			return clean<T>(await adapter.findOne(query));
		},
		async get(id) {
			return clean<T>(await adapter.findOne({ _id: id }));
		},
		async count(query = {}) {
			return adapter.count({ query });
		},
		async insert(doc) {
			return clean<T>(one(await adapter.insert(doc))) as T;
		},
		async replace(doc) {
			const old = (await adapter.findOne({ _id: doc._id })) as Record<string, unknown> | null;
			if (!old) return clean<T>(one(await adapter.insert(doc))) as T;
			const { _id, ...fields } = doc;
			const unset: Record<string, 1> = {};
			for (const k of Object.keys(old)) if (k !== "_id" && !(k in fields)) unset[k] = 1;
			const update: Record<string, unknown> = { $set: fields };
			if (Object.keys(unset).length) update.$unset = unset;
			return clean<T>(one(await adapter.updateById(_id, update))) as T;
		},
		async patch(id, fields) {
			const { _id, ...rest } = fields as Doc;
			return clean<T>(one(await adapter.updateById(id, { $set: rest })));
		},
		async updateMany(query, update) {
			const n = await adapter.updateMany(query, update);
			return many(typeof n === "number" ? n : Array.isArray(n) ? n.length : Number((n as { modifiedCount?: number })?.modifiedCount ?? 0));
		},
		async remove(id) {
			return !!one(await adapter.removeById(id));
		},
		async removeMany(query) {
			const n = await adapter.removeMany(query);
			return many(typeof n === "number" ? n : Number((n as { deletedCount?: number })?.deletedCount ?? 0));
		},
	};
}

const DISABLED = ["find", "count", "list", "create", "insert", "get", "update", "remove"];

/** `DbMixin("users")`: a store named after its collection, reachable as `this.store` in the service. */
export interface StoreIndex {
	field: string;
	unique?: boolean;
}

export function DbMixin(collection: string, opts: { indexes?: StoreIndex[]; compactAfter?: number } = {}): Partial<ServiceSchema> {
	const schema = {
		mixins: [DbService as unknown as Partial<ServiceSchema>],
		collection,
		settings: { idField: "_id" },
		actions: Object.fromEntries(DISABLED.map((a) => [a, false])),
		// The adapter is chosen when the service is created, not when this file is imported, so that each broker
		// (a test's, a node's) uses the DATA_DIR / MONGO_URI in force when it starts.
		created(this: { store: Store<Doc>; adapter: RawAdapter & { init(b: unknown, s: unknown): void }; broker: unknown }) {
			const cfg = loadConfig();
			// The MongoDB driver (~170 modules) is loaded only by the nodes that use it.
			const MongoAdapter = cfg.mongoUri ? (require("moleculer-db-adapter-mongo") as typeof MongoAdapterClass) : undefined;
			const adapter = MongoAdapter
				? new MongoAdapter(cfg.mongoUri as string)
				: new DbService.MemoryAdapter({ filename: join(ensureDir(join(cfg.dataDir, "db")), `${collection}.db`) });
			this.adapter = adapter as unknown as typeof this.adapter;
			this.adapter.init(this.broker, this);
			this.store = makeStore(this.adapter, { compactAfter: opts.compactAfter });
		},
		// Runs after moleculer-db's own started(), which connects the adapter.
		async started(this: { adapter: { db?: { ensureIndex(o: object): Promise<void> | void }; collection?: { createIndex(k: object, o: object): Promise<unknown> } } }) {
			for (const ix of opts.indexes ?? []) {
				if (this.adapter.collection) await this.adapter.collection.createIndex({ [ix.field]: 1 }, { unique: !!ix.unique });
				else await this.adapter.db?.ensureIndex({ fieldName: ix.field, unique: !!ix.unique });
			}
		},
	};
	return schema as unknown as Partial<ServiceSchema>;
}
