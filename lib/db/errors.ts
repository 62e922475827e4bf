// Storage errors, translated in one place: every query of lib/db runs through a driver wrapped by
// `translatingDialect`, so a duplicate key reaches callers as lib/errors' ConflictError whether SQLite
// (SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY) or PostgreSQL (SQLSTATE 23505) raised it, with a message naming what
// is taken (never the values: the message may reach a client). Every other error passes through unchanged; the
// predicates below let the repositories recognise the few they handle (foreign keys, deadlocks).
import type { DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings, CompiledQuery } from "kysely";
import { ConflictError } from "../errors";

interface DriverError {
	code?: unknown;
	message?: unknown;
	/** PostgreSQL: the violated constraint (index) name. */
	constraint?: unknown;
	/** PostgreSQL: the table. */
	table?: unknown;
}

const codeOf = (err: unknown): string => {
	const c = (err as DriverError | null)?.code;
	return typeof c === "string" ? c : "";
};

export function isUniqueViolation(err: unknown): boolean {
	const c = codeOf(err);
	return c === "23505" || c === "SQLITE_CONSTRAINT_UNIQUE" || c === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

export function isForeignKeyViolation(err: unknown): boolean {
	const c = codeOf(err);
	return c === "23503" || c === "SQLITE_CONSTRAINT_FOREIGNKEY";
}

/** A transaction that lost to another (PostgreSQL deadlock or serialization failure): running it again may succeed. */
export function isRetryable(err: unknown): boolean {
	const c = codeOf(err);
	return c === "40P01" || c === "40001";
}

export interface Taken {
	/** PostgreSQL constraint name. */
	pg: string;
	/** What SQLite says after "UNIQUE constraint failed: ". */
	sqlite: string;
	message: string;
	type: string;
}

// The unique keys clients can run into, named for them. Both spellings of each: PostgreSQL reports the index name,
// SQLite the columns.
export const UNIQUE_KEYS: readonly Readonly<Taken>[] = [
	{ pg: "users_login_key", sqlite: "users.login", message: "This login is already taken", type: "user.exists" },
	{ pg: "users_group_key", sqlite: "users.group_path, users.group_label", message: "A group with this path already exists", type: "group.exists" },
	{ pg: "users_pkey", sqlite: "users.uuid", message: "A user or group with this uuid already exists", type: "user.exists" },
	{ pg: "roles_pkey", sqlite: "roles.uuid", message: "A role with this id already exists", type: "role.exists" },
	{ pg: "workspaces_slug_key", sqlite: "workspaces.slug", message: "A workspace with this slug already exists", type: "workspace.exists" },
	{ pg: "workspaces_pkey", sqlite: "workspaces.uuid", message: "A workspace with this uuid already exists", type: "workspace.exists" },
	{ pg: "acls_key", sqlite: "acls.role_id, acls.workspace_id, acls.node_id, acls.action_name", message: "This ACL already exists", type: "acl.exists" },
	{ pg: "nodes_ds_path_key", sqlite: "nodes.ds, nodes.path", message: "A file or folder already exists at this path", type: "node.exists" },
	{ pg: "nodes_parent_name_key", sqlite: "nodes.parent, nodes.name", message: "A file or folder already exists at this path", type: "node.exists" },
	{ pg: "nodes_pkey", sqlite: "nodes.uuid", message: "A node with this uuid already exists", type: "node.exists" },
	{ pg: "tokens_pkey", sqlite: "tokens.id", message: "A token with this id already exists", type: "token.exists" },
	{ pg: "tokens_hash_key", sqlite: "tokens.token_hash", message: "This token already exists", type: "token.exists" },
	{ pg: "sessions_pkey", sqlite: "sessions.id", message: "A session with this id already exists", type: "session.exists" },
	{ pg: "datasources_pkey", sqlite: "datasources.name", message: "A datasource with this name already exists", type: "datasource.exists" },
	{ pg: "encryption_keys_pkey", sqlite: "encryption_keys.id", message: "A key with this id already exists", type: "key.exists" },
	{ pg: "jobs_pkey", sqlite: "jobs.id", message: "A job with this id already exists", type: "job.exists" },
	{ pg: "tasks_pkey", sqlite: "tasks.id", message: "A task with this id already exists", type: "task.exists" },
	{ pg: "share_links_pkey", sqlite: "share_links.hash", message: "This hash is already in use", type: "link.hash.exists" },
	{ pg: "share_links_workspace_key", sqlite: "share_links.workspace", message: "This workspace already has a link", type: "link.exists" },
	{ pg: "share_links_user_login_key", sqlite: "share_links.user_login", message: "This link user already has a link", type: "link.exists" },
];

const SQLITE_PREFIX = "UNIQUE constraint failed: ";

function conflictFor(err: unknown): ConflictError {
	const e = err as DriverError;
	const message = typeof e.message === "string" ? e.message : "";
	const sqliteKey = message.startsWith(SQLITE_PREFIX) ? message.slice(SQLITE_PREFIX.length) : undefined;
	const known = UNIQUE_KEYS.find((t) => t.pg === e.constraint || t.sqlite === sqliteKey);
	if (known) return new ConflictError(known.message, known.type);
	const table = typeof e.table === "string" ? e.table : sqliteKey?.split(".")[0];
	return new ConflictError(table ? `This entry already exists (${table})` : "This entry already exists");
}

/** The one translation: a unique-key violation becomes a ConflictError, anything else is returned as it is. */
export function translateError(err: unknown): unknown {
	return isUniqueViolation(err) ? conflictFor(err) : err;
}

/**
 * `inner` with every query's error translated. Only the connection's query methods are wrapped: the inner driver
 * gets its own connection objects back (PostgreSQL's driver releases a connection through a private member).
 */
export function translatingDialect(inner: Dialect): Dialect {
	return {
		createAdapter: () => inner.createAdapter(),
		createQueryCompiler: () => inner.createQueryCompiler(),
		createIntrospector: (db) => inner.createIntrospector(db),
		createDriver: () => new TranslatingDriver(inner.createDriver()),
	};
}

class TranslatingConnection implements DatabaseConnection {
	constructor(readonly inner: DatabaseConnection) {}

	async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
		try {
			return await this.inner.executeQuery<R>(query);
		} catch (err) {
			throw translateError(err);
		}
	}

	async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
		try {
			yield* this.inner.streamQuery<R>(query, chunkSize);
		} catch (err) {
			throw translateError(err);
		}
	}
}

class TranslatingDriver implements Driver {
	readonly #wrapped = new WeakMap<DatabaseConnection, TranslatingConnection>();

	constructor(private readonly inner: Driver) {}

	private unwrap(c: DatabaseConnection): DatabaseConnection {
		return c instanceof TranslatingConnection ? c.inner : c;
	}

	init(): Promise<void> {
		return this.inner.init();
	}

	async acquireConnection(): Promise<DatabaseConnection> {
		const c = await this.inner.acquireConnection();
		let w = this.#wrapped.get(c);
		if (!w) this.#wrapped.set(c, (w = new TranslatingConnection(c)));
		return w;
	}

	beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
		return this.inner.beginTransaction(this.unwrap(c), settings);
	}

	async commitTransaction(c: DatabaseConnection): Promise<void> {
		try {
			await this.inner.commitTransaction(this.unwrap(c));
		} catch (err) {
			throw translateError(err);
		}
	}

	rollbackTransaction(c: DatabaseConnection): Promise<void> {
		return this.inner.rollbackTransaction(this.unwrap(c));
	}

	releaseConnection(c: DatabaseConnection): Promise<void> {
		return this.inner.releaseConnection(this.unwrap(c));
	}

	destroy(): Promise<void> {
		return this.inner.destroy();
	}
}
