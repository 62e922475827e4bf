// Password-reset keys: a random UUID mailed to the user, stored as sha256, valid 20 minutes, single use
// (loaded and deleted in one step before anything else is checked). At most 3 outstanding keys per user:
// asking again replaces the oldest.
import { randomUUID } from "node:crypto";
import { sha256 } from "./format";
import type { Clock, ResetDoc, TokenStore } from "./model";

export const RESET_TTL = 20 * 60;
export const MAX_OUTSTANDING_RESETS = 3;
let sequence = 0;
const KEY_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type ConsumeResult = { status: "ok"; doc: ResetDoc } | { status: "unknown" } | { status: "expired"; doc: ResetDoc };

export class ResetKeys {
	constructor(
		private readonly store: TokenStore,
		private readonly now: Clock,
	) {}

	/** A new key for this user (the clear value, to be mailed); older keys beyond the limit are dropped. */
	async create(p: { userUuid: string; login: string; email: string }): Promise<{ key: string; expiresAt: number }> {
		const key = randomUUID();
		const now = this.now();
		const doc: ResetDoc = {
			_id: randomUUID(),
			kind: "reset",
			keyHash: sha256(key),
			userUuid: p.userUuid,
			login: p.login,
			email: p.email,
			expiresAt: now + RESET_TTL,
			createdAt: now,
			// Orders keys asked for within the same second (the oldest goes first when over the limit).
			seq: Date.now() * 1000 + (sequence++ % 1000),
		};
		await this.store.insertReset(doc);
		const all = await this.store.resetsOf(p.userUuid);
		// Newest first; the one just written always stays.
		all.sort((a, b) => (a._id === doc._id ? -1 : b._id === doc._id ? 1 : (b.seq ?? b.createdAt * 1e6) - (a.seq ?? a.createdAt * 1e6)));
		for (const old of all.slice(MAX_OUTSTANDING_RESETS)) await this.store.deleteReset(old._id);
		return { key, expiresAt: doc.expiresAt };
	}

	/** Loads and deletes the key in one go: whatever follows, it cannot be used twice. */
	async consume(key: string): Promise<ConsumeResult> {
		if (!KEY_RE.test(key.toLowerCase())) return { status: "unknown" };
		const doc = await this.store.resetByHash(sha256(key.toLowerCase()));
		if (!doc) return { status: "unknown" };
		// Of two concurrent uses, only the one that actually removed the document goes on.
		if (!(await this.store.deleteReset(doc._id))) return { status: "unknown" };
		if (doc.expiresAt <= this.now()) return { status: "expired", doc };
		return { status: "ok", doc };
	}

	/** Puts a consumed key back (the reset failed for a reason the user can fix, e.g. a rejected password). */
	async restore(doc: ResetDoc): Promise<void> {
		if (doc.expiresAt > this.now()) await this.store.insertReset(doc);
	}

	async removeForUser(userUuid: string): Promise<number> {
		return this.store.deleteResetsOf(userUuid);
	}

	async purgeExpired(): Promise<number> {
		return this.store.purgeResets(this.now());
	}
}
