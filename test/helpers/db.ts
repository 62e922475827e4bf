// The backends a lib/db behaviour suite runs on: SQLite in a temp file, and PostgreSQL on 127.0.0.1:5432 (user
// postgres, trust auth; TEST_PG_URL overrides) in a database of its own, created for the suite and dropped after.
// Without a reachable PostgreSQL, the PostgreSQL runs skip with the reason printed, or fail when CI=true (CI must
// not report green without having run them).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KyselyPlugin } from "kysely";
import { Client } from "pg";
import { openDatabase, type Db, type OpenOptions, type TaskRecord } from "../../lib/db";

export interface DbHarness {
	readonly name: "sqlite" | "postgres";
	/** The suite's database, migrated. */
	db: Db;
	/** Another handle on the same database, as a second node would have (its own pool on PostgreSQL). */
	second(): Promise<Db>;
	/** Options that open this database again. */
	options: OpenOptions;
	/** Options of another database, empty (not migrated), dropped with the suite's. */
	fresh(): Promise<OpenOptions>;
}

export interface Backend {
	name: "sqlite" | "postgres";
	open(ctx: Mocha.Context): Promise<DbHarness & { cleanup(): Promise<void> }>;
}

const PG_ADMIN_URL = process.env.TEST_PG_URL || "postgres://postgres@127.0.0.1:5432/postgres";

let pgCheck: Promise<string | undefined> | undefined;
/** undefined when PostgreSQL answers, else why not. */
function pgUnavailable(): Promise<string | undefined> {
	pgCheck ??= (async () => {
		const c = new Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
		try {
			await c.connect();
			await c.query("select 1");
			return undefined;
		} catch (err) {
			return `PostgreSQL at ${PG_ADMIN_URL.replace(/\/\/[^@]*@/, "//")} does not answer (${(err as Error).message || (err as { code?: string }).code})`;
		} finally {
			await c.end().catch(() => undefined);
		}
	})();
	return pgCheck;
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
	const c = new Client({ connectionString: PG_ADMIN_URL });
	await c.connect();
	try {
		return await fn(c);
	} finally {
		await c.end();
	}
}

function withDatabase(url: string, name: string): string {
	const u = new URL(url);
	u.pathname = `/${name}`;
	return u.toString();
}

const sqlite: Backend = {
	name: "sqlite",
	async open() {
		const dir = mkdtempSync(join(tmpdir(), "cellar-sqlite-"));
		const options: OpenOptions = { dataDir: dir };
		const db = await openDatabase(options);
		let n = 0;
		return {
			name: "sqlite",
			db,
			options,
			// One process owns an SQLite file: a "second node" is the same handle.
			second: async () => db,
			fresh: async () => ({ dataDir: join(dir, `fresh-${++n}`) }),
			async cleanup() {
				await db.close();
				rmSync(dir, { recursive: true, force: true });
			},
		};
	},
};

/** A new database of the suite's own, or a skip (a failure under CI=true) when PostgreSQL does not answer. */
async function createTestDatabase(ctx: Mocha.Context): Promise<string> {
	const why = await pgUnavailable();
	if (why) {
		if (process.env.CI === "true") throw new Error(`${why}: CI=true requires the PostgreSQL runs (.ci/run starts a local PostgreSQL)`);
		console.log(`      skipped: ${why}`);
		ctx.skip();
	}
	const name = `cellar_test_${randomBytes(6).toString("hex")}`;
	await admin((c) => c.query(`create database ${name}`));
	return name;
}

const postgres: Backend = {
	name: "postgres",
	async open(ctx) {
		const name = await createTestDatabase(ctx);
		const options: OpenOptions = { databaseUrl: withDatabase(PG_ADMIN_URL, name), postgres: { poolSize: 10 } };
		const handles: Db[] = [];
		const databases = [name];
		try {
			handles.push(await openDatabase(options));
		} catch (err) {
			await admin((c) => c.query(`drop database if exists ${name} with (force)`));
			throw err;
		}
		return {
			name: "postgres",
			db: handles[0],
			options,
			async second() {
				const d = await openDatabase(options);
				handles.push(d);
				return d;
			},
			async fresh() {
				const other = `${name}_${databases.length}`;
				await admin((c) => c.query(`create database ${other}`));
				databases.push(other);
				return { databaseUrl: withDatabase(PG_ADMIN_URL, other), postgres: { poolSize: 4 } };
			},
			async cleanup() {
				for (const d of handles) await d.close().catch(() => undefined);
				for (const d of databases) await admin((c) => c.query(`drop database if exists ${d} with (force)`));
			},
		};
	},
};

export const BACKENDS: Backend[] = [sqlite, postgres];

/**
 * `describe(<title> on <backend>)` for every backend, with a fresh migrated database per backend: write the
 * behaviour once, against `h()`.
 */
export function onEveryBackend(title: string, body: (h: () => DbHarness) => void): void {
	for (const backend of BACKENDS) {
		describe(`${title} on ${backend.name}`, function () {
			this.timeout(60_000);
			let harness: (DbHarness & { cleanup(): Promise<void> }) | undefined;
			before(async function () {
				harness = await backend.open(this);
			});
			after(async () => harness?.cleanup());
			body(() => {
				if (!harness) throw new Error("no database: the suite's before() did not run");
				return harness;
			});
		});
	}
}

/**
 * A new, empty PostgreSQL database for a test that starts nodes sharing it (DATABASE_URL), dropped by `drop`.
 * Skips (or fails under CI=true) like the suites when PostgreSQL does not answer.
 */
export async function freshPostgres(ctx: Mocha.Context): Promise<{ url: string; drop(): Promise<void> }> {
	const name = await createTestDatabase(ctx);
	return { url: withDatabase(PG_ADMIN_URL, name), drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined) };
}

/** A task as the jobs service writes one, queued for alice; `over` changes what a test needs. */
export function taskRecord(id: string, jobId: string, created: number, over: Partial<TaskRecord> = {}): TaskRecord {
	return { id, JobID: jobId, Owner: "alice", Status: "Queued", StatusMessage: "", TriggerOwner: "alice", Progress: 0, HasProgress: true, CanStop: true, CanPause: false, Node: "", Created: created, ...over };
}

/**
 * The same database, counting the statements run through it (transactions' own included) and the rows they
 * returned: what a query-count test measures. `reset()` starts the counts again.
 */
export function countingStatements(db: Db): { db: Db; readonly count: number; readonly rows: number; reset(): void } {
	let count = 0;
	let rows = 0;
	const plugin: KyselyPlugin = {
		transformQuery: (args) => args.node,
		transformResult: async (args) => {
			count++;
			rows += args.result.rows.length;
			return args.result;
		},
	};
	const counted: Db = {
		dialect: db.dialect,
		kysely: db.kysely.withPlugin(plugin),
		transaction: (fn) => db.transaction((trx) => fn(trx.withPlugin(plugin))),
		location: db.location,
		close: () => db.close(),
	};
	return {
		db: counted,
		get count() {
			return count;
		},
		get rows() {
			return rows;
		},
		reset: () => {
			count = 0;
			rows = 0;
		},
	};
}
