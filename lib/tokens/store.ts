// The tokens collection as lib/tokens needs it: the db mixin's store plus a compare-and-set (`updateWhere`),
// built on the adapter's own `updateMany`, which is atomic per document on NeDB and on MongoDB.
import type { Doc, Store } from "../../mixins/db.mixin";
import type { TokenStore } from "./model";

interface RawAdapter {
	updateMany(query: object, update: object): Promise<unknown>;
	db?: { ensureIndex?(o: object): Promise<unknown> };
	collection?: { createIndex?(spec: object, o?: object): Promise<unknown> };
}

export function tokenStoreOf(store: Store<Doc>, adapter: unknown): TokenStore {
	const raw = adapter as RawAdapter;
	return {
		...store,
		async updateWhere(query, set) {
			const n = await raw.updateMany(query, { $set: set });
			return typeof n === "number" ? n : Number((n as { modifiedCount?: number })?.modifiedCount ?? 0);
		},
	};
}

/** Lookups by hash and by user stay fast as the collection grows (NeDB in memory, MongoDB on disk). */
export async function ensureIndexes(adapter: unknown): Promise<void> {
	const raw = adapter as RawAdapter;
	try {
		for (const f of ["tokenHash", "keyHash", "userUuid", "UserUuid"]) {
			if (raw.db?.ensureIndex) await raw.db.ensureIndex({ fieldName: f, sparse: true });
			else if (raw.collection?.createIndex) await raw.collection.createIndex({ [f]: 1 }, { sparse: true });
		}
	} catch {
		// Indexes only speed things up.
	}
}
