// The search engine of one process: builds the index from `tree.scan` pages, keeps it correct from
// `tree.changed` events (buffered while a build runs, replayed after it), reads the text of small text files in
// the background, and answers treeSearchRequests for a caller given her workspace roots.
import { SearchIndex, LEAF, type IndexNode } from "./index";
import { compileQuery, presentHit, runSearch, sortKey, type RootInfo, type TreeQuery } from "./query";
import { isTextFile, looksLikeText, tokenize } from "./content";
import type { TreeChange } from "../contracts/tree";


export interface SearchRequest {
	Query?: TreeQuery;
	Size?: number;
	From?: number;
	SortField?: string;
	SortDirDesc?: boolean;
	Details?: boolean;
	StatFlags?: number[];
}

export interface EngineDeps {
	/** Every node, page by page in uuid order (`tree.scan`). */
	scan(after: string | undefined, limit: number): Promise<IndexNode[]>;
	/** The bytes of a file (at most MAX_CONTENT_BYTES), or null when they cannot be read. */
	readContent?(node: IndexNode): Promise<Buffer | null>;
	onError?(what: string, err: unknown): void;
}

export const DEFAULT_SIZE = 50;
export const MAX_SIZE = 1000;
const CONTENT_CONCURRENCY = 4;
/** A re-layout (lib/search/index.ts) runs when this many nodes, and a quarter of the index, were added since the last. */
const RELAYOUT_MIN_INSERTS = 50_000;

function validNode(n: unknown): n is IndexNode {
	const o = n as IndexNode;
	return !!o && typeof o.Uuid === "string" && typeof o.ds === "string" && typeof o.path === "string" && (o.type === "LEAF" || o.type === "COLLECTION");
}

export class SearchEngine {
	index = new SearchIndex();
	private building: Promise<void> | null = null;
	private ready = false;
	private buffered: TreeChange[] = [];
	/** Files whose text is to be read, oldest first from `contentHead` (a shift() per item is quadratic at 1M). */
	private contentQueue: string[] = [];
	private contentHead = 0;
	private queued = new Set<string>();
	private workers = 0;
	private drained: (() => void)[] = [];
	private relayoutPending = false;

	constructor(private readonly deps: EngineDeps) {}

	get isReady(): boolean {
		return this.ready;
	}

	/** (Re)builds the index from the tree; events received meanwhile are applied after. */
	build(pageSize = 10_000): Promise<void> {
		if (this.building) return this.building;
		const run = async () => {
			await Promise.resolve(); // `this.building` is set before anything below can fail
			let fresh: SearchIndex;
			try {
				fresh = new SearchIndex();
				fresh.beginBulk();
				let after: string | undefined;
				for (;;) {
					const page = await this.deps.scan(after, pageSize);
					for (const n of page) if (validNode(n)) fresh.upsert(n);
					if (page.length < pageSize) break;
					after = page[page.length - 1].Uuid;
				}
				fresh.endBulk();
			} catch (err) {
				// The index in service (if any) stays, with what happened meanwhile.
				this.building = null;
				this.replay();
				throw err;
			}
			this.index = fresh;
			this.ready = true;
			// Synchronously from here: no event can slip between the replay and the end of the build.
			this.building = null;
			this.replay();
			for (let s = 0; s < fresh.highWater; s++) if (fresh.types[s] === LEAF) this.enqueueSlot(s);
		};
		this.building = run();
		return this.building;
	}

	private replay(): void {
		const events = this.buffered;
		this.buffered = [];
		if (this.ready) for (const ev of events) this.applyNow(ev);
	}

	/**
	 * Applies a `tree.changed` event, or keeps it for after the build in progress (its pages may predate it).
	 * Before any build, events are dropped: the build's scan will see their effect.
	 */
	apply(ev: TreeChange): void {
		if (!ev || !validNode(ev.node)) return;
		if (this.building) this.buffered.push(ev);
		else if (this.ready) this.applyNow(ev);
	}

	private applyNow(ev: TreeChange): void {
		const idx = this.index;
		// Nodes added since the last layout sit at the end of the columns: lay them out again now and then.
		if (idx.insertsSinceLayout > Math.max(RELAYOUT_MIN_INSERTS, idx.count / 4) && !this.relayoutPending) {
			this.relayoutPending = true;
			setImmediate(() => {
				this.relayoutPending = false;
				if (this.index === idx) idx.relayout();
			});
		}
		const n = ev.node;
		switch (ev.type) {
			case "delete":
				idx.removeTree(n.Uuid, n.ds, n.path);
				return;
			case "move": {
				const r = ev.from ? idx.moveTree(ev.from.ds, ev.from.path, n) : idx.upsert(n);
				if (r.contentChanged) this.enqueueSlot(r.slot);
				return;
			}
			case "create":
			case "content":
			case "meta": {
				const r = idx.upsert(n);
				if (r.contentChanged || (ev.type === "content" && !idx.hasContent(r.slot))) this.enqueueSlot(r.slot);
				return;
			}
		}
	}

	private pendingContent(): number {
		return this.contentQueue.length - this.contentHead;
	}

	private nextContent(): string | undefined {
		if (this.contentHead >= this.contentQueue.length) {
			this.contentQueue = [];
			this.contentHead = 0;
			return undefined;
		}
		const uuid = this.contentQueue[this.contentHead++];
		// Drop what was taken now and then, so that a long queue does not keep its whole past.
		if (this.contentHead >= 4096 && this.contentHead * 2 >= this.contentQueue.length) {
			this.contentQueue = this.contentQueue.slice(this.contentHead);
			this.contentHead = 0;
		}
		return uuid;
	}

	private enqueueSlot(slot: number): void {
		if (!this.deps.readContent) return;
		const idx = this.index;
		if (idx.types[slot] !== LEAF) return;
		const uuid = idx.uuids[slot] as string;
		if (!isTextFile(idx.lnames[slot], idx.sizes[slot], idx.metaOf(slot)?.mime)) return;
		if (this.queued.has(uuid)) return;
		this.queued.add(uuid);
		this.contentQueue.push(uuid);
		while (this.workers < CONTENT_CONCURRENCY && this.pendingContent() > 0) {
			this.workers++;
			void this.work();
		}
	}

	private async work(): Promise<void> {
		try {
			for (let uuid = this.nextContent(); uuid !== undefined; uuid = this.nextContent()) {
				this.queued.delete(uuid);
				const idx = this.index;
				const slot = idx.slotOf(uuid);
				const node = slot >= 0 ? idx.node(slot) : null;
				if (!node || node.type !== "LEAF") continue;
				try {
					const buf = await this.deps.readContent!(node);
					if (!buf || !looksLikeText(buf)) continue;
					idx.setContent(uuid, node.etag, tokenize(buf.toString("utf8")));
				} catch (err) {
					this.deps.onError?.(`reading the text of ${node.ds}/${node.path}`, err);
				}
			}
		} finally {
			this.workers--;
			if (!this.workers) for (const fn of this.drained.splice(0)) fn();
		}
	}

	/** Resolves when no file text is waiting to be read (tests, bench). */
	idle(): Promise<void> {
		if (!this.workers && !this.pendingContent()) return Promise.resolve();
		return new Promise((resolve) => this.drained.push(resolve));
	}

	/**
	 * Answers a treeSearchRequest. `Total` is the number of ALL matches the caller may see, whatever the page:
	 * Cells answers the number of results returned (the page length), but the issue asks for "paginated
	 * (From/Size) with Total", and a client needs the real count to page. No Query: `{Total: 0}`, as Cells.
	 */
	search(req: SearchRequest, roots: RootInfo[]) {
		if (!req.Query) return { Total: 0 };
		const compiled = compileQuery(req.Query);
		const size = Math.min(req.Size && req.Size > 0 ? req.Size : DEFAULT_SIZE, MAX_SIZE);
		const from = req.From && req.From > 0 ? req.From : 0;
		const { total, hits } = runSearch(this.index, compiled, roots, { from, size, sort: sortKey(req.SortField), desc: req.SortDirDesc === true });
		return { Results: hits.map((h) => presentHit(this.index, h)), Total: total };
	}

	status() {
		return {
			Ready: this.ready,
			Building: !!this.building,
			Nodes: this.index.count,
			TextFiles: this.index.content.indexedFiles,
			Words: this.index.content.distinctWords,
			PendingText: this.pendingContent() + this.workers,
		};
	}
}
