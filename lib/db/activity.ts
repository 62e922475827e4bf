// Activity feeds: a row per activity in one owner's box (a node's outbox, a user's inbox or outbox), the users'
// subscriptions to nodes and their read/sent markers (migration 0006). Rows are written in batches, one
// transaction each, keyed so that the same activity posted twice to a box stays one row. Storage stays bounded:
// `prune` drops what is older than the retention and what is beyond the newest N of each box.
import { sql, type Transaction } from "kysely";
import type { Db } from "./index";
import type { Database } from "./schema";
import { fromJson, lazy } from "./sql";

export type OwnerType = "NODE" | "USER";

export type BoxName = "inbox" | "outbox";
export type MarkerName = "lastread" | "lastsent";

export interface ActivityEntry {
	/** Idempotency key: the change's id and the box. */
	key: string;
	ownerType: OwnerType;
	ownerId: string;
	box: BoxName;
	/** Orders the box (see `sequence`). */
	seq: string;
	actor: string;
	/** ms */
	published: number;
	/** JSON text of the activity. */
	body: string;
}

export interface SubscriptionRecord {
	UserId: string;
	ObjectType: OwnerType;
	ObjectId: string;
	Events: string[];
}

let counter = 0;
const suffix = Math.random().toString(36).slice(2, 8);
/** A box's order key: the time in ms (13 digits, good until the year 2286), a counter, this process. */
export function sequence(ms: number): string {
	counter = (counter + 1) % 1_000_000;
	return `${String(Math.max(0, Math.floor(ms))).padStart(13, "0")}-${String(counter).padStart(6, "0")}-${suffix}`;
}

function entryOf(r: { key: string; owner_type: string; owner_id: string; box: string; seq: string; actor: string; published: number | string; body: string }): ActivityEntry {
	return { key: r.key, ownerType: r.owner_type as OwnerType, ownerId: r.owner_id, box: r.box as BoxName, seq: r.seq, actor: r.actor, published: Number(r.published), body: r.body };
}

/** The boxes of these owners (deleted nodes, deleted users) and the subscriptions to them; how many activities. */
async function dropOwners(trx: Transaction<Database>, ownerType: OwnerType, ownerIds: string[]): Promise<number> {
	let n = 0;
	for (let i = 0; i < ownerIds.length; i += 500) {
		const ids = ownerIds.slice(i, i + 500);
		await trx.deleteFrom("activity_subscriptions").where("object_type", "=", ownerType).where("object_id", "in", ids).execute();
		n += Number((await trx.deleteFrom("activities").where("owner_type", "=", ownerType).where("owner_id", "in", ids).executeTakeFirst()).numDeletedRows);
	}
	return n;
}

export class ActivityRepo {
	constructor(private readonly db: Db) {}

	/**
	 * Writes a batch in one transaction; the entries that were new (an already written key is skipped).
	 * `deletedNodes` (nodes the batch deleted) lose their boxes and the subscriptions to them in the same
	 * transaction, after the rows are written (the batch may have written to their boxes before deleting them).
	 */
	async post(all: ActivityEntry[], deletedNodes: string[] = []): Promise<ActivityEntry[]> {
		const byKey = new Map<string, ActivityEntry>();
		for (const e of all) if (!byKey.has(e.key)) byKey.set(e.key, e);
		const entries = [...byKey.values()];
		if (!entries.length && !deletedNodes.length) return [];
		return this.db.transaction(async (trx) => {
			const inserted = new Set<string>();
			for (let i = 0; i < entries.length; i += 200) {
				const rows = entries.slice(i, i + 200).map((e) => ({ key: e.key, owner_type: e.ownerType, owner_id: e.ownerId, box: e.box, seq: e.seq, actor: e.actor, published: e.published, body: e.body }));
				const out = await trx
					.insertInto("activities")
					.values(rows)
					.onConflict((oc) => oc.column("key").doNothing())
					.returning("key")
					.execute();
				for (const r of out) inserted.add(r.key);
			}
			await dropOwners(trx, "NODE", [...new Set(deletedNodes)]);
			return entries.filter((e) => inserted.has(e.key));
		});
	}

	/** A box, newest first: `offset` rows skipped, at most `limit`; with `after`, only rows newer than that sequence. */
	async list(ownerType: OwnerType, ownerId: string, box: BoxName, opts: { offset?: number; limit: number; after?: string }): Promise<ActivityEntry[]> {
		let q = this.db.kysely.selectFrom("activities").selectAll().where("owner_type", "=", ownerType).where("owner_id", "=", ownerId).where("box", "=", box);
		if (opts.after) q = q.where("seq", ">", opts.after);
		const rows = await q
			.orderBy("seq", "desc")
			.limit(opts.limit)
			.offset(opts.offset ?? 0)
			.execute();
		return rows.map(entryOf);
	}

	/** How many rows of a box are newer than `after` (all of them without it). */
	async count(ownerType: OwnerType, ownerId: string, box: BoxName, after?: string): Promise<number> {
		let q = this.db.kysely.selectFrom("activities").select((eb) => eb.fn.countAll<number | string>().as("n")).where("owner_type", "=", ownerType).where("owner_id", "=", ownerId).where("box", "=", box);
		if (after) q = q.where("seq", ">", after);
		return Number((await q.executeTakeFirst())?.n ?? 0);
	}


	/**
	 * Users whose inbox holds something newer than both their read and their digest markers (unread, not yet
	 * mailed), with the newest sequence of their inbox: who a digest run mails. One statement: only those users'
	 * rows come back, however many markers there are.
	 */
	async digestOwners(): Promise<{ userId: string; newest: string }[]> {
		const k = this.db.kysely;
		const seen = k.selectFrom("activity_markers").select(["user_id", (eb) => eb.fn.max("seq").as("seen")]).where("box", "in", ["lastread", "lastsent"]).groupBy("user_id").as("m");
		const rows = await k
			.selectFrom("activities as a")
			.leftJoin(seen, "m.user_id", "a.owner_id")
			.select(["a.owner_id", (eb) => eb.fn.max("a.seq").as("newest")])
			.where("a.owner_type", "=", "USER")
			.where("a.box", "=", "inbox")
			.groupBy(["a.owner_id", "m.seen"])
			.having((eb) => eb.or([eb("m.seen", "is", null), eb(eb.fn.max("a.seq"), ">", eb.ref("m.seen"))]))
			.execute();
		return rows.map((r) => ({ userId: r.owner_id, newest: String(r.newest) }));
	}

	async marker(userId: string, name: MarkerName): Promise<string | undefined> {
		return (await this.db.kysely.selectFrom("activity_markers").select("seq").where("user_id", "=", userId).where("box", "=", name).executeTakeFirst())?.seq;
	}

	/** Moves a marker forward (never back: a late, older read does not make newer activities unread again). */
	async setMarker(userId: string, name: MarkerName, seq: string): Promise<void> {
		await this.db.kysely
			.insertInto("activity_markers")
			.values({ user_id: userId, box: name, seq })
			.onConflict((oc) =>
				oc
					.columns(["user_id", "box"])
					.doUpdateSet({ seq: (eb) => eb.ref("excluded.seq") })
					.where("activity_markers.seq", "<", (eb) => eb.ref("excluded.seq")),
			)
			.execute();
	}

	/** Stores a subscription; no events removes it. */
	async subscribe(s: SubscriptionRecord): Promise<void> {
		if (!s.Events.length) {
			await this.db.kysely.deleteFrom("activity_subscriptions").where("object_type", "=", s.ObjectType).where("object_id", "=", s.ObjectId).where("user_id", "=", s.UserId).execute();
			return;
		}
		const events = JSON.stringify([...new Set(s.Events)]);
		await this.db.kysely
			.insertInto("activity_subscriptions")
			.values({ object_type: s.ObjectType, object_id: s.ObjectId, user_id: s.UserId, events })
			.onConflict((oc) => oc.columns(["object_type", "object_id", "user_id"]).doUpdateSet({ events }))
			.execute();
	}

	/**
	 * All the nodes a user follows with their events, when they are at most `max` (one probe of the user index, one
	 * compiled query); null when there are more (lib/activity/followed then looks the nodes of each answer up).
	 */
	async followedByUser(userId: string, max: number): Promise<Map<string, string[]> | null> {
		const rows = (await this.db.kysely.executeQuery<{ object_id: string; events: string }>({ ...this.followedQuery(), parameters: [userId, "NODE", max + 1] })).rows;
		if (rows.length > max) return null;
		return new Map(rows.map((r) => [r.object_id, fromJson<string[]>(r.events, [])]));
	}

	/** The events a user follows on these nodes, looked up by node (for a user following many). */
	async followedAmong(userId: string, objectIds: readonly string[]): Promise<Record<string, string[]>> {
		const out: Record<string, string[]> = {};
		if (!objectIds.length) return out;
		for (const s of await this.subscriptions({ objectType: "NODE", objectIds: [...objectIds], userIds: [userId] })) out[s.ObjectId] = s.Events;
		return out;
	}

	// No ORDER BY: ordered by object, SQLite would walk the primary key through every user's NODE subscriptions.
	private readonly followedQuery = lazy(() => this.db.kysely.selectFrom("activity_subscriptions").select(["object_id", "events"]).where("user_id", "=", "").where("object_type", "=", "").limit(1).compile());

	/**
	 * Subscriptions, filtered by objects and/or users (an empty or absent filter does not filter), at most
	 * `limit`: 10,000 unless told, null for all (the followers of a batch's nodes are all wanted).
	 */
	async subscriptions(f: { objectType?: OwnerType; objectIds?: string[]; userIds?: string[]; limit?: number | null }): Promise<SubscriptionRecord[]> {
		let q = this.db.kysely.selectFrom("activity_subscriptions").selectAll();
		if (f.objectType) q = q.where("object_type", "=", f.objectType);
		if (f.objectIds?.length) q = q.where("object_id", "in", f.objectIds);
		if (f.userIds?.length) q = q.where("user_id", "in", f.userIds);
		q = q.orderBy("object_id").orderBy("user_id");
		if (f.limit !== null) q = q.limit(f.limit ?? 10_000);
		const rows = await q.execute();
		return rows.map((r) => ({ UserId: r.user_id, ObjectType: r.object_type as OwnerType, ObjectId: r.object_id, Events: fromJson<string[]>(r.events, []) }));
	}

	/**
	 * What deleted users leave, as Cells clears a deleted user's activities: their inbox, outbox and markers, their
	 * subscriptions and those to them, and the activities they authored in nodes' feeds. What they did stays in
	 * other users' inboxes (those are the readers' notifications, and Cells keeps them too). How many activities.
	 */
	async deleteUsers(logins: string[]): Promise<number> {
		const all = [...new Set(logins)];
		if (!all.length) return 0;
		return this.db.transaction(async (trx) => {
			let n = await dropOwners(trx, "USER", all);
			for (let i = 0; i < all.length; i += 500) {
				const ids = all.slice(i, i + 500);
				await trx.deleteFrom("activity_subscriptions").where("user_id", "in", ids).execute();
				await trx.deleteFrom("activity_markers").where("user_id", "in", ids).execute();
				n += Number((await trx.deleteFrom("activities").where("owner_type", "=", "NODE").where("box", "=", "outbox").where("actor", "in", ids).executeTakeFirst()).numDeletedRows);
			}
			return n;
		});
	}

	/**
	 * Drops the rows published before `beforeMs`, and in every box the rows beyond its newest `maxPerBox`; how
	 * many in all. Subscriptions of nodes are kept (a node outlives its activities).
	 */
	async prune(beforeMs: number, maxPerBox: number): Promise<number> {
		const old = Number((await this.db.kysely.deleteFrom("activities").where("published", "<", beforeMs).executeTakeFirst()).numDeletedRows);
		if (maxPerBox <= 0) return old;
		const extra = await sql<{ n: number | string }>`
			delete from activities where key in (
				select key from (
					select key, row_number() over (partition by owner_type, owner_id, box order by seq desc) as rn from activities
				) ranked where rn > ${maxPerBox}
			)`.execute(this.db.kysely);
		return old + Number(extra.numAffectedRows ?? 0);
	}
}
