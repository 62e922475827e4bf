/**
 * roles — owns roles: the root group role, profile roles (AutoApplies), team roles, and the personal role of
 * every user and group (same uuid as the user or group). Roles carry resource policies; their ACLs live in the
 * acl service. Rules in lib/identity/role-admin (RoleAdmin), storage and cache in lib/identity/role-directory.
 * Emits `identity.changed` {kind: "role", uuid} after any change (gateways drop cached identities).
 * Consumes `identity.changed` (drops its cache unless the change is about users, groups, ACLs or workspaces).
 * Emits `audit.log` (role.update, role.delete) after a role is saved or deleted through the API.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { loadConfig } from "../lib/config";
import { RolesRepo, importNedbRoles } from "../lib/db/roles";
import { importNedbOnce } from "../lib/db/nedb-import";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { audit } from "../lib/logs/audit";
import type { Role } from "../lib/identity/roles";
import { RoleDirectory } from "../lib/identity/role-directory";
import { RoleAdmin, type RoleSearch } from "../lib/identity/role-admin";
import { searchParams } from "../lib/cells/params";
import { broadcast, type IdentityChange } from "../lib/contracts";

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

interface Vars extends DatabaseVars {
	admin: RoleAdmin;
}
type This = Service & Vars;

const RolesService: ServiceSchema<ServiceSettingSchema, object, Vars> = {
	name: "roles",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /role",
			httpCache: true,
			read: true,
			params: searchParams,
			handler(this: This, ctx: Context<RoleSearch, Meta>) {
				return this.admin.search(requireUser(ctx), ctx.params);
			},
		},
		get: {
			rest: "GET /role/:Uuid",
			httpCache: true,
			read: true,
			params: { Uuid: { type: "string", min: 1, max: 128 } },
			handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				return this.admin.get(requireUser(ctx), ctx.params.Uuid);
			},
		},
		put: {
			rest: "PUT /role/:Uuid",
			params: roleParams,
			async handler(this: This, ctx: Context<Role, Meta>) {
				const out = await this.admin.put(requireUser(ctx), ctx.params);
				audit(ctx, "role.update", { target: ctx.params.Label || ctx.params.Uuid, targetUuid: ctx.params.Uuid });
				return out;
			},
		},
		remove: {
			rest: "DELETE /role/:Uuid",
			params: { Uuid: { type: "string", min: 1, max: 128 } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				const out = await this.admin.remove(requireUser(ctx), ctx.params.Uuid);
				audit(ctx, "role.delete", { target: ctx.params.Uuid, targetUuid: ctx.params.Uuid });
				return out;
			},
		},

		// ---- internal ----
		ensureDefaults: {
			params: {},
			handler(this: This) {
				return this.admin.ensureDefaults();
			},
		},
		ensure: {
			params: roleParams,
			async handler(this: This, ctx: Context<Role, Meta>) {
				return (await this.admin.directory.ensure({ ...ctx.params })).role;
			},
		},
		getMany: {
			read: true,
			params: { uuids: { type: "array", items: "string" } },
			handler(this: This, ctx: Context<{ uuids: string[] }>) {
				return this.admin.directory.many(ctx.params.uuids);
			},
		},
		autoApplied: {
			read: true,
			params: { profile: "string" },
			handler(this: This, ctx: Context<{ profile: string }>) {
				return this.admin.directory.autoApplied(ctx.params.profile);
			},
		},
		delete: {
			params: { uuids: { type: "array", items: "string" } },
			async handler(this: This, ctx: Context<{ uuids: string[] }, Meta>) {
				await this.admin.directory.delete(ctx.params.uuids);
				return { deleted: ctx.params.uuids.length };
			},
		},
	},
	events: {
		"identity.changed"(this: Partial<This>, ctx: Context<IdentityChange>) {
			if (RoleDirectory.affectedBy(ctx.params)) this.admin?.directory.invalidate();
		},
	},
	async started(this: This) {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "roles", importNedbRoles);
		if (report.imported) this.logger.info(`Imported ${report.documents} roles from the NeDB store (kept as ${report.backup})`);
		const directory = new RoleDirectory(new RolesRepo(this.db), async (uuids) => {
			for (const uuid of uuids) await broadcast(this.broker, "identity.changed", { kind: "role", uuid });
		});
		this.admin = new RoleAdmin(directory);
	},
};

export = RolesService;
