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
import { randomUUID } from "node:crypto";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { loadConfig } from "../lib/config";
import { WorkspacesRepo, importNedbWorkspaces } from "../lib/db/workspaces";
import { importNedbOnce } from "../lib/db/nedb-import";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../lib/errors";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { defaultPolicies, hasPolicy, requireUser, type ResourcePolicy } from "../lib/identity/resource-policy";
import { checkId, type ACL } from "../lib/acl/model";
import { accessString, rightsByWorkspace } from "../lib/acl/merge";
import {
	DEFAULT_WORKSPACES,
	MAX_DESCRIPTION,
	MAX_LABEL,
	SCOPES,
	checkSlugInput,
	checkText,
	dedupSlug,
	matchesAll,
	parseAttributes,
	presentAttributes,
	requestedRoots,
	rootsFromAcls,
	slugify,
	type AccessibleWorkspace,
	type Workspace,
	type WorkspaceDoc,
	type WorkspaceSingleQuery,
} from "../lib/workspaces/model";
import { syncWorkspaceAcls, type AclClient } from "../lib/workspaces/roots";
import { searchParams } from "../lib/cells/params";

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
	findBySlugOrUuid(key: string): Promise<WorkspaceDoc | null>;
	putWorkspace(ctx: Context<PutParams, Meta>): Promise<Workspace>;
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
			retryPolicy: { enabled: true },
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
				// A create that lost its slug or uuid to a concurrent one is done again: it now finds that workspace
				// (the same slug: an update, as if it had come second) or picks the next free slug. Each loss means
				// another request won, so this ends.
				for (let attempt = 1; ; attempt++) {
					try {
						return await this.putWorkspace(ctx);
					} catch (err) {
						if (!(err instanceof ConflictError) || attempt >= 25) throw err;
						await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
					}
				}
			},
		},
		remove: {
			rest: "DELETE /workspace/:Slug",
			params: { Slug: { type: "string", min: 1, max: 500 } },
			async handler(this: WsThis, ctx: Context<{ Slug: string }, Meta>) {
				const user = requireUser(ctx);
				const slug = checkSlugInput(ctx.params.Slug);
				const doc = await this.findBySlugOrUuid(slug);
				if (!doc) throw new NotFoundError(`Workspace ${slug} not found`, "workspace.notfound");
				if (!hasPolicy(doc.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this workspace");
				await this.repo.delete(doc.UUID);
				await this.aclClient(ctx).deleteWhere({ WorkspaceID: doc.UUID });
				await ctx.broadcast("identity.changed", { kind: "workspace", uuid: doc.UUID });
				return { Success: true, NumRows: 1 };
			},
		},

		// ---- internal actions ----
		accessible: {
			retryPolicy: { enabled: true },
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
				const created: string[] = [];
				for (const def of DEFAULT_WORKSPACES) {
					if (await this.repo.byId(def.UUID)) continue;
					// A workspace an administrator made with that slug stands for the default.
					if (await this.repo.bySlug(def.Slug)) continue;
					// ACLs first: a crash before the record is written leaves a retry that redoes them (idempotent).
					await syncWorkspaceAcls(this.aclClient(ctx), { workspaceId: def.UUID, roots: [def.root], defaultRights: def.defaultRights });
					try {
						await this.repo.create({
							UUID: def.UUID,
							Slug: def.Slug,
							Label: def.Label,
							Description: def.Description,
							Scope: "ADMIN",
							LastUpdated: Math.floor(Date.now() / 1000),
							Policies: defaultPolicies(def.UUID, ["profile:standard", "profile:shared"], ["profile:admin"]),
							Attributes: "{}",
						});
						created.push(def.Slug);
					} catch (err) {
						// Another node put it (or a workspace with its slug) in place meanwhile: that one stands.
						if (!(err instanceof ConflictError)) throw err;
					}
				}
				if (created.length) await ctx.broadcast("identity.changed", { kind: "workspace" });
				return { Created: created };
			},
		},
	},
	methods: {
		aclClient(this: WsThis, ctx: Context<unknown, Meta>): AclClient {
			return {
				find: (p) => ctx.call<ACL[], typeof p>("acl.find", p),
				put: (a) => ctx.call<ACL, ACL>("acl.put", a),
				deleteWhere: (p) => ctx.call<number, typeof p>("acl.deleteWhere", p),
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
		async findBySlugOrUuid(this: WsThis, key: string): Promise<WorkspaceDoc | null> {
			return (await this.repo.bySlug(key)) ?? (await this.repo.byId(key));
		},
		async putWorkspace(this: WsThis, ctx: Context<PutParams, Meta>): Promise<Workspace> {
			const user = requireUser(ctx);
			const p = ctx.params;
			const pathSlug = checkSlugInput(p.Slug);
			const uuid = checkId("UUID", p.UUID);
			const existing = uuid ? await this.repo.byId(uuid) : pathSlug ? await this.repo.bySlug(pathSlug) : null;
			if (existing) {
				if (!hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this workspace");
			} else if (!isAdmin(user)) {
				throw new ForbiddenError("Only administrators can create workspaces");
			}

			const label = p.Label !== undefined ? checkText("Label", p.Label, MAX_LABEL).trim() : existing?.Label ?? "";
			if (!label) throw new BadRequestError("Label is required");
			const description = p.Description !== undefined ? checkText("Description", p.Description, MAX_DESCRIPTION) : existing?.Description ?? "";
			const scope = p.Scope && p.Scope !== "ANY" ? p.Scope : existing?.Scope ?? "ADMIN";
			const attrs = parseAttributes(p.Attributes);
			const roots = requestedRoots(p);
			const id = existing?.UUID ?? (uuid || randomUUID());

			let slug = existing?.Slug ?? "";
			const wanted = slugify(pathSlug || label) || "workspace";
			if (!existing || (pathSlug && wanted !== existing.Slug && pathSlug !== existing.Slug)) {
				const taken = await this.repo.slugsLike(wanted);
				if (existing) taken.delete(existing.Slug);
				// The workspace this PUT names was created since it was looked for: done again, the PUT updates it.
				if (!existing && !uuid && pathSlug === wanted && taken.has(wanted)) throw new ConflictError("A workspace with this slug was just created", "workspace.exists");
				// Only a choice: the slug's unique index decides, and a create that loses is done again (put).
				slug = dedupSlug(wanted, (s) => taken.has(s));
			}

			let policies: ResourcePolicy[];
			if (p.Policies?.length) policies = p.Policies.map((pol) => ({ ...pol, Resource: id }));
			else policies = existing?.Policies ?? defaultPolicies(id, ["profile:standard", "profile:shared"], ["profile:admin"]);

			const doc: WorkspaceDoc = {
				UUID: id,
				Slug: slug,
				Label: label,
				Description: description,
				Scope: scope,
				LastUpdated: Math.floor(Date.now() / 1000),
				Policies: policies,
				// Attributes not sent on an update are kept as they were.
				Attributes: p.Attributes !== undefined ? JSON.stringify(attrs.rest) : existing?.Attributes ?? "{}",
			};
			if (existing) {
				if (!(await this.repo.update(doc))) throw new NotFoundError(`Workspace ${existing.Slug} not found`, "workspace.notfound");
			} else await this.repo.create(doc);
			await syncWorkspaceAcls(this.aclClient(ctx), { workspaceId: id, roots, defaultRights: attrs.defaultRights, quota: attrs.quota });
			await ctx.broadcast("identity.changed", { kind: "workspace", uuid: id });

			const stored = await this.repo.byId(id);
			if (!stored) throw new NotFoundError(`Workspace ${slug} not found`, "workspace.notfound");
			const acls = (await this.loadAcls(ctx, [id])).get(id) ?? [];
			return this.present(stored, acls, user);
		},
	},
	async started(this: WsThis) {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "workspaces", importNedbWorkspaces);
		if (report.imported) this.logger.info(`Imported ${report.documents} workspaces from the NeDB store (kept as ${report.backup})`);
		this.repo = new WorkspacesRepo(this.db);
	},
};

export = WorkspacesService;
