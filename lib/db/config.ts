// The configuration tree's rows (see migrations/0010-config): a subtree is read as one key range, and replaced in
// one transaction (its old leaves, any ancestor that was a leaf, the new leaves), so readers on any node see the
// old subtree or the new one, never a mix; writers take turns (one lock for the tree: writes are rare).
import { sql } from "kysely";
import type { Db } from "./index";
import { prefixEnd } from "./sql";

export interface ConfigLeaf {
	/** Slash-separated, without leading or trailing slash. */
	path: string;
	/** JSON text. */
	json: string;
}

export class ConfigRepo {
	constructor(private readonly db: Db) {}

	/** The leaves at `path` and under it ("" for the whole tree), in key order. */
	async subtree(path: string): Promise<ConfigLeaf[]> {
		let q = this.db.kysely.selectFrom("config_entries").select(["path", "json_value"]);
		if (path !== "") {
			const under = `${path}/`;
			const end = prefixEnd(under);
			q = q.where((eb) => eb.or([eb("path", "=", path), end === undefined ? eb("path", ">=", under) : eb.and([eb("path", ">=", under), eb("path", "<", end)])]));
		}
		const rows = await q.orderBy("path").execute();
		return rows.map((r) => ({ path: r.path, json: r.json_value }));
	}

	/** Replaces what is at `path` (a leaf or a subtree) by `leaves` (all at or under `path`), atomically. */
	async replace(path: string, leaves: ConfigLeaf[], author: string, at: number): Promise<void> {
		for (const l of leaves) if (l.path !== path && !l.path.startsWith(`${path}/`)) throw new Error(`config leaf ${l.path} is not under ${path}`);
		const segments = path.split("/");
		const ancestors = segments.slice(0, -1).map((_, i) => segments.slice(0, i + 1).join("/"));
		const under = `${path}/`;
		const end = prefixEnd(under);
		await this.db.transaction(async (trx) => {
			// Two writers of overlapping subtrees would each delete what the other has not committed yet, then both
			// insert: on PostgreSQL the writes to the tree take turns (a transaction-scoped lock; SQLite has one writer).
			if (this.db.dialect === "postgres") await sql`select pg_advisory_xact_lock(hashtext('cellar.config_entries'))`.execute(trx);
			// A value set higher up (say "frontend/plugin" = "x") cannot coexist with a subtree below it.
			if (ancestors.length) await trx.deleteFrom("config_entries").where("path", "in", ancestors).execute();
			await trx
				.deleteFrom("config_entries")
				.where((eb) => eb.or([eb("path", "=", path), end === undefined ? eb("path", ">=", under) : eb.and([eb("path", ">=", under), eb("path", "<", end)])]))
				.execute();
			for (let i = 0; i < leaves.length; i += 200) {
				await trx
					.insertInto("config_entries")
					.values(leaves.slice(i, i + 200).map((l) => ({ path: l.path, json_value: l.json, author, updated_at: at })))
					.execute();
			}
		});
	}
}
