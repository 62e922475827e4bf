// Leases: "this periodic work runs on one node of the cluster at a time". A lease is a row (name, holder, expiry);
// taking it is a single INSERT ... ON CONFLICT DO UPDATE whose update applies only when the lease is free (expired)
// or already ours, so the database decides who wins a race, never a read followed by a write. Expiries are on the
// database's clock (one clock for every node). A holder that stops renewing loses the lease after its ttl.
import type { Db } from "./index";
import { nowMs } from "./sql";

export class LeasesRepo {
	constructor(private readonly db: Db) {}

	/** Takes (or extends) the lease for `ttlMs` if it is free, expired, or already `holder`'s; whether `holder` has it. */
	async acquire(name: string, holder: string, ttlMs: number): Promise<boolean> {
		const now = nowMs(this.db.dialect);
		const rows = await this.db.kysely
			.insertInto("leases")
			.values((eb) => ({ name, holder, expires_at: eb(now, "+", ttl(ttlMs)) }))
			.onConflict((oc) =>
				oc
					.column("name")
					.doUpdateSet((eb) => ({ holder: eb.ref("excluded.holder"), expires_at: eb.ref("excluded.expires_at") }))
					.where((eb) => eb.or([eb("leases.holder", "=", eb.ref("excluded.holder")), eb("leases.expires_at", "<=", now)])),
			)
			.returning("holder")
			.execute();
		return rows.length === 1 && rows[0].holder === holder;
	}

	/**
	 * Extends `holder`'s lease by `ttlMs` from now; false when it is no longer `holder`'s (another node took it after
	 * it expired). An expired lease nobody took is still `holder`'s: renewing it is safe.
	 */
	async renew(name: string, holder: string, ttlMs: number): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("leases")
			.set((eb) => ({ expires_at: eb(nowMs(this.db.dialect), "+", ttl(ttlMs)) }))
			.where("name", "=", name)
			.where("holder", "=", holder)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/** Gives the lease up (only `holder` can); whether it was held. */
	async release(name: string, holder: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("leases").where("name", "=", name).where("holder", "=", holder).executeTakeFirst();
		return r.numDeletedRows === 1n;
	}

	/** The current holder, or null when the lease is free or expired. */
	async holder(name: string): Promise<string | null> {
		const row = await this.db.kysely
			.selectFrom("leases")
			.select("holder")
			.where("name", "=", name)
			.where("expires_at", ">", nowMs(this.db.dialect))
			.executeTakeFirst();
		return row?.holder ?? null;
	}
}

function ttl(ms: number): number {
	if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`A lease's ttl must be a positive number of ms, got ${ms}`);
	return Math.ceil(ms);
}
