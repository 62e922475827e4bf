// Upgrading a DATA_DIR written by the NeDB versions of Cellar: each collection lived in DATA_DIR/db/<name>.db, one
// JSON document per line, appended on every write (a later line for the same _id replaces the earlier one, a line
// with $$deleted removes it, lines with $$indexCreated describe indexes). A service moving a collection to the SQL
// store imports it once: the rows and a marker naming the collection are written in one transaction, so an
// import cut by a crash leaves nothing and runs again; the old file is then renamed, kept as a backup.
import { createReadStream, existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Transaction } from "kysely";
import { analyzeAfterImport, type Db } from "./index";
import type { Database } from "./schema";

export type NedbDoc = Record<string, unknown> & { _id: string };

/** The live documents of an NeDB file, in first-written order; a torn last line (a crash mid-append) is skipped. */
export async function readNedbFile(file: string): Promise<NedbDoc[]> {
	const docs = new Map<string, NedbDoc>();
	const lines = createInterface({ input: createReadStream(file, { encoding: "utf8" }), crlfDelay: Infinity });
	for await (const line of lines) {
		if (!line.trim()) continue;
		let doc: Record<string, unknown>;
		try {
			doc = JSON.parse(line) as Record<string, unknown>;
		} catch {
			continue;
		}
		if ("$$indexCreated" in doc || "$$indexRemoved" in doc || typeof doc._id !== "string") continue;
		if (doc.$$deleted === true) docs.delete(doc._id);
		else docs.set(doc._id, revive(doc) as NedbDoc);
	}
	return [...docs.values()];
}

/** NeDB writes dates as {"$$date": ms}: back to numbers of milliseconds, the way the importers read them. */
function revive(v: unknown): unknown {
	if (Array.isArray(v)) return v.map(revive);
	if (v && typeof v === "object") {
		const o = v as Record<string, unknown>;
		if (typeof o.$$date === "number" && Object.keys(o).length === 1) return o.$$date;
		const out: Record<string, unknown> = {};
		for (const [k, x] of Object.entries(o)) out[k] = revive(x);
		return out;
	}
	return v;
}

/** Documents from which an import is followed by ANALYZE. */
export const ANALYZE_FROM = 1000;

const MARKER = (collection: string) => `nedb-import:${collection}`;

export interface ImportReport {
	collection: string;
	/** Documents read from the old file; 0 with `imported: false` when there was nothing to import. */
	documents: number;
	imported: boolean;
	/** Where the old file now is. */
	backup?: string;
}

/**
 * Imports DATA_DIR/db/<collection>.db once, with `write` turning its documents into rows inside the transaction.
 * Nothing happens when the marker says it was done, or when there is no such file (a new DATA_DIR).
 */
export async function importNedbOnce(db: Db, dataDir: string, collection: string, write: (trx: Transaction<Database>, docs: NedbDoc[]) => Promise<void>): Promise<ImportReport> {
	const file = join(dataDir, "db", `${collection}.db`);
	const done = await db.kysely.selectFrom("markers").select("value").where("name", "=", MARKER(collection)).executeTakeFirst();
	if (done || !existsSync(file)) return { collection, documents: 0, imported: false };
	const docs = await readNedbFile(file);
	try {
		await db.transaction(async (trx) => {
			await write(trx, docs);
			await trx.insertInto("markers").values({ name: MARKER(collection), value: new Date().toISOString() }).execute();
		});
	} catch (err) {
		// Another node sharing the database imported the same collection first: its rows stand, ours rolled back.
		const now = await db.kysely.selectFrom("markers").select("value").where("name", "=", MARKER(collection)).executeTakeFirst();
		if (!now) throw err;
		return { collection, documents: docs.length, imported: false };
	}
	// A collection loaded in one go (the node index: up to millions of rows) is planned by PostgreSQL as the
	// table it was before until it is analyzed: now, not when autovacuum comes round. (A few hundred rows change
	// no plan: autovacuum will do.)
	if (docs.length >= ANALYZE_FROM) await analyzeAfterImport(db);
	const backup = `${file}.imported`;
	// The marker is what counts: a crash before this rename leaves a file the next start ignores.
	renameSync(file, backup);
	return { collection, documents: docs.length, imported: true, backup };
}
