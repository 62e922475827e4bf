// The embedded backend: one SQLite file (DATA_DIR/cellar.db) through better-sqlite3, which runs each statement
// synchronously on the calling thread. Kysely's own SQLite driver is replaced by this one for three reasons:
// - prepared statements are kept (by SQL text) instead of being compiled again for every query;
// - transactions start with BEGIN IMMEDIATE, taking the write lock up front, so a transaction that reads then
//   writes cannot fail half-way with SQLITE_BUSY when another process (a backup, the sqlite3 shell) holds it;
// - migrations run in a transaction (SQLite's DDL is transactional; Kysely's adapter says otherwise to be safe
//   with other drivers), so a failed migration leaves the previous schema, not half of the new one.
// One connection serves the process, behind a mutex: a transaction has the database to itself until it ends.
//
// Group commit. better-sqlite3 runs on the event loop, so with synchronous=FULL every commit was an fsync of the
// log made on the event loop, one per write, nothing else running meanwhile (at ~4 ms an fsync, ~250 commits/s
// for the whole node). Here SQLite writes the log without syncing it (synchronous=NORMAL), and a commit is not
// answered until the log has been synced by an fdatasync on libuv's thread pool (see `WalSync`): the lock is
// released as soon as the commit is in the log, the next writers commit while the sync runs, and one sync covers
// every commit made before it started. An acknowledged write is therefore on disk exactly as with FULL; what the
// caller waits for is the same, only shared.
import { close, fdatasync, fstat, open, stat } from "node:fs";
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
 * - synchronous=NORMAL: SQLite syncs the log before each checkpoint and the database after it, but not at each
 *   commit: the driver below syncs the log itself, off the event loop and once for every commit waiting, before
 *   any commit is acknowledged (so an acknowledged write survives a crash of the process and of the machine);
 * - foreign keys enforced (SQLite leaves them off unless asked, per connection).
 */
export function openSqliteFile(file: string, s: SqliteSettings = {}): BetterSqlite3.Database {
	const db = new BetterSqlite3(file, { timeout: s.busyTimeoutMs ?? 5000 });
	try {
		const mode = db.pragma("journal_mode = WAL", { simple: true });
		if (String(mode).toLowerCase() !== "wal") throw new Error(`${file}: journal_mode is ${String(mode)}, WAL could not be enabled`);
		db.pragma("synchronous = NORMAL");
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

/**
 * Makes the log's writes durable, many commits per sync: `durable()` resolves once an fdatasync of the WAL file
 * that started after the call has finished. While one sync runs, every caller arriving meanwhile waits for the
 * single next one (their commits may have missed the running one), so N concurrent commits cost about two syncs.
 * The syncs run on libuv's thread pool: the event loop keeps serving requests, and other transactions keep
 * committing, while the disk works.
 */
export class WalSync {
	private fd: number | undefined;
	private ino = 0;
	private running: Promise<void> | undefined;
	private next: Promise<void> | undefined;
	/** Syncs made so far (for tests and diagnostics). */
	syncs = 0;

	constructor(private readonly walFile: string) {}

	durable(): Promise<void> {
		if (!this.running) {
			this.running = this.syncOnce().finally(() => (this.running = undefined));
			return this.running;
		}
		this.next ??= this.running
			.catch(() => undefined)
			.then(() => {
				this.next = undefined;
				return this.durable();
			});
		return this.next;
	}

	private async syncOnce(): Promise<void> {
		const fd = await this.walFd();
		if (fd === undefined) return; // no log yet: nothing was committed to it
		await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
		this.syncs++;
	}

	/** The log's descriptor, opened again if the file was replaced (another process may remove and recreate it). */
	private async walFd(): Promise<number | undefined> {
		const now = await new Promise<number | undefined>((resolve, reject) => stat(this.walFile, (err, st) => (err ? (err.code === "ENOENT" ? resolve(undefined) : reject(err)) : resolve(st.ino))));
		if (now === undefined) return undefined;
		if (this.fd !== undefined && now === this.ino) return this.fd;
		if (this.fd !== undefined) this.closeFd();
		const fd = await new Promise<number>((resolve, reject) => open(this.walFile, "r", (err, f) => (err ? reject(err) : resolve(f))));
		this.ino = await new Promise<number>((resolve, reject) => fstat(fd, (err, st) => (err ? reject(err) : resolve(st.ino))));
		this.fd = fd;
		return fd;
	}

	private closeFd(): void {
		const fd = this.fd;
		this.fd = undefined;
		if (fd !== undefined) close(fd, () => undefined);
	}

	async close(): Promise<void> {
		await this.running?.catch(() => undefined);
		await this.next?.catch(() => undefined);
		this.closeFd();
	}
}

/** The database shared by every acquisition: the handle, its prepared statements, the lock and the log's syncs. */
class SqliteShared {
	private readonly statements = new Map<string, Statement>();
	private queue: Promise<void> = Promise.resolve();
	readonly wal: WalSync;

	constructor(
		readonly db: BetterSqlite3.Database,
		private readonly keep: number,
	) {
		this.wal = new WalSync(`${db.name}-wal`);
	}

	prepare(text: string): Statement {
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

	/** A FIFO lock: resolves with the release of this holder once the previous holder has released. */
	async lock(): Promise<() => void> {
		const previous = this.queue;
		let release!: () => void;
		this.queue = new Promise<void>((r) => (release = r));
		await previous;
		return release;
	}
}

/**
 * One acquisition of the database (Kysely acquires per query, or per transaction). It releases the lock as soon
 * as a commit is in the log, then waits for the log's sync: the next holder works while this one waits. Used
 * again after that early release (a connection Kysely keeps for several queries), it takes the lock again first.
 */
class SqliteConnection implements DatabaseConnection {
	private release: (() => void) | undefined;

	constructor(private readonly shared: SqliteShared) {}

	async acquire(): Promise<this> {
		this.release = await this.shared.lock();
		return this;
	}

	unlock(): void {
		const r = this.release;
		this.release = undefined;
		r?.();
	}

	async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
		if (!this.release) await this.acquire();
		const { db } = this.shared;
		const stmt = this.shared.prepare(q.sql);
		const inTransaction = db.inTransaction;
		const params = q.parameters as unknown[];
		let result: QueryResult<R>;
		if (stmt.reader) result = { rows: stmt.all(...params) as R[] };
		else {
			const { changes, lastInsertRowid } = stmt.run(...params);
			result = { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
		}
		// A COMMIT (which SQLite counts as read-only: it does not change the database itself), or a statement that
		// wrote (RETURNING included: `reader`, but not `readonly`) outside a transaction, has committed: in the
		// log, not yet on disk. Answer once it is.
		if (!db.inTransaction && (inTransaction || !stmt.readonly)) {
			this.unlock();
			await this.shared.wal.durable();
		}
		return result;
	}

	async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
		if (!SelectQueryNode.is(q.query)) throw new Error("Only select queries can be streamed");
		if (!this.release) await this.acquire();
		// Its own statement: a cached one may be needed again while this iteration is still open.
		const stmt = this.shared.db.prepare<unknown[], unknown>(q.sql);
		for (const row of stmt.iterate(...(q.parameters as unknown[]))) yield { rows: [row as R] };
	}

	async rollback(): Promise<void> {
		// A failed statement may already have ended the transaction (SQLite rolls back on some errors by itself).
		// Run directly: a rollback writes nothing that needs syncing. Only while holding the lock: after a commit
		// whose sync failed, Kysely still calls this, and the transaction open now may be another holder's.
		if (this.release && this.shared.db.inTransaction) this.shared.prepare("rollback").run();
	}
}

class SqliteDriver implements Driver {
	private readonly shared: SqliteShared;

	constructor(db: BetterSqlite3.Database, keep: number) {
		this.shared = new SqliteShared(db, keep);
	}

	async init(): Promise<void> {}

	async acquireConnection(): Promise<DatabaseConnection> {
		return new SqliteConnection(this.shared).acquire();
	}

	async beginTransaction(c: DatabaseConnection): Promise<void> {
		await c.executeQuery(CompiledQuery.raw("begin immediate"));
	}

	async commitTransaction(c: DatabaseConnection): Promise<void> {
		await c.executeQuery(CompiledQuery.raw("commit"));
	}

	async rollbackTransaction(c: DatabaseConnection): Promise<void> {
		await (c as SqliteConnection).rollback();
	}

	async releaseConnection(c: DatabaseConnection): Promise<void> {
		(c as SqliteConnection).unlock();
	}

	async destroy(): Promise<void> {
		await this.shared.wal.close();
		if (this.shared.db.open) this.shared.db.close();
	}
}
