// The embedded backend: one SQLite file (DATA_DIR/cellar.db) through better-sqlite3, which runs each statement
// synchronously on the calling thread. Kysely's own SQLite driver is replaced by this one for three reasons:
// - prepared statements are kept (by SQL text) instead of being compiled again for every query;
// - transactions start with BEGIN IMMEDIATE, taking the write lock up front, so a transaction that reads then
//   writes cannot fail half-way with SQLITE_BUSY when another process (a backup, the sqlite3 shell) holds it;
// - migrations run in a transaction (SQLite's DDL is transactional; Kysely's adapter says otherwise to be safe
//   with other drivers), so a failed migration leaves the previous schema, not half of the new one.
// One connection serves the process, behind a mutex: a transaction has the database to itself until it ends.
import BetterSqlite3 from "better-sqlite3";
import { CompiledQuery, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, SelectQueryNode, type DatabaseConnection, type Dialect, type Driver, type QueryResult } from "kysely";

export interface SqliteSettings {
	/** Milliseconds a statement waits for a lock held by another process before failing with SQLITE_BUSY. */
	busyTimeoutMs?: number;
	/** Page cache, in KiB. */
	cacheKiB?: number;
	/** Prepared statements kept. */
	statementCache?: number;
}

/**
 * Opens (creating it if needed) a database file with the settings Cellar relies on:
 * - WAL: readers never block the writer, and a commit is one append to the log;
 * - synchronous=FULL: the log is synced at every commit, so an acknowledged write survives a crash of the process
 *   and of the machine (NORMAL, WAL's usual partner, may lose the last commits on power loss);
 * - foreign keys enforced (SQLite leaves them off unless asked, per connection).
 */
export function openSqliteFile(file: string, s: SqliteSettings = {}): BetterSqlite3.Database {
	const db = new BetterSqlite3(file, { timeout: s.busyTimeoutMs ?? 5000 });
	try {
		const mode = db.pragma("journal_mode = WAL", { simple: true });
		if (String(mode).toLowerCase() !== "wal") throw new Error(`${file}: journal_mode is ${String(mode)}, WAL could not be enabled`);
		db.pragma("synchronous = FULL");
		db.pragma("foreign_keys = ON");
		db.pragma(`busy_timeout = ${Math.max(0, Math.floor(s.busyTimeoutMs ?? 5000))}`);
		db.pragma(`cache_size = -${Math.max(256, Math.floor(s.cacheKiB ?? 32 * 1024))}`);
	} catch (err) {
		db.close();
		throw err;
	}
	return db;
}

class TransactionalDdlAdapter extends SqliteAdapter {
	override get supportsTransactionalDdl(): boolean {
		return true;
	}
}

export function sqliteDialect(db: BetterSqlite3.Database, s: SqliteSettings = {}): Dialect {
	return {
		createAdapter: () => new TransactionalDdlAdapter(),
		createDriver: () => new SqliteDriver(db, s.statementCache ?? 256),
		createIntrospector: (k) => new SqliteIntrospector(k),
		createQueryCompiler: () => new SqliteQueryCompiler(),
	};
}

type Statement = BetterSqlite3.Statement<unknown[], unknown>;

class SqliteConnection implements DatabaseConnection {
	private readonly statements = new Map<string, Statement>();

	constructor(
		private readonly db: BetterSqlite3.Database,
		private readonly keep: number,
	) {}

	private prepare(text: string): Statement {
		let stmt = this.statements.get(text);
		if (stmt) {
			// Most recently used last: the first entry is the one to evict.
			this.statements.delete(text);
		} else {
			stmt = this.db.prepare<unknown[], unknown>(text);
			if (this.statements.size >= this.keep) this.statements.delete(this.statements.keys().next().value as string);
		}
		this.statements.set(text, stmt);
		return stmt;
	}

	async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
		const stmt = this.prepare(q.sql);
		const params = q.parameters as unknown[];
		if (stmt.reader) return { rows: stmt.all(...params) as R[] };
		const { changes, lastInsertRowid } = stmt.run(...params);
		return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
	}

	async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
		if (!SelectQueryNode.is(q.query)) throw new Error("Only select queries can be streamed");
		// Its own statement: a cached one may be needed again while this iteration is still open.
		const stmt = this.db.prepare<unknown[], unknown>(q.sql);
		for (const row of stmt.iterate(...(q.parameters as unknown[]))) yield { rows: [row as R] };
	}
}

class SqliteDriver implements Driver {
	private readonly connection: SqliteConnection;
	private queue: Promise<void> = Promise.resolve();
	private release: (() => void) | undefined;

	constructor(
		private readonly db: BetterSqlite3.Database,
		keep: number,
	) {
		this.connection = new SqliteConnection(db, keep);
	}

	async init(): Promise<void> {}

	async acquireConnection(): Promise<DatabaseConnection> {
		// A FIFO lock: each acquirer waits for the previous holder's release.
		const previous = this.queue;
		let release!: () => void;
		this.queue = new Promise<void>((r) => (release = r));
		await previous;
		this.release = release;
		return this.connection;
	}

	async beginTransaction(c: DatabaseConnection): Promise<void> {
		await c.executeQuery(CompiledQuery.raw("begin immediate"));
	}

	async commitTransaction(c: DatabaseConnection): Promise<void> {
		await c.executeQuery(CompiledQuery.raw("commit"));
	}

	async rollbackTransaction(c: DatabaseConnection): Promise<void> {
		// A failed statement may already have ended the transaction (SQLite rolls back on some errors by itself).
		if (this.db.inTransaction) await c.executeQuery(CompiledQuery.raw("rollback"));
	}

	async releaseConnection(): Promise<void> {
		const r = this.release;
		this.release = undefined;
		r?.();
	}

	async destroy(): Promise<void> {
		if (this.db.open) this.db.close();
	}
}
