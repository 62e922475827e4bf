/**
 * search — `POST /search/nodes` over its own in-memory index (lib/search): every node of every datasource, built
 * at start-up from `tree.scan` pages and kept correct by `tree.changed` events; the text of small text files is
 * read from the datasource stores when they are created or change. Nothing is persisted (rebuilt on start).
 * Consumes: `tree.changed` (broadcast: every search replica keeps its own index), `datasources.changed` and
 * `encryption.changed` (through DataStoresMixin: drops its store handles). Emits nothing.
 */
import type { Context, ServiceSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import { SearchEngine, type SearchRequest } from "../lib/search/engine";
import { call, type TreeChange } from "../lib/contracts";
import { MAX_CONTENT_BYTES } from "../lib/search/content";
import type { IndexNode } from "../lib/search/index";
import { NotFoundError } from "../lib/errors";

/** Up to this many nodes in a flat datasource, an overwritten file's object is found by listing (see readContent). */
const LIST_FALLBACK_MAX_NODES = 20_000;

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

const SearchService: ServiceSchema = {
	name: "search",
	mixins: [DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		nodes: {
			rest: "POST /search/nodes",
			retryPolicy: { enabled: true },
			params: {
				Query: { type: "object", optional: true },
				Size: { type: "number", optional: true, integer: true, min: 0 },
				From: { type: "number", optional: true, integer: true, min: 0, max: 1_000_000 },
				Details: { type: "boolean", optional: true },
				SortField: { type: "string", optional: true, max: 64 },
				SortDirDesc: { type: "boolean", optional: true },
				StatFlags: { type: "array", optional: true, items: "number", max: 64 },
			},
			async handler(ctx: Context<SearchRequest, Meta>) {
				const user = requireUser(ctx);
				if (!ctx.params.Query) return { Total: 0 };
				const roots = await call(ctx, "tree.roots", {}, { meta: { user } });
				await this.whenReady();
				return this.engine.search(ctx.params, roots);
			},
		},
		// Internal: the index's state (tests, operations).
		status: {
			params: {},
			handler() {
				return this.engine.status();
			},
		},
		// Internal: rebuilds the index from the tree (after a restore of the node store, for instance).
		rebuild: {
			params: {},
			async handler() {
				await this.engine.build();
				return this.engine.status();
			},
		},
	},
	events: {
		"tree.changed"(ctx: Context<TreeChange>) {
			this.engine.apply(ctx.params);
		},
	},
	methods: {
		async whenReady(): Promise<void> {
			if (this.engine.isReady) return;
			await (this.startup as Promise<void>);
		},
		/** The text of a small file, read from its datasource (bytes never travel through the transporter). */
		async readContent(node: IndexNode): Promise<Buffer | null> {
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
			if (!flat || node.key || this.engine.index.countIn(node.ds) > LIST_FALLBACK_MAX_NODES) return null;
			let found: string | undefined;
			for await (const o of store.list(`${node.Uuid}.`)) if (o.size === node.size) found = o.key;
			return found ? readAtMost(await store.get(found), MAX_CONTENT_BYTES) : null;
		},
		/** Builds the index, retrying while the tree is not reachable yet. */
		async startBuild(): Promise<void> {
			for (let attempt = 0; !this.stopping; attempt++) {
				try {
					await this.broker.waitForServices(["tree"], 10_000);
					await this.engine.build();
					this.logger.info(`search index built: ${this.engine.index.count} nodes`);
					return;
				} catch (err) {
					if (this.stopping) return;
					// A tree with many nodes takes a while to load: waiting longer is not a failure.
					if ((err as { name?: string }).name === "MoleculerServerError" && /waiting is timed out/.test((err as Error).message)) {
						this.logger.info("search index: waiting for the tree service");
						continue;
					}
					this.logger.warn(`search index build failed (attempt ${attempt + 1}): ${(err as Error).message}`);
					await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** attempt)));
				}
			}
		},
	},
	created() {
		this.stopping = false;
		this.engine = new SearchEngine({
			// A page of a large NeDB tree takes a while (see the report on tree.scan): no short timeout here.
			scan: (after, limit) => call(this.broker, "tree.scan", after ? { after, limit } : { limit }, { timeout: 300_000 }),
			readContent: (node) => this.readContent(node),
			onError: (what, err) => this.logger.warn(`search: ${what}: ${(err as Error).message}`),
		});
	},
	started() {
		// Not awaited: the node starts while the index builds; searches wait for it.
		this.startup = this.startBuild();
	},
	stopped() {
		this.stopping = true;
	},
};

export = SearchService;
