/**
 * scheduler — Cells enterprise's admin-defined jobs (lib/scheduler): `PUT /scheduler/jobs` saves one (schedule,
 * tree events, hooks, a chain of actions run by the job runners), `DELETE /scheduler/jobs/{JobID}`; every PUT of
 * an existing job keeps the replaced definition as a version: `POST /scheduler/versions/{JobID}` lists them,
 * `PATCH|DELETE /scheduler/versions/{JobID}/{VersionID}` restores or deletes one. `POST /scheduler/hooks/{HookSlug}`
 * starts the job exposing that hook. Owns the scheduler_jobs and scheduler_job_versions tables (lib/db
 * SchedulerRepo). Triggers start tasks in the jobs service's engine (jobs.scheduledPut/Run/Delete), where they
 * show in POST /jobs/user and are controlled with PUT /jobs/user. Schedules run once per cluster (the store's
 * claim on each job's next run, checked every second on every node); tree events are handled by the node holding
 * the `scheduler.events` lease.
 * Consumes `tree.changed` (broadcast: every node hears it, the lease holder acts). Emits `audit.log`
 * (scheduler.update, scheduler.delete). Calls tree.visible, tree.locate (as the job's administrator, as the hook's
 * caller), jobs.scheduled*.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { LeasesRepo, SchedulerRepo } from "../lib/db";
import { call, type TreeChange } from "../lib/contracts";
import { BadRequestError, NotFoundError } from "../lib/errors";
import { audit } from "../lib/logs/audit";
import { Scheduler, type HookBody, type VersionsQuery } from "../lib/scheduler/scheduler";
import type { StoredJob } from "../lib/scheduler/model";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";

const TICK_MS = 1000;
/** How long a silent node keeps the events lease: events then go unhandled at most this long after it died. */
const EVENTS_LEASE_MS = 15_000;
const id = { type: "string", min: 1, max: 255 } as const;

interface Vars extends DatabaseVars {
	scheduler: Scheduler;
	leases: LeasesRepo;
	timer?: NodeJS.Timeout;
	ticking: boolean;
}
type This = Service & Vars;

const SchedulerService: ServiceSchema<ServiceSettingSchema, Record<string, never>, Vars> = {
	name: "scheduler",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		putJob: {
			rest: "PUT /scheduler/jobs",
			params: { Job: { type: "object" } },
			async handler(this: This, ctx: Context<{ Job: unknown }, Meta>) {
				const admin = requireAdmin(ctx);
				const Job = await this.scheduler.put(admin, ctx.params.Job);
				audit(ctx, "scheduler.update", { target: `job ${Job.Label}`, targetUuid: Job.ID });
				return { Job };
			},
		},
		deleteJob: {
			rest: "DELETE /scheduler/jobs/:JobID",
			params: { JobID: id, CleanableJobs: { type: "boolean", optional: true, convert: true } },
			async handler(this: This, ctx: Context<{ JobID: string; CleanableJobs?: boolean }, Meta>) {
				requireAdmin(ctx);
				// Cells' CleanableJobs also sweeps other finished jobs: not done here, so refused rather than ignored.
				if (ctx.params.CleanableJobs) throw new BadRequestError("CleanableJobs is not supported: delete jobs by ID");
				await this.scheduler.delete(ctx.params.JobID);
				audit(ctx, "scheduler.delete", { target: "job", targetUuid: ctx.params.JobID });
				return { Success: true, DeleteCount: 1 };
			},
		},
		// Hooks are meant for callers outside the web UI (scripts, other systems): any authenticated user may
		// trigger one, as Cells allows when a hook sets no Policies (this server refuses hooks with Policies).
		// Anonymous calls are refused: a hook starts work with an administrator's rights, and the Paths it is
		// given are checked against the caller's own read rights.
		hook: {
			rest: "POST /scheduler/hooks/:HookSlug",
			params: {
				HookSlug: id,
				JobParameters: { type: "record", optional: true, key: { type: "string", max: 128 }, value: { type: "string", max: 65536 } },
				Paths: { type: "array", optional: true, items: { type: "string", max: 8192 }, max: 1000 },
				TaskID: { type: "string", optional: true, max: 255 },
			},
			async handler(this: This, ctx: Context<HookBody & { HookSlug: string }, Meta>) {
				const caller = requireUser(ctx);
				const r = await this.scheduler.hook(caller, ctx.params.HookSlug, ctx.params);
				return { Success: "TaskId" in r };
			},
		},
		listVersions: {
			rest: "POST /scheduler/versions/:JobID",
			read: true,
			params: { JobID: id, Offset: { type: "number", optional: true, integer: true, min: 0 }, Limit: { type: "number", optional: true, integer: true, min: 0, max: 10_000 }, LoadJobs: { type: "boolean", optional: true } },
			async handler(this: This, ctx: Context<VersionsQuery & { JobID: string }, Meta>) {
				requireAdmin(ctx);
				return { Versions: await this.scheduler.versions(ctx.params.JobID, ctx.params) };
			},
		},
		restoreVersion: {
			rest: "PATCH /scheduler/versions/:JobID/:VersionID",
			params: { JobID: id, VersionID: id, Type: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<{ JobID: string; VersionID: string }, Meta>) {
				const admin = requireAdmin(ctx);
				const Job = await this.scheduler.restore(admin, ctx.params.JobID, ctx.params.VersionID);
				audit(ctx, "scheduler.update", { target: `job ${Job.Label}`, targetUuid: Job.ID, detail: `restored version ${ctx.params.VersionID}` });
				return { Success: true, Job };
			},
		},
		deleteVersion: {
			rest: "DELETE /scheduler/versions/:JobID/:VersionID",
			params: { JobID: id, VersionID: id, Type: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<{ JobID: string; VersionID: string }, Meta>) {
				requireAdmin(ctx);
				await this.scheduler.deleteVersion(ctx.params.JobID, ctx.params.VersionID);
				return { Success: true };
			},
		},
	},
	events: {
		"tree.changed"(this: This, ctx: Context<TreeChange>) {
			void this.scheduler?.onChange(ctx.params).catch((e: unknown) => this.logger.warn("Event-triggered jobs failed:", e));
		},
	},
	async started(this: This) {
		const me = this.broker.nodeID;
		this.leases = new LeasesRepo(this.db);
		this.scheduler = new Scheduler({
			repo: new SchedulerRepo<StoredJob>(this.db),
			mirror: (Job) => call(this.broker, "jobs.scheduledPut", { Job }),
			unmirror: (JobID) => call(this.broker, "jobs.scheduledDelete", { JobID }),
			run: (Job, Input) => call(this.broker, "jobs.scheduledRun", { Job, Input }),
			userPaths: async (user, ds, path) => (await call(this.broker, "tree.visible", { Nodes: [{ ds, path }] }, { meta: { user } }))[0]?.In.map((i) => i.Path) ?? [],
			requireReadable: async (user, path) => {
				const loc = await call(this.broker, "tree.locate", { Path: path, need: "read" }, { meta: { user } });
				if (!loc.node) throw new NotFoundError(`${path} not found`, "node.notfound");
			},
			handlesEvents: () => this.leases.acquire("scheduler.events", me, EVENTS_LEASE_MS),
			uuid: randomUUID,
			now: () => Date.now(),
			warn: (m, e) => this.logger.warn(m, e ?? ""),
		});
		this.ticking = false;
		this.timer = setInterval(() => {
			// One tick at a time: a slow store must not pile them up.
			if (this.ticking) return;
			this.ticking = true;
			void this.scheduler
				.tick()
				.catch((e: unknown) => this.logger.warn("Scheduled jobs failed:", e))
				.finally(() => (this.ticking = false));
		}, TICK_MS);
		this.timer.unref?.();
	},
	async stopped(this: This) {
		if (this.timer) clearInterval(this.timer);
		await this.leases?.release("scheduler.events", this.broker.nodeID).catch(() => undefined);
	},
};

export = SchedulerService;
