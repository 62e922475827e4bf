// Versioning policies (tree.VersioningPolicy, kept whole as JSON) and version records (where a file's previous
// content was copied). Versions follow their node: a move rewrites the paths of a folder's versions in one UPDATE,
// a folder delete finds them by a path range (`>= 'a/' and < 'a0'`, byte order on both dialects).
import { sql, type Selectable, type Transaction } from "kysely";
import type { VersioningPolicy } from "../versions/policy";
import type { VersionRecord } from "../versions/prune";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, VersionsTable } from "./schema";
import { fromJson, orNull, prefixEnd } from "./sql";

/** Which first-run policies were seeded once (a policy the administrator deleted does not come back). */
const SEEDED = "versions:seeded-policies";
/** Node uuids per page when walking every node that has versions. */
const NODE_PAGE = 500;

function versionOf(r: Selectable<VersionsTable>): VersionRecord {
	const v: VersionRecord = {
		_id: r.id,
		kind: "version",
		nodeUuid: r.node_uuid,
		ds: r.ds,
		path: r.path,
		size: Number(r.size),
		etag: r.etag,
		mtime: Number(r.mtime),
		owner: r.owner,
		createdAt: Number(r.created_at),
		vds: r.vds,
		key: r.key,
		policy: r.policy,
	};
	if (r.deleted_at !== null) v.deletedAt = Number(r.deleted_at);
	if (r.reason !== null) v.reason = r.reason;
	return v;
}

function versionRow(v: VersionRecord): Selectable<VersionsTable> {
	return {
		id: v._id,
		node_uuid: v.nodeUuid,
		ds: v.ds,
		path: v.path,
		size: v.size,
		etag: v.etag,
		mtime: v.mtime,
		owner: v.owner,
		created_at: v.createdAt,
		vds: v.vds,
		key: v.key,
		policy: v.policy,
		deleted_at: orNull(v.deletedAt),
		reason: typeof v.reason === "string" ? v.reason : null,
	};
}

function policyOf(text: string, uuid: string): VersioningPolicy {
	return { ...fromJson<VersioningPolicy>(text, { Uuid: uuid, Name: uuid, VersionsDataSourceName: "", KeepPeriods: [], NodeDeletedStrategy: "KeepAll" }), Uuid: uuid };
}

function policyText(p: VersioningPolicy): string {
	const { _id, kind, ...policy } = p as VersioningPolicy & { _id?: unknown; kind?: unknown };
	return JSON.stringify(policy);
}

export class VersionsRepo {
	constructor(private readonly db: Db) {}

	// ---- policies ----

	async policy(uuid: string): Promise<VersioningPolicy | null> {
		const r = await this.db.kysely.selectFrom("versioning_policies").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? policyOf(r.policy, r.uuid) : null;
	}

	async policies(): Promise<VersioningPolicy[]> {
		return (await this.db.kysely.selectFrom("versioning_policies").selectAll().orderBy("uuid").execute()).map((r) => policyOf(r.policy, r.uuid));
	}

	async putPolicy(p: VersioningPolicy): Promise<void> {
		const text = policyText(p);
		await this.db.kysely
			.insertInto("versioning_policies")
			.values({ uuid: p.Uuid, policy: text })
			.onConflict((oc) => oc.column("uuid").doUpdateSet({ policy: text }))
			.execute();
	}

	/** Creates it unless a policy of this uuid exists; whether it was created. */
	async createPolicy(p: VersioningPolicy): Promise<boolean> {
		const r = await this.db.kysely
			.insertInto("versioning_policies")
			.values({ uuid: p.Uuid, policy: policyText(p) })
			.onConflict((oc) => oc.column("uuid").doNothing())
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
	}

	async deletePolicy(uuid: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("versioning_policies").where("uuid", "=", uuid).executeTakeFirst()).numDeletedRows > 0n;
	}

	async seededPolicies(): Promise<string[]> {
		const r = await this.db.kysely.selectFrom("markers").select("value").where("name", "=", SEEDED).executeTakeFirst();
		return fromJson<string[]>(r?.value, []);
	}

	async setSeededPolicies(uuids: string[]): Promise<void> {
		const value = JSON.stringify([...new Set(uuids)].sort());
		await this.db.kysely
			.insertInto("markers")
			.values({ name: SEEDED, value })
			.onConflict((oc) => oc.column("name").doUpdateSet({ value }))
			.execute();
	}

	// ---- versions ----

	async add(v: VersionRecord): Promise<void> {
		await this.db.kysely.insertInto("versions").values(versionRow(v)).execute();
	}

	async version(id: string): Promise<VersionRecord | null> {
		const r = await this.db.kysely.selectFrom("versions").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? versionOf(r) : null;
	}

	/** The versions of a node, oldest first. */
	async ofNode(nodeUuid: string): Promise<VersionRecord[]> {
		return (await this.db.kysely.selectFrom("versions").selectAll().where("node_uuid", "=", nodeUuid).orderBy("created_at").orderBy("id").execute()).map(versionOf);
	}

	/** Every version kept under a policy. */
	async underPolicy(policyUuid: string): Promise<VersionRecord[]> {
		return (await this.db.kysely.selectFrom("versions").selectAll().where("policy", "=", policyUuid).orderBy("created_at").orderBy("id").execute()).map(versionOf);
	}

	/** The uuids of the nodes that have versions, a page at a time (keyset on the uuid), for sweeps. */
	async *nodesWithVersions(): AsyncGenerator<string> {
		let after: string | undefined;
		for (;;) {
			let q = this.db.kysely.selectFrom("versions").select("node_uuid").distinct().orderBy("node_uuid").limit(NODE_PAGE);
			if (after !== undefined) q = q.where("node_uuid", ">", after);
			const page = (await q.execute()).map((r) => r.node_uuid);
			yield* page;
			if (page.length < NODE_PAGE) return;
			after = page[page.length - 1];
		}
	}

	/** The versions of a node and, for a folder (`folderPath` given), of every file last seen under it in `ds`. */
	async ofNodeOrUnder(nodeUuid: string, ds: string, folderPath?: string): Promise<VersionRecord[]> {
		const rows = await this.db.kysely
			.selectFrom("versions")
			.selectAll()
			.where((eb) => {
				const node = eb("node_uuid", "=", nodeUuid);
				if (folderPath === undefined) return node;
				const { from, to } = under(folderPath);
				const range = to === undefined ? eb.and([eb("ds", "=", ds), eb("path", ">=", from)]) : eb.and([eb("ds", "=", ds), eb("path", ">=", from), eb("path", "<", to)]);
				return eb.or([node, range]);
			})
			.orderBy("created_at")
			.orderBy("id")
			.execute();
		return rows.map(versionOf);
	}

	/** Whether the record was there to remove. */
	async remove(id: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("versions").where("id", "=", id).executeTakeFirst()).numDeletedRows > 0n;
	}

	/** Marks versions whose node was deleted (the ones not already marked). */
	async markDeleted(ids: string[], at: number): Promise<void> {
		if (!ids.length) return;
		await this.db.kysely.updateTable("versions").set({ deleted_at: at }).where("id", "in", ids).where("deleted_at", "is", null).execute();
	}

	/** A file moved: its versions follow it. */
	async moveNode(nodeUuid: string, ds: string, path: string): Promise<number> {
		const r = await this.db.kysely.updateTable("versions").set({ ds, path }).where("node_uuid", "=", nodeUuid).executeTakeFirst();
		return Number(r.numUpdatedRows);
	}

	/** A folder moved: the versions of the files under it follow, their paths rewritten in one statement. */
	async moveUnder(fromDs: string, fromPath: string, toDs: string, toPath: string): Promise<number> {
		const { from, to } = under(fromPath);
		// Characters (code points) on both dialects, as substr counts them.
		const keep = Array.from(fromPath).length + 1;
		let q = this.db.kysely
			.updateTable("versions")
			.set({ ds: toDs, path: sql<string>`${toPath} || substr(path, ${keep})` })
			.where("ds", "=", fromDs)
			.where("path", ">=", from);
		if (to !== undefined) q = q.where("path", "<", to);
		return Number((await q.executeTakeFirst()).numUpdatedRows);
	}

	/**
	 * The NeDB `versions` collection (policies `policy:<uuid>`, version records and the seeded list in one, told
	 * apart by `kind`), inside the import's transaction.
	 */
	static async importNedb(trx: Transaction<Database>, docs: NedbDoc[]): Promise<{ policies: number; versions: number }> {
		let policies = 0;
		const rows: Selectable<VersionsTable>[] = [];
		for (const d of docs) {
			if (d.kind === "policy" && typeof d.Uuid === "string") {
				await trx.insertInto("versioning_policies").values({ uuid: d.Uuid, policy: policyText(d as unknown as VersioningPolicy) }).execute();
				policies++;
			} else if (d.kind === "meta" && Array.isArray(d.seeded)) {
				const value = JSON.stringify(d.seeded.filter((x): x is string => typeof x === "string"));
				await trx.insertInto("markers").values({ name: SEEDED, value }).onConflict((oc) => oc.column("name").doUpdateSet({ value })).execute();
			} else if (d.kind === "version" && typeof d.nodeUuid === "string" && typeof d.vds === "string" && typeof d.key === "string") {
				const n = (k: string) => (typeof d[k] === "number" ? (d[k] as number) : 0);
				const s = (k: string) => (typeof d[k] === "string" ? (d[k] as string) : "");
				rows.push(
					versionRow({
						_id: d._id,
						kind: "version",
						nodeUuid: d.nodeUuid,
						ds: s("ds"),
						path: s("path"),
						size: n("size"),
						etag: s("etag"),
						mtime: n("mtime"),
						owner: s("owner"),
						createdAt: n("createdAt"),
						vds: d.vds,
						key: d.key,
						policy: s("policy"),
						deletedAt: typeof d.deletedAt === "number" ? d.deletedAt : undefined,
						reason: d.reason === "delete" ? "delete" : undefined,
					}),
				);
			}
		}
		for (let i = 0; i < rows.length; i += 200) await trx.insertInto("versions").values(rows.slice(i, i + 200)).execute();
		return { policies, versions: rows.length };
	}
}

/** The path range of everything under a folder. */
function under(folderPath: string): { from: string; to: string | undefined } {
	const from = `${folderPath}/`;
	return { from, to: prefixEnd(from) };
}
