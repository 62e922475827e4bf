/**
 * selections — `POST /tree/selection`: a list of nodes saved under a uuid, for multi-file actions; the /io
 * gateway streams a selection as one zip (`GET /io/<workspace>/<any-name>-<SelectionUUID>.zip`). Selections
 * belong to their creator and expire after a day. Emits and consumes nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DatabaseMixin } from "../mixins/database.mixin";
import { LeasesRepo, type Db } from "../lib/db";
import { importNedbOnce } from "../lib/db/nedb-import";
import { SelectionsRepo, type SelectionRecord } from "../lib/db/selections";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig } from "../lib/config";
import { BadRequestError, NotFoundError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import type { TreeNode } from "../lib/tree/model";
import { call } from "../lib/contracts";

const TTL_SECONDS = 24 * 3600;
const SWEEP_EVERY_MS = 3600_000;

interface SelectionsVars {
	db: Db;
	selections: SelectionsRepo;
	sweepLease: PeriodicLease;
	sweeper?: NodeJS.Timeout;
}
interface SelectionsMethods {
	sweep(): Promise<boolean>;
}
type SelectionsThis = Service & SelectionsVars & SelectionsMethods;

const SelectionsService: ServiceSchema<ServiceSettingSchema, SelectionsMethods, SelectionsVars> = {
	name: "selections",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		create: {
			rest: "POST /tree/selection",
			params: {
				Nodes: { type: "array", items: { type: "object", props: { Path: { type: "string", min: 1, max: 8192 } } }, min: 1, max: 10_000 },
				Persist: { type: "boolean", optional: true },
				TargetAction: { type: "string", optional: true, max: 128 },
			},
			async handler(this: SelectionsThis, ctx: Context<{ Nodes: { Path: string }[]; TargetAction?: string }, Meta>) {
				const user = requireUser(ctx);
				const paths = [...new Set(ctx.params.Nodes.map((n) => n.Path.replace(/\/$/, "")))];
				// Every node must exist and be readable by the caller now.
				const nodes: TreeNode[] = [];
				for (const p of paths) {
					const r = await call(ctx, "tree.stat", { Node: p });
					nodes.push(r.Node);
				}
				const sel: SelectionRecord = { uuid: randomUUID(), owner: user.Uuid, paths, expires: Math.floor(Date.now() / 1000) + TTL_SECONDS };
				if (ctx.params.TargetAction) sel.action = ctx.params.TargetAction;
				await this.selections.create(sel);
				return { SelectionUUID: sel.uuid, Nodes: nodes };
			},
		},
		get: {
			read: true,
			params: { uuid: { type: "string", max: 64 } },
			async handler(this: SelectionsThis, ctx: Context<{ uuid: string }, Meta>) {
				const user = requireUser(ctx);
				const doc = await this.selections.byUuid(ctx.params.uuid);
				if (!doc || doc.owner !== user.Uuid || doc.expires < Date.now() / 1000) throw new NotFoundError("No such selection", "selection.notfound");
				if (!doc.paths.length) throw new BadRequestError("Empty selection");
				return { paths: doc.paths };
			},
		},
	},
	methods: {
		/** One node of the cluster sweeps (the lease's holder); whether this one did. */
		async sweep(this: SelectionsThis): Promise<boolean> {
			try {
				const out = await this.sweepLease.run(() => this.selections.sweepExpired(Math.floor(Date.now() / 1000)));
				return out.ran;
			} catch (e) {
				this.logger.warn(`Selections sweep failed: ${(e as Error).message}`);
				return false;
			}
		},
	},
	async started(this: SelectionsThis) {
		this.selections = new SelectionsRepo(this.db);
		const imported = await importNedbOnce(this.db, loadConfig().dataDir, "selections", async (trx, docs) => void (await SelectionsRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} selections from ${imported.backup}`);
		// Twice the period: the holder takes it again at each tick; if it dies, another node sweeps within two hours.
		this.sweepLease = new PeriodicLease(new LeasesRepo(this.db), "selections.sweep", this.broker.nodeID, 2 * SWEEP_EVERY_MS, (e) =>
			this.logger.warn(`Selections sweep lease renewal failed: ${(e as Error).message}`),
		);
		await this.sweep();
		this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
		this.sweeper.unref();
	},
	async stopped(this: SelectionsThis) {
		clearInterval(this.sweeper);
		await this.sweepLease?.release().catch(() => undefined);
	},
};

export = SelectionsService;
