// User metadata (Cells' idm/meta): the namespaces administrators declare, the values users put on nodes, and the
// tag lists of `tags` namespaces. Values are keyed by (node, namespace, owner): `owner` is "" for the values all
// readers share (one per node and namespace) and the user's uuid for per-user namespaces (bookmarks), so the
// unique index, not a read before the write, keeps one value per node, namespace and owner.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function userMeta(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			const s = db.schema;
			await s
				.createTable("user_meta_namespaces")
				.addColumn("namespace", key, (c) => c.primaryKey())
				.addColumn("label", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("ord", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("indexable", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("json_definition", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.execute();
			await s
				.createTable("user_meta")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("node_uuid", key, (c) => c.notNull())
				.addColumn("namespace", key, (c) => c.notNull())
				.addColumn("owner", key, (c) => c.notNull().defaultTo(""))
				.addColumn("json_value", "text", (c) => c.notNull())
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				// Unix seconds of the last write (bookmarks and recent values come newest first).
				.addColumn("updated_at", "bigint", (c) => c.notNull().defaultTo(0))
				.execute();
			// One value per node, namespace and owner; also the index of "the values of these nodes" (a listing page).
			await s.createIndex("user_meta_key").on("user_meta").columns(["node_uuid", "namespace", "owner"]).unique().execute();
			// "My bookmarks", "every value of a namespace" (search by value, namespace deletion).
			await s.createIndex("user_meta_namespace").on("user_meta").columns(["namespace", "owner", "updated_at"]).execute();
			await s
				.createTable("user_meta_tags")
				.addColumn("namespace", key, (c) => c.notNull())
				.addColumn("tag", key, (c) => c.notNull())
				.addPrimaryKeyConstraint("user_meta_tags_pk", ["namespace", "tag"])
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			for (const t of ["user_meta_tags", "user_meta", "user_meta_namespaces"]) await db.schema.dropTable(t).ifExists().execute();
		},
	};
}
