/**
 * directories — external (LDAP) directories (Cells enterprise): `GET /config/directories`,
 * `PUT|DELETE /config/directories/{ConfigId}` (admins; the bind password is stored, shown masked), and the
 * tests an admin runs from the form: `POST /config/directories-test/ping` (connect and bind) and
 * `POST /config/directories-test/search` (the users the configuration finds). Internal `directories.authenticate`:
 * the users service asks it for password logins a directory may know (lib/identity/external-auth). Emits
 * `audit.log` (directory.update, directory.delete) after each write; consumes nothing. Directories with a
 * Schedule are synchronised by one node (lease `directories.sync`): it calls `users.syncExternal`.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { DirectoriesRepo, LeasesRepo } from "../lib/db";
import { PeriodicLease } from "../lib/cluster/periodic";
import { call } from "../lib/contracts";
import { DirectorySync } from "../lib/directories/sync";
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

/** How often each node looks for due synchronisations (a schedule's precision). */
const SYNC_TICK_MS = 30_000;

interface Vars extends DatabaseVars {
	directories: DirectoriesAdmin;
	sync: DirectorySync;
	syncLease: PeriodicLease;
	syncTimer: NodeJS.Timeout | undefined;
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
		const store = new DirectoriesRepo(this.db);
		this.directories = new DirectoriesAdmin(store);
		// A synchronisation lists the directory once and hands its users over in one call: a large one takes time.
		this.sync = new DirectorySync(
			store,
			(source, accounts, complete) => call(this.broker, "users.syncExternal", { source, accounts, complete }, { timeout: 10 * 60_000, retries: 0 }),
			(message) => this.logger.info(message),
		);
		this.syncLease = new PeriodicLease(new LeasesRepo(this.db), "directories.sync", this.broker.nodeID, 2 * SYNC_TICK_MS, (e) =>
			this.logger.warn(`Directory synchronisation lease renewal failed: ${(e as Error).message}`),
		);
		let running = false;
		this.syncTimer = setInterval(() => {
			if (running) return;
			running = true;
			this.syncLease
				.run(() => this.sync.tick())
				.catch((e: unknown) => this.logger.warn(`Directory synchronisation failed: ${(e as Error).message}`))
				.finally(() => (running = false));
		}, SYNC_TICK_MS);
		this.syncTimer.unref();
	},
	async stopped(this: This) {
		if (this.syncTimer) clearInterval(this.syncTimer);
		// Before the mixin closes the database (mixins stop after the service).
		await this.syncLease?.release().catch(() => undefined);
	},
};

export = DirectoriesService;
