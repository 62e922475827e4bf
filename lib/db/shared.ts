// One database handle per process and place. The services of a node share it: an SQLite file has one opener
// (several would each hold their own page cache and lock each other out), and a PostgreSQL pool per service would
// multiply connections. Several nodes in one process (tests) open different places and get different handles.
// The handle closes when the last service using it lets go.
import { sql } from "kysely";
import { openDatabase, type Db, type OpenOptions } from "./index";
import { join, resolve } from "node:path";

interface Entry {
	users: number;
	opening: Promise<Db>;
}

const open = new Map<string, Entry>();

function keyOf(opts: OpenOptions): string {
	if (opts.databaseUrl) return `pg:${opts.databaseUrl}`;
	return `sqlite:${resolve(opts.sqliteFile ?? join(opts.dataDir ?? "./data", "cellar.db"))}`;
}

export interface SharedDb {
	db: Db;
	/** Lets go of the handle; the last user closes it. */
	release(): Promise<void>;
}

export async function acquireDatabase(opts: OpenOptions): Promise<SharedDb> {
	const key = keyOf(opts);
	let entry = open.get(key);
	if (!entry) {
		entry = { users: 0, opening: openDatabase(opts) };
		open.set(key, entry);
		// A failed open is not kept: the next service (or a restart of this one) tries again.
		entry.opening.catch(() => open.get(key) === entry && open.delete(key));
	}
	entry.users++;
	const mine = entry;
	let db: Db;
	try {
		db = await mine.opening;
	} catch (err) {
		mine.users--;
		throw err;
	}
	let released = false;
	return {
		db,
		async release() {
			if (released) return;
			released = true;
			if (--mine.users > 0) return;
			if (open.get(key) === mine) open.delete(key);
			await db.close();
		},
	};
}

/** The database engine's version, as it reports it (the install's DB check shows it). */
export async function storeVersion(db: Db): Promise<string> {
	const q = db.dialect === "sqlite" ? sql<{ v: string }>`select sqlite_version() as v` : sql<{ v: string }>`select version() as v`;
	return (await q.execute(db.kysely)).rows[0]?.v ?? "";
}

/**
 * A handle acquired at first use and kept (the gateway's readiness probe and metrics: a node whose other services
 * already hold the store shares their handle); a failed open is tried again at the next use.
 */
export function lazyDatabase(opts: OpenOptions): { db(): Promise<Db>; release(): Promise<void> } {
	let held: Promise<SharedDb> | undefined;
	return {
		db() {
			if (!held) {
				const p = acquireDatabase(opts);
				held = p;
				p.catch(() => held === p && (held = undefined));
			}
			return held.then((h) => h.db);
		},
		async release() {
			const h = held;
			held = undefined;
			if (h) await (await h.catch(() => null))?.release();
		},
	};
}
