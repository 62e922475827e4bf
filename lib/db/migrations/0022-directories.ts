// External (LDAP) directories (PUT /a/config/directories/{ConfigId}): one row per directory, its configuration
// kept as Cells' authLdapServerConfig JSON (bind password included: the server needs it in clear to bind), so
// that fields Cellar does not interpret yet (mapping rules, schedules) come back as the admin wrote them.
import type { Kysely, Migration } from "kysely";

export function directories(): Migration {
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("directories")
				.addColumn("config_id", "text", (c) => c.primaryKey())
				.addColumn("config", "text", (c) => c.notNull())
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("directories").ifExists().execute();
		},
	};
}
