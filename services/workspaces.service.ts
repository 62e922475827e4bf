/**
 * workspaces — owns workspace records (idm.Workspace): label, slug, scope, resource policies, attributes.
 * Roots and default rights are ACLs kept by the acl service (workspace-path / recycle_root, ROOT_GROUP
 * read/write/quota), reached with acl.find / acl.put / acl.deleteWhere.
 * REST: POST /workspace (search, any logged user: filtered by policies and ACLs), PUT /workspace/:Slug,
 * DELETE /workspace/:Slug. Internal: workspaces.accessible (a role stack's workspaces, for the front-end
 * state), workspaces.ensureDefaults (Cells' common-files / personal-files, idempotent).
 * Emits `identity.changed` { kind: "workspace" } after changes.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { loadConfig } from "../lib/config";
import { WorkspacesRepo, importNedbWorkspaces } from "../lib/db/workspaces";
import { importNedbOnce } from "../lib/db/nedb-import";
import { BadRequestError, ForbiddenError } from "../lib/errors";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { hasPolicy, requireUser } from "../lib/identity/resource-policy";
import type { ACL } from "../lib/acl/model";
import { accessString, rightsByWorkspace } from "../lib/acl/merge";
import { SCOPES, matchesAll, presentAttributes, rootsFromAcls, type AccessibleWorkspace, type Workspace, type WorkspaceDoc, type WorkspaceSingleQuery } from "../lib/workspaces/model";
import type { AclClient } from "../lib/workspaces/roots";
import { WorkspaceEditor } from "../lib/workspaces/editor";
import { searchParams } from "../lib/cells/params";
import { broadcast, call } from "../lib/contracts";

interface SearchParams {
	Queries?: WorkspaceSingleQuery[];
	Offset?: number;
	Limit?: number;
	Operation?: "OR" | "AND";
	GroupBy?: number;
	CountOnly?: boolean;
	ResourcePolicyQuery?: { Type?: "CONTEXT" | "ANY" | "NONE" | "USER"; UserId?: string };
}
type PutParams = Workspace & { Slug: string };

const policyParam = {
	type: "array",
	optional: true,
	max: 1000,
	items: {
		type: "object",
		props: {
			id: { type: "number", optional: true },
			Resource: { type: "string", optional: true },
			Action: { type: "enum", optional: true, values: ["ANY", "OWNER", "READ", "WRITE", "EDIT_RULES"] },
			Subject: { type: "string", optional: true, max: 512 },
			Effect: { type: "enum", optional: true, values: ["deny", "allow"] },
			JsonConditions: { type: "string", optional: true },
		},
	},
} as const;

interface WsMethods {
	aclClient(ctx: Context<unknown, Meta>): AclClient;
	loadAcls(ctx: Context<unknown, Meta>, ids: string[]): Promise<Map<string, ACL[]>>;
	present(doc: WorkspaceDoc, acls: ACL[], user: Identity | null | undefined): Workspace;
	editor(ctx: Context<unknown, Meta>): WorkspaceEditor;
}
interface WsVars extends DatabaseVars {
	repo: WorkspacesRepo;
}
type WsThis = Service & WsMethods & WsVars;

function sortDocs(docs: WorkspaceDoc[]): WorkspaceDoc[] {
	return docs.sort((a, b) => a.Label.localeCompare(b.Label, "en", { sensitivity: "base" }) || a.UUID.localeCompare(b.UUID));
}

const WorkspacesService: ServiceSchema<ServiceSettingSchema, WsMethods, WsVars> = {
	name: "workspaces",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	// Roots and default rights are written through acl: offered before it, ensureDefaults would fail.
	dependencies: ["acl"],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /workspace",
			httpCache: true,
			read: true,
			params: searchParams,
			async handler(this: WsThis, ctx: Context<SearchParams, Meta>) {
				const user = requireUser(ctx);
				const admin = isAdmin(user);
				const rpType = ctx.params.ResourcePolicyQuery?.Type ?? "CONTEXT";
				if (rpType !== "CONTEXT" && !admin) throw new ForbiddenError("Only administrators can search workspaces outside their own context");
				if (rpType === "USER") throw new BadRequestError("ResourcePolicyQuery of type USER is not supported: search as that user instead");
				let docs = sortDocs(await this.repo.all());
				// Administrators see every workspace; others those their policies let them read.
				if (rpType === "NONE") docs = docs.filter((d) => !d.Policies?.length);
				else if (!admin) docs = docs.filter((d) => hasPolicy(d.Policies, user, "READ"));
				const acls = await this.loadAcls(ctx, docs.map((d) => d.UUID));
				if (!admin) {
					// ... and only where their role stack gives them read or write.
					const mine = [...acls.values()].flat().filter((a) => a.RoleID && user.Roles.includes(a.RoleID));
					const rights = rightsByWorkspace(mine, user.Roles);
					docs = docs.filter((d) => {
						const r = rights.get(d.UUID);
						return !!r && accessString(r) !== "";
					});
				}
				const all = docs.map((d) => this.present(d, acls.get(d.UUID) ?? [], user)).filter((w) => matchesAll(w, ctx.params.Queries, ctx.params.Operation));
				const Total = all.length;
				// Cells answers the workspaces whatever CountOnly says, and its CLI (cec idm list-workspaces) sends
				// CountOnly:true expecting them: a count alone would print nothing there.
				const offset = ctx.params.Offset ?? 0;
				const Workspaces = ctx.params.Limit ? all.slice(offset, offset + ctx.params.Limit) : all.slice(offset);
				return { Workspaces, Total };
			},
		},
		put: {
			rest: "PUT /workspace/:Slug",
			params: {
				Slug: { type: "string", max: 500 },
				UUID: { type: "string", optional: true, max: 255 },
				Label: { type: "string", optional: true },
				Description: { type: "string", optional: true },
				Scope: { type: "enum", optional: true, values: SCOPES },
				LastUpdated: { type: "number", optional: true },
				Policies: policyParam,
				PoliciesContextEditable: { type: "boolean", optional: true },
				Attributes: { type: "string", optional: true },
				RootUUIDs: { type: "array", optional: true, items: "string", max: 1000 },
				RootNodes: { type: "record", optional: true, key: { type: "string" }, value: { type: "object" } },
			},
			async handler(this: WsThis, ctx: Context<PutParams, Meta>) {
				const user = requireUser(ctx);
				const stored = await this.editor(ctx).put(user, ctx.params);
				const acls = (await this.loadAcls(ctx, [stored.UUID])).get(stored.UUID) ?? [];
				return this.present(stored, acls, user);
			},
		},
		remove: {
			rest: "DELETE /workspace/:Slug",
			params: { Slug: { type: "string", min: 1, max: 500 } },
			async handler(this: WsThis, ctx: Context<{ Slug: string }, Meta>) {
				await this.editor(ctx).remove(requireUser(ctx), ctx.params.Slug);
				return { Success: true, NumRows: 1 };
			},
		},

		// ---- internal actions ----
		accessible: {
			read: true,
			params: {
				roles: { type: "array", items: "string", max: 10_000 },
				forceOverride: { type: "array", optional: true, items: "string", max: 10_000 },
			},
			async handler(this: WsThis, ctx: Context<{ roles: string[]; forceOverride?: string[] }, Meta>): Promise<AccessibleWorkspace[]> {
				const { roles, forceOverride } = ctx.params;
				if (!roles.length) return [];
				const acl = this.aclClient(ctx);
				const rights = rightsByWorkspace(await acl.find({ RoleIDs: roles, Actions: ["read", "write", "deny"] }), roles, forceOverride);
				const access = new Map<string, "r" | "w" | "rw">();
				for (const [ws, r] of rights) {
					const a = accessString(r);
					if (a) access.set(ws, a);
				}
				if (!access.size) return [];
				const docs = sortDocs(await this.repo.byIds([...access.keys()]));
				const rootAcls = await acl.find({ WorkspaceIDs: docs.map((d) => d.UUID), Actions: ["workspace-path"] });
				return docs.map((d) => ({
					UUID: d.UUID,
					Slug: d.Slug,
					Label: d.Label,
					Description: d.Description,
					Scope: d.Scope,
					Access: access.get(d.UUID)!,
					RootNodes: rootsFromAcls(rootAcls.filter((a) => a.WorkspaceID === d.UUID)).RootNodes,
				}));
			},
		},
		ensureDefaults: {
			params: {},
			async handler(this: WsThis, ctx: Context<Record<string, never>, Meta>): Promise<{ Created: string[] }> {
				return { Created: await this.editor(ctx).ensureDefaults() };
			},
		},
	},
	methods: {
		aclClient(this: WsThis, ctx: Context<unknown, Meta>): AclClient {
			return {
				find: (p) => call(ctx, "acl.find", p),
				put: (a) => call(ctx, "acl.put", a),
				deleteWhere: (p) => call(ctx, "acl.deleteWhere", p),
			};
		},
		/** Every ACL of these workspaces, grouped by workspace. */
		async loadAcls(this: WsThis, ctx: Context<unknown, Meta>, ids: string[]): Promise<Map<string, ACL[]>> {
			const out = new Map<string, ACL[]>();
			if (!ids.length) return out;
			for (const a of await this.aclClient(ctx).find({ WorkspaceIDs: ids })) {
				const list = out.get(a.WorkspaceID ?? "");
				if (list) list.push(a);
				else out.set(a.WorkspaceID ?? "", [a]);
			}
			return out;
		},
		present(this: WsThis, doc: WorkspaceDoc, acls: ACL[], user: Identity | null | undefined): Workspace {
			const { RootUUIDs, RootNodes } = rootsFromAcls(acls);
			return {
				UUID: doc.UUID,
				Slug: doc.Slug,
				Label: doc.Label,
				Description: doc.Description,
				Scope: doc.Scope,
				LastUpdated: doc.LastUpdated,
				Policies: doc.Policies,
				PoliciesContextEditable: hasPolicy(doc.Policies, user, "WRITE"),
				Attributes: presentAttributes(doc.Attributes, acls, RootUUIDs),
				RootUUIDs,
				RootNodes,
			};
		},
		editor(this: WsThis, ctx: Context<unknown, Meta>): WorkspaceEditor {
			return new WorkspaceEditor(this.repo, this.aclClient(ctx), async (uuid) => {
				await broadcast(ctx, "identity.changed", uuid ? { kind: "workspace", uuid } : { kind: "workspace" });
			});
		},
	},
	async started(this: WsThis) {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "workspaces", importNedbWorkspaces);
		if (report.imported) this.logger.info(`Imported ${report.documents} workspaces from the NeDB store (kept as ${report.backup})`);
		this.repo = new WorkspacesRepo(this.db);
	},
};

export = WorkspacesService;
