/**
 * acl — owns the ACL store (idm.ACL): role rights on workspaces and nodes (read/write/deny/quota/policy),
 * workspace roots (workspace-path, recycle_root, role-less), front-end parameters and actions per role,
 * content locks. REST: POST /acl (search), PUT /acl, POST /acl/bulk/delete — administrators only.
 * Internal: acl.find, acl.put, acl.deleteWhere for the other services (workspaces, users, shares...).
 * Emits `identity.changed` { kind: "acl" } after every change (gateways drop cached identities).
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DbMixin, type Store } from "../mixins/db.mixin";
import { BadRequestError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { aclKey, checkId, filterQuery, searchQuery, toACL, validateACL, type ACL, type ACLDoc, type ACLSingleQuery } from "../lib/acl/model";
import { searchParams } from "../lib/cells/params";

interface SearchParams {
	Queries?: ACLSingleQuery[];
	Offset?: number;
	Limit?: number;
	Operation?: "OR" | "AND";
	GroupBy?: number;
	CountOnly?: boolean;
}
interface FindParams {
	RoleIDs?: string[];
	WorkspaceIDs?: string[];
	NodeIDs?: string[];
	Actions?: string[];
}
interface DeleteWhereParams {
	RoleID?: string;
	WorkspaceID?: string;
	NodeID?: string;
	ActionName?: string;
}

const MAX_LIMIT = 10_000;
const idList = { type: "array", optional: true, items: "string", max: 100_000 } as const;
const aclParams = {
	ID: { type: "string", optional: true, max: 255 },
	Action: { type: "object", optional: true, props: { Name: { type: "string", optional: true }, Value: { type: "string", optional: true } } },
	RoleID: { type: "string", optional: true, max: 255 },
	WorkspaceID: { type: "string", optional: true, max: 255 },
	NodeID: { type: "string", optional: true, max: 255 },
} as const;

interface AclMethods {
	putAcl(ctx: Context<unknown, Meta>, acl: ACL): Promise<ACL>;
	removeWhere(ctx: Context<unknown, Meta>, query: Record<string, unknown>): Promise<number>;
	serialized<T>(fn: () => Promise<T>): Promise<T>;
}
interface AclVars {
	store: Store<ACLDoc>;
	writeQueue: Promise<unknown>;
	seq: number;
}
type AclThis = Service & AclMethods & AclVars;

const AclService: ServiceSchema<ServiceSettingSchema, AclMethods, AclVars> = {
	name: "acl",
	mixins: [DbMixin("acls")],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /acl",
			httpCache: true,
			retryPolicy: { enabled: true },
			params: searchParams,
			async handler(this: AclThis, ctx: Context<SearchParams, Meta>) {
				requireAdmin(ctx);
				const query = searchQuery(ctx.params.Queries, ctx.params.Operation);
				const Total = await this.store.count(query);
				if (ctx.params.CountOnly) return { Total };
				const limit = ctx.params.Limit ? Math.min(ctx.params.Limit, MAX_LIMIT) : MAX_LIMIT;
				const docs = await this.store.find({ query, sort: ["Created", "_id"], offset: ctx.params.Offset || undefined, limit });
				return { ACLs: docs.map(toACL), Total };
			},
		},
		store: {
			rest: "PUT /acl",
			params: aclParams,
			async handler(this: AclThis, ctx: Context<ACL, Meta>) {
				requireAdmin(ctx);
				return this.putAcl(ctx, ctx.params);
			},
		},
		bulkDelete: {
			rest: "POST /acl/bulk/delete",
			params: aclParams,
			async handler(this: AclThis, ctx: Context<ACL, Meta>) {
				requireAdmin(ctx);
				const p = ctx.params;
				const query = filterQuery({ ID: p.ID, RoleID: p.RoleID, WorkspaceID: p.WorkspaceID, NodeID: p.NodeID, ActionName: p.Action?.Name, ActionValue: p.Action?.Value });
				const NumRows = await this.removeWhere(ctx, query);
				return { Success: true, NumRows };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		find: {
			retryPolicy: { enabled: true },
			params: { RoleIDs: idList, WorkspaceIDs: idList, NodeIDs: idList, Actions: { type: "array", optional: true, items: "string", max: 1000 } },
			async handler(this: AclThis, ctx: Context<FindParams, Meta>): Promise<ACL[]> {
				// A list that is given constrains, even when empty (a user without roles matches nothing).
				const q: Record<string, unknown> = {};
				const { RoleIDs, WorkspaceIDs, NodeIDs, Actions } = ctx.params;
				if (RoleIDs) q.RoleID = { $in: RoleIDs };
				if (WorkspaceIDs) q.WorkspaceID = { $in: WorkspaceIDs };
				if (NodeIDs) q.NodeID = { $in: NodeIDs };
				if (Actions) q.ActionName = { $in: Actions };
				if ([RoleIDs, WorkspaceIDs, NodeIDs, Actions].some((l) => l && l.length === 0)) return [];
				const docs = await this.store.find({ query: q, sort: ["Created", "_id"] });
				return docs.map(toACL);
			},
		},
		put: {
			params: aclParams,
			async handler(this: AclThis, ctx: Context<ACL, Meta>) {
				return this.putAcl(ctx, ctx.params);
			},
		},
		deleteWhere: {
			params: {
				RoleID: { type: "string", optional: true },
				WorkspaceID: { type: "string", optional: true },
				NodeID: { type: "string", optional: true },
				ActionName: { type: "string", optional: true },
			},
			async handler(this: AclThis, ctx: Context<DeleteWhereParams, Meta>): Promise<number> {
				const p = ctx.params;
				if (!p.RoleID && !p.WorkspaceID && !p.NodeID && !p.ActionName) throw new BadRequestError("acl.deleteWhere needs at least one of RoleID, WorkspaceID, NodeID, ActionName");
				return this.removeWhere(ctx, filterQuery(p));
			},
		},
	},
	methods: {
		/** Insert, or replace the value of the ACL with the same role, workspace, node and action name. */
		async putAcl(this: AclThis, ctx: Context<unknown, Meta>, acl: ACL): Promise<ACL> {
			const fields = validateACL(acl);
			const id = acl.ID ? checkId("ID", acl.ID) : "";
			const stored = await this.serialized(async () => {
				const existing = (id ? await this.store.get(id) : null) ?? (await this.store.findOne(aclKey(fields)));
				if (existing) {
					if (existing.RoleID === fields.RoleID && existing.WorkspaceID === fields.WorkspaceID && existing.NodeID === fields.NodeID && existing.ActionName === fields.ActionName && existing.ActionValue === fields.ActionValue) {
						return { doc: existing, changed: false };
					}
					// An ID naming another key must not produce a duplicate of an existing key: drop that one.
					if (id) {
						const twin = await this.store.findOne(aclKey(fields));
						if (twin && twin._id !== existing._id) await this.store.remove(twin._id);
					}
					return { doc: await this.store.replace({ ...existing, ...fields }), changed: true };
				}
				const doc: ACLDoc = { _id: id || randomUUID(), ...fields, Created: Date.now() * 1000 + (this.seq++ % 1000) };
				return { doc: await this.store.insert(doc), changed: true };
			});
			if (stored.changed) await ctx.broadcast("identity.changed", { kind: "acl", RoleID: fields.RoleID || undefined, WorkspaceID: fields.WorkspaceID || undefined });
			return toACL(stored.doc);
		},
		async removeWhere(this: AclThis, ctx: Context<unknown, Meta>, query: Record<string, unknown>): Promise<number> {
			const n = await this.serialized(() => this.store.removeMany(query));
			if (n > 0) await ctx.broadcast("identity.changed", { kind: "acl" });
			return n;
		},
		/** Writes run one at a time on this node so that the find-then-insert of `put` cannot duplicate. */
		serialized<T>(this: AclThis, fn: () => Promise<T>): Promise<T> {
			const run = this.writeQueue.then(fn, fn);
			this.writeQueue = run.catch(() => undefined);
			return run;
		},
	},
	created(this: AclThis) {
		this.writeQueue = Promise.resolve();
		this.seq = 0;
	},
};

export = AclService;
