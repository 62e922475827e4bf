/**
 * update — software updates and usage, for administrators: `POST /update` (the running version and the newer
 * ones the update source UPDATE_URL offers), `PATCH /update/{TargetVersion}` (always refused: Cellar does not
 * replace its own code), `GET /license/stats` (users, workspaces, files and storage counted in the store, live
 * nodes) and `PUT /license/update` (refused: Cellar is AGPL-3.0 and takes no license key). Owns no data; reads
 * counts from the store (lib/db/stats). Emits and consumes nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { StatsRepo } from "../lib/db/stats";
import { loadConfig } from "../lib/config";
import { BadRequestError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { packageInfo } from "../lib/frontend/version";
import { translate } from "../lib/frontend/i18n";
import { Updates, type UpdateQuery } from "../lib/update/updates";

interface UpdateVars {
	db: Db;
	stats: StatsRepo;
	updates: Updates;
}
type UpdateThis = Service & UpdateVars;

const UpdateService: ServiceSchema<ServiceSettingSchema, Record<string, never>, UpdateVars> = {
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
				return this.updates.available(ctx.params);
			},
		},
		apply: {
			rest: "PATCH /update/:TargetVersion",
			params: { TargetVersion: { type: "string", min: 1, max: 64 }, PackageName: { type: "string", optional: true, max: 128 } },
			handler(this: UpdateThis, ctx: Context<{ TargetVersion: string }, Meta>) {
				requireAdmin(ctx);
				return this.updates.refuseApply(ctx.params.TargetVersion);
			},
		},
		licenseStats: {
			rest: "GET /license/stats",
			params: { ForceRefresh: { type: "boolean", optional: true, convert: true } },
			async handler(this: UpdateThis, ctx: Context<{ ForceRefresh?: boolean }, Meta>) {
				requireAdmin(ctx);
				const s = await this.stats.collect();
				const nodes = (this.broker.registry as unknown as { getNodeList(o: { onlyAvailable: boolean; withServices: boolean }): unknown[] }).getNodeList({ onlyAvailable: true, withServices: false });
				const pkg = packageInfo();
				// No license to describe: the License object carries what Cellar is and what it holds, every count live.
				return {
					ActiveUsers: String(s.users),
					ActivePeers: String(nodes.length),
					License: {
						Id: pkg.license,
						AccountName: translate(undefined, "license.agpl"),
						Features: {
							License: pkg.license,
							Version: pkg.version,
							Users: String(s.users),
							Groups: String(s.groups),
							Workspaces: String(s.workspaces),
							Cells: String(s.cells),
							Files: String(s.files),
							Folders: String(s.folders),
							StorageUsedBytes: String(s.filesBytes),
							VersionsStorageBytes: String(s.versionsBytes),
						},
					},
				};
			},
		},
		licenseUpdate: {
			rest: "PUT /license/update",
			params: { LicenseString: { type: "string", optional: true, max: 65536 } },
			handler(ctx: Context<{ LicenseString?: string }, Meta>) {
				requireAdmin(ctx);
				throw new BadRequestError(`${translate(undefined, "license.agpl")} and accepts none: nothing to update`);
			},
		},
	},
	started(this: UpdateThis) {
		const pkg = packageInfo();
		this.stats = new StatsRepo(this.db);
		this.updates = new Updates({ name: pkg.name, version: pkg.version, license: pkg.license }, loadConfig().updateUrl);
	},
};

export = UpdateService;
