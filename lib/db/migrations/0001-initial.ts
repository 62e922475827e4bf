// The first schema: every collection the services kept in NeDB/MongoDB, as tables. Frozen once released: a change
// is a new migration, never an edit here (databases that already ran this one would not see it).
//
// Dialect-specific bits, and why they cannot be avoided:
// - PostgreSQL compares text by the database's locale unless told otherwise; names, paths, logins and slugs are
//   declared `collate "C"` (byte order, which for UTF-8 is code point order) so that listings, keyset pages and
//   prefix ranges order exactly as SQLite's default BINARY collation does.
// - A PostgreSQL btree entry is at most ~2,700 bytes and node paths may be 4,096: uniqueness of (ds, path) is
//   enforced there on md5(path), and path lookups use a hash index. SQLite has no such limit and indexes (ds, path)
//   directly. Queries are the same on both (`where ds = ? and path = ?`); only the indexes differ.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function initial(dialect: DialectName): Migration {
	const pg = dialect === "postgres";
	/** Text that is compared, ordered or range-scanned. */
	const key = pg ? sql`text collate "C"` : sql`text`;

	return {
		async up(db: Kysely<unknown>): Promise<void> {
			const s = db.schema;

			// ---- identity ----
			await s
				.createTable("users")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("login", key)
				.addColumn("group_path", key, (c) => c.notNull())
				.addColumn("is_group", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("group_label", key)
				.addColumn("attributes", "text", (c) => c.notNull().defaultTo("{}"))
				.addColumn("password_hash", "text")
				.addColumn("roles", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("last_connected", "bigint")
				.addColumn("created_at", "bigint")
				// Failed-login throttling state (lib/auth/login-guard), JSON; null when there is none.
				.addColumn("login_guard", "text")
				// A row is a user (a login) or a group (a label), never both, never neither.
				.addCheckConstraint("users_kind_check", sql`(is_group = 0 and login is not null and group_label is null) or (is_group = 1 and login is null and group_label is not null)`)
				.execute();
			await s.createIndex("users_login_key").on("users").column("login").unique().execute();
			// A group is its full path: its parent's path and its label. Users have no label and are not constrained.
			await s.createIndex("users_group_key").on("users").columns(["group_path", "group_label"]).unique().execute();
			// Case-insensitive login search (ASCII folding, the same on both: lower() of SQLite and of collation "C").
			await s.createIndex("users_login_lower").on("users").expression(sql`lower(login)`).execute();

			await s
				.createTable("roles")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("label", "text", (c) => c.notNull())
				.addColumn("is_team", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("group_role", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("user_role", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("auto_applies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("force_override", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("policies_context_editable", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("last_updated", "bigint", (c) => c.notNull().defaultTo(0))
				.execute();

			await s
				.createTable("workspaces")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("slug", key, (c) => c.notNull())
				.addColumn("label", "text", (c) => c.notNull())
				.addColumn("description", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("scope", "text", (c) => c.notNull())
				.addColumn("last_updated", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("policies_context_editable", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("attributes", "text", (c) => c.notNull().defaultTo("{}"))
				.execute();
			await s.createIndex("workspaces_slug_key").on("workspaces").column("slug").unique().execute();

			await s
				.createTable("acls")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("role_id", key, (c) => c.notNull().defaultTo(""))
				.addColumn("workspace_id", key, (c) => c.notNull().defaultTo(""))
				.addColumn("node_id", key, (c) => c.notNull().defaultTo(""))
				.addColumn("action_name", key, (c) => c.notNull())
				.addColumn("action_value", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("created", "bigint", (c) => c.notNull())
				.execute();
			// One value per (role, workspace, node, action): the acl service replaces, never duplicates.
			await s.createIndex("acls_key").on("acls").columns(["role_id", "workspace_id", "node_id", "action_name"]).unique().execute();
			await s.createIndex("acls_workspace").on("acls").column("workspace_id").execute();
			await s.createIndex("acls_node").on("acls").column("node_id").execute();

			await s
				.createTable("policy_groups")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("name", "text", (c) => c.notNull())
				.addColumn("description", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("owner_uuid", "text")
				.addColumn("resource_group", "text", (c) => c.notNull())
				.addColumn("last_updated", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("policies", "text", (c) => c.notNull().defaultTo("[]"))
				.execute();
			await s.createTable("ip_lists").addColumn("name", "text", (c) => c.primaryKey()).addColumn("ips", "text", (c) => c.notNull().defaultTo("[]")).execute();
			await s
				.createTable("ip_states")
				.addColumn("ip", "text", (c) => c.primaryKey())
				.addColumn("ban_expire", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("failures", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("history", "text", (c) => c.notNull().defaultTo("[]"))
				.execute();
			await s.createIndex("ip_states_ban_expire").on("ip_states").column("ban_expire").execute();

			// ---- tokens ----
			await s
				.createTable("sessions")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("user_uuid", "text", (c) => c.notNull())
				.addColumn("login", "text", (c) => c.notNull())
				.addColumn("ip", "text")
				.addColumn("user_agent", "text")
				.addColumn("refresh_hash", "text", (c) => c.notNull())
				.addColumn("used_hashes", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("refresh_expires_at", "bigint", (c) => c.notNull())
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.execute();
			await s.createIndex("sessions_user").on("sessions").column("user_uuid").execute();
			await s.createIndex("sessions_expires").on("sessions").column("refresh_expires_at").execute();

			await s
				.createTable("tokens")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("token_hash", "text", (c) => c.notNull())
				.addColumn("kind", "text", (c) => c.notNull())
				.addColumn("type", "text", (c) => c.notNull())
				.addColumn("label", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("user_uuid", "text", (c) => c.notNull())
				.addColumn("user_login", "text", (c) => c.notNull())
				.addColumn("scopes", "text", (c) => c.notNull().defaultTo("[]"))
				.addColumn("auto_refresh_window", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("expires_at", "bigint", (c) => c.notNull())
				.addColumn("max_expires_at", "bigint")
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("created_by", "text", (c) => c.notNull())
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.addColumn("impersonated_by", "text")
				.execute();
			await s.createIndex("tokens_hash_key").on("tokens").column("token_hash").unique().execute();
			await s.createIndex("tokens_user").on("tokens").column("user_uuid").execute();
			await s.createIndex("tokens_expires").on("tokens").column("expires_at").execute();

			await s
				.createTable("reset_keys")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("key_hash", "text", (c) => c.notNull())
				.addColumn("user_uuid", "text", (c) => c.notNull())
				.addColumn("login", "text", (c) => c.notNull())
				.addColumn("email", "text", (c) => c.notNull())
				.addColumn("expires_at", "bigint", (c) => c.notNull())
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("seq", "bigint")
				.execute();
			await s.createIndex("reset_keys_hash_key").on("reset_keys").column("key_hash").unique().execute();
			await s.createIndex("reset_keys_user").on("reset_keys").column("user_uuid").execute();

			await s
				.createTable("selections")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("owner", "text", (c) => c.notNull())
				.addColumn("paths", "text", (c) => c.notNull())
				.addColumn("action", "text")
				.addColumn("expires", "bigint", (c) => c.notNull())
				.execute();
			await s.createIndex("selections_expires").on("selections").column("expires").execute();

			// ---- files ----
			await s.createTable("datasources").addColumn("name", "text", (c) => c.primaryKey()).addColumn("config", "text", (c) => c.notNull()).execute();
			await s
				.createTable("virtual_nodes")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("path", "text", (c) => c.notNull())
				.addColumn("meta", "text", (c) => c.notNull().defaultTo("{}"))
				.addColumn("mtime", "bigint")
				.execute();
			await s
				.createTable("encryption_keys")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("label", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("owner", "text", (c) => c.notNull())
				.addColumn("creation_date", "bigint", (c) => c.notNull())
				.addColumn("sealed", "text", (c) => c.notNull())
				.addColumn("info", "text", (c) => c.notNull().defaultTo("{}"))
				.execute();

			await s
				.createTable("nodes")
				.addColumn("uuid", "text", (c) => c.primaryKey())
				.addColumn("ds", key, (c) => c.notNull())
				// No cascade: deleting a folder that gained a child since the delete read the subtree must fail (and be
				// retried), not silently take a file the caller never saw with it.
				.addColumn("parent", "text", (c) => c.references("nodes.uuid"))
				.addColumn("name", key, (c) => c.notNull())
				.addColumn("path", key, (c) => c.notNull())
				.addColumn("type", "text", (c) => c.notNull().check(sql`type in ('LEAF', 'COLLECTION')`))
				.addColumn("size", "bigint", (c) => c.notNull().defaultTo(0))
				.addColumn("mtime", "bigint", (c) => c.notNull())
				.addColumn("etag", "text")
				.addColumn("mode", "integer")
				.addColumn("key", "text")
				.addColumn("meta", "text", (c) => c.notNull().defaultTo("{}"))
				.addColumn("files", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("folders", "integer", (c) => c.notNull().defaultTo(0))
				.execute();
			if (pg) {
				await sql`create unique index nodes_ds_path_key on nodes (ds, md5(path))`.execute(db);
				await sql`create index nodes_path on nodes using hash (path)`.execute(db);
			} else {
				await s.createIndex("nodes_ds_path_key").on("nodes").columns(["ds", "path"]).unique().execute();
			}
			// The children of a folder by name: uniqueness, the name-ordered listing and its keyset pages in one index.
			await s.createIndex("nodes_parent_name_key").on("nodes").columns(["parent", "name"]).unique().execute();
			// Counting a folder's files and folders, and listing only its folders, read this index alone.
			await s.createIndex("nodes_parent_type").on("nodes").columns(["parent", "type", "name"]).execute();
			await s.createIndex("nodes_parent_size").on("nodes").columns(["parent", "size", "name"]).execute();
			await s.createIndex("nodes_parent_mtime").on("nodes").columns(["parent", "mtime", "name"]).execute();
			// A datasource's files page by page in uuid order (flat checks, sweeps, conversions, search builds): without
			// it PostgreSQL scans and sorts every node of the datasource for each page (seconds at a million).
			await s.createIndex("nodes_ds_type_uuid").on("nodes").columns(["ds", "type", "uuid"]).execute();

			await s.createTable("versioning_policies").addColumn("uuid", "text", (c) => c.primaryKey()).addColumn("policy", "text", (c) => c.notNull()).execute();
			await s
				.createTable("versions")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("node_uuid", "text", (c) => c.notNull())
				// Compared as ranges (the versions under a moved or deleted folder): byte order on both.
				.addColumn("ds", key, (c) => c.notNull())
				.addColumn("path", key, (c) => c.notNull())
				.addColumn("size", "bigint", (c) => c.notNull())
				.addColumn("etag", "text", (c) => c.notNull())
				.addColumn("mtime", "bigint", (c) => c.notNull())
				.addColumn("owner", "text", (c) => c.notNull())
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("vds", "text", (c) => c.notNull())
				.addColumn("key", "text", (c) => c.notNull())
				.addColumn("policy", "text", (c) => c.notNull())
				.addColumn("deleted_at", "bigint")
				.addColumn("reason", "text")
				.execute();
			await s.createIndex("versions_node").on("versions").columns(["node_uuid", "created_at"]).execute();
			await s.createIndex("versions_policy").on("versions").column("policy").execute();

			// ---- jobs ----
			await s
				.createTable("jobs")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("name", "text", (c) => c.notNull())
				.addColumn("label", "text", (c) => c.notNull())
				.addColumn("owner", "text", (c) => c.notNull())
				.addColumn("owner_uuid", "text", (c) => c.notNull())
				.addColumn("params", "text", (c) => c.notNull())
				.addColumn("user", "text", (c) => c.notNull())
				.addColumn("inactive", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("modified_at", "bigint", (c) => c.notNull())
				.execute();
			await s.createIndex("jobs_owner").on("jobs").columns(["owner", "created_at"]).execute();
			await s
				.createTable("tasks")
				.addColumn("id", "text", (c) => c.primaryKey())
				.addColumn("job_id", "text", (c) => c.notNull().references("jobs.id").onDelete("cascade"))
				.addColumn("owner", "text", (c) => c.notNull())
				.addColumn("status", "text", (c) => c.notNull())
				.addColumn("status_message", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("trigger_owner", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("start_time", "bigint")
				.addColumn("end_time", "bigint")
				.addColumn("progress", "double precision", (c) => c.notNull().defaultTo(0))
				.addColumn("has_progress", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("can_stop", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("can_pause", "integer", (c) => c.notNull().defaultTo(0))
				.addColumn("node", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("created", "bigint", (c) => c.notNull())
				.execute();
			await s.createIndex("tasks_job").on("tasks").columns(["job_id", "created"]).execute();
			await s.createIndex("tasks_status").on("tasks").columns(["status", "owner"]).execute();
			await s
				.createTable("task_logs")
				// Log queries match these by exact value or by prefix (a range): byte order on both.
				.addColumn("id", key, (c) => c.primaryKey())
				.addColumn("job_id", key, (c) => c.notNull())
				.addColumn("task_id", key, (c) => c.notNull().references("tasks.id").onDelete("cascade"))
				.addColumn("owner", key, (c) => c.notNull())
				.addColumn("owner_uuid", key, (c) => c.notNull())
				.addColumn("ts", "bigint", (c) => c.notNull())
				.addColumn("seq", "bigint", (c) => c.notNull())
				.addColumn("level", "text", (c) => c.notNull())
				.addColumn("msg", "text", (c) => c.notNull())
				.addColumn("operation_uuid", key, (c) => c.notNull().defaultTo(""))
				.execute();
			await s.createIndex("task_logs_task").on("task_logs").columns(["task_id", "seq"]).execute();
			await s.createIndex("task_logs_job").on("task_logs").columns(["job_id", "seq"]).execute();
			await s.createIndex("task_logs_operation").on("task_logs").columns(["operation_uuid", "seq"]).execute();

			// ---- cluster ----
			await s
				.createTable("leases")
				.addColumn("name", "text", (c) => c.primaryKey())
				.addColumn("holder", "text", (c) => c.notNull())
				.addColumn("expires_at", "bigint", (c) => c.notNull())
				.execute();
			await s.createTable("markers").addColumn("name", "text", (c) => c.primaryKey()).addColumn("value", "text", (c) => c.notNull()).execute();
		},

		async down(db: Kysely<unknown>): Promise<void> {
			// Children before parents (foreign keys).
			for (const t of ["task_logs", "tasks", "jobs", "leases", "markers", "versions", "versioning_policies", "nodes", "encryption_keys", "virtual_nodes", "datasources", "selections", "reset_keys", "tokens", "sessions", "ip_states", "ip_lists", "policy_groups", "acls", "workspaces", "roles", "users"]) {
				await db.schema.dropTable(t).ifExists().execute();
			}
		},
	};
}
