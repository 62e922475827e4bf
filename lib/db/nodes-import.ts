// The node index of a DATA_DIR written by the NeDB versions (DATA_DIR/db/nodes.db), imported once into the nodes
// table (see ./nedb-import: rows and marker in one transaction, the old file kept as a backup).
//
// The NeDB index named a node's folder by path only, with nothing to enforce that it existed; the table links
// every node to its folder by uuid. So the import checks what the old store could not: a node whose folder is
// missing gets the folder (made as an empty folder would be), a datasource without its root gets one, and a node
// under a file, which no folder can hold, is left out (and counted). Folder sizes are summed again from the files,
// so that they hold what the tree's writes keep true from then on, whatever the old counters said.
//
// Memory. An index can hold millions of nodes: they go, a batch at a time, into a temporary staging table keyed by
// (datasource, path), where the checks above are a few statements per tree level, and from there into the nodes
// table, folders before what they hold, copied by the database a window at a time. The staging table lives in the
// transaction (SQLite keeps it in a temporary file, PostgreSQL in the session), so a crash leaves nothing of it.
import { hash, randomUUID } from "node:crypto";
import { join } from "node:path";
import type { Transaction } from "kysely";
import { sql } from "kysely";
import { baseName, parentOf } from "../tree/paths";
import type { Db } from "./index";
import { importNedbCollectionOnce, type ImportReport, type NedbDoc } from "./nedb-import";
import { breathe, recountChildren, rootUuidOf } from "./nodes";
import type { Database, NodesTable } from "./schema";

export interface NodesImportReport extends ImportReport {
	/** Folders the old index lacked, made so that their content has a parent. */
	foldersAdded?: number;
	/** Nodes under a file, or not shaped like a node at all: not imported. */
	skipped?: number;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** Metadata namespaces as the index keeps them: each value a string (JSON-encoded by whoever wrote it). */
function metaOf(v: unknown): Record<string, string> {
	const out: Record<string, string> = {};
	if (!v || typeof v !== "object" || Array.isArray(v)) return out;
	for (const [k, x] of Object.entries(v as Record<string, unknown>)) if (x !== undefined && x !== null) out[k] = typeof x === "string" ? x : JSON.stringify(x);
	return out;
}

const depth = (path: string): number => (path === "" ? 0 : path.split("/").length);

/**
 * A node's key in the staging table, compared for equality only: short and of fixed size whatever the path's
 * length (PostgreSQL's btree refuses long ones), 128 bits so that two paths of one index never share one.
 */
const keyOf = (ds: string, path: string): string => hash("md5", `${ds}\u0000${path}`, "base64");

const STAGING = "nedb_nodes_import";

interface StagingTable extends Omit<NodesTable, "parent" | "files" | "folders"> {
	k: string;
	/** Key of the folder holding it; null for a root. */
	pk: string | null;
	depth: number;
	/**
	 * Order of reading: the nodes table is written level by level in this order, folder after folder as the file
	 * had them (in key order, each write lands anywhere in the table's indexes: three times slower at 200,000 nodes).
	 */
	seq: number;
}

type Staging = Transaction<Database & { [STAGING]: StagingTable }>;

function stagingRow(n: Omit<StagingTable, "k" | "pk" | "depth" | "name">): StagingTable {
	return { ...n, k: keyOf(n.ds, n.path), pk: n.path === "" ? null : keyOf(n.ds, parentOf(n.path)), depth: depth(n.path), name: n.path === "" ? n.ds : baseName(n.path) };
}

/** An NeDB document as a staging row, or undefined when it is not shaped like a node. */
function fromNedb(d: NedbDoc, seq: number): StagingTable | undefined {
	const ds = str(d.ds);
	const path = str(d.path);
	const type = d.type === "LEAF" || d.type === "COLLECTION" ? d.type : undefined;
	if (!ds || path === undefined || !type || (path === "" && type !== "COLLECTION")) return undefined;
	const mode = num(d.mode);
	return stagingRow({
		uuid: d._id,
		seq,
		ds,
		path,
		type,
		size: type === "LEAF" ? Math.max(0, num(d.size) ?? 0) : 0,
		mtime: Math.floor(num(d.mtime) ?? 0),
		etag: str(d.etag) ?? null,
		mode: mode === undefined ? null : Math.floor(mode),
		key: str(d.key) ?? null,
		meta: JSON.stringify(metaOf(d.meta)),
	});
}

/** Rows written or read at once: 14 parameters a row, well under SQLite's 32,766 per statement. */
const ROWS = 1000;
/** Rows copied from the staging table to the nodes table at once (at most: a window of reading order). */
const PAGE = 5000;

async function stage(trx: Staging, rows: StagingTable[]): Promise<void> {
	for (let i = 0; i < rows.length; i += ROWS) await trx.insertInto(STAGING).values(rows.slice(i, i + ROWS)).execute();
}

/** Imports DATA_DIR/db/nodes.db once; `log` hears what is done, with progress on large indexes. */
export async function importNedbNodes(db: Db, dataDir: string, log: (msg: string) => void): Promise<NodesImportReport> {
	let extra: { foldersAdded: number; skipped: number } | undefined;
	const file = join(dataDir, "db", "nodes.db");
	const report = await importNedbCollectionOnce(db, dataDir, "nodes", async (t, docs) => {
		const trx = t.withTables<{ [STAGING]: StagingTable }>();
		const big = docs.documents >= 10_000;
		if (big) log(`importing the NeDB node index: ${docs.documents} documents`);
		await trx.schema
			.createTable(STAGING)
			.temporary()
			.addColumn("k", "text", (c) => c.notNull())
			.addColumn("pk", "text")
			.addColumn("depth", "integer", (c) => c.notNull())
			.addColumn("seq", "integer", (c) => c.notNull())
			.addColumn("uuid", "text", (c) => c.notNull())
			.addColumn("ds", "text", (c) => c.notNull())
			.addColumn("path", "text", (c) => c.notNull())
			.addColumn("name", "text", (c) => c.notNull())
			.addColumn("type", "text", (c) => c.notNull())
			.addColumn("size", "bigint", (c) => c.notNull())
			.addColumn("mtime", "bigint", (c) => c.notNull())
			.addColumn("etag", "text")
			.addColumn("mode", "integer")
			.addColumn("key", "text")
			.addColumn("meta", "text", (c) => c.notNull())
			.execute();

		// The documents, appended; indexed once all are in (an index built at once is sorted in one go, while one
		// kept up row by row is written all over: the keys are hashes).
		let skipped = 0;
		let maxDepth = 0;
		let seq = 0;
		for await (const batch of docs.batches()) {
			const rows: StagingTable[] = [];
			for (const d of batch) {
				const row = fromNedb(d, seq++);
				if (!row) skipped++;
				else {
					rows.push(row);
					if (row.depth > maxDepth) maxDepth = row.depth;
				}
			}
			await stage(trx, rows);
		}
		await trx.schema.createIndex(`${STAGING}_key`).on(STAGING).column("k").execute();
		await trx.schema.createIndex(`${STAGING}_level`).on(STAGING).columns(["depth", "seq"]).execute();
		await trx.schema.createIndex(`${STAGING}_parent`).on(STAGING).column("pk").execute();
		// PostgreSQL plans the statements below by the table's statistics, which autovacuum never gathers on a
		// temporary table: without them an anti-join of a page could be planned as a scan of the whole table.
		if (db.dialect === "postgres") await sql`analyze ${sql.table(STAGING)}`.execute(trx);

		// Of two documents for one path, the first read stays.
		const twice = await trx
			.deleteFrom(STAGING)
			.where(({ exists, selectFrom }) =>
				exists(
					selectFrom(`${STAGING} as o`)
						.select("o.k")
						.whereRef("o.k", "=", `${STAGING}.k`)
						.whereRef("o.seq", "<", `${STAGING}.seq`),
				),
			)
			.executeTakeFirst();
		skipped += Number(twice.numDeletedRows);

		// A tree of the same datasources already in the SQL store (this DATA_DIR started once without its db/
		// folder?) is not merged with the old one: both cannot be right, the administrator decides.
		const datasources = (await trx.selectFrom(STAGING).select("ds").distinct().orderBy("ds").execute()).map((r) => r.ds);
		if (datasources.length && (await trx.selectFrom("nodes").select("ds").where("ds", "in", datasources).limit(1).executeTakeFirst())) {
			throw new Error(`${file} (the NeDB node index) cannot be imported: the SQL store already holds nodes of its datasources (${datasources.join(", ")}). Move the file away to keep those, or remove them to import it.`);
		}

		// Missing folders and roots, level by level from the deepest: a folder made at one level is checked for its
		// own folder at the next.
		let foldersAdded = 0;
		for (let d = maxDepth; d >= 1; d--) {
			for (let after = -1; ; ) {
				const orphans = await trx
					.selectFrom(`${STAGING} as s`)
					.select(["s.seq", "s.pk", "s.ds", "s.path", "s.mtime"])
					.where("s.depth", "=", d)
					.where("s.seq", ">", after)
					.where(({ not, exists, selectFrom }) => not(exists(selectFrom(`${STAGING} as p`).select("p.k").whereRef("p.k", "=", "s.pk"))))
					.orderBy("s.seq")
					.limit(ROWS)
					.execute();
				if (!orphans.length) break;
				after = orphans[orphans.length - 1].seq;
				const folders = new Map<string, StagingTable>();
				for (const o of orphans) {
					const p = parentOf(o.path);
					if (!folders.has(o.pk ?? "")) folders.set(o.pk ?? "", stagingRow({ uuid: p === "" ? rootUuidOf(o.ds) : randomUUID(), seq: seq++, ds: o.ds, path: p, type: "COLLECTION", size: 0, mtime: Number(o.mtime), etag: null, mode: null, key: null, meta: "{}" }));
				}
				// Each page is read after the folders of the one before are in: a folder is never made twice.
				await stage(trx, [...folders.values()]);
				foldersAdded += folders.size;
			}
		}

		// Under a file (or under something left out): nowhere to put it. From the top down, so that a subtree goes
		// with its top.
		for (let d = 1; d <= maxDepth; d++) {
			const gone = await trx
				.deleteFrom(STAGING)
				.where("depth", "=", d)
				.where(({ not, exists, selectFrom }) =>
					not(
						exists(
							selectFrom(`${STAGING} as p`)
								.select("p.k")
								.whereRef("p.k", "=", `${STAGING}.pk`)
								.where("p.type", "=", "COLLECTION"),
						),
					),
				)
				.executeTakeFirst();
			skipped += Number(gone.numDeletedRows);
		}

		// Folder sizes: the sum of the files below them, from the deepest folders up.
		for (let d = maxDepth - 1; d >= 0; d--) {
			await trx
				.updateTable(STAGING)
				.set({ size: sql<number>`coalesce((select sum(c.size) from ${sql.id(STAGING)} c where c.pk = ${sql.ref(`${STAGING}.k`)}), 0)` })
				.where("depth", "=", d)
				.where("type", "=", "COLLECTION")
				.execute();
		}

		// Into the nodes table, each level after the one holding it, copied by the database (no row passes through
		// here), a window of reading order at a time.
		const levels = await trx
			.selectFrom(STAGING)
			.select((eb) => ["depth", eb.fn.min<number>("seq").as("first"), eb.fn.max<number>("seq").as("last"), eb.fn.countAll<number>().as("rows")])
			.groupBy("depth")
			.orderBy("depth")
			.execute();
		const total = levels.reduce((sum, l) => sum + Number(l.rows), 0);
		const t0 = Date.now();
		let told = t0;
		let written = 0;
		for (const level of levels) {
			for (let from = Number(level.first); from <= Number(level.last); from += PAGE) {
				const r = await trx
					.insertInto("nodes")
					.columns(["uuid", "ds", "parent", "name", "path", "type", "size", "mtime", "etag", "mode", "key", "meta", "files", "folders"])
					.expression(
						trx
							.selectFrom(`${STAGING} as s`)
							.leftJoin(`${STAGING} as p`, "p.k", "s.pk")
							.select(["s.uuid", "s.ds", "p.uuid as parent", "s.name", "s.path", "s.type", "s.size", "s.mtime", "s.etag", "s.mode", "s.key", "s.meta", sql.lit(0).as("files"), sql.lit(0).as("folders")])
							.where("s.depth", "=", level.depth)
							.where("s.seq", ">=", from)
							.where("s.seq", "<", from + PAGE)
							.orderBy("s.seq"),
					)
					.executeTakeFirst();
				written += Number(r.numInsertedOrUpdatedRows ?? 0);
				const now = Date.now();
				if (big && now - told >= 5000) {
					told = now;
					log(`importing the NeDB node index: ${written}/${total} nodes, ${Math.round(written / ((now - t0) / 1000))} nodes/s`);
				}
				await breathe();
			}
		}
		// Then what each folder holds.
		for (const level of levels) {
			for (let after = -1; ; ) {
				const folders = await trx.selectFrom(STAGING).select(["seq", "uuid"]).where("depth", "=", level.depth).where("seq", ">", after).where("type", "=", "COLLECTION").orderBy("seq").limit(ROWS).execute();
				if (!folders.length) break;
				after = folders[folders.length - 1].seq;
				await recountChildren(t, folders.map((f) => f.uuid));
			}
		}
		await trx.schema.dropTable(STAGING).execute();
		extra = { foldersAdded, skipped };
	});
	if (report.imported) log(`imported the NeDB node index (${report.documents} documents${extra?.foldersAdded ? `, ${extra.foldersAdded} missing folders made` : ""}${extra?.skipped ? `, ${extra.skipped} left out: under a file or malformed` : ""}); the old file is kept as ${report.backup}`);
	return { ...report, ...extra };
}
