// The outgoing mail queue (lib/db/mail-queue): one row per recipient, persisted before `POST /mailer/send` (or
// `mailer.queue`) answers, taken by the cluster's sender with one conditional UPDATE, kept with its last error
// when given up. Sent rows are swept after a while; failed ones stay for an operator to read.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function mail(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("mail_queue")
				.addColumn("id", key, (c) => c.primaryKey())
				.addColumn("recipient", "text", (c) => c.notNull())
				.addColumn("subject", "text", (c) => c.notNull())
				// JSON of lib/mail's MailMessage: everything the sender needs, rendered once when queued.
				.addColumn("message", "text", (c) => c.notNull())
				// queued | sending | sent | failed
				.addColumn("status", "text", (c) => c.notNull())
				.addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("max_attempts", "integer", (c) => c.notNull())
				.addColumn("next_attempt_at", "bigint", (c) => c.notNull())
				.addColumn("claimed_by", "text")
				.addColumn("claimed_until", "bigint")
				.addColumn("last_error", "text")
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("sent_at", "bigint")
				.execute();
			// What the sender scans: queued rows due, sending rows whose claim ran out.
			await db.schema.createIndex("mail_queue_due").on("mail_queue").columns(["status", "next_attempt_at"]).execute();
			await db.schema.createIndex("mail_queue_claim").on("mail_queue").columns(["status", "claimed_until"]).execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("mail_queue").ifExists().execute();
		},
	};
}
