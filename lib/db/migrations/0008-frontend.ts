// Front-end data: avatars and logos (frontend_binaries), and the TOTP second factor of users (user_totp).
// Images are kept in the store, not on a node's disk, so that every node of a cluster serves them and a write is
// one statement (the old image or the new one, never half of one).
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function frontend(dialect: DialectName): Migration {
	const pg = dialect === "postgres";
	const key = pg ? sql`text collate "C"` : sql`text`;
	const bytes = pg ? sql`bytea` : sql`blob`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("frontend_binaries")
				.addColumn("kind", "text", (c) => c.notNull())
				.addColumn("owner", key, (c) => c.notNull())
				.addColumn("id", key, (c) => c.notNull())
				.addColumn("mime", "text", (c) => c.notNull())
				.addColumn("size", "bigint", (c) => c.notNull())
				.addColumn("data", bytes, (c) => c.notNull())
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addPrimaryKeyConstraint("frontend_binaries_pk", ["kind", "owner"])
				.addCheckConstraint("frontend_binaries_kind_check", sql`kind in ('USER', 'GLOBAL')`)
				.execute();
			await db.schema.createIndex("frontend_binaries_id").on("frontend_binaries").columns(["kind", "id"]).unique().execute();
			await db.schema
				.createTable("user_totp")
				.addColumn("user_uuid", "text", (c) => c.primaryKey())
				.addColumn("secret", "text", (c) => c.notNull())
				.addColumn("status", "text", (c) => c.notNull())
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("enrolled_at", "bigint")
				.addColumn("last_step", "bigint", (c) => c.notNull().defaultTo(0))
				// Wrong codes in a row, and until when codes are refused after too many (unix seconds).
				.addColumn("failures", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("blocked_until", "bigint", (c) => c.notNull().defaultTo(0))
				.addCheckConstraint("user_totp_status_check", sql`status in ('pending', 'active')`)
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("user_totp").execute();
			await db.schema.dropTable("frontend_binaries").execute();
		},
	};
}
