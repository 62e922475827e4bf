// User metadata: declared namespaces, the values on nodes, and the tag lists of `tags` namespaces. A value is
// unique per (node, namespace, owner) by index: a PUT is one upsert on that key, so two writers racing on the same
// node end with one value, never two. Values of a listing page are read in one statement (node uuids IN …).
import { randomUUID } from "node:crypto";
import { sql, type Selectable } from "kysely";
import type { Db } from "./index";
import type { UserMetaNamespacesTable, UserMetaTable } from "./schema";
import { CompiledShapes, flag, fromJson } from "./sql";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { UserMetaNamespace, UserMetaValue } from "../usermeta/model";

/** Bound parameters per IN list: far below both drivers' limits. */
const CHUNK = 500;

function toNamespace(r: Selectable<UserMetaNamespacesTable>): UserMetaNamespace {
	return { Namespace: r.namespace, Label: r.label, Order: Number(r.ord), Indexable: Number(r.indexable) === 1, JsonDefinition: r.json_definition, Policies: fromJson<ResourcePolicy[]>(r.policies, []) };
}

function toValue(r: Selectable<UserMetaTable>): UserMetaValue {
	return { Uuid: r.uuid, NodeUuid: r.node_uuid, Namespace: r.namespace, Owner: r.owner, JsonValue: r.json_value, Policies: fromJson<ResourcePolicy[]>(r.policies, []), UpdatedAt: Number(r.updated_at) };
}

/** node uuids|uuids|namespace?|owners|limit? of a find (UserMetaRepo.findQueries). */
type FindShape = `${number}|${number}|${0 | 1}|${number}|${0 | 1}`;

export interface UserMetaQuery {
	uuids?: string[];
	nodeUuids?: string[];
	namespace?: string;
	/** Only values of these owners ("" = shared values). */
	owners?: string[];
	limit?: number;
}

export class UserMetaRepo {
	constructor(private readonly db: Db) {}

	// ---- namespaces ----

	async namespaces(): Promise<UserMetaNamespace[]> {
		return (await this.db.kysely.selectFrom("user_meta_namespaces").selectAll().orderBy("ord").orderBy("namespace").execute()).map(toNamespace);
	}

	async namespace(name: string): Promise<UserMetaNamespace | null> {
		const r = await this.db.kysely.selectFrom("user_meta_namespaces").selectAll().where("namespace", "=", name).executeTakeFirst();
		return r ? toNamespace(r) : null;
	}

	/** Creates or replaces the namespace of this name. */
	async putNamespace(ns: UserMetaNamespace): Promise<UserMetaNamespace> {
		const fields = { label: ns.Label, ord: ns.Order, indexable: flag(ns.Indexable), json_definition: ns.JsonDefinition, policies: JSON.stringify(ns.Policies) };
		const r = await this.db.kysely
			.insertInto("user_meta_namespaces")
			.values({ namespace: ns.Namespace, ...fields })
			.onConflict((oc) => oc.column("namespace").doUpdateSet(fields))
			.returningAll()
			.executeTakeFirstOrThrow();
		return toNamespace(r);
	}

	/** Adds the namespace unless one of that name exists (defaults seeded by every node); whether it was added. */
	async addNamespaceIfAbsent(ns: UserMetaNamespace): Promise<boolean> {
		const r = await this.db.kysely
			.insertInto("user_meta_namespaces")
			.values({ namespace: ns.Namespace, label: ns.Label, ord: ns.Order, indexable: flag(ns.Indexable), json_definition: ns.JsonDefinition, policies: JSON.stringify(ns.Policies) })
			.onConflict((oc) => oc.column("namespace").doNothing())
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
	}

	/** Removes a namespace with its values and tags, in one transaction; the nodes that had values, or null if unknown. */
	async deleteNamespace(name: string): Promise<string[] | null> {
		return this.db.transaction(async (trx) => {
			const gone = await trx.deleteFrom("user_meta_namespaces").where("namespace", "=", name).executeTakeFirst();
			if (Number(gone.numDeletedRows) === 0) return null;
			const rows = await trx.deleteFrom("user_meta").where("namespace", "=", name).returning("node_uuid").execute();
			await trx.deleteFrom("user_meta_tags").where("namespace", "=", name).execute();
			return [...new Set(rows.map((r) => r.node_uuid))];
		});
	}

	// ---- values ----

	/**
	 * Writes the value of (node, namespace, owner): inserted with a new uuid, or the existing row updated (its uuid
	 * kept). Returns the stored value.
	 */
	async put(v: Omit<UserMetaValue, "Uuid"> & { Uuid?: string }): Promise<UserMetaValue> {
		const fields = { json_value: v.JsonValue, policies: JSON.stringify(v.Policies), updated_at: v.UpdatedAt };
		const r = await this.db.kysely
			.insertInto("user_meta")
			.values({ uuid: v.Uuid ?? randomUUID(), node_uuid: v.NodeUuid, namespace: v.Namespace, owner: v.Owner, ...fields })
			.onConflict((oc) => oc.columns(["node_uuid", "namespace", "owner"]).doUpdateSet(fields))
			.returningAll()
			.executeTakeFirstOrThrow();
		return toValue(r);
	}

	async byUuid(uuid: string): Promise<UserMetaValue | null> {
		const r = await this.db.kysely.selectFrom("user_meta").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? toValue(r) : null;
	}

	/** The value of (node, namespace, owner), if any. */
	async at(nodeUuid: string, namespace: string, owner: string): Promise<UserMetaValue | null> {
		const r = await this.db.kysely.selectFrom("user_meta").selectAll().where("node_uuid", "=", nodeUuid).where("namespace", "=", namespace).where("owner", "=", owner).executeTakeFirst();
		return r ? toValue(r) : null;
	}

	/** Deletes one value; whether it existed. */
	async delete(uuid: string): Promise<boolean> {
		return Number((await this.db.kysely.deleteFrom("user_meta").where("uuid", "=", uuid).executeTakeFirst()).numDeletedRows) > 0;
	}

	/** Deletes every value on these nodes (the nodes are gone); how many. */
	async deleteOfNodes(nodeUuids: readonly string[]): Promise<number> {
		let n = 0;
		for (let i = 0; i < nodeUuids.length; i += CHUNK) {
			n += Number((await this.db.kysely.deleteFrom("user_meta").where("node_uuid", "in", nodeUuids.slice(i, i + CHUNK)).executeTakeFirst()).numDeletedRows);
		}
		return n;
	}

	/**
	 * Deletes the values of nodes that no longer exist (what was inside a deleted folder: the tree announces the
	 * folder only); how many. One statement, a primary-key probe of the nodes table per value.
	 */
	async deleteOrphans(): Promise<number> {
		const r = await this.db.kysely
			.deleteFrom("user_meta")
			.where(({ not, exists, selectFrom }) => not(exists(selectFrom("nodes").select("nodes.uuid").whereRef("nodes.uuid", "=", "user_meta.node_uuid"))))
			.executeTakeFirst();
		return Number(r.numDeletedRows);
	}

	/** The uuids of the nodes having values, when at most `max`; null when there are more. */
	async nodesWithValues(max: number): Promise<string[] | null> {
		const rows = await this.db.kysely.selectFrom("user_meta").select("node_uuid").distinct().limit(max + 1).execute();
		return rows.length > max ? null : rows.map((r) => r.node_uuid);
	}

	/** Values matching every given criterion; newest first. A list criterion given empty matches nothing. */
	async find(q: UserMetaQuery): Promise<UserMetaValue[]> {
		for (const list of [q.uuids, q.nodeUuids, q.owners]) if (list && !list.length) return [];
		const nodeChunks = q.nodeUuids ? chunks(q.nodeUuids) : [undefined];
		const uuids = q.uuids?.slice(0, CHUNK);
		const out: UserMetaValue[] = [];
		for (const nodes of nodeChunks) {
			// In the order findQueries' query takes them.
			const params: unknown[] = [...(nodes ?? []), ...(uuids ?? []), ...(q.namespace ? [q.namespace] : []), ...(q.owners ?? []), ...(q.limit ? [q.limit] : [])];
			const shape: FindShape = `${nodes?.length ?? -1}|${uuids?.length ?? -1}|${q.namespace ? 1 : 0}|${q.owners?.length ?? -1}|${q.limit ? 1 : 0}`;
			const rows = (await this.db.kysely.executeQuery<Selectable<UserMetaTable>>(this.findQueries.with(shape, params))).rows;
			out.push(...rows.map(toValue));
		}
		if (nodeChunks.length > 1) out.sort((a, b) => b.UpdatedAt - a.UpdatedAt || (a.Uuid < b.Uuid ? -1 : 1));
		return q.limit ? out.slice(0, q.limit) : out;
	}

	/** find's query for one shape (how many node uuids, uuids, owners; -1: no such filter), placeholders in find's order. */
	private readonly findQueries = new CompiledShapes<FindShape>((shape) => {
		const [nodes, uuids, namespace, owners, limit] = shape.split("|").map(Number);
		const some = (n: number) => Array.from({ length: n }, () => "");
		let s = this.db.kysely.selectFrom("user_meta").selectAll();
		if (nodes >= 0) s = s.where("node_uuid", "in", some(nodes));
		if (uuids >= 0) s = s.where("uuid", "in", some(uuids));
		if (namespace) s = s.where("namespace", "=", "");
		if (owners >= 0) s = s.where("owner", "in", some(owners));
		s = s.orderBy("updated_at", "desc").orderBy("uuid");
		if (limit) s = s.limit(1);
		return s.compile();
	});

	/**
	 * Values of a namespace whose JSON text equals `equals` or contains `contains` (ASCII case-insensitive), for a
	 * search by metadata; shared values and those of `owner`.
	 */
	async matching(namespace: string, match: { equals?: string; contains?: string }, owner: string, limit: number): Promise<UserMetaValue[]> {
		let s = this.db.kysely.selectFrom("user_meta").selectAll().where("namespace", "=", namespace).where("owner", "in", ["", owner]);
		if (match.equals !== undefined) s = s.where("json_value", "=", match.equals);
		if (match.contains !== undefined) {
			const needle = match.contains.toLowerCase();
			s = s.where(this.db.dialect === "postgres" ? sql<boolean>`strpos(lower(json_value), ${needle}) > 0` : sql<boolean>`instr(lower(json_value), ${needle}) > 0`);
		}
		return (await s.orderBy("updated_at", "desc").orderBy("uuid").limit(limit).execute()).map(toValue);
	}

	// ---- tags ----

	async tags(namespace: string): Promise<string[]> {
		return (await this.db.kysely.selectFrom("user_meta_tags").select("tag").where("namespace", "=", namespace).orderBy("tag").execute()).map((r) => r.tag);
	}

	/** Adds tags to a namespace's list (those already there stay once); how many were new. */
	async addTags(namespace: string, tags: readonly string[]): Promise<number> {
		if (!tags.length) return 0;
		const r = await this.db.kysely
			.insertInto("user_meta_tags")
			.values([...new Set(tags)].map((tag) => ({ namespace, tag })))
			.onConflict((oc) => oc.columns(["namespace", "tag"]).doNothing())
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0);
	}

	/** Empties a namespace's tag list; how many were removed. */
	async clearTags(namespace: string): Promise<number> {
		return Number((await this.db.kysely.deleteFrom("user_meta_tags").where("namespace", "=", namespace).executeTakeFirst()).numDeletedRows);
	}
}

function chunks<T>(list: readonly T[]): T[][] {
	const out: T[][] = [];
	for (let i = 0; i < list.length; i += CHUNK) out.push(list.slice(i, i + CHUNK));
	return out.length ? out : [[]];
}
