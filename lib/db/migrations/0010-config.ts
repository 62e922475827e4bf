// The configuration tree (GET/PUT /a/config/{FullPath}): one row per leaf, keyed by its slash-separated path
// ("frontend/plugin/core.pydio/APPLICATION_TITLE"), the value as JSON. A subtree is the range of keys under
// "<path>/", read and replaced in one transaction; collation "C" on PostgreSQL so that range is byte order on
// both backends (see lib/db/sql prefixEnd).
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function configTree(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("config_entries")
				.addColumn("path", key, (c) => c.primaryKey())
				.addColumn("json_value", "text", (c) => c.notNull())
				.addColumn("author", "text", (c) => c.notNull().defaultTo(""))
				// Unix ms of the write.
				.addColumn("updated_at", "bigint", (c) => c.notNull().defaultTo(0))
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("config_entries").ifExists().execute();
		},
	};
}
