// The node index of a DATA_DIR written by the NeDB versions (DATA_DIR/db/nodes.db), imported once into the nodes
// table (see ./nedb-import: rows and marker in one transaction, the old file kept as a backup).
//
// The NeDB index named a node's folder by path only, with nothing to enforce that it existed; the table links
// every node to its folder by uuid. So the import checks what the old store could not: a node whose folder is
// missing gets the folder (made as an empty folder would be), a datasource without its root gets one, and a node
// under a file, which no folder can hold, is left out (and counted). Folder sizes are summed again from the files,
// so that they hold what the tree's writes keep true from then on, whatever the old counters said.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { baseName, parentOf } from "../tree/paths";
import type { Db } from "./index";
import { importNedbOnce, type ImportReport, type NedbDoc } from "./nedb-import";
import { insertRecords, rootUuidOf, type NodeRecord } from "./nodes";

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

/** The NeDB documents as records the table accepts, every folder before what it holds. */
export function nodesFromNedb(docs: readonly NedbDoc[]): { records: NodeRecord[]; foldersAdded: number; skipped: number } {
	const byKey = new Map<string, NodeRecord>();
	const key = (ds: string, path: string) => `${ds}\u0000${path}`;
	let skipped = 0;
	for (const d of docs) {
		const ds = str(d.ds);
		const path = str(d.path);
		const type = d.type === "LEAF" || d.type === "COLLECTION" ? d.type : undefined;
		if (!ds || path === undefined || !type || byKey.has(key(ds, path)) || (path === "" && type !== "COLLECTION")) {
			skipped++;
			continue;
		}
		const n: NodeRecord = { uuid: d._id, ds, parent: null, name: path === "" ? ds : baseName(path), path, type, size: type === "LEAF" ? Math.max(0, num(d.size) ?? 0) : 0, mtime: Math.floor(num(d.mtime) ?? 0), meta: metaOf(d.meta) };
		const etag = str(d.etag);
		const mode = num(d.mode);
		const k = str(d.key);
		if (etag !== undefined) n.etag = etag;
		if (mode !== undefined) n.mode = Math.floor(mode);
		if (k !== undefined) n.key = k;
		byKey.set(key(ds, path), n);
	}
	// Missing roots and folders, made above what they hold.
	let foldersAdded = 0;
	for (const n of [...byKey.values()]) {
		for (let p = n.path === "" ? undefined : parentOf(n.path); p !== undefined; p = p === "" ? undefined : parentOf(p)) {
			if (byKey.has(key(n.ds, p))) break;
			byKey.set(key(n.ds, p), { uuid: p === "" ? rootUuidOf(n.ds) : randomUUID(), ds: n.ds, parent: null, name: p === "" ? n.ds : baseName(p), path: p, type: "COLLECTION", size: 0, mtime: n.mtime, meta: {} });
			foldersAdded++;
		}
	}
	const records: NodeRecord[] = [];
	for (const n of [...byKey.values()].sort((a, b) => depth(a.path) - depth(b.path))) {
		if (n.path !== "") {
			const parent = byKey.get(key(n.ds, parentOf(n.path)));
			// Under a file (or under something left out): nowhere to put it.
			if (!parent || parent.type !== "COLLECTION") {
				byKey.delete(key(n.ds, n.path));
				skipped++;
				continue;
			}
			n.parent = parent.uuid;
		}
		records.push(n);
	}
	// Folder sizes: the sum of the files below them.
	for (const n of records) {
		if (n.type !== "LEAF" || !n.size) continue;
		for (let p = parentOf(n.path); ; p = parentOf(p)) {
			const f = byKey.get(key(n.ds, p));
			if (f) f.size += n.size;
			if (p === "") break;
		}
	}
	return { records, foldersAdded, skipped };
}

/** Imports DATA_DIR/db/nodes.db once; `log` hears what is done, with progress on large indexes. */
export async function importNedbNodes(db: Db, dataDir: string, log: (msg: string) => void): Promise<NodesImportReport> {
	let extra: { foldersAdded: number; skipped: number } | undefined;
	const report = await importNedbOnce(db, dataDir, "nodes", async (trx, docs) => {
		const { records, foldersAdded, skipped } = nodesFromNedb(docs);
		// A tree of the same datasources already in the SQL store (this DATA_DIR started once without its db/
		// folder?) is not merged with the old one: both cannot be right, the administrator decides.
		const datasources = [...new Set(records.map((n) => n.ds))];
		if (datasources.length && (await trx.selectFrom("nodes").select("ds").where("ds", "in", datasources).limit(1).executeTakeFirst())) {
			throw new Error(`${join(dataDir, "db", "nodes.db")} (the NeDB node index) cannot be imported: the SQL store already holds nodes of its datasources (${datasources.join(", ")}). Move the file away to keep those, or remove them to import it.`);
		}
		extra = { foldersAdded, skipped };
		const t0 = Date.now();
		let told = t0;
		if (records.length >= 10_000) log(`importing the NeDB node index: ${records.length} nodes`);
		await insertRecords(trx, records, (written) => {
			const t = Date.now();
			if (t - told < 5000) return;
			told = t;
			log(`importing the NeDB node index: ${written}/${records.length} nodes, ${Math.round(written / ((t - t0) / 1000))} nodes/s`);
		});
	});
	if (report.imported) log(`imported the NeDB node index (${report.documents} documents${extra?.foldersAdded ? `, ${extra.foldersAdded} missing folders made` : ""}${extra?.skipped ? `, ${extra.skipped} left out: under a file or malformed` : ""}); the old file is kept as ${report.backup}`);
	return { ...report, ...extra };
}
