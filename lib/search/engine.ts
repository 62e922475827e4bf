// The search engine of one replica: answers treeSearchRequests from the index in the SQL store (lib/db/search.ts),
// keeps that index current from `tree.changed` events, and catches up at start with what changed while no replica
// ran. Nothing is held per node: memory is a page of rows per search, and the files whose text waits to be read.
//
// What is derived, and when:
// - folded names: written on create and move (rename) events, one idempotent upsert each; at start, `catchUp`
//   compares every node's name with the one indexed, a window of the store at a time, and writes only the
//   differences (nothing at all after a clean stop). Deletes cascade in the store.
// - words of small text files: on create/content/meta/move events (and for what `catchUp` finds unread or stale)
//   the file is queued; a worker claims (file, etag) in the store first, so that when several replicas receive the
//   same event only one reads the file, then stores its words, ignored if the file changed meanwhile.
import { MAX_CONTENT_BYTES, isTextFile, looksLikeText, textFileKeys, textKeyOf, tokenize } from "./content";
import type { IndexNode } from "./index";
import { baseName } from "../tree/paths";
import { compileQuery, presentHit, runSearch, sortKey, type RootInfo, type TreeQuery } from "./query";
import type { NameEntry, SearchRepo } from "../db/search";
import type { TreeChange } from "../contracts/tree";
import { foldText } from "../strings";

export interface SearchRequest {
	Query?: TreeQuery;
	Size?: number;
	From?: number;
	SortField?: string;
	SortDirDesc?: boolean;
	Details?: boolean;
	StatFlags?: number[];
}

/** What the engine needs of the store (lib/db SearchRepo). */
export type SearchStore = Pick<SearchRepo, "upsertNames" | "staleNames" | "claimTexts" | "setTexts" | "staleTexts" | "counts" | "rows">;

export interface EngineDeps {
	store: SearchStore;
	/** The bytes of a file (at most MAX_CONTENT_BYTES), or null when they cannot be read. */
	readContent?(node: IndexNode): Promise<Buffer | null>;
	onError?(what: string, err: unknown): void;
}

export const DEFAULT_SIZE = 50;
export const MAX_SIZE = 1000;
const CONTENT_CONCURRENCY = 4;
/** Files claimed and written together. */
const CONTENT_BATCH = 64;
/** A claim older than this is taken over (its reader died). */
const CLAIM_STALE_MS = 10 * 60_000;

function validNode(n: unknown): n is IndexNode {
	const o = n as IndexNode;
	return !!o && typeof o.Uuid === "string" && typeof o.ds === "string" && typeof o.path === "string" && (o.type === "LEAF" || o.type === "COLLECTION");
}

function nameEntry(uuid: string, name: string): NameEntry {
	const folded = foldText(name);
	return { uuid, name, folded, ext: textKeyOf(folded) };
}

function mimeOf(meta: Record<string, string> | undefined): string | undefined {
	const m = meta?.mime;
	return typeof m === "string" ? m : undefined;
}

export class SearchEngine {
	private ready = false;
	private catchingUp: Promise<void> | null = null;
	/** Events are written in the order they came: the tail of that chain. */
	private events: Promise<void> = Promise.resolve();
	private pendingEvents = 0;
	/** Files whose text is to be read, oldest first from `contentHead`. */
	private contentQueue: IndexNode[] = [];
	private contentHead = 0;
	private queued = new Set<string>();
	private workers = 0;
	private drained: (() => void)[] = [];
	/** What the last catch-up did: names written, text files queued, and how long each part took. */
	lastCatchUp?: { names: number; namesMs: number; textFiles: number; textsMs: number };

	constructor(private readonly deps: EngineDeps) {}

	get isReady(): boolean {
		return this.ready;
	}

	/**
	 * Brings the index up to date with the nodes (names first, then texts). Searches answer meanwhile, from what is
	 * indexed. Run once per cluster at start (the service takes a lease); running it twice is harmless.
	 */
	catchUp(): Promise<void> {
		if (this.catchingUp) return this.catchingUp;
		const run = async () => {
			const stats = { names: 0, namesMs: 0, textFiles: 0, textsMs: 0 };
			let t = Date.now();
			for await (const page of this.deps.store.staleNames()) {
				await this.deps.store.upsertNames(page.map((r) => nameEntry(r.uuid, r.name)));
				stats.names += page.length;
			}
			stats.namesMs = Date.now() - t;
			this.lastCatchUp = stats;
			this.ready = true;
			if (!this.deps.readContent) return;
			t = Date.now();
			for await (const page of this.deps.store.staleTexts({ maxBytes: MAX_CONTENT_BYTES, exts: textFileKeys(), staleAfterMs: CLAIM_STALE_MS })) {
				for (const r of page) {
					let meta: Record<string, string> | undefined;
					try {
						meta = JSON.parse(r.meta) as Record<string, string>;
					} catch {
						meta = undefined;
					}
					const node: IndexNode = { Uuid: r.uuid, ds: r.ds, path: r.path, name: r.name, type: "LEAF", size: Number(r.size), etag: r.etag ?? undefined, key: r.key ?? undefined, meta };
					this.enqueue(node);
					stats.textFiles++;
				}
				// One window of files at a time: the queue never holds more than a page of the store.
				await this.contentIdle();
			}
			stats.textsMs = Date.now() - t;
		};
		this.catchingUp = run().finally(() => (this.catchingUp = null));
		return this.catchingUp;
	}

	/** Marks the index ready without a catch-up (another replica runs it). */
	markReady(): void {
		this.ready = true;
	}

	/** Applies a `tree.changed` event (in order with the others). */
	apply(ev: TreeChange): void {
		if (!ev || !validNode(ev.node)) return;
		this.pendingEvents++;
		this.events = this.events
			.then(() => this.applyNow(ev))
			.catch((err) => this.deps.onError?.(`applying a ${ev.type} of ${ev.node.ds}/${ev.node.path}`, err))
			.finally(() => this.pendingEvents--);
	}

	private async applyNow(ev: TreeChange): Promise<void> {
		const n = ev.node;
		if (ev.type === "delete") return; // the store cascades
		await this.deps.store.upsertNames([nameEntry(n.Uuid, n.name || baseName(n.path))]);
		if (n.type === "LEAF") this.enqueue(n);
	}

	/** Resolves once the events received so far are written (a search sees what happened before it). */
	settled(): Promise<void> {
		return this.events;
	}

	private pendingContent(): number {
		return this.contentQueue.length - this.contentHead;
	}

	private nextContent(): IndexNode | undefined {
		if (this.contentHead >= this.contentQueue.length) {
			this.contentQueue = [];
			this.contentHead = 0;
			return undefined;
		}
		const node = this.contentQueue[this.contentHead++];
		if (this.contentHead >= 4096 && this.contentHead * 2 >= this.contentQueue.length) {
			this.contentQueue = this.contentQueue.slice(this.contentHead);
			this.contentHead = 0;
		}
		return node;
	}

	private enqueue(node: IndexNode): void {
		if (!this.deps.readContent || node.type !== "LEAF") return;
		if (!isTextFile(node.name || baseName(node.path), node.size ?? 0, mimeOf(node.meta))) return;
		const key = `${node.Uuid}\n${node.etag ?? ""}`;
		if (this.queued.has(key)) return;
		this.queued.add(key);
		this.contentQueue.push(node);
		while (this.workers < CONTENT_CONCURRENCY && this.pendingContent() > 0) {
			this.workers++;
			void this.work();
		}
	}

	private async work(): Promise<void> {
		try {
			for (;;) {
				// A batch at a time: one claim statement and one transaction for its words (a commit per file would
				// cost a catch-up of 100,000 text files as many synchronous commits).
				const batch: IndexNode[] = [];
				for (let node = this.nextContent(); node !== undefined; node = batch.length < CONTENT_BATCH - 1 ? this.nextContent() : undefined) {
					this.queued.delete(`${node.Uuid}\n${node.etag ?? ""}`);
					batch.push(node);
				}
				if (!batch.length) return;
				try {
					const claimed = new Set(await this.deps.store.claimTexts(batch.map((n) => ({ uuid: n.Uuid, etag: n.etag ?? "" })), CLAIM_STALE_MS));
					const texts: { uuid: string; etag: string; words: string[] | null }[] = [];
					for (const node of batch) {
						if (!claimed.has(node.Uuid)) continue;
						try {
							const buf = await this.deps.readContent!(node);
							texts.push({ uuid: node.Uuid, etag: node.etag ?? "", words: buf && looksLikeText(buf) ? tokenize(buf.toString("utf8")) : null });
						} catch (err) {
							// The claim stays: another replica (or the next start's catch-up) takes it over once it is stale.
							this.deps.onError?.(`reading the text of ${node.ds}/${node.path}`, err);
						}
					}
					await this.deps.store.setTexts(texts);
				} catch (err) {
					this.deps.onError?.(`indexing the text of ${batch.length} files`, err);
				}
			}
		} finally {
			this.workers--;
			if (!this.workers) for (const fn of this.drained.splice(0)) fn();
		}
	}

	private contentIdle(): Promise<void> {
		if (!this.workers && !this.pendingContent()) return Promise.resolve();
		return new Promise((resolve) => this.drained.push(resolve));
	}

	/** Resolves when the events received are written and no file text waits to be read (tests, bench). */
	async idle(): Promise<void> {
		for (;;) {
			await this.events;
			await this.contentIdle();
			if (!this.pendingEvents && !this.workers && !this.pendingContent()) return;
		}
	}

	/**
	 * Answers a treeSearchRequest. `Total` counts the matches the caller may see, whatever the page: Cells answers
	 * the number of results returned (the page length), but the issue asks for "paginated (From/Size) with Total",
	 * and a client needs a count to page. It is exact, except for the queries a walk answers (SQLite, path order,
	 * a name or words with many candidates, or bounds alone: lib/search/query tuning): those count up to
	 * max(250, From+Size+1) matches, so that a search does not read every match of a common name; Total at that bound means "at least this many", and a client
	 * paging until From reaches Total still sees every match. No Query: `{Total: 0}`, as Cells.
	 */
	async search(req: SearchRequest, roots: RootInfo[]) {
		if (!req.Query) return { Total: 0 };
		const compiled = compileQuery(req.Query);
		const size = Math.min(req.Size && req.Size > 0 ? req.Size : DEFAULT_SIZE, MAX_SIZE);
		const from = req.From && req.From > 0 ? req.From : 0;
		const sort = sortKey(req.SortField);
		await this.settled();
		const { total, hits } = await runSearch(this.deps.store, compiled, roots, { from, size, sort, desc: req.SortDirDesc === true });
		return { Results: hits.map(presentHit), Total: total };
	}

	async status() {
		const { names, texts } = await this.deps.store.counts();
		return {
			Ready: this.ready,
			CatchingUp: !!this.catchingUp,
			Nodes: names,
			TextFiles: texts,
			PendingText: this.pendingContent() + this.workers,
			PendingEvents: this.pendingEvents,
		};
	}
}
