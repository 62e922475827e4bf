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
//
// Grouped transactions. A commit also costs the event loop the writing of every page the transaction changed into
// the log (~130 µs for one uploaded file's index write here: the row, its indexes, its folders' sizes), whatever the
// sync. So transactions are nested in one SQLite transaction as savepoints: a transaction's end releases its
// savepoint and lets the next holder in, and the enclosing transaction is committed at the next turn of the event
// loop (or once it holds MAX_GROUP transactions), for all of them at once, the pages they share written once. Each
// is answered only after that commit and its sync, as before. A transaction that fails is rolled back to its
// savepoint alone; a commit or a sync that fails fails every transaction it held (none of them was answered as
// done). A plain statement that writes outside a transaction joins the group the same way. What a group holds is
// visible to the process's other reads before it is on disk, as a committed-but-not-synced write already was.
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

/** Transactions that ended and wait for the enclosing SQLite transaction's commit (see "Grouped transactions"). */
interface Group {
	members: number;
	/** Resolved once the group is committed and its log synced; rejected when either failed. */
	done: Promise<void>;
	settle(err?: unknown): void;
	/** A commit at the next turn of the event loop is scheduled. */
	scheduled: boolean;
}

/** Transactions held by one commit at most: a steady stream of writers still gets its answers. */
const MAX_GROUP = 64;
/** Statements SQLite runs only outside a transaction (or that manage transactions themselves). */
const OUTSIDE_TRANSACTIONS = /^\s*(pragma|vacuum|attach|detach|begin|commit|end|rollback|savepoint|release)\b/i;
const SAVEPOINT = "cellar_tx";

function newGroup(): Group {
	let settle!: (err?: unknown) => void;
	const done = new Promise<void>((resolve, reject) => (settle = (err) => (err === undefined ? resolve() : reject(err))));
	// Nobody may be waiting yet (a group can fail before its first member ends): never an unhandled rejection.
	done.catch(() => undefined);
	return { members: 0, done, settle, scheduled: false };
}

/** The database shared by every acquisition: the handle, its prepared statements, the lock and the log's syncs. */
class SqliteShared {
	private readonly statements = new Map<string, Statement>();
	private queue: Promise<void> = Promise.resolve();
	readonly wal: WalSync;
	/** The SQLite transaction open for ended transactions waiting for their commit, if any. */
	group: Group | undefined;

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

	/** The group a transaction (or a writing statement) joins, opened with BEGIN IMMEDIATE when none is. Holding the lock. */
	joinGroup(): Group {
		if (this.group && !this.db.inTransaction) this.failGroup(new Error("The database rolled the transaction back"));
		if (!this.group) {
			this.prepare("begin immediate").run();
			this.group = newGroup();
		}
		return this.group;
	}

	/** One more member ended in `g`: committed now when full, else at the next turn of the event loop. Holding the lock. */
	ended(g: Group): void {
		g.members++;
		if (g.members >= MAX_GROUP) return this.commitGroup();
		if (g.scheduled) return;
		g.scheduled = true;
		setImmediate(() => {
			void this.lock().then((release) => {
				try {
					if (this.group === g) this.commitGroup();
				} finally {
					release();
				}
			});
		});
	}

	/** Commits the open group, then settles it once the log is synced. Holding the lock. */
	commitGroup(): void {
		const g = this.group;
		if (!g) return;
		this.group = undefined;
		try {
			if (!this.db.inTransaction) throw new Error("The database rolled the transaction back");
			this.prepare("commit").run();
		} catch (err) {
			if (this.db.inTransaction) this.prepare("rollback").run();
			return g.settle(err);
		}
		this.wal.durable().then(
			() => g.settle(),
			(err: unknown) => g.settle(err),
		);
	}

	/**
	 * After a failed transaction or writing statement, undone by now: when SQLite ended the whole transaction, the
	 * group's members fail with it; a group holding no other member has nothing to commit, and ends here (a group
	 * with members has its commit scheduled). Holding the lock.
	 */
	afterFailure(err: unknown): void {
		const g = this.group;
		if (!g) return;
		if (!this.db.inTransaction) return this.failGroup(err ?? new Error("The database rolled the transaction back"));
		if (g.members > 0) return;
		this.group = undefined;
		this.prepare("rollback").run();
		g.settle();
	}

	/** The group's transaction is gone (SQLite rolled it back): its members fail. Holding the lock. */
	failGroup(err: unknown): void {
		const g = this.group;
		this.group = undefined;
		g?.settle(err);
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

	/** This acquisition runs a transaction (a savepoint of the group). */
	private inTransaction = false;

	async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
		if (!this.release) await this.acquire();
		const shared = this.shared;
		const stmt = shared.prepare(q.sql);
		const params = q.parameters as unknown[];
		if (!this.inTransaction && OUTSIDE_TRANSACTIONS.test(q.sql)) return this.alone(stmt, params);
		// A plain statement that writes joins the group (opened for it if need be), as a transaction of one.
		const group = !this.inTransaction && !stmt.readonly ? shared.joinGroup() : undefined;
		let result: QueryResult<R>;
		try {
			if (stmt.reader) result = { rows: stmt.all(...params) as R[] };
			else {
				const { changes, lastInsertRowid } = stmt.run(...params);
				result = { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
			}
		} catch (err) {
			// A failed statement is undone by SQLite alone; an error that ended the whole transaction fails the group.
			if (group) shared.afterFailure(err);
			throw err;
		}
		if (group) {
			shared.ended(group);
			this.unlock();
			await group.done;
		}
		return result;
	}

	/** A statement that cannot run inside a transaction: the open group is committed first. */
	private async alone<R>(stmt: Statement, params: unknown[]): Promise<QueryResult<R>> {
		const shared = this.shared;
		shared.commitGroup();
		const result: QueryResult<R> = stmt.reader ? { rows: stmt.all(...params) as R[] } : { rows: [], numAffectedRows: BigInt(stmt.run(...params).changes) };
		this.unlock();
		if (!stmt.readonly) await shared.wal.durable();
		return result;
	}

	begin(): void {
		this.shared.joinGroup();
		this.shared.prepare(`savepoint ${SAVEPOINT}`).run();
		this.inTransaction = true;
	}

	/** Ends the transaction in its group, lets the next holder in, and answers once the group is committed and synced. */
	async commit(): Promise<void> {
		const shared = this.shared;
		this.inTransaction = false;
		if (!shared.group || !shared.db.inTransaction) {
			shared.failGroup(new Error("The database rolled the transaction back"));
			throw new Error("The database rolled the transaction back");
		}
		const group = shared.group;
		shared.prepare(`release ${SAVEPOINT}`).run();
		shared.ended(group);
		this.unlock();
		await group.done;
	}

	async *streamQuery<R>(q: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
		if (!SelectQueryNode.is(q.query)) throw new Error("Only select queries can be streamed");
		if (!this.release) await this.acquire();
		// Its own statement: a cached one may be needed again while this iteration is still open.
		const stmt = this.shared.db.prepare<unknown[], unknown>(q.sql);
		for (const row of stmt.iterate(...(q.parameters as unknown[]))) yield { rows: [row as R] };
	}

	async rollback(): Promise<void> {
		// Only while holding the lock and inside its savepoint: after a commit whose group failed, Kysely still calls
		// this, and the transaction open now may be another holder's. A failed statement may already have ended the
		// whole SQLite transaction (SQLite rolls back on some errors by itself): then the group is lost with it.
		if (!this.release || !this.inTransaction) return;
		this.inTransaction = false;
		const shared = this.shared;
		if (shared.db.inTransaction) {
			shared.prepare(`rollback to ${SAVEPOINT}`).run();
			shared.prepare(`release ${SAVEPOINT}`).run();
		}
		shared.afterFailure(undefined);
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
		(c as SqliteConnection).begin();
	}

	async commitTransaction(c: DatabaseConnection): Promise<void> {
		await (c as SqliteConnection).commit();
	}

	async rollbackTransaction(c: DatabaseConnection): Promise<void> {
		await (c as SqliteConnection).rollback();
	}

	async releaseConnection(c: DatabaseConnection): Promise<void> {
		(c as SqliteConnection).unlock();
	}

	async destroy(): Promise<void> {
		// What a group holds is committed before the database closes.
		const release = await this.shared.lock();
		const group = this.shared.group;
		try {
			this.shared.commitGroup();
		} finally {
			release();
		}
		await group?.done.catch(() => undefined);
		await this.shared.wal.close();
		if (this.shared.db.open) this.shared.db.close();
	}
}
