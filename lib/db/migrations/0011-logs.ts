// The log store (lib/db/logs): the system log shipped by every node and the audit trail, in one table told apart
// by `kind`. Rows are pruned by age and by count (LOG_RETENTION_DAYS, LOG_MAX_ROWS, AUDIT_RETENTION_DAYS), so the
// table stays bounded on disk. Queries read newest first within a kind, by time, optionally by audit event id.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function logs(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("logs")
				.addColumn("id", key, (c) => c.primaryKey())
				// sys | audit
				.addColumn("kind", key, (c) => c.notNull())
				// Unix ms.
				.addColumn("ts", "bigint", (c) => c.notNull())
				.addColumn("level", key, (c) => c.notNull())
				.addColumn("logger", key, (c) => c.notNull())
				// The cluster node the entry comes from (its broker nodeID).
				.addColumn("node", key, (c) => c.notNull())
				.addColumn("msg", key, (c) => c.notNull())
				.addColumn("msg_id", key)
				.addColumn("user_name", key)
				.addColumn("user_uuid", key)
				.addColumn("remote_address", key)
				.addColumn("user_agent", key)
				.addColumn("node_uuid", key)
				.addColumn("node_path", key)
				.addColumn("ws_uuid", key)
				.addColumn("operation_uuid", key)
				.addColumn("span_uuid", key)
				// JSON object of the other fields (Cells' JsonZaps).
				.addColumn("extra", "text")
				.execute();
			await db.schema.createIndex("logs_kind_ts").on("logs").columns(["kind", "ts"]).execute();
			await db.schema.createIndex("logs_kind_msg_id_ts").on("logs").columns(["kind", "msg_id", "ts"]).execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("logs").ifExists().execute();
		},
	};
}
