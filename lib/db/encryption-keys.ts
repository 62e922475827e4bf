// Master keys of encrypted datasources, as the encryption service handles them (lib/encryption KeyDoc): the key
// material only ever sealed. A key id is the primary key: two nodes creating the same id, one wins, the other gets
// ConflictError. The export history grows inside one transaction that locks the row (PostgreSQL), so two exports
// at once both stay recorded.
import type { Selectable, Transaction } from "kysely";
import type { KeyDoc, KeyExport, KeyInfo } from "../encryption/keys";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, EncryptionKeysTable } from "./schema";
import { fromJson } from "./sql";

function keyOf(r: Selectable<EncryptionKeysTable>): KeyDoc {
	const info = fromJson<Partial<KeyInfo>>(r.info, {});
	return {
		_id: r.id,
		ID: r.id,
		Label: r.label,
		Owner: r.owner,
		CreationDate: Number(r.creation_date),
		Sealed: r.sealed,
		Info: { Exports: info.Exports ?? [], Imports: info.Imports ?? [] },
	};
}

function rowOf(k: KeyDoc): Selectable<EncryptionKeysTable> {
	return {
		id: k.ID,
		label: k.Label ?? "",
		owner: k.Owner,
		creation_date: k.CreationDate,
		sealed: k.Sealed,
		info: JSON.stringify({ Exports: k.Info?.Exports ?? [], Imports: k.Info?.Imports ?? [] }),
	};
}

export class EncryptionKeysRepo {
	constructor(private readonly db: Db) {}

	/** Adds a key; ConflictError when its id is taken. */
	async create(k: KeyDoc): Promise<void> {
		await this.db.kysely.insertInto("encryption_keys").values(rowOf(k)).execute();
	}

	async byId(id: string): Promise<KeyDoc | null> {
		const r = await this.db.kysely.selectFrom("encryption_keys").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? keyOf(r) : null;
	}

	/** Oldest first. */
	async list(): Promise<KeyDoc[]> {
		return (await this.db.kysely.selectFrom("encryption_keys").selectAll().orderBy("creation_date").orderBy("id").execute()).map(keyOf);
	}

	/** Writes `k` whole, creating it or replacing the key of the same id. */
	async put(k: KeyDoc): Promise<void> {
		const { id, ...fields } = rowOf(k);
		await this.db.kysely
			.insertInto("encryption_keys")
			.values({ id, ...fields })
			.onConflict((oc) => oc.column("id").doUpdateSet(fields))
			.execute();
	}

	async delete(id: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("encryption_keys").where("id", "=", id).executeTakeFirst()).numDeletedRows > 0n;
	}

	/** Appends an export to the key's history (the last `keep` kept); false when there is no such key. */
	async recordExport(id: string, entry: KeyExport, keep = 100): Promise<boolean> {
		return this.db.transaction(async (trx) => {
			let q = trx.selectFrom("encryption_keys").select("info").where("id", "=", id);
			// SQLite has one writer at a time already; PostgreSQL needs the row locked against a concurrent export.
			if (this.db.dialect === "postgres") q = q.forUpdate();
			const r = await q.executeTakeFirst();
			if (!r) return false;
			const info = fromJson<Partial<KeyInfo>>(r.info, {});
			const next: KeyInfo = { Exports: [...(info.Exports ?? []), entry].slice(-keep), Imports: info.Imports ?? [] };
			await trx.updateTable("encryption_keys").set({ info: JSON.stringify(next) }).where("id", "=", id).execute();
			return true;
		});
	}

	/** The NeDB `encryption` collection, inside the import's transaction; documents without sealed material are skipped. */
	static async importNedb(trx: Transaction<Database>, docs: NedbDoc[]): Promise<number> {
		const history = (v: unknown): KeyExport[] =>
			Array.isArray(v) ? v.filter((e): e is KeyExport => !!e && typeof e.By === "string" && typeof e.Date === "number").map((e) => ({ By: e.By, Date: e.Date })) : [];
		const rows = docs
			.filter((d) => typeof d.Sealed === "string")
			.map((d) => {
				const info = (d.Info ?? {}) as { Exports?: unknown; Imports?: unknown };
				const id = typeof d.ID === "string" ? d.ID : d._id;
				return rowOf({
					_id: id,
					ID: id,
					Label: typeof d.Label === "string" ? d.Label : id,
					Owner: typeof d.Owner === "string" ? d.Owner : "",
					CreationDate: typeof d.CreationDate === "number" ? d.CreationDate : 0,
					Sealed: d.Sealed as string,
					Info: { Exports: history(info.Exports), Imports: history(info.Imports) },
				});
			});
		for (const r of rows) await trx.insertInto("encryption_keys").values(r).execute();
		return rows.length;
	}
}
