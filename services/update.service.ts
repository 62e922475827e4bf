/**
 * update — software updates and usage, for administrators: `POST /update` (the running version and the newer
 * ones the update source UPDATE_URL offers), `PATCH /update/{TargetVersion}` (always refused: Cellar does not
 * replace its own code), `GET /license/stats` (users, workspaces, files and storage counted in the store, live
 * nodes; kept 30 s, ForceRefresh counts again) and `PUT /license/update` (refused: Cellar is AGPL-3.0 and takes
 * no license key). Messages in the caller's language (its `lang` attribute, else its request's Accept-Language).
 * Owns no data; reads counts from the store (lib/db/stats). Emits and consumes nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { StatsRepo } from "../lib/db/stats";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { packageInfo } from "../lib/frontend/version";
import { Updates, type UpdateQuery } from "../lib/update/updates";
import { LicenseStats, refuseLicenseKey } from "../lib/update/license";
import { call } from "../lib/contracts";

interface UpdateVars {
	db: Db;
	license: LicenseStats;
	updates: Updates;
}
interface UpdateMethods {
	languageOf(ctx: Context<unknown, Meta>): Promise<string | undefined>;
}
type UpdateThis = Service & UpdateVars & UpdateMethods;

const UpdateService: ServiceSchema<ServiceSettingSchema, UpdateMethods, UpdateVars> = {
	name: "update",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		required: {
			rest: "POST /update",
			params: {
				Channel: { type: "string", optional: true, max: 64 },
				PackageName: { type: "string", optional: true, max: 128 },
				CurrentVersion: { type: "string", optional: true, max: 64 },
				GOOS: { type: "string", optional: true, max: 32 },
				GOARCH: { type: "string", optional: true, max: 32 },
				ServiceName: { type: "string", optional: true, max: 128 },
				LicenseInfo: { type: "record", optional: true, key: { type: "string", max: 64 }, value: { type: "string", max: 1024 } },
			},
			async handler(this: UpdateThis, ctx: Context<UpdateQuery, Meta>) {
				requireAdmin(ctx);
				return this.updates.available(ctx.params, await this.languageOf(ctx));
			},
		},
		apply: {
			rest: "PATCH /update/:TargetVersion",
			params: { TargetVersion: { type: "string", min: 1, max: 64 }, PackageName: { type: "string", optional: true, max: 128 } },
			async handler(this: UpdateThis, ctx: Context<{ TargetVersion: string }, Meta>) {
				requireAdmin(ctx);
				return this.updates.refuseApply(ctx.params.TargetVersion, await this.languageOf(ctx));
			},
		},
		licenseStats: {
			rest: "GET /license/stats",
			params: { ForceRefresh: { type: "boolean", optional: true, convert: true } },
			async handler(this: UpdateThis, ctx: Context<{ ForceRefresh?: boolean }, Meta>) {
				requireAdmin(ctx);
				const nodes = (this.broker.registry as unknown as { getNodeList(o: { onlyAvailable: boolean; withServices: boolean }): unknown[] }).getNodeList({ onlyAvailable: true, withServices: false });
				return this.license.answer({ force: ctx.params.ForceRefresh === true, peers: nodes.length, lang: await this.languageOf(ctx) });
			},
		},
		licenseUpdate: {
			rest: "PUT /license/update",
			params: { LicenseString: { type: "string", optional: true, max: 65536 } },
			async handler(this: UpdateThis, ctx: Context<{ LicenseString?: string }, Meta>) {
				requireAdmin(ctx);
				refuseLicenseKey(await this.languageOf(ctx));
			},
		},
	},
	methods: {
		/** The caller's own language (its `lang` attribute, as its mails use), else the one its request asks for. */
		async languageOf(this: UpdateThis, ctx: Context<unknown, Meta>): Promise<string | undefined> {
			const user = ctx.meta.user;
			const own = user ? await call(ctx, "users.byUuid", { uuid: user.Uuid }).then((u) => u?.Attributes.lang, () => undefined) : undefined;
			return own || ctx.meta.language;
		},
	},
	started(this: UpdateThis) {
		const pkg = packageInfo();
		const running = { name: pkg.name, version: pkg.version, license: pkg.license };
		const stats = new StatsRepo(this.db);
		this.license = new LicenseStats(running, () => stats.collect());
		this.updates = new Updates(running, loadConfig().updateUrl);
	},
};

export = UpdateService;
