// Which nodes have any user metadata at all, kept in memory by each user-meta replica: every stat and listing page
// asks for the values of its nodes, and most nodes have none, so the store is asked only for the nodes of an
// answer that have some (none at all, most of the time).
//
// Never a missing value for long: a node is added here before this replica's write is announced, and when any
// replica's `usermeta.changed` arrives; the whole set is read again every `refreshMs` (a lost announcement, values
// of deleted nodes), and while it is (re)read a node added meanwhile is kept. A node listed here without values
// costs one query, as before. Past `max` nodes with values the set is not kept: every answer asks the store.

export interface ValuedSource {
	/** The uuids of the nodes having values, when at most `max`; null when there are more. */
	nodesWithValues(max: number): Promise<string[] | null>;
}

export class ValuedNodes {
	/** null: not read yet, or too many to keep. */
	private nodes: Set<string> | null = null;
	/** Nodes added while a read of the whole set runs: the read may have missed them. */
	private addedDuringLoad: string[] | null = null;
	private timer?: NodeJS.Timeout;

	constructor(
		private readonly source: ValuedSource,
		private readonly max = 100_000,
	) {}

	/** Reads the whole set now (at start, then every `refreshMs` once `start` was called). */
	async load(): Promise<void> {
		this.addedDuringLoad = [];
		try {
			const all = await this.source.nodesWithValues(this.max);
			const added = this.addedDuringLoad;
			this.nodes = all && new Set([...all, ...added]);
			if (this.nodes && this.nodes.size > this.max) this.nodes = null;
		} finally {
			this.addedDuringLoad = null;
		}
	}

	start(refreshMs: number, onError: (e: Error) => void): void {
		this.timer = setInterval(() => void this.load().catch(onError), refreshMs);
		this.timer.unref();
	}

	stop(): void {
		clearInterval(this.timer);
	}

	/** These nodes have (or may have) values now. */
	add(uuids: readonly string[]): void {
		this.addedDuringLoad?.push(...uuids);
		if (!this.nodes) return;
		for (const u of uuids) this.nodes.add(u);
		if (this.nodes.size > this.max) this.nodes = null;
	}

	/** The nodes among these that may have values; all of them when the set is not known. */
	among(uuids: readonly string[]): readonly string[] {
		const known = this.nodes;
		return known ? uuids.filter((u) => known.has(u)) : uuids;
	}

	/** Whether the set is known (tests, metrics). */
	get kept(): boolean {
		return this.nodes !== null;
	}
}
