// Activity feeds (services/activity.service.ts): one row per activity in one owner's box (a node's outbox, a
// user's inbox or outbox), the users' subscriptions to nodes, and the users' read and sent markers.
// - `key` is the idempotency key of a row (the change's id, the box): replicas that see the same change write it
//   once, whatever the order (insert … on conflict do nothing).
// - `seq` orders a box: the time in ms, zero-padded, then a unique suffix; compared as bytes (collate "C" on
//   PostgreSQL, as in 0001) so that "newer than the read marker" is a plain comparison on both backends.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function activity(dialect: DialectName): Migration {
	const pg = dialect === "postgres";
	const key = pg ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			const s = db.schema;
			await s
				.createTable("activities")
				.addColumn("key", "text", (c) => c.primaryKey())
				.addColumn("owner_type", "text", (c) => c.notNull())
				.addColumn("owner_id", key, (c) => c.notNull())
				.addColumn("box", "text", (c) => c.notNull())
				.addColumn("seq", key, (c) => c.notNull())
				.addColumn("actor", key, (c) => c.notNull())
				.addColumn("published", "bigint", (c) => c.notNull())
				.addColumn("body", "text", (c) => c.notNull())
				.execute();
			await s.createIndex("activities_box").on("activities").columns(["owner_type", "owner_id", "box", "seq"]).execute();
			await s.createIndex("activities_published").on("activities").column("published").execute();

			await s
				.createTable("activity_subscriptions")
				.addColumn("object_type", "text", (c) => c.notNull())
				.addColumn("object_id", key, (c) => c.notNull())
				.addColumn("user_id", key, (c) => c.notNull())
				.addColumn("events", "text", (c) => c.notNull())
				.addPrimaryKeyConstraint("activity_subscriptions_pkey", ["object_type", "object_id", "user_id"])
				.execute();
			await s.createIndex("activity_subscriptions_user").on("activity_subscriptions").column("user_id").execute();

			await s
				.createTable("activity_markers")
				.addColumn("user_id", key, (c) => c.notNull())
				.addColumn("box", "text", (c) => c.notNull())
				.addColumn("seq", key, (c) => c.notNull())
				.addPrimaryKeyConstraint("activity_markers_pkey", ["user_id", "box"])
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			for (const t of ["activity_markers", "activity_subscriptions", "activities"]) await db.schema.dropTable(t).ifExists().execute();
		},
	};
}
