// Front-end data in the store: avatars and logos (BinariesRepo), users' TOTP second factors (TotpRepo).
// Each write is one statement: an upsert replaces an image whole; the TOTP state changes (activate, accept a
// code's time step) are conditional updates, so two nodes checking the same code at once accept it once.
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { FrontendBinariesTable, UserTotpTable } from "./schema";

export type BinaryKind = FrontendBinariesTable["kind"];

/** A binary without its bytes: enough to know which version (the id, renewed by every upload) a name serves. */
export interface BinaryMetaRecord {
	kind: BinaryKind;
	owner: string;
	id: string;
	mime: string;
	/** Unix seconds. */
	createdAt: number;
}

export interface BinaryRecord extends BinaryMetaRecord {
	data: Buffer;
}

const META_COLUMNS = ["kind", "owner", "id", "mime", "created_at"] as const;

function metaOf(r: Pick<Selectable<FrontendBinariesTable>, (typeof META_COLUMNS)[number]>): BinaryMetaRecord {
	return { kind: r.kind, owner: r.owner, id: r.id, mime: r.mime, createdAt: Number(r.created_at) };
}

function binaryOf(r: Selectable<FrontendBinariesTable>): BinaryRecord {
	return { ...metaOf(r), data: Buffer.from(r.data) };
}

/** Owners per `in (…)` list of a statement, well under SQLite's and PostgreSQL's bound on parameters. */
const OWNERS_PER_STATEMENT = 500;

export class BinariesRepo {
	constructor(private readonly db: Db) {}

	/** Stores the binary of (kind, owner), replacing the one it had. */
	async put(b: BinaryRecord): Promise<void> {
		const row = { kind: b.kind, owner: b.owner, id: b.id, mime: b.mime, size: b.data.length, data: b.data, created_at: b.createdAt };
		await this.db.kysely
			.insertInto("frontend_binaries")
			.values(row)
			.onConflict((oc) => oc.columns(["kind", "owner"]).doUpdateSet({ id: row.id, mime: row.mime, size: row.size, data: row.data, created_at: row.created_at }))
			.execute();
	}

	async byOwner(kind: BinaryKind, owner: string): Promise<BinaryRecord | null> {
		const r = await this.db.kysely.selectFrom("frontend_binaries").selectAll().where("kind", "=", kind).where("owner", "=", owner).executeTakeFirst();
		return r ? binaryOf(r) : null;
	}

	async byId(kind: BinaryKind, id: string): Promise<BinaryRecord | null> {
		const r = await this.db.kysely.selectFrom("frontend_binaries").selectAll().where("kind", "=", kind).where("id", "=", id).executeTakeFirst();
		return r ? binaryOf(r) : null;
	}

	/** The binary of (kind, owner) without its bytes: what a kept thumbnail needs to be served. */
	async metaByOwner(kind: BinaryKind, owner: string): Promise<BinaryMetaRecord | null> {
		const r = await this.db.kysely.selectFrom("frontend_binaries").select(META_COLUMNS).where("kind", "=", kind).where("owner", "=", owner).executeTakeFirst();
		return r ? metaOf(r) : null;
	}

	async metaById(kind: BinaryKind, id: string): Promise<BinaryMetaRecord | null> {
		const r = await this.db.kysely.selectFrom("frontend_binaries").select(META_COLUMNS).where("kind", "=", kind).where("id", "=", id).executeTakeFirst();
		return r ? metaOf(r) : null;
	}

	async delete(kind: BinaryKind, owner: string): Promise<boolean> {
		return (await this.deleteOwners(kind, [owner])) > 0;
	}

	/** Deletes the binaries of these owners (a deleted group's users); how many there were. */
	async deleteOwners(kind: BinaryKind, owners: string[]): Promise<number> {
		let n = 0;
		for (let i = 0; i < owners.length; i += OWNERS_PER_STATEMENT) {
			const some = owners.slice(i, i + OWNERS_PER_STATEMENT);
			n += Number((await this.db.kysely.deleteFrom("frontend_binaries").where("kind", "=", kind).where("owner", "in", some).executeTakeFirst()).numDeletedRows);
		}
		return n;
	}
}

export interface TotpRecord {
	userUuid: string;
	/** Sealed (lib/auth/totp `seal`): this layer never sees the secret in clear. */
	secret: string;
	status: UserTotpTable["status"];
	createdAt: number;
	enrolledAt?: number;
	lastStep: number;
	failures: number;
	blockedUntil: number;
}

function totpOf(r: Selectable<UserTotpTable>): TotpRecord {
	const t: TotpRecord = { userUuid: r.user_uuid, secret: r.secret, status: r.status, createdAt: Number(r.created_at), lastStep: Number(r.last_step), failures: Number(r.failures), blockedUntil: Number(r.blocked_until) };
	if (r.enrolled_at !== null) t.enrolledAt = Number(r.enrolled_at);
	return t;
}

export class TotpRepo {
	constructor(private readonly db: Db) {}

	async get(userUuid: string): Promise<TotpRecord | null> {
		const r = await this.db.kysely.selectFrom("user_totp").selectAll().where("user_uuid", "=", userUuid).executeTakeFirst();
		return r ? totpOf(r) : null;
	}

	/**
	 * Starts (or restarts) an enrolment with a new secret; false when the user already has an active factor,
	 * which only `remove` ends (an enrolled factor is never replaced without its owner's code or an admin).
	 */
	async startPending(userUuid: string, secret: string, now: number): Promise<boolean> {
		const r = await this.db.kysely
			.insertInto("user_totp")
			.values({ user_uuid: userUuid, secret, status: "pending", created_at: now, enrolled_at: null, last_step: 0, failures: 0, blocked_until: 0 })
			.onConflict((oc) => oc.column("user_uuid").doUpdateSet({ secret, created_at: now, last_step: 0 }).where("user_totp.status", "=", "pending"))
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
	}

	/** Pending -> active, with the step of the code that proved it; false when it was not pending (any more). */
	async activate(userUuid: string, step: number, now: number): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("user_totp")
			.set({ status: "active", enrolled_at: now, last_step: step })
			.where("user_uuid", "=", userUuid)
			.where("status", "=", "pending")
			.executeTakeFirst();
		return Number(r.numUpdatedRows) > 0;
	}

	/** Accepts a code's time step once: false when that step (or a later one) was already used. */
	async useStep(userUuid: string, step: number): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("user_totp")
			.set({ last_step: step, failures: 0 })
			.where("user_uuid", "=", userUuid)
			.where("status", "=", "active")
			.where("last_step", "<", step)
			.executeTakeFirst();
		return Number(r.numUpdatedRows) > 0;
	}

	/**
	 * Counts a wrong code, in one statement; the `limit`-th in a row blocks codes until `blockUntil` and starts
	 * the count again. Whether this failure blocked.
	 */
	async recordFailure(userUuid: string, limit: number, blockUntil: number): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("user_totp")
			.set((eb) => ({
				failures: eb.case().when("failures", ">=", limit - 1).then(0).else(eb("failures", "+", 1)).end(),
				blocked_until: eb.case().when("failures", ">=", limit - 1).then(blockUntil).else(eb.ref("blocked_until")).end(),
			}))
			.where("user_uuid", "=", userUuid)
			.returning(["blocked_until"])
			.executeTakeFirst();
		return Number(r?.blocked_until ?? 0) === blockUntil;
	}

	async remove(userUuid: string): Promise<boolean> {
		return (await this.removeMany([userUuid])) > 0;
	}

	/** Removes the factors of these users (a deleted group's); how many there were. */
	async removeMany(userUuids: string[]): Promise<number> {
		let n = 0;
		for (let i = 0; i < userUuids.length; i += OWNERS_PER_STATEMENT) {
			const some = userUuids.slice(i, i + OWNERS_PER_STATEMENT);
			n += Number((await this.db.kysely.deleteFrom("user_totp").where("user_uuid", "in", some).executeTakeFirst()).numDeletedRows);
		}
		return n;
	}
}
