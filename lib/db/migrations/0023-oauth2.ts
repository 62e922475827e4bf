// OAuth2 clients and connectors (PUT /a/config/oauth2clients/{client_id}, /a/config/oauth2connectors): each row
// keeps Cells' JSON shape of the object; a client's secret only as a password hash, in its own column so that no
// listing can carry it by mistake. Connectors keep the order the admin gave (the login page shows them so).
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function oauth2(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("oauth2_clients")
				.addColumn("client_id", key, (c) => c.primaryKey())
				.addColumn("config", "text", (c) => c.notNull())
				.addColumn("secret_hash", "text")
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.execute();
			await db.schema
				.createTable("oauth2_connectors")
				.addColumn("id", key, (c) => c.primaryKey())
				.addColumn("position", "integer", (c) => c.notNull())
				.addColumn("type", "text", (c) => c.notNull())
				.addColumn("config", "text", (c) => c.notNull())
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("oauth2_connectors").ifExists().execute();
			await db.schema.dropTable("oauth2_clients").ifExists().execute();
		},
	};
}
