// Admin-managed templates. Node templates (POST /a/templates/node): a copy of a file or of a folder tree taken
// when the template is made, so later edits of the source do not change it; the bytes live in the store
// (node_template_entries), like the front-end binaries, so every node of a cluster creates files from them and a
// template is written in one transaction (whole or absent). Metadata templates (PUT /a/templates/meta): named
// sets of user-metadata namespaces, their definition kept as Cells' JSON string.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function templates(dialect: DialectName): Migration {
	const pg = dialect === "postgres";
	const key = pg ? sql`text collate "C"` : sql`text`;
	const bytes = pg ? sql`bytea` : sql`blob`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("node_templates")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("label", "text", (c) => c.notNull())
				.addColumn("type", "text", (c) => c.notNull())
				// The source's name, the default name of what is created from it.
				.addColumn("name", "text", (c) => c.notNull())
				.addColumn("size", "bigint", (c) => c.notNull())
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("created_by", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addCheckConstraint("node_templates_type_check", sql`type in ('LEAF', 'COLLECTION')`)
				.execute();
			await db.schema
				.createTable("node_template_entries")
				.addColumn("template_uuid", "text", (c) => c.notNull().references("node_templates.uuid").onDelete("cascade"))
				// Relative to the template's root ("" is the root itself).
				.addColumn("path", key, (c) => c.notNull())
				.addColumn("type", "text", (c) => c.notNull())
				.addColumn("size", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("etag", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("data", bytes)
				.addPrimaryKeyConstraint("node_template_entries_pk", ["template_uuid", "path"])
				.addCheckConstraint("node_template_entries_type_check", sql`type in ('LEAF', 'COLLECTION')`)
				.execute();
			await db.schema
				.createTable("meta_templates")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("label", "text", (c) => c.notNull())
				.addColumn("namespace", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("meta", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.execute();
			await db.schema.createIndex("meta_templates_label").on("meta_templates").column("label").unique().execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("node_template_entries").ifExists().execute();
			await db.schema.dropTable("node_templates").ifExists().execute();
			await db.schema.dropTable("meta_templates").ifExists().execute();
		},
	};
}
