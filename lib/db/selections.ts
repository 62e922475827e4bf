// Selections: lists of paths saved under a uuid for a multi-file action (a zip download), owned by their creator,
// expiring after a day. A selection is written once and read by its uuid; expired ones are swept in one DELETE.
import type { Selectable, Transaction } from "kysely";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, SelectionsTable } from "./schema";
import { fromJson, orNull } from "./sql";

export interface SelectionRecord {
	uuid: string;
	/** The creator's user uuid. */
	owner: string;
	paths: string[];
	action?: string;
	/** Unix seconds. */
	expires: number;
}

function recordOf(r: Selectable<SelectionsTable>): SelectionRecord {
	const s: SelectionRecord = { uuid: r.uuid, owner: r.owner, paths: fromJson<string[]>(r.paths, []), expires: Number(r.expires) };
	if (r.action !== null) s.action = r.action;
	return s;
}

function rowOf(s: SelectionRecord): Selectable<SelectionsTable> {
	return { uuid: s.uuid, owner: s.owner, paths: JSON.stringify(s.paths), action: orNull(s.action), expires: s.expires };
}

export class SelectionsRepo {
	constructor(private readonly db: Db) {}

	async create(s: SelectionRecord): Promise<void> {
		await this.db.kysely.insertInto("selections").values(rowOf(s)).execute();
	}

	async byUuid(uuid: string): Promise<SelectionRecord | null> {
		const r = await this.db.kysely.selectFrom("selections").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? recordOf(r) : null;
	}

	/** Removes the selections that expired before `now` (unix seconds); how many. */
	async sweepExpired(now: number): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("selections").where("expires", "<", now).executeTakeFirst()).numDeletedRows);
	}

	/** The NeDB `selections` collection, inside the import's transaction; documents without owner or paths are skipped. */
	static async importNedb(trx: Transaction<Database>, docs: NedbDoc[]): Promise<number> {
		const rows = docs
			.filter((d) => typeof d.owner === "string" && Array.isArray(d.paths) && typeof d.expires === "number")
			.map((d) =>
				rowOf({
					uuid: d._id,
					owner: d.owner as string,
					paths: (d.paths as unknown[]).filter((p): p is string => typeof p === "string"),
					action: typeof d.action === "string" ? d.action : undefined,
					expires: d.expires as number,
				}),
			);
		for (let i = 0; i < rows.length; i += 200) await trx.insertInto("selections").values(rows.slice(i, i + 200)).execute();
		return rows.length;
	}
}
