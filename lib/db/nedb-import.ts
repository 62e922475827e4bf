// Upgrading a DATA_DIR written by the NeDB versions of Cellar: each collection lived in DATA_DIR/db/<name>.db, one
// JSON document per line, appended on every write (a later line for the same _id replaces the earlier one, a line
// with $$deleted removes it, lines with $$indexCreated describe indexes). A service moving a collection to the SQL
// store imports it once: the rows and a marker naming the collection are written in one transaction, so an
// import cut by a crash leaves nothing and runs again; the old file is then renamed, kept as a backup.
//
// Memory. A file is never held whole (the node index of a large DATA_DIR is millions of lines, gigabytes once
// parsed): a first reading keeps only the number of the last line of each _id, a second one parses just those
// lines and hands them to the importer a batch at a time, in the order of those last lines.
import { createReadStream, existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Transaction } from "kysely";
import { analyzeAfterImport, type Db } from "./index";
import type { Database } from "./schema";

export type NedbDoc = Record<string, unknown> & { _id: string };

/** Documents an importer may read more than once, a batch at a time: an NeDB file, or an array (tests). */
export interface NedbSource {
	batches(size?: number): AsyncGenerator<NedbDoc[]>;
}

/** Documents handed to an importer at once. */
export const NEDB_BATCH = 1000;

/** An NeDB file's live documents. */
export interface NedbCollection extends NedbSource {
	/** How many: the _ids whose last line is a document, not a deletion. */
	readonly documents: number;
}

export function nedbDocs(docs: readonly NedbDoc[]): NedbSource {
	return {
		async *batches(size = NEDB_BATCH) {
			for (let i = 0; i < docs.length; i += size) yield docs.slice(i, i + size);
		},
	};
}

/** A line as NeDB wrote it: a document, a deletion, or undefined for what NeDB ignored on load (index lines, a torn last line). */
function parseLine(line: string): { doc: Record<string, unknown> & { _id: string }; deleted: boolean } | undefined {
	if (!line.trim()) return undefined;
	let doc: unknown;
	try {
		doc = JSON.parse(line);
	} catch {
		// A crash mid-append left half a line.
		return undefined;
	}
	if (!doc || typeof doc !== "object" || Array.isArray(doc)) return undefined;
	const d = doc as Record<string, unknown>;
	if ("$$indexCreated" in d || "$$indexRemoved" in d || typeof d._id !== "string") return undefined;
	return { doc: d as NedbDoc, deleted: d.$$deleted === true };
}

/** The lines of a file, numbered from 0 the same way on every reading. */
async function* numberedLines(file: string): AsyncGenerator<[number, string]> {
	const input = createReadStream(file, { encoding: "utf8" });
	const lines = createInterface({ input, crlfDelay: Infinity });
	let n = 0;
	try {
		for await (const line of lines) yield [n++, line];
	} finally {
		// A reader that stops early (its importer failed) must not leave the file open.
		lines.close();
		input.destroy();
	}
}

/**
 * Opens an NeDB file: reads it once to find, for each _id, its last line (a Map of _id to line number while
 * reading, a sorted array of the live line numbers after), which the batches then read again.
 */
export async function openNedbFile(file: string): Promise<NedbCollection> {
	const last = new Map<string, number>();
	for await (const [n, line] of numberedLines(file)) {
		const parsed = parseLine(line);
		if (!parsed) continue;
		if (parsed.deleted) last.delete(parsed.doc._id);
		else last.set(parsed.doc._id, n);
	}
	const live = Uint32Array.from(last.values()).sort();
	last.clear();
	return {
		documents: live.length,
		async *batches(size = NEDB_BATCH) {
			let next = 0;
			let batch: NedbDoc[] = [];
			for await (const [n, line] of numberedLines(file)) {
				if (next >= live.length) break;
				if (n !== live[next]) continue;
				next++;
				const parsed = parseLine(line);
				// The file changed since it was opened: nobody writes it, but an import must not guess.
				if (!parsed || parsed.deleted) throw new Error(`${file} changed while it was imported (line ${n + 1})`);
				batch.push(revive(parsed.doc) as NedbDoc);
				if (batch.length >= size) {
					yield batch;
					batch = [];
				}
			}
			if (next < live.length) throw new Error(`${file} changed while it was imported (${live.length - next} documents missing)`);
			if (batch.length) yield batch;
		},
	};
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
 * Imports DATA_DIR/db/<collection>.db once, with `write` turning its documents into rows inside the transaction,
 * a batch at a time. Nothing happens when the marker says it was done, or when there is no such file (a new DATA_DIR).
 */
export function importNedbOnce(db: Db, dataDir: string, collection: string, write: (trx: Transaction<Database>, docs: NedbDoc[]) => Promise<void>): Promise<ImportReport> {
	return importNedbCollectionOnce(db, dataDir, collection, async (trx, docs) => {
		for await (const batch of docs.batches()) await write(trx, batch);
	});
}

/** importNedbOnce for an importer that reads the documents its own way (several times, or with work after the last). */
export async function importNedbCollectionOnce(db: Db, dataDir: string, collection: string, write: (trx: Transaction<Database>, docs: NedbCollection) => Promise<void>): Promise<ImportReport> {
	const file = join(dataDir, "db", `${collection}.db`);
	const done = await db.kysely.selectFrom("markers").select("value").where("name", "=", MARKER(collection)).executeTakeFirst();
	if (done || !existsSync(file)) return { collection, documents: 0, imported: false };
	const docs = await openNedbFile(file);
	try {
		await db.transaction(async (trx) => {
			await write(trx, docs);
			await trx.insertInto("markers").values({ name: MARKER(collection), value: new Date().toISOString() }).execute();
		});
	} catch (err) {
		// Another node sharing the database imported the same collection first: its rows stand, ours rolled back.
		const now = await db.kysely.selectFrom("markers").select("value").where("name", "=", MARKER(collection)).executeTakeFirst();
		if (!now) throw err;
		return { collection, documents: docs.documents, imported: false };
	}
	// A collection loaded in one go (the node index: up to millions of rows) is planned by PostgreSQL as the
	// table it was before until it is analyzed: now, not when autovacuum comes round. (A few hundred rows change
	// no plan: autovacuum will do.)
	if (docs.documents >= ANALYZE_FROM) await analyzeAfterImport(db);
	const backup = `${file}.imported`;
	// The marker is what counts: a crash before this rename leaves a file the next start ignores.
	renameSync(file, backup);
	return { collection, documents: docs.documents, imported: true, backup };
}
