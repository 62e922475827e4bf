// What each user follows, kept in memory for the stats and listings that show it (Cells' `user_subscriptions`
// meta): every stat and listing page asks, and under load the store read behind each answer cost about as much
// as the rest of a stat together. A user's few subscriptions are read once and matched here until they change;
// a user following many nodes (more than `few`) has the nodes of each answer looked up in the store, as before.
//
// Freshness: this process forgets a user as soon as it changes their subscriptions, and every other replica when
// the change's broadcast (`activity.subscribed`) reaches it; an entry lives at most `ttlMs` in any case, so a lost
// broadcast leaves a stale answer for that long, never longer. A read that started before a change never stores
// its (older) answer after it.

export interface FollowedSource {
	/** The nodes a user follows with their events, when they are at most `max`; null when there are more. */
	byUser(userId: string, max: number): Promise<Map<string, string[]> | null>;
	/** The events a user follows on these nodes, looked up by node. */
	among(userId: string, objectIds: readonly string[]): Promise<Record<string, string[]>>;
}

export interface FollowedOptions {
	/** How long an entry is trusted, ms. */
	ttlMs?: number;
	/** Users kept; past it the oldest entry goes. */
	maxUsers?: number;
	/** Subscriptions of one user matched in memory; more are looked up by node. */
	few?: number;
	now?: () => number;
}

interface Entry {
	/** null: more than `few`. */
	nodes: Map<string, string[]> | null;
	until: number;
}

export class FollowedNodes {
	private readonly entries = new Map<string, Entry>();
	/** Bumped by every change: a read started before it does not store its answer. */
	private generation = 0;
	private readonly ttlMs: number;
	private readonly maxUsers: number;
	private readonly few: number;
	private readonly now: () => number;

	constructor(
		private readonly source: FollowedSource,
		opts: FollowedOptions = {},
	) {
		this.ttlMs = opts.ttlMs ?? 30_000;
		this.maxUsers = opts.maxUsers ?? 10_000;
		this.few = opts.few ?? 200;
		this.now = opts.now ?? Date.now;
	}

	/** The events `userId` follows on each of these nodes (those followed only). */
	async of(userId: string, objectIds: readonly string[]): Promise<Record<string, string[]>> {
		if (!objectIds.length) return {};
		let e = this.entries.get(userId);
		if (!e || e.until <= this.now()) {
			const generation = this.generation;
			e = { nodes: await this.source.byUser(userId, this.few), until: this.now() + this.ttlMs };
			if (generation === this.generation) this.remember(userId, e);
		}
		if (!e.nodes) return this.source.among(userId, objectIds);
		const out: Record<string, string[]> = {};
		for (const id of objectIds) {
			const events = e.nodes.get(id);
			if (events) out[id] = events;
		}
		return out;
	}

	/** `userId`'s subscriptions changed (here or on another node). */
	forget(userId: string): void {
		this.generation++;
		this.entries.delete(userId);
	}

	/** Users were deleted, or the store changed under everyone. */
	clear(): void {
		this.generation++;
		this.entries.clear();
	}

	get size(): number {
		return this.entries.size;
	}

	private remember(userId: string, e: Entry): void {
		this.entries.delete(userId);
		if (this.entries.size >= this.maxUsers) this.entries.delete(this.entries.keys().next().value as string);
		this.entries.set(userId, e);
	}
}
