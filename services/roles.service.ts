/**
 * roles — owns roles: the root group role, profile roles (AutoApplies), team roles, and the personal role of
 * every user and group (same uuid as the user or group). Roles carry resource policies; their ACLs live in the
 * acl service. Emits `identity.changed` after any change (gateways drop cached identities).
 */
import type { Context, ServiceSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { loadConfig } from "../lib/config";
import { RolesRepo, importNedbRoles } from "../lib/db/roles";
import { importNedbOnce } from "../lib/db/nedb-import";
import { ConflictError, ForbiddenError, NotFoundError, BadRequestError } from "../lib/errors";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { hasPolicy, requireUser, defaultPolicies, type ResourcePolicy } from "../lib/identity/resource-policy";
import { checkIdentifier, wildcard } from "../lib/identity/validate";
import type { Role } from "../lib/identity/roles";
import { RoleDirectory } from "../lib/identity/role-directory";
import { searchParams } from "../lib/cells/params";
import { broadcast, type IdentityChange } from "../lib/contracts";

interface RoleQuery {
	Uuid?: string[];
	Label?: string;
	IsTeam?: boolean;
	IsGroupRole?: boolean;
	IsUserRole?: boolean;
	HasAutoApply?: boolean;
	not?: boolean;
}

const DEFAULT_ROLES: Role[] = [
	{ Uuid: "ROOT_GROUP", Label: "Root Group", GroupRole: true },
	{ Uuid: "ADMINS", Label: "Administrators", AutoApplies: ["admin"] },
	{ Uuid: "EXTERNAL_USERS", Label: "External Users", AutoApplies: ["shared"] },
];

const policyParam = { type: "array", optional: true, items: "object" } as const;
const roleParams = {
	Uuid: { type: "string", min: 1, max: 128 },
	Label: { type: "string", optional: true, max: 255 },
	IsTeam: { type: "boolean", optional: true },
	GroupRole: { type: "boolean", optional: true },
	UserRole: { type: "boolean", optional: true },
	AutoApplies: { type: "array", optional: true, items: { type: "enum", values: ["admin", "standard", "shared"] } },
	ForceOverride: { type: "boolean", optional: true },
	Policies: policyParam,
	LastUpdated: { type: "number", optional: true },
	PoliciesContextEditable: { type: "boolean", optional: true },
} as const;

function matches(r: Role, q: RoleQuery): boolean {
	let ok = true;
	if (q.Uuid?.length) ok &&= q.Uuid.includes(r.Uuid);
	if (q.Label) ok &&= wildcard(q.Label.includes("*") ? q.Label : `*${q.Label}*`).test(r.Label ?? "");
	if (q.IsTeam) ok &&= !!r.IsTeam;
	if (q.IsGroupRole) ok &&= !!r.GroupRole;
	if (q.IsUserRole) ok &&= !!r.UserRole;
	if (q.HasAutoApply) ok &&= !!r.AutoApplies?.length;
	return q.not ? !ok : ok;
}

const RolesService: ServiceSchema = {
	name: "roles",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /role",
			httpCache: true,
			retryPolicy: { enabled: true },
			params: searchParams,
			async handler(ctx: Context<{ Queries?: RoleQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND" }, Meta>) {
				const user = requireUser(ctx);
				const all = (await this.allRoles()).filter((r: Role) => hasPolicy(r.Policies, user, "READ"));
				const qs = ctx.params.Queries ?? [];
				const hits = qs.length ? all.filter((r: Role) => (ctx.params.Operation === "AND" ? qs.every((q) => matches(r, q)) : qs.some((q) => matches(r, q)))) : all;
				const offset = ctx.params.Offset ?? 0;
				const page = ctx.params.Limit ? hits.slice(offset, offset + ctx.params.Limit) : hits.slice(offset);
				return { Roles: page.map((r: Role) => this.present(r, user)), Total: hits.length };
			},
		},
		get: {
			rest: "GET /role/:Uuid",
			httpCache: true,
			retryPolicy: { enabled: true },
			params: { Uuid: { type: "string", min: 1, max: 128 } },
			async handler(ctx: Context<{ Uuid: string }, Meta>) {
				const user = requireUser(ctx);
				const role = await this.findRole(ctx.params.Uuid);
				if (!role || !hasPolicy(role.Policies, user, "READ")) throw new NotFoundError(`Role ${ctx.params.Uuid} not found`, "role.notfound");
				return this.present(role, user);
			},
		},
		put: {
			rest: "PUT /role/:Uuid",
			params: roleParams,
			async handler(ctx: Context<Role, Meta>) {
				const user = requireUser(ctx);
				checkIdentifier("Uuid", ctx.params.Uuid);
				const dir = this.directory as RoleDirectory;
				for (let attempt = 1; ; attempt++) {
					const existing = await this.findRole(ctx.params.Uuid);
					if (existing) {
						if (!hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this role");
					} else if (!isAdmin(user) && !ctx.params.IsTeam) {
						throw new ForbiddenError("Only administrators can create roles other than teams");
					}
					if (!isAdmin(user) && ctx.params.AutoApplies?.length) throw new ForbiddenError("Only administrators can set AutoApplies");
					if (!existing && !ctx.params.Label) throw new BadRequestError("Label is required for a new role");
					const role: Role = {
						Uuid: ctx.params.Uuid,
						Label: ctx.params.Label ?? existing?.Label ?? ctx.params.Uuid,
						IsTeam: ctx.params.IsTeam ?? existing?.IsTeam,
						GroupRole: existing?.GroupRole,
						UserRole: existing?.UserRole,
						AutoApplies: ctx.params.AutoApplies ?? existing?.AutoApplies,
						ForceOverride: ctx.params.ForceOverride ?? existing?.ForceOverride,
						Policies: isAdmin(user) && ctx.params.Policies?.length ? ctx.params.Policies : existing?.Policies ?? this.policiesFor(user),
					};
					try {
						const saved = existing ? await dir.update(role) : await dir.create(role);
						if (!saved) throw new NotFoundError(`Role ${ctx.params.Uuid} not found`, "role.notfound");
						return this.present(saved, user);
					} catch (err) {
						// Created meanwhile (the id's primary key said so), maybe by another node whose broadcast has
						// not come yet: done again as an update of that role, with its permissions, as if second.
						if (!(err instanceof ConflictError) || attempt >= 3) throw err;
						dir.invalidate();
					}
				}
			},
		},
		remove: {
			rest: "DELETE /role/:Uuid",
			params: { Uuid: { type: "string", min: 1, max: 128 } },
			async handler(ctx: Context<{ Uuid: string }, Meta>) {
				const user = requireUser(ctx);
				const role = await this.findRole(ctx.params.Uuid);
				if (!role) throw new NotFoundError(`Role ${ctx.params.Uuid} not found`, "role.notfound");
				if (!hasPolicy(role.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to delete this role");
				if (role.UserRole || role.GroupRole) throw new ForbiddenError("A user's or group's own role is deleted with the user or group");
				if (DEFAULT_ROLES.some((r) => r.Uuid === role.Uuid)) throw new ForbiddenError("Default roles cannot be deleted");
				await (this.directory as RoleDirectory).delete([role.Uuid]);
				return { Uuid: role.Uuid };
			},
		},

		// ---- internal ----
		ensureDefaults: {
			params: {},
			async handler(ctx: Context<unknown, Meta>) {
				let created = 0;
				for (const r of DEFAULT_ROLES) {
					const out = await (this.directory as RoleDirectory).ensure({ ...r, Policies: defaultPolicies(r.Uuid, ["profile:standard", "profile:shared"], ["profile:admin"]) });
					if (out.created) created++;
				}
				return { created };
			},
		},
		ensure: {
			params: roleParams,
			async handler(ctx: Context<Role, Meta>) {
				return (await (this.directory as RoleDirectory).ensure({ ...ctx.params })).role;
			},
		},
		getMany: {
			retryPolicy: { enabled: true },
			params: { uuids: { type: "array", items: "string" } },
			async handler(ctx: Context<{ uuids: string[] }>) {
				return (this.directory as RoleDirectory).many(ctx.params.uuids);
			},
		},
		autoApplied: {
			retryPolicy: { enabled: true },
			params: { profile: "string" },
			async handler(ctx: Context<{ profile: string }>) {
				return (this.directory as RoleDirectory).autoApplied(ctx.params.profile);
			},
		},
		delete: {
			params: { uuids: { type: "array", items: "string" } },
			async handler(ctx: Context<{ uuids: string[] }, Meta>) {
				await (this.directory as RoleDirectory).delete(ctx.params.uuids);
				return { deleted: ctx.params.uuids.length };
			},
		},
	},
	events: {
		"identity.changed"(ctx: Context<IdentityChange>) {
			if (RoleDirectory.affectedBy(ctx.params)) (this.directory as RoleDirectory | undefined)?.invalidate();
		},
	},
	methods: {
		async allRoles(): Promise<Role[]> {
			return (this.directory as RoleDirectory).all();
		},
		async findRole(uuid: string): Promise<Role | undefined> {
			return (this.directory as RoleDirectory).find(uuid);
		},
		policiesFor(user: Identity): ResourcePolicy[] {
			return [
				...defaultPolicies("role", isAdmin(user) ? ["profile:standard", "profile:shared"] : [`user:${user.Login}`], ["profile:admin"]),
				...(isAdmin(user) ? [] : [{ Resource: "role", Action: "WRITE" as const, Subject: `user:${user.Login}`, Effect: "allow" as const }]),
			];
		},
		present(role: Role, user: Identity): Role {
			return { ...role, PoliciesContextEditable: hasPolicy(role.Policies, user, "WRITE") };
		},
	},
	async started() {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "roles", importNedbRoles);
		if (report.imported) this.logger.info(`Imported ${report.documents} roles from the NeDB store (kept as ${report.backup})`);
		this.directory = new RoleDirectory(new RolesRepo(this.db), async (uuids) => {
			for (const uuid of uuids) await broadcast(this.broker, "identity.changed", { kind: "role", uuid });
		});
	},
};

export = RolesService;
