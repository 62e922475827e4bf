// Public links (Cells' docstore `share`, keyed by hash): which workspace a hash opens, whose it is, its limits and
// how often it was used. Cells themselves need no table: a cell is a workspace (scope ROOM) and ACLs.
// The download count is one column updated by one conditional statement, so that concurrent downloads through
// several gateways never go past the limit.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function shares(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("share_links")
				.addColumn("hash", key, (c) => c.primaryKey())
				// The link's workspace (scope LINK): one link per workspace.
				.addColumn("workspace", "text", (c) => c.notNull().unique())
				.addColumn("owner_uuid", "text", (c) => c.notNull())
				.addColumn("owner_login", key, (c) => c.notNull())
				.addColumn("template", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("access_start", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("access_end", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("download_limit", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("download_count", "bigint", (c) => c.notNull().defaultTo(0))
				// The hidden user the visitors log in as.
				.addColumn("user_uuid", "text", (c) => c.notNull())
				.addColumn("user_login", key, (c) => c.notNull().unique())
				.addColumn("password_required", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("created_at", "bigint", (c) => c.notNull())
				// JSON: TargetUsers, RestrictToTargetUsers, DownloadDisabled.
				.addColumn("extra", "text", (c) => c.notNull().defaultTo("{}"))
				.execute();
			await db.schema.createIndex("share_links_owner").on("share_links").column("owner_uuid").execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("share_links").ifExists().execute();
		},
	};
}
