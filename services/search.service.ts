/**
 * search — `POST /search/nodes` over the search index in the SQL store (lib/db/search.ts: the nodes table, with
 * folded names and the words of small text files derived from it; FTS5 trigram on SQLite, pg_trgm on
 * PostgreSQL). Nothing per node is held in memory and nothing is rebuilt at start: a start catches up with what
 * changed while no replica ran (names compared with the nodes', texts by etag), once per cluster (lease
 * `search.catchup`); the text of small text files is read from the datasource stores, one replica per file (a
 * claim in the store).
 * Consumes: `tree.changed` (broadcast: every replica writes the names, idempotently; deletes cascade in the
 * store), `datasources.changed` and `encryption.changed` (through DataStoresMixin: drops its store handles).
 * Emits nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { DatabaseMixin } from "../mixins/database.mixin";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import { SearchEngine, type SearchRequest } from "../lib/search/engine";
import { call, type TreeChange } from "../lib/contracts";
import { MAX_CONTENT_BYTES } from "../lib/search/content";
import type { IndexNode } from "../lib/search/index";
import { NotFoundError } from "../lib/errors";
import { LeasesRepo, NodesRepo, type Db } from "../lib/db";
import { SearchRepo } from "../lib/db/search";

/** Up to this many files in a flat datasource, an overwritten file's object is found by listing (see readContent). */
const LIST_FALLBACK_MAX_NODES = 20_000;
/** How long the catch-up lease outlives a silent holder (renewed while the catch-up runs). */
const CATCHUP_LEASE_MS = 60_000;

async function readAtMost(stream: NodeJS.ReadableStream, max: number): Promise<Buffer | null> {
	const chunks: Buffer[] = [];
	let n = 0;
	for await (const chunk of stream as AsyncIterable<Buffer | string>) {
		const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
		n += b.length;
		if (n > max) {
			(stream as unknown as { destroy?: () => void }).destroy?.();
			return null;
		}
		chunks.push(b);
	}
	return Buffer.concat(chunks);
}

interface Methods {
	readContent(node: IndexNode): Promise<Buffer | null>;
	filesIn(ds: string): Promise<number>;
	startCatchUp(): Promise<void>;
}
interface Vars {
	db: Db;
	engine: SearchEngine;
	nodes: NodesRepo;
	stopping: boolean;
	startup?: Promise<void>;
	fileCounts: Map<string, { n: number; at: number }>;
	dataStore(name: string): Promise<DataStoreHandle>;
}
type This = Service<ServiceSettingSchema> & Methods & Vars;

const SearchService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "search",
	mixins: [DatabaseMixin, DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		nodes: {
			rest: "POST /search/nodes",
			read: true,
			params: {
				Query: { type: "object", optional: true },
				Size: { type: "number", optional: true, integer: true, min: 0 },
				From: { type: "number", optional: true, integer: true, min: 0, max: 1_000_000 },
				Details: { type: "boolean", optional: true },
				SortField: { type: "string", optional: true, max: 64 },
				SortDirDesc: { type: "boolean", optional: true },
				StatFlags: { type: "array", optional: true, items: "number", max: 64 },
			},
			async handler(this: This, ctx: Context<SearchRequest, Meta>) {
				const user = requireUser(ctx);
				if (!ctx.params.Query) return { Total: 0 };
				const roots = await call(ctx, "tree.roots", {}, { meta: { user } });
				return this.engine.search(ctx.params, roots);
			},
		},
		// Internal: the index's state (tests, operations).
		status: {
			params: {},
			handler(this: This) {
				return this.engine.status();
			},
		},
		// Internal: catches up with the nodes now (after a restore of the node store, for instance).
		rebuild: {
			params: {},
			async handler(this: This) {
				await this.engine.catchUp();
				return this.engine.status();
			},
		},
	},
	events: {
		"tree.changed"(this: This, ctx: Context<TreeChange>) {
			this.engine?.apply(ctx.params);
		},
	},
	methods: {
		/** The text of a small file, read from its datasource (bytes never travel through the transporter). */
		async readContent(this: This, node: IndexNode): Promise<Buffer | null> {
			const { store, flat }: DataStoreHandle = await this.dataStore(node.ds);
			// The object key: sent by the tree when it knows it, else the uuid (flat) or the path (structured).
			const key = node.key ?? (flat ? node.Uuid : node.path);
			try {
				return await readAtMost(await store.get(key), MAX_CONTENT_BYTES);
			} catch (err) {
				if (!(err instanceof NotFoundError || (err as { code?: number }).code === 404)) throw err;
			}
			// An overwritten file of a flat datasource lives at `<uuid>.<nonce>`, which `tree.changed` does not say
			// (yet): look for it by prefix, only where listing is cheap (a LOCAL flat store lists its whole folder).
			if (!flat || node.key || (await this.filesIn(node.ds)) > LIST_FALLBACK_MAX_NODES) return null;
			let found: string | undefined;
			for await (const o of store.list(`${node.Uuid}.`)) if (o.size === node.size) found = o.key;
			return found ? readAtMost(await store.get(found), MAX_CONTENT_BYTES) : null;
		},
		/** Files of a datasource, counted at most once a minute. */
		async filesIn(this: This, ds: string): Promise<number> {
			const known = this.fileCounts.get(ds);
			if (known && Date.now() - known.at < 60_000) return known.n;
			const n = await this.nodes.countFiles(ds);
			this.fileCounts.set(ds, { n, at: Date.now() });
			return n;
		},
		/**
		 * The start's catch-up, on one replica of the cluster: the one that takes the lease. The others answer from
		 * the shared store meanwhile. It waits for the tree service first: the tree's start imports the nodes of an
		 * older DATA_DIR without events, which the catch-up must see.
		 */
		async startCatchUp(this: This): Promise<void> {
			const leases = new LeasesRepo(this.db);
			const name = "search.catchup";
			for (let attempt = 0; !this.stopping; attempt++) {
				try {
					await this.broker.waitForServices(["tree"], 10_000);
					if (!(await leases.acquire(name, this.broker.nodeID, CATCHUP_LEASE_MS))) {
						this.engine.markReady();
						this.logger.info("search index: another replica catches up");
						return;
					}
					const renewal = setInterval(() => void leases.renew(name, this.broker.nodeID, CATCHUP_LEASE_MS).catch(() => undefined), CATCHUP_LEASE_MS / 3);
					renewal.unref();
					const t0 = Date.now();
					try {
						await this.engine.catchUp();
					} finally {
						clearInterval(renewal);
						await leases.release(name, this.broker.nodeID).catch(() => undefined);
					}
					const st = await this.engine.status();
					this.logger.info(`search index caught up in ${Date.now() - t0} ms: ${st.Nodes} names, ${st.TextFiles} text files`);
					return;
				} catch (err) {
					if (this.stopping) return;
					// A tree with many nodes takes a while to start (an import): waiting longer is not a failure.
					if ((err as { name?: string }).name === "MoleculerServerError" && /waiting is timed out/.test((err as Error).message)) {
						this.logger.info("search index: waiting for the tree service");
						attempt = -1;
						continue;
					}
					this.logger.warn(`search index catch-up failed (attempt ${attempt + 1}): ${(err as Error).message}`);
					await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** attempt)));
				}
			}
		},
	},
	created(this: This) {
		this.stopping = false;
		this.fileCounts = new Map();
	},
	started(this: This) {
		// The database mixin has opened this.db.
		this.nodes = new NodesRepo(this.db);
		this.engine = new SearchEngine({
			store: new SearchRepo(this.db),
			readContent: (node) => this.readContent(node),
			onError: (what, err) => this.logger.warn(`search: ${what}: ${(err as Error).message}`),
		});
		// Not awaited: searches answer from the store while the catch-up runs.
		this.startup = this.startCatchUp();
	},
	async stopped(this: This) {
		this.stopping = true;
		// Writes in flight end before the database mixin lets the handle go.
		await this.engine?.idle().catch(() => undefined);
		await this.startup?.catch(() => undefined);
	},
};

export = SearchService;
