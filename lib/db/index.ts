// lib/db — the storage port: one schema, two backends, SQL you can read.
//
// Backends. SQLite is the embedded default (one file, DATA_DIR/cellar.db, opened by one process: a single node);
// PostgreSQL is the shared store of a cluster (DATABASE_URL=postgres://...). Both run the same migrations and the
// same queries: the few differences (collation, an index PostgreSQL cannot build on long paths, the clock) are
// spelled out where they live, in ./migrations and ./sql.ts.
//
// Query layer. Kysely builds the SQL: typed against ./schema.ts, visible (each repository method is one or a few
// statements you can read as SQL), no ORM between the code and the database. Query operators, SQL and Kysely stay
// inside lib/db: the rest of Cellar calls repositories whose methods say what they mean (`UsersRepo.byLogin`,
// `NodesRepo.childrenPage`, `LeasesRepo.acquire`, `JobsRepo.claim`).
//
// Integrity. Uniqueness (logins, group paths, workspace slugs, node paths per datasource, role and token ids) is
// enforced by the database's unique indexes, never by a read before the write, so it holds under races between
// requests and between nodes. A violation is translated once, in ./errors.ts, into lib/errors' ConflictError on
// both backends. Operations that change several rows (moving a folder, deleting a subtree, folder sizes) run in
// one transaction; claims and leases are one conditional statement each.
//
// Durability. SQLite runs in WAL mode: a write is acknowledged once it is in the log and the log is on disk. The
// log is synced by ./sqlite's driver rather than by SQLite at each commit: off the event loop, one fdatasync for
// all the commits waiting (group commit), each write answered only after a sync that started after its commit.
// (Another request may read a committed row during that sync, as with any group commit: after a power loss
// between the two it would have seen a write that is lost; a process crash loses nothing, the log is written.)
// PostgreSQL's commit is durable by its own settings (synchronous_commit, on by default).
//
// Schema changes. Versioned migrations (./migrations, Kysely's Migrator with an in-code provider) run when a
// database is opened; on PostgreSQL, Kysely takes an advisory lock so that nodes starting together migrate once.
import { join } from "node:path";
import { Kysely, Migrator, sql, type Transaction } from "kysely";
import { ensureDir } from "../config";
import { translatingDialect, isRetryable } from "./errors";
import { migrationProvider } from "./migrations";
import type { PostgresSettings } from "./postgres";
import { openSqliteFile, sqliteDialect, type SqliteSettings } from "./sqlite";
import type { DialectName } from "./sql";
import type { Database } from "./schema";

export type { Database } from "./schema";
export type { DialectName } from "./sql";
export { isForeignKeyViolation, isRetryable, isUniqueViolation, translateError } from "./errors";

export interface Db {
	readonly dialect: DialectName;
	/** For lib/db's repositories only. */
	readonly kysely: Kysely<Database>;
	/**
	 * Runs `fn` in one transaction; again (up to 5 times in all) when PostgreSQL aborted it as a deadlock or a
	 * serialization failure, which concurrent writers to the same rows (folder sizes) can cause. `fn` must
	 * therefore have no effect outside the database.
	 */
	transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
	/** Where the data is, without credentials: the SQLite file, or PostgreSQL's host/database. */
	readonly location: string;
	close(): Promise<void>;
}

export interface OpenOptions {
	/** postgres://… selects PostgreSQL; absent, SQLite in `dataDir`. */
	databaseUrl?: string;
	/** Folder of the SQLite file (created if needed). */
	dataDir?: string;
	/** The SQLite file itself, instead of `dataDir`/cellar.db. */
	sqliteFile?: string;
	sqlite?: SqliteSettings;
	postgres?: PostgresSettings;
	/** Apply pending migrations (default true). */
	migrate?: boolean;
}

export const SQLITE_FILE = "cellar.db";

export function isPostgresUrl(url: string | undefined): url is string {
	return !!url && /^postgres(ql)?:\/\//i.test(url);
}

/** DATABASE_URL and DATA_DIR from the environment, as a node would open its store. */
export function openOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): OpenOptions {
	return { databaseUrl: env.DATABASE_URL || undefined, dataDir: env.DATA_DIR || "./data" };
}

function redact(url: string): string {
	try {
		const u = new URL(url);
		return `postgres://${u.host}${u.pathname}`;
	} catch {
		return "postgres://(unparsable url)";
	}
}

export async function openDatabase(opts: OpenOptions): Promise<Db> {
	let dialect: DialectName;
	let kysely: Kysely<Database>;
	let location: string;
	if (opts.databaseUrl !== undefined && opts.databaseUrl !== "") {
		if (!isPostgresUrl(opts.databaseUrl)) throw new Error("DATABASE_URL must be a postgres:// or postgresql:// URL");
		dialect = "postgres";
		location = redact(opts.databaseUrl);
		// Loaded here, not with the module: a node on SQLite has no use for the pg driver's ~20 modules in memory.
		const { openPool, postgresDialect } = require("./postgres") as typeof import("./postgres");
		kysely = new Kysely<Database>({ dialect: translatingDialect(postgresDialect(openPool(opts.databaseUrl, opts.postgres))) });
	} else {
		dialect = "sqlite";
		const file = opts.sqliteFile ?? join(ensureDir(opts.dataDir ?? "./data"), SQLITE_FILE);
		location = file;
		kysely = new Kysely<Database>({ dialect: translatingDialect(sqliteDialect(openSqliteFile(file, opts.sqlite), opts.sqlite)) });
	}
	const db: Db = {
		dialect,
		kysely,
		location,
		async transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
			for (let attempt = 1; ; attempt++) {
				try {
					return await kysely.transaction().execute(fn);
				} catch (err) {
					if (attempt >= 5 || !isRetryable(err)) throw err;
					// Jittered, growing: the transactions that collided should not collide again.
					await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
				}
			}
		},
		close: () => kysely.destroy(),
	};
	if (opts.migrate !== false) {
		try {
			await migrate(db);
		} catch (err) {
			await db.close();
			throw err;
		}
	}
	return db;
}

/** Applies the pending migrations; the names applied. */
export async function migrate(db: Db): Promise<string[]> {
	const migrator = new Migrator({ db: db.kysely, provider: migrationProvider(db.dialect) });
	const { error, results } = await migrator.migrateToLatest();
	if (error) {
		const failed = results?.find((r) => r.status === "Error")?.migrationName;
		throw new Error(`Database migration ${failed ?? ""} failed on ${db.location}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
	}
	return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/**
 * Refreshes the planner's statistics after a bulk import. PostgreSQL plans by them, and a table loaded with
 * hundreds of thousands of rows in one go is planned as the small table it was until autovacuum gets to it (a
 * minute or more later): at 1,000,000 nodes a datasource's walk in uuid order was planned as a scan of the whole
 * datasource plus a sort, and stats and uploads were 40-100x slower than on the analyzed table. ANALYZE reads a
 * fixed-size sample, about a second at that size. SQLite is left as it is: its planner picks the indexes the
 * queries were written for without statistics, and collecting some could change those proven plans.
 */
export async function analyzeAfterImport(db: Db, tables: readonly (keyof Database)[] = []): Promise<void> {
	if (db.dialect !== "postgres") return;
	await sql.raw(tables.length ? `analyze ${tables.map((t) => `"${t}"`).join(", ")}` : "analyze").execute(db.kysely);
}

/** Names of the migrations applied to this database, oldest first. */
export async function appliedMigrations(db: Db): Promise<string[]> {
	const migrator = new Migrator({ db: db.kysely, provider: migrationProvider(db.dialect) });
	return (await migrator.getMigrations()).filter((m) => m.executedAt).map((m) => m.name);
}

export { UsersRepo, type UserRecord, type UserSearch } from "./users";
export { RolesRepo } from "./roles";
export { WorkspacesRepo } from "./workspaces";
export { AclsRepo, type AclFind } from "./acls";
export { PoliciesRepo } from "./policies";
export { NodesRepo, type NodeRecord, type NewNode, type ChildCursor, type ChildPageOptions, type ChildPage } from "./nodes";
export { LeasesRepo } from "./leases";
export { JobsRepo, type JobRecord, type TaskRecord, type LogRecord, type LogFilter, type TaskFields } from "./jobs";
export { TokensRepo } from "./tokens";
export { SelectionsRepo, type SelectionRecord } from "./selections";
export { UserMetaRepo, type UserMetaQuery } from "./user-meta";
export { EncryptionKeysRepo } from "./encryption-keys";
export { DataSourcesRepo, type VirtualNodeRecord } from "./datasources";
export { VersionsRepo } from "./versions";
export { MailQueueRepo, type QueuedMail, type NewQueuedMail, type MailStatus } from "./mail-queue";
export { LogsRepo, type LogCursor } from "./logs";
export { ActivityRepo, type ActivityEntry, type SubscriptionRecord } from "./activity";
export { ConfigRepo, type ConfigLeaf } from "./config";
export { TemplatesRepo } from "./templates";
export { OAuth2Repo } from "./oauth2";
export { SchedulerTemplatesRepo, type SchedulerTemplateKind, type StoredSchedulerTemplate } from "./scheduler-templates";
export { SchedulerRepo, type SchedulerRow, type JobVersion } from "./scheduler";
export { DirectoriesRepo } from "./directories";
