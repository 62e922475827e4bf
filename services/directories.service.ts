/**
 * directories — external (LDAP) directories (Cells enterprise): `GET /config/directories`,
 * `PUT|DELETE /config/directories/{ConfigId}` (admins; the bind password is stored, shown masked), and the
 * tests an admin runs from the form: `POST /config/directories-test/ping` (connect and bind) and
 * `POST /config/directories-test/search` (the users the configuration finds). Internal `directories.authenticate`:
 * the users service asks it for password logins a directory may know (lib/identity/external-auth). Emits
 * `audit.log` (directory.update, directory.delete) after each write; consumes nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { DirectoriesRepo } from "../lib/db";
import { DirectoriesAdmin } from "../lib/directories/admin";
import type { DirectoryConfig, LdapSearchFilter } from "../lib/directories/model";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { audit } from "../lib/logs/audit";

const str = (max: number) => ({ type: "string", optional: true, max }) as const;
const searchFilter = {
	type: "object",
	optional: true,
	props: { DNs: { type: "array", optional: true, max: 32, items: { type: "string", max: 1024 } }, Filter: str(4096), IDAttribute: str(255), DisplayAttribute: str(255), Scope: str(16) },
} as const;
const config = {
	type: "object",
	optional: true,
	props: {
		ConfigId: str(64),
		DomainName: str(255),
		Host: str(300),
		Connection: str(16),
		BindAnonymous: { type: "boolean", optional: true },
		BindDN: str(1024),
		BindPW: str(1024),
		SkipVerifyCertificate: { type: "boolean", optional: true },
		RootCA: str(1024),
		RootCAData: str(65536),
		PageSize: { type: "number", optional: true, integer: true, min: 0, max: 100000, convert: true },
		User: searchFilter,
		MappingRules: { type: "array", optional: true, max: 256, items: "object" },
		MemberOfMapping: { type: "object", optional: true },
		RolePrefix: str(255),
		Schedule: str(255),
		SchedulerDetails: str(1024),
		SyncOnly: { type: "boolean", optional: true },
	},
} as const;
const configId = { type: "string", min: 1, max: 64 } as const;

interface Vars extends DatabaseVars {
	directories: DirectoriesAdmin;
}
type This = Service & Vars;

const DirectoriesService: ServiceSchema<ServiceSettingSchema, object, Vars> = {
	name: "directories",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		list: {
			read: true,
			rest: "GET /config/directories",
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { Directories: await this.directories.list() };
			},
		},
		put: {
			rest: "PUT /config/directories/:ConfigId",
			params: { ConfigId: configId, Config: config },
			async handler(this: This, ctx: Context<{ ConfigId: string; Config?: DirectoryConfig }, Meta>) {
				requireAdmin(ctx);
				const saved = await this.directories.put(ctx.params.ConfigId, ctx.params.Config ?? {});
				audit(ctx, "directory.update", { target: `directory ${ctx.params.ConfigId}`, detail: saved.Host });
				return { Success: true };
			},
		},
		remove: {
			rest: "DELETE /config/directories/:ConfigId",
			params: { ConfigId: configId },
			async handler(this: This, ctx: Context<{ ConfigId: string }, Meta>) {
				requireAdmin(ctx);
				await this.directories.delete(ctx.params.ConfigId);
				audit(ctx, "directory.delete", { target: `directory ${ctx.params.ConfigId}` });
				return { Success: true };
			},
		},
		ping: {
			rest: "POST /config/directories-test/ping",
			params: { Config: config, Bind: { type: "boolean", optional: true } },
			async handler(this: This, ctx: Context<{ Config?: DirectoryConfig; Bind?: boolean }, Meta>) {
				requireAdmin(ctx);
				return this.directories.ping(ctx.params.Config ?? {}, ctx.params.Bind ?? true);
			},
		},
		search: {
			rest: "POST /config/directories-test/search",
			params: {
				Config: config,
				Filter: searchFilter,
				Offset: { type: "number", optional: true, integer: true, min: 0, convert: true },
				Limit: { type: "number", optional: true, integer: true, min: 0, convert: true },
			},
			async handler(this: This, ctx: Context<{ Config?: DirectoryConfig; Filter?: LdapSearchFilter; Offset?: number; Limit?: number }, Meta>) {
				requireAdmin(ctx);
				return this.directories.search(ctx.params.Config ?? {}, ctx.params.Filter, ctx.params.Offset, ctx.params.Limit);
			},
		},

		// ---- internal ----
		authenticate: {
			params: { login: { type: "string", max: 1024 }, password: { type: "string", max: 1024 }, source: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<{ login: string; password: string; source?: string }>) {
				return this.directories.authenticate(ctx.params.login, ctx.params.password, ctx.params.source);
			},
		},
	},
	async started(this: This) {
		this.directories = new DirectoriesAdmin(new DirectoriesRepo(this.db));
	},
};

export = DirectoriesService;
