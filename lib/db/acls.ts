// ACLs (idm.ACL): one row each, one value per (role, workspace, node, action) by the unique index acls_key. A put
// is one upsert on that key, so concurrent puts of the same ACL, on one node or several, leave one row holding
// the last value; nothing is read first to decide between insert and update.
import { randomUUID } from "node:crypto";
import type { Expression, ExpressionBuilder, Insertable, Selectable, SqlBool, Transaction } from "kysely";
import type { ACLCriteria, ACLDoc, ACLFields, ACLFilter, ACLSearch } from "../acl/model";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { AclsTable, Database } from "./schema";

type Row = Selectable<AclsTable>;
type Eb = ExpressionBuilder<Database, "acls">;

/** Which ACLs an internal find wants: a list that is given constrains, even empty (which matches nothing). */
export interface AclFind {
	RoleIDs?: readonly string[];
	WorkspaceIDs?: readonly string[];
	NodeIDs?: readonly string[];
	Actions?: readonly string[];
}

/**
 * Bound values per statement, under SQLite's (32,766) and PostgreSQL's (65,535) limits: a longer list is
 * looked up in slices.
 */
const MAX_BOUND = 30_000;

function toDoc(r: Row): ACLDoc {
	return {
		ID: r.id,
		RoleID: r.role_id,
		WorkspaceID: r.workspace_id,
		NodeID: r.node_id,
		ActionName: r.action_name,
		ActionValue: r.action_value,
		Created: Number(r.created),
	};
}

function toRow(d: ACLDoc): Insertable<AclsTable> {
	return { id: d.ID, role_id: d.RoleID, workspace_id: d.WorkspaceID, node_id: d.NodeID, action_name: d.ActionName, action_value: d.ActionValue, created: d.Created };
}

function criteria(eb: Eb, q: ACLCriteria): Expression<SqlBool> {
	const parts: Expression<SqlBool>[] = [];
	if (q.RoleIDs?.length) parts.push(eb("role_id", "in", q.RoleIDs));
	if (q.WorkspaceIDs?.length) parts.push(eb("workspace_id", "in", q.WorkspaceIDs));
	if (q.NodeIDs?.length) parts.push(eb("node_id", "in", q.NodeIDs));
	if (q.Actions?.length) {
		parts.push(eb.or(q.Actions.map((a) => (a.Value ? eb.and([eb("action_name", "=", a.Name), eb("action_value", "=", a.Value)]) : eb("action_name", "=", a.Name)))));
	}
	// No criterion: every ACL, and its negation none.
	const all = parts.length ? eb.and(parts) : eb.lit(true);
	return q.not ? eb.not(all) : all;
}

function searched(eb: Eb, s: ACLSearch): Expression<SqlBool> {
	if (!s.queries.length) return eb.lit(true);
	const each = s.queries.map((q) => criteria(eb, q));
	return s.operation === "AND" ? eb.and(each) : eb.or(each);
}

function sameKey(eb: Eb, f: ACLFields): Expression<SqlBool> {
	return eb.and([eb("role_id", "=", f.RoleID), eb("workspace_id", "=", f.WorkspaceID), eb("node_id", "=", f.NodeID), eb("action_name", "=", f.ActionName)]);
}

export class AclsRepo {
	private seq = 0;

	constructor(private readonly db: Db) {}

	/** Microseconds, with a counter so that the ACLs one request writes list in the order written. */
	private created(): number {
		return Date.now() * 1000 + (this.seq++ % 1000);
	}

	/**
	 * Stores an ACL: the one of the same role, workspace, node and action takes the new value; `id`, when it names
	 * a stored ACL, is that one moved to this key (an ACL already at the key gives way). Whether anything changed.
	 */
	async put(fields: ACLFields, id?: string): Promise<{ acl: ACLDoc; changed: boolean }> {
		if (id) {
			const moved = await this.db.transaction(async (trx) => {
				const existing = await trx.selectFrom("acls").selectAll().where("id", "=", id).executeTakeFirst();
				if (!existing) return undefined;
				const doc = toDoc(existing);
				if (doc.RoleID === fields.RoleID && doc.WorkspaceID === fields.WorkspaceID && doc.NodeID === fields.NodeID && doc.ActionName === fields.ActionName && doc.ActionValue === fields.ActionValue) {
					return { acl: doc, changed: false };
				}
				await trx.deleteFrom("acls").where((eb) => sameKey(eb, fields)).where("id", "<>", id).execute();
				const row = await trx
					.updateTable("acls")
					.set({ role_id: fields.RoleID, workspace_id: fields.WorkspaceID, node_id: fields.NodeID, action_name: fields.ActionName, action_value: fields.ActionValue })
					.where("id", "=", id)
					.returningAll()
					.executeTakeFirstOrThrow();
				return { acl: toDoc(row), changed: true };
			});
			if (moved) return moved;
		}
		const row = await this.db.kysely
			.insertInto("acls")
			.values(toRow({ ID: id || randomUUID(), ...fields, Created: this.created() }))
			.onConflict((oc) =>
				oc
					.columns(["role_id", "workspace_id", "node_id", "action_name"])
					.doUpdateSet({ action_value: (eb) => eb.ref("excluded.action_value") })
					.where((eb) => eb("acls.action_value", "<>", eb.ref("excluded.action_value"))),
			)
			.returningAll()
			.executeTakeFirst();
		if (row) return { acl: toDoc(row), changed: true };
		// The same value was already there.
		const same = await this.db.kysely.selectFrom("acls").selectAll().where((eb) => sameKey(eb, fields)).executeTakeFirst();
		if (same) return { acl: toDoc(same), changed: false };
		// Deleted between the two statements: write it again.
		return this.put(fields);
	}

	async count(s: ACLSearch): Promise<number> {
		const r = await this.db.kysely
			.selectFrom("acls")
			.where((eb) => searched(eb, s))
			.select((eb) => eb.fn.countAll<number>().as("n"))
			.executeTakeFirstOrThrow();
		return Number(r.n);
	}

	/** A page of a search, in creation order. */
	async search(s: ACLSearch, page: { offset?: number; limit: number }): Promise<ACLDoc[]> {
		let q = this.db.kysely
			.selectFrom("acls")
			.selectAll()
			.where((eb) => searched(eb, s))
			.orderBy("created")
			.orderBy("id")
			.limit(page.limit);
		if (page.offset) q = q.offset(page.offset);
		return (await q.execute()).map(toDoc);
	}

	/** The ACLs matching every list given, in creation order. */
	async find(f: AclFind): Promise<ACLDoc[]> {
		const lists = [f.RoleIDs, f.WorkspaceIDs, f.NodeIDs, f.Actions].map((l) => (l ? [...new Set(l)] : undefined));
		if (lists.some((l) => l && l.length === 0)) return [];
		const [roles, workspaces, nodes, actions] = lists;
		const bound = lists.reduce((n, l) => n + (l?.length ?? 0), 0);
		if (bound > MAX_BOUND) {
			// Slice the longest list; the slices are disjoint, so the rows are too.
			const longest = lists.reduce((a, l) => ((l?.length ?? 0) > (a?.length ?? 0) ? l : a));
			const size = Math.max(1, MAX_BOUND - (bound - (longest?.length ?? 0)));
			const out: ACLDoc[] = [];
			for (let i = 0; i < (longest?.length ?? 0); i += size) {
				const slice = (longest as string[]).slice(i, i + size);
				const pick = (l: string[] | undefined) => (l === longest ? slice : l);
				out.push(...(await this.find({ RoleIDs: pick(roles), WorkspaceIDs: pick(workspaces), NodeIDs: pick(nodes), Actions: pick(actions) })));
			}
			return out.sort((a, b) => a.Created - b.Created || (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
		}
		let q = this.db.kysely.selectFrom("acls").selectAll();
		if (roles) q = q.where("role_id", "in", roles);
		if (workspaces) q = q.where("workspace_id", "in", workspaces);
		if (nodes) q = q.where("node_id", "in", nodes);
		if (actions) q = q.where("action_name", "in", actions);
		return (await q.orderBy("created").orderBy("id").execute()).map(toDoc);
	}

	/** Deletes the ACLs matching every field the filter gives (lib/acl/model's checkFilter refuses an empty one). */
	async deleteWhere(f: ACLFilter): Promise<number> {
		let q = this.db.kysely.deleteFrom("acls");
		if (f.ID) q = q.where("id", "=", f.ID);
		if (f.RoleID) q = q.where("role_id", "=", f.RoleID);
		if (f.WorkspaceID) q = q.where("workspace_id", "=", f.WorkspaceID);
		if (f.NodeID) q = q.where("node_id", "=", f.NodeID);
		if (f.ActionName) q = q.where("action_name", "=", f.ActionName);
		if (f.ActionValue) q = q.where("action_value", "=", f.ActionValue);
		const r = await q.executeTakeFirst();
		return Number(r.numDeletedRows);
	}
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** The acls collection of an NeDB DATA_DIR (flat documents, `_id` = ID), written in the import's transaction. */
export async function importNedbAcls(trx: Transaction<Database>, docs: NedbDoc[]): Promise<void> {
	for (const d of docs) {
		const doc: ACLDoc = {
			ID: d._id,
			RoleID: str(d.RoleID),
			WorkspaceID: str(d.WorkspaceID),
			NodeID: str(d.NodeID),
			ActionName: str(d.ActionName),
			ActionValue: str(d.ActionValue),
			Created: typeof d.Created === "number" ? d.Created : 0,
		};
		if (!doc.ActionName) continue;
		// One value per key: a later duplicate of an ACL (which the NeDB versions could not hold) is dropped.
		await trx.insertInto("acls").values(toRow(doc)).onConflict((oc) => oc.doNothing()).execute();
	}
}
