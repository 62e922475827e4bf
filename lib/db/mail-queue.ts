// The outgoing mail queue. A mail is a row per recipient, written before the request that queued it is answered.
// The sender (one node of the cluster, lib/mail/sender) takes due rows with `claim`: one UPDATE whose WHERE
// re-checks the row's state, so that of two claimers the database gives each row to one (PostgreSQL re-evaluates
// the condition on the row a concurrent claimer just changed, and skips rows another claim has locked; SQLite runs
// one writer at a time). A claim lasts `claimMs`: a row left `sending` by a node that died is due again after it.
// Every transition after the claim (sent, retry later, give up) applies only while the row is still the
// claimer's, so a node presumed dead cannot overwrite what its successor did. Times are unix ms from the caller.
import type { ExpressionBuilder, Selectable } from "kysely";
import type { Db } from "./index";
import type { Database, MailQueueTable } from "./schema";
import { fromJson } from "./sql";

export const MAIL_QUEUED = "queued";
export const MAIL_SENDING = "sending";
export const MAIL_SENT = "sent";
export const MAIL_FAILED = "failed";
export type MailStatus = typeof MAIL_QUEUED | typeof MAIL_SENDING | typeof MAIL_SENT | typeof MAIL_FAILED;

export interface NewQueuedMail<M> {
	id: string;
	recipient: string;
	subject: string;
	message: M;
	maxAttempts: number;
}

export interface QueuedMail<M> {
	id: string;
	recipient: string;
	subject: string;
	message: M;
	status: MailStatus;
	/** Attempts started so far (a claim counts as one). */
	attempts: number;
	maxAttempts: number;
	nextAttemptAt: number;
	claimedBy?: string;
	claimedUntil?: number;
	lastError?: string;
	createdAt: number;
	sentAt?: number;
}

function recordOf<M>(r: Selectable<MailQueueTable>): QueuedMail<M> {
	const m: QueuedMail<M> = {
		id: r.id,
		recipient: r.recipient,
		subject: r.subject,
		message: fromJson<M>(r.message, {} as M),
		status: r.status as MailStatus,
		attempts: Number(r.attempts),
		maxAttempts: Number(r.max_attempts),
		nextAttemptAt: Number(r.next_attempt_at),
		createdAt: Number(r.created_at),
	};
	if (r.claimed_by !== null) m.claimedBy = r.claimed_by;
	if (r.claimed_until !== null) m.claimedUntil = Number(r.claimed_until);
	if (r.last_error !== null) m.lastError = r.last_error;
	if (r.sent_at !== null) m.sentAt = Number(r.sent_at);
	return m;
}

export class MailQueueRepo<M = unknown> {
	constructor(private readonly db: Db) {}

	/** Mails by status (the mail queue's depth in /metrics). */
	async countByStatus(): Promise<Partial<Record<MailStatus, number>>> {
		const rows = await this.db.kysely.selectFrom("mail_queue").select(["status", (eb) => eb.fn.countAll<number>().as("n")]).groupBy("status").execute();
		return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
	}

	/** Queues the mails, all or none; due at once. */
	async enqueue(mails: NewQueuedMail<M>[], now: number): Promise<void> {
		if (!mails.length) return;
		const rows = mails.map((m) => ({
			id: m.id,
			recipient: m.recipient,
			subject: m.subject,
			message: JSON.stringify(m.message),
			status: MAIL_QUEUED,
			attempts: 0,
			max_attempts: Math.max(1, Math.floor(m.maxAttempts)),
			next_attempt_at: now,
			claimed_by: null,
			claimed_until: null,
			last_error: null,
			created_at: now,
			sent_at: null,
		}));
		await this.db.transaction(async (trx) => {
			for (let i = 0; i < rows.length; i += 200) await trx.insertInto("mail_queue").values(rows.slice(i, i + 200)).execute();
		});
	}

	/**
	 * Takes up to `limit` due mails for `node` (queued and due, or sending with a claim that ran out), oldest due
	 * first, counting one more attempt on each: the rows this node now sends, and no other node will.
	 */
	async claim(node: string, now: number, claimMs: number, limit: number): Promise<QueuedMail<M>[]> {
		const k = this.db.kysely;
		const due = (eb: ExpressionBuilder<Database, "mail_queue">) =>
			eb.or([
				eb.and([eb("status", "=", MAIL_QUEUED), eb("next_attempt_at", "<=", now)]),
				eb.and([eb("status", "=", MAIL_SENDING), eb("claimed_until", "<=", now)]),
			]);
		let pick = k.selectFrom("mail_queue").select("id").where(due).orderBy("next_attempt_at").orderBy("id").limit(Math.max(1, limit));
		if (this.db.dialect === "postgres") pick = pick.forUpdate().skipLocked();
		// The pick is a materialized CTE, evaluated once: as an `in (subquery)` PostgreSQL may run it again per row,
		// and a rescan skips the rows this very statement just updated and picks more than `limit`.
		const rows = await k
			.with((cte) => cte("picked").materialized(), () => pick)
			.updateTable("mail_queue")
			.set((eb) => ({ status: MAIL_SENDING, claimed_by: node, claimed_until: now + claimMs, attempts: eb("attempts", "+", 1) }))
			.where("id", "in", (eb) => eb.selectFrom("picked").select("picked.id"))
			// Again on the row itself: a concurrent claimer that changed it first makes it not due any more.
			.where(due)
			.returningAll()
			.execute();
		return rows.map((r) => recordOf<M>(r)).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1));
	}

	/** `node` delivered it (`keep`: what to keep of the message from now on); whether the row was still `node`'s. */
	async markSent(id: string, node: string, now: number, keep?: M): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("mail_queue")
			.set({ status: MAIL_SENT, sent_at: now, claimed_by: null, claimed_until: null, last_error: null, ...(keep === undefined ? {} : { message: JSON.stringify(keep) }) })
			.where("id", "=", id)
			.where("status", "=", MAIL_SENDING)
			.where("claimed_by", "=", node)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/**
	 * `node`'s attempt failed with `error`: queued again for `retryAt`, or given up (status failed, the error kept)
	 * when `retryAt` is null (`keep`: what to keep of the message then). Whether the row was still `node`'s.
	 */
	async markAttemptFailed(id: string, node: string, error: string, retryAt: number | null, keep?: M): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("mail_queue")
			.set({
				status: retryAt === null ? MAIL_FAILED : MAIL_QUEUED,
				next_attempt_at: retryAt ?? 0,
				claimed_by: null,
				claimed_until: null,
				last_error: error.slice(0, 2000),
				...(retryAt === null && keep !== undefined ? { message: JSON.stringify(keep) } : {}),
			})
			.where("id", "=", id)
			.where("status", "=", MAIL_SENDING)
			.where("claimed_by", "=", node)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/**
	 * Gives back the rows `node` claimed and did not finish (a node that stops): queued again, due at `now`, the
	 * unfinished attempt not counted. How many.
	 */
	async releaseClaims(node: string, now: number): Promise<number> {
		const r = await this.db.kysely
			.updateTable("mail_queue")
			.set((eb) => ({ status: MAIL_QUEUED, next_attempt_at: now, claimed_by: null, claimed_until: null, attempts: eb("attempts", "-", 1) }))
			.where("status", "=", MAIL_SENDING)
			.where("claimed_by", "=", node)
			.executeTakeFirst();
		return Number(r.numUpdatedRows);
	}

	async get(id: string): Promise<QueuedMail<M> | null> {
		const r = await this.db.kysely.selectFrom("mail_queue").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? recordOf<M>(r) : null;
	}

	/** Mails in a state, oldest first. */
	async list(status: MailStatus, limit = 100): Promise<QueuedMail<M>[]> {
		const rows = await this.db.kysely.selectFrom("mail_queue").selectAll().where("status", "=", status).orderBy("created_at").orderBy("id").limit(limit).execute();
		return rows.map((r) => recordOf<M>(r));
	}

	/** When the next queued mail is due (unix ms), or null when none waits. */
	async nextDue(): Promise<number | null> {
		const r = await this.db.kysely
			.selectFrom("mail_queue")
			.select((eb) => eb.fn.min("next_attempt_at").as("next"))
			.where("status", "=", MAIL_QUEUED)
			.executeTakeFirst();
		return r?.next === null || r?.next === undefined ? null : Number(r.next);
	}

	/** Removes mails sent before `before` (unix ms); failed ones stay. How many. */
	async purgeSent(before: number): Promise<number> {
		const r = await this.db.kysely.deleteFrom("mail_queue").where("status", "=", MAIL_SENT).where("sent_at", "<", before).executeTakeFirst();
		return Number(r.numDeletedRows);
	}
}
