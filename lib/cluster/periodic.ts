// Periodic work that runs on one node of a cluster, not on every replica: purges, sweeps, prunes. Each run first
// takes a lease (lib/db LeasesRepo). The lease is kept after the run, not released: its holder takes it again on
// its next tick while the others keep finding it taken, so the work runs once per period, on one node. When that
// node stops (release) or dies (its lease expires after `ttlMs`), the next node whose timer fires takes over.
// While the work runs the lease is renewed, so a run longer than the ttl is not taken over halfway.

/** What a PeriodicLease needs of a lease store (LeasesRepo has it). */
export interface LeaseStore {
	acquire(name: string, holder: string, ttlMs: number): Promise<boolean>;
	renew(name: string, holder: string, ttlMs: number): Promise<boolean>;
	release(name: string, holder: string): Promise<boolean>;
}

export type RunOutcome<T> = { ran: true; value: T } | { ran: false };

export class PeriodicLease {
	/**
	 * @param name the work's name, the same on every node (`tokens.purge`)
	 * @param holder this node, unique in the cluster (the broker's nodeID)
	 * @param ttlMs how long the lease outlives a silent holder: longer than the work's period, so that the holder
	 *   takes it again before it expires
	 */
	constructor(
		private readonly leases: LeaseStore,
		readonly name: string,
		readonly holder: string,
		private readonly ttlMs: number,
		private readonly onRenewError: (err: unknown) => void = () => undefined,
	) {}

	/** Runs `work` if this node has (or can take) the lease; `{ ran: false }` when another node holds it. */
	async run<T>(work: () => Promise<T>): Promise<RunOutcome<T>> {
		if (!(await this.leases.acquire(this.name, this.holder, this.ttlMs))) return { ran: false };
		const renewal = setInterval(
			() => void this.leases.renew(this.name, this.holder, this.ttlMs).catch((err: unknown) => this.onRenewError(err)),
			Math.max(1, Math.floor(this.ttlMs / 3)),
		);
		renewal.unref();
		try {
			return { ran: true, value: await work() };
		} finally {
			clearInterval(renewal);
		}
	}

	/** Gives the lease up (a stopping node), so that another node takes the work over at its next tick. */
	async release(): Promise<void> {
		await this.leases.release(this.name, this.holder);
	}
}
