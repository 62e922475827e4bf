/**
 * versions — file versioning: the versioning policies (tree.VersioningPolicy, REST /config/versioning*,
 * administrators only, Cells' three first-run policies seeded once) and the versions themselves: before the tree
 * replaces a file's content it calls `versions.capture`, which copies the old object into the policy's versions
 * datasource (key `<nodeUuid>/<versionId>`), records it and prunes per policy. Internal: capture, list, locate,
 * prune (also run hourly). Consumes `tree.changed` (moves keep version paths current; deletes apply the policy's
 * NodeDeletedStrategy), `datasources.changed` / `encryption.changed` (opened stores, via the datastores mixin).
 * Emits `versions.changed` {uuids} when versions were dropped (cached version lists go stale). Bytes never travel
 * through the transporter: this service opens the stores itself.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import { LeasesRepo, type Db } from "../lib/db";
import { importNedbOnce } from "../lib/db/nedb-import";
import { VersionsRepo } from "../lib/db/versions";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import type { DataSource } from "../lib/datasources/model";
import { NODE_DELETED_STRATEGIES, checkPolicyId, normalizePolicy, type PolicyInput } from "../lib/versions/policy";
import type { VersionEntry } from "../lib/versions/prune";
import { VersionKeeper, type CaptureRequest } from "../lib/versions/keeper";
import { broadcast, call, type TreeChange } from "../lib/contracts";

const SWEEP_EVERY_MS = 3_600_000;
const byteLimit = { type: "number", optional: true, integer: true } as const;

interface Methods {
	sweep(): Promise<boolean>;
}
interface Vars {
	db: Db;
	keeper: VersionKeeper;
	sweepLease: PeriodicLease;
	dataStore(name: string): Promise<DataStoreHandle>;
	timer?: NodeJS.Timeout;
}
type This = Service & Methods & Vars;

/** The datasource of this name, null when there is none (404), through `call`. */
async function dataSourceOrNull(call: (name: string) => Promise<DataSource>, name: string): Promise<DataSource | null> {
	return call(name).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e)));
}

const VersionsService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "versions",
	mixins: [DatabaseMixin, DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		listPolicies: {
			rest: "GET /config/versioning",
			params: {},
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { Policies: await this.keeper.policies() };
			},
		},
		getPolicy: {
			rest: "GET /config/versioning/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				return this.keeper.policy(checkPolicyId(ctx.params.Uuid));
			},
		},
		putPolicy: {
			rest: "POST /config/versioning/:Uuid",
			params: {
				Uuid: { type: "string", max: 1024 },
				Name: { type: "string", optional: true, max: 1024 },
				Description: { type: "string", optional: true, max: 8192 },
				VersionsDataSourceName: { type: "string", optional: true, max: 1024 },
				VersionsDataSourceBucket: { type: "string", optional: true, max: 1024 },
				MaxTotalSize: byteLimit,
				MaxSizePerFile: byteLimit,
				IgnoreFilesGreaterThan: byteLimit,
				KeepPeriods: { type: "array", optional: true, max: 64, items: { type: "object", props: { IntervalStart: { type: "string", optional: true, max: 64 }, MaxNumber: { type: "number", optional: true, integer: true } } } },
				NodeDeletedStrategy: { type: "enum", optional: true, values: [...NODE_DELETED_STRATEGIES] },
			},
			async handler(this: This, ctx: Context<PolicyInput & { Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const { Uuid, ...input } = ctx.params;
				return this.keeper.putPolicy(normalizePolicy(Uuid, input), (name) => dataSourceOrNull((n) => call(ctx, "datasources.get", { name: n }), name));
			},
		},
		deletePolicy: {
			rest: "DELETE /config/versioning/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				await this.keeper.deletePolicy(checkPolicyId(ctx.params.Uuid), () => call(ctx, "datasources.list", {}));
				return { Success: true };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		capture: {
			params: {
				ds: { type: "string", max: 255 },
				uuid: { type: "string", min: 1, max: 255 },
				path: { type: "string", max: 8192 },
				key: { type: "string", min: 1, max: 8192 },
				size: { type: "number", min: 0 },
				etag: { type: "string", max: 255 },
				mtime: { type: "number" },
				owner: { type: "string", max: 255 },
				reason: { type: "enum", optional: true, values: ["overwrite", "delete"] },
			},
			async handler(this: This, ctx: Context<CaptureRequest>) {
				return this.keeper.capture(ctx.params);
			},
		},
		list: {
			read: true,
			params: { uuid: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string }>): Promise<VersionEntry[]> {
				return this.keeper.list(ctx.params.uuid);
			},
		},
		locate: {
			read: true,
			params: { uuid: { type: "string", max: 255 }, versionId: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string; versionId: string }>) {
				return this.keeper.locate(ctx.params.uuid, ctx.params.versionId);
			},
		},
		prune: {
			params: { now: { type: "number", optional: true } },
			async handler(this: This, ctx: Context<{ now?: number }>) {
				return { Removed: await this.keeper.sweep(ctx.params.now ?? Date.now()) };
			},
		},
	},
	events: {
		"tree.changed": {
			async handler(this: This, ctx: Context<TreeChange>) {
				const { type, node, from } = ctx.params;
				if (!node?.Uuid) return;
				try {
					if (type === "delete") await this.keeper.onDeleted(node);
					else if (type === "move" && from) await this.keeper.onMoved(node, from);
				} catch (err) {
					this.logger.warn(`Versions of ${node.ds}/${node.path} (${type}) not updated: ${(err as Error).message}`);
				}
			},
		},
	},
	methods: {
		/** One node of the cluster prunes (the lease's holder); whether this one did. */
		async sweep(this: This): Promise<boolean> {
			try {
				return (await this.sweepLease.run(() => this.keeper.sweep(Date.now()))).ran;
			} catch (err) {
				this.logger.warn(`Version pruning failed: ${(err as Error).message}`);
				return false;
			}
		},
	},
	async started(this: This) {
		const imported = await importNedbOnce(this.db, loadConfig().dataDir, "versions", async (trx, docs) => void (await VersionsRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} versioning policies and versions from ${imported.backup}`);
		this.keeper = new VersionKeeper(new VersionsRepo(this.db), {
			dataSource: (name) => dataSourceOrNull((n) => call(this.broker, "datasources.get", { name: n }), name),
			objectStore: async (name) => (await this.dataStore(name)).store,
			dropped: (uuids) => void broadcast(this.broker, "versions.changed", { uuids }),
			warn: (m) => this.logger.warn(m),
			error: (m) => this.logger.error(m),
		});
		await this.keeper.seedPolicies();
		// Twice the period: the holder takes it again at each tick; if it dies, another node prunes within two hours.
		this.sweepLease = new PeriodicLease(new LeasesRepo(this.db), "versions.prune", this.broker.nodeID, 2 * SWEEP_EVERY_MS, (e) =>
			this.logger.warn(`Version pruning lease renewal failed: ${(e as Error).message}`),
		);
		this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
		this.timer.unref();
	},
	async stopped(this: This) {
		if (this.timer) clearInterval(this.timer);
		await this.sweepLease?.release().catch(() => undefined);
	},
};

export = VersionsService;
