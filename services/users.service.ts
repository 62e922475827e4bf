/**
 * users — owns users and groups (a group is a user record with IsGroup), their password hashes, profiles,
 * locks and explicitly assigned roles; creates each one's personal role in the roles service.
 * Password logins unknown here, or of users that came from an external directory, are checked by the directories
 * service (`directories.authenticate`), which makes their local user on the first login.
 * Emits `identity.changed` after any change. Consumes `identity.changed` (drops its cache).
 * Emits `audit.log` (user.delete, user.roles) after a user is deleted or given roles through the API.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { UsersRepo, importNedbUsers } from "../lib/db/users";
import { importNedbOnce } from "../lib/db/nedb-import";
import { UserDirectory } from "../lib/identity/user-directory";
import { UserAdmin, type RoleClient, type UserBody } from "../lib/identity/user-admin";
import { NotFoundError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { loadConfig } from "../lib/config";
import { publicUser, type UserDoc, type UserQuery } from "../lib/identity/users";
import { searchParams } from "../lib/cells/params";
import { broadcast, call, serviceRuns, type IdentityChange } from "../lib/contracts";
import { MAX_SYNC_USERS, type ExternalAccount, type ExternalAuthenticator } from "../lib/identity/external-auth";
import { audit } from "../lib/logs/audit";

const userBody = {
	Login: { type: "string", max: 255 },
	Uuid: { type: "string", optional: true, max: 128 },
	Password: { type: "string", optional: true, max: 1024 },
	OldPassword: { type: "string", optional: true, max: 1024 },
	GroupPath: { type: "string", optional: true, max: 1024 },
	IsGroup: { type: "boolean", optional: true },
	GroupLabel: { type: "string", optional: true, max: 255 },
	Attributes: { type: "record", optional: true, key: { type: "string", max: 255 }, value: { type: "string", max: 65536 } },
	Roles: { type: "array", optional: true, items: "object" },
	Policies: { type: "array", optional: true, items: "object" },
	PoliciesContextEditable: { type: "boolean", optional: true },
	LastConnected: { type: "number", optional: true },
} as const;

interface Vars extends DatabaseVars {
	admin: UserAdmin;
}
type This = Service & Vars;

const UsersService: ServiceSchema<ServiceSettingSchema, object, Vars> = {
	name: "users",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /user",
			httpCache: true,
			read: true,
			params: searchParams,
			async handler(this: This, ctx: Context<{ Queries?: UserQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND"; CountOnly?: boolean }, Meta>) {
				return this.admin.search(requireUser(ctx), ctx.params);
			},
		},
		get: {
			rest: "GET /user/:Login",
			httpCache: true,
			read: true,
			params: { Login: { type: "string", min: 1, max: 255 } },
			async handler(this: This, ctx: Context<{ Login: string }, Meta>) {
				return this.admin.get(requireUser(ctx), ctx.params.Login);
			},
		},
		put: {
			rest: "PUT /user/:Login",
			params: userBody,
			async handler(this: This, ctx: Context<UserBody, Meta>) {
				const caller = requireUser(ctx);
				return this.admin.present(await this.admin.put(caller, ctx.params), caller);
			},
		},
		remove: {
			rest: "DELETE /user/:Login",
			params: { Login: { type: "string", min: 1, max: 1024 } },
			async handler(this: This, ctx: Context<{ Login: string }, Meta>) {
				const out = await this.admin.removeUserOrGroup(requireUser(ctx), ctx.params.Login);
				audit(ctx, "user.delete", { target: ctx.params.Login });
				return out;
			},
		},
		putRoles: {
			rest: "PUT /user/roles/:Login",
			params: userBody,
			async handler(this: This, ctx: Context<UserBody, Meta>) {
				const caller = requireUser(ctx);
				const out = this.admin.present(await this.admin.putRoles(caller, ctx.params), caller);
				audit(ctx, "user.roles", { target: ctx.params.Login, targetUuid: ctx.params.Uuid, detail: `roles: ${(ctx.params.Roles ?? []).map((r) => r.Uuid).join(", ")}` });
				return out;
			},
		},

		// ---- internal ----
		authInfo: {
			read: true,
			params: { uuid: "string" },
			async handler(this: This, ctx: Context<{ uuid: string }>) {
				const u: UserDoc | undefined = await this.admin.directory.byUuid(ctx.params.uuid);
				return u && !u.IsGroup ? this.admin.authInfo(u) : null;
			},
		},
		checkPassword: {
			params: { login: { type: "string", max: 1024 }, password: { type: "string", max: 1024 }, ip: { type: "string", optional: true, max: 128 } },
			async handler(this: This, ctx: Context<{ login: string; password: string; ip?: string }>) {
				return this.admin.checkPassword(ctx.params.login, ctx.params.password, ctx.params.ip);
			},
		},
		byLogin: {
			read: true,
			params: { login: "string" },
			async handler(this: This, ctx: Context<{ login: string }>) {
				const u = await this.admin.directory.byLogin(ctx.params.login);
				if (!u) throw new NotFoundError(`User ${ctx.params.login} not found`, "user.notfound");
				return publicUser(u);
			},
		},
		syncExternal: {
			params: {
				source: { type: "string", min: 1, max: 64 },
				accounts: { type: "array", max: MAX_SYNC_USERS, items: { type: "object", props: { source: "string", dn: "string", login: { type: "string", min: 1, max: 255 } } } },
				complete: "boolean",
			},
			async handler(this: This, ctx: Context<{ source: string; accounts: ExternalAccount[]; complete: boolean }>) {
				return this.admin.syncExternal(ctx.params.source, ctx.params.accounts, ctx.params.complete);
			},
		},
		setAttribute: {
			params: { uuid: { type: "string", max: 128 }, name: { type: "string", min: 1, max: 64, pattern: /^[A-Za-z][A-Za-z0-9_]*$/ }, value: { type: "string", max: 4096, nullable: true } },
			async handler(this: This, ctx: Context<{ uuid: string; name: string; value: string | null }>) {
				await this.admin.setAttribute(ctx.params.uuid, ctx.params.name, ctx.params.value);
				return { Success: true as const };
			},
		},
		byEmail: {
			read: true,
			params: { email: "string" },
			async handler(this: This, ctx: Context<{ email: string }>) {
				const u = await this.admin.directory.byEmail(ctx.params.email);
				if (!u) throw new NotFoundError("No user with this email", "user.notfound");
				return publicUser(u);
			},
		},
		byUuid: {
			read: true,
			params: { uuid: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string }>) {
				const u = await this.admin.directory.byUuid(ctx.params.uuid);
				return u ? publicUser(u) : null;
			},
		},
		createHidden: {
			params: {
				owner: { type: "object", props: { Login: { type: "string", max: 255 }, GroupPath: { type: "string", max: 1024 } } },
				login: { type: "string", min: 8, max: 64, pattern: /^[0-9a-f]+$/ },
				password: { type: "string", min: 8, max: 1024 },
			},
			async handler(this: This, ctx: Context<{ owner: { Login: string; GroupPath: string }; login: string; password: string }>) {
				return this.admin.createHidden(ctx.params.owner, ctx.params.login, ctx.params.password);
			},
		},
		deleteHidden: {
			params: { uuid: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string }>) {
				return { Deleted: await this.admin.deleteHidden(ctx.params.uuid) };
			},
		},
		setPassword: {
			params: { login: "string", password: { type: "string", min: 8, max: 1024 } },
			async handler(this: This, ctx: Context<{ login: string; password: string }>) {
				await this.admin.setPassword(ctx.params.login, ctx.params.password);
				return { Success: true };
			},
		},
		ensureAdmin: {
			params: { login: { type: "string", optional: true }, password: { type: "string", optional: true } },
			async handler(this: This, ctx: Context<{ login?: string; password?: string }>) {
				const cfg = loadConfig();
				return this.admin.ensureAdmin(ctx.params.login || cfg.adminLogin, ctx.params.password || cfg.adminPassword);
			},
		},
	},
	events: {
		"identity.changed"(this: Partial<This>, ctx: Context<IdentityChange>) {
			if (UserDirectory.affectedBy(ctx.params)) this.admin?.directory.invalidate();
		},
	},
	async started(this: This) {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "users", (trx, docs) =>
			importNedbUsers(trx, docs, (doc, why) => this.logger.warn(`NeDB user document ${doc._id} not imported: ${why}`)),
		);
		if (report.imported) this.logger.info(`Imported ${report.documents} users and groups from the NeDB store (kept as ${report.backup})`);
		const directory = new UserDirectory(new UsersRepo(this.db), (change) => broadcast(this.broker, "identity.changed", change));
		const roles: RoleClient = {
			ensure: (role) => call(this.broker, "roles.ensure", role),
			delete: (uuids) => call(this.broker, "roles.delete", { uuids }),
			getMany: (uuids) => call(this.broker, "roles.getMany", { uuids }),
			autoApplied: (profile) => call(this.broker, "roles.autoApplied", { profile }),
		};
		const broker = this.broker;
		// Directories answer within their own short timeouts, one after the other; beyond 20 s the login fails
		// here, before the caller's own call (REQUEST_TIMEOUT, 30 s by default) gives up on this service.
		const external: ExternalAuthenticator = {
			async authenticate(login, password, source) {
				if (!serviceRuns(broker, "directories")) return source ? { status: "unavailable", reason: "no node runs the directories service" } : { status: "unknown" };
				try {
					return await call(broker, "directories.authenticate", { login, password, ...(source ? { source } : {}) }, { timeout: 20_000, retries: 0 });
				} catch (e) {
					return { status: "unavailable", reason: (e as Error).message };
				}
			},
		};
		this.admin = new UserAdmin(
			directory,
			roles,
			() => {
				const cfg = loadConfig();
				return { maxFailed: cfg.maxFailedLogins, lockSeconds: cfg.loginLockDuration, delayMaxSeconds: cfg.loginDelayMax };
			},
			(message) => this.logger.warn(message),
			external,
		);
	},
};

export = UsersService;
