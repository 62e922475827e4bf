/**
 * acl — owns the ACL store (idm.ACL): role rights on workspaces and nodes (read/write/deny/quota/policy),
 * workspace roots (workspace-path, recycle_root, role-less), front-end parameters and actions per role,
 * content locks. REST: POST /acl (search), PUT /acl, POST /acl/bulk/delete — administrators only.
 * Internal: acl.find, acl.put, acl.deleteWhere for the other services (workspaces, users, shares...).
 * Emits `identity.changed` { kind: "acl" } after every change (gateways drop cached identities).
 * Emits `audit.log` (acl.update, acl.delete) after an ACL change through the API.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { loadConfig } from "../lib/config";
import { AclsRepo, importNedbAcls } from "../lib/db/acls";
import { importNedbOnce } from "../lib/db/nedb-import";
import { BadRequestError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { checkFilter, checkId, checkSearch, toACL, validateACL, type ACL, type ACLFilter, type ACLSingleQuery } from "../lib/acl/model";
import { searchParams } from "../lib/cells/params";
import { broadcast } from "../lib/contracts";
import { audit } from "../lib/logs/audit";

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
	removeWhere(ctx: Context<unknown, Meta>, filter: ACLFilter): Promise<number>;
}
interface AclVars extends DatabaseVars {
	repo: AclsRepo;
}
type AclThis = Service & AclMethods & AclVars;

const AclService: ServiceSchema<ServiceSettingSchema, AclMethods, AclVars> = {
	name: "acl",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /acl",
			httpCache: true,
			read: true,
			params: searchParams,
			async handler(this: AclThis, ctx: Context<SearchParams, Meta>) {
				requireAdmin(ctx);
				const search = checkSearch(ctx.params.Queries, ctx.params.Operation);
				const Total = await this.repo.count(search);
				if (ctx.params.CountOnly) return { Total };
				const limit = ctx.params.Limit ? Math.min(ctx.params.Limit, MAX_LIMIT) : MAX_LIMIT;
				const docs = await this.repo.search(search, { offset: ctx.params.Offset || undefined, limit });
				return { ACLs: docs.map(toACL), Total };
			},
		},
		store: {
			rest: "PUT /acl",
			params: aclParams,
			async handler(this: AclThis, ctx: Context<ACL, Meta>) {
				requireAdmin(ctx);
				const out = await this.putAcl(ctx, ctx.params);
				audit(ctx, "acl.update", { target: `role ${out.RoleID ?? ""} on ${out.NodeID || out.WorkspaceID || ""}`, detail: `${out.Action?.Name ?? ""}=${out.Action?.Value ?? ""}`, nodeUuid: out.NodeID || undefined, wsUuid: out.WorkspaceID || undefined });
				return out;
			},
		},
		bulkDelete: {
			rest: "POST /acl/bulk/delete",
			params: aclParams,
			async handler(this: AclThis, ctx: Context<ACL, Meta>) {
				requireAdmin(ctx);
				const p = ctx.params;
				const filter = checkFilter({ ID: p.ID, RoleID: p.RoleID, WorkspaceID: p.WorkspaceID, NodeID: p.NodeID, ActionName: p.Action?.Name, ActionValue: p.Action?.Value });
				const NumRows = await this.removeWhere(ctx, filter);
				if (NumRows) audit(ctx, "acl.delete", { target: `role ${p.RoleID ?? "*"} on ${p.NodeID || p.WorkspaceID || "*"}`, detail: `${NumRows} ACL(s)${p.Action?.Name ? ` ${p.Action.Name}` : ""}` });
				return { Success: true, NumRows };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		find: {
			read: true,
			params: { RoleIDs: idList, WorkspaceIDs: idList, NodeIDs: idList, Actions: { type: "array", optional: true, items: "string", max: 1000 } },
			async handler(this: AclThis, ctx: Context<FindParams, Meta>): Promise<ACL[]> {
				// A list that is given constrains, even when empty (a user without roles matches nothing).
				return (await this.repo.find(ctx.params)).map(toACL);
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
				return this.removeWhere(ctx, checkFilter(p));
			},
		},
	},
	methods: {
		/** Insert, or replace the value of the ACL with the same role, workspace, node and action name. */
		async putAcl(this: AclThis, ctx: Context<unknown, Meta>, acl: ACL): Promise<ACL> {
			const fields = validateACL(acl);
			const id = acl.ID ? checkId("ID", acl.ID) : "";
			const stored = await this.repo.put(fields, id || undefined);
			if (stored.changed) await broadcast(ctx, "identity.changed", { kind: "acl", RoleID: fields.RoleID || undefined, WorkspaceID: fields.WorkspaceID || undefined });
			return toACL(stored.acl);
		},
		async removeWhere(this: AclThis, ctx: Context<unknown, Meta>, filter: ACLFilter): Promise<number> {
			const n = await this.repo.deleteWhere(filter);
			if (n > 0) await broadcast(ctx, "identity.changed", { kind: "acl" });
			return n;
		},
	},
	async started(this: AclThis) {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "acls", importNedbAcls);
		if (report.imported) this.logger.info(`Imported ${report.documents} ACLs from the NeDB store (kept as ${report.backup})`);
		this.repo = new AclsRepo(this.db);
	},
};

export = AclService;
