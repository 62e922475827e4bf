/**
 * jobs — file operations as background jobs (Cells' user jobs): copy, move, delete (to the recycle bin),
 * compress (zip), extract (zip), datasource-resync (admin). `PUT /jobs/user/{JobName}` records a job and one
 * task, answers {JobUuid} at once and runs the task in an in-process queue (2 at a time per user); the task's
 * status, progress and logs are persisted (lib/db JobsRepo: jobs, tasks, task logs). `POST /jobs/user` lists the
 * caller's jobs with their tasks, `PUT /jobs/user` controls them (Stop, Pause, Resume, Delete, RunOnce,
 * Active, Inactive), `POST /jobs/tasks/logs` reads the logs (Bleve-lite query), `POST /jobs/tasks/delete`
 * (admin) prunes tasks. At start-up, tasks left Queued by a stopped node run; tasks it was running end in Error
 * ("Interrupted by a server restart").
 * Emits `jobs.task.changed` {job, task} (broadcast) on every status change and, throttled, on progress.
 * Consumes `datasources.changed` / `encryption.changed` (store cache, via the datastores mixin), `$node.disconnected` (takes over a dead node's tasks),
 * `jobs.task.control` (its own broadcast: Stop/Pause/Resume reach the node running the task).
 * The API's rules are lib/jobs/user-jobs (UserJobs), running tasks lib/jobs/engine (JobEngine).
 * Internal `jobs.scheduledPut|Run|Delete`: the scheduler's admin-defined jobs, mirrored here and run by the engine
 * (lib/jobs/scheduled).
 * Calls tree.locate/prepareWrite/commitWrite/copy/move/remove/create/stats/scan/resyncApply, datasources.get,
 * users.authInfo.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DatabaseMixin } from "../mixins/database.mixin";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import { JobsRepo, LeasesRepo, type Db } from "../lib/db";
import { importNedbCollectionOnce } from "../lib/db/nedb-import";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { controlJob, type CtrlParams } from "../lib/jobs/control";
import { JobEngine } from "../lib/jobs/engine";
import { UserJobs, type DeleteTasksParams, type ListParams, type LogParams } from "../lib/jobs/user-jobs";
import { precheck } from "../lib/jobs/runners";
import { broadcast, call, type JobTaskControl } from "../lib/contracts";
import { mirror, runScheduled, type ScheduledDeps, type ScheduledJob } from "../lib/jobs/scheduled";
import type { TaskInput } from "../lib/jobs/chain";
import { SYSTEM_USER, TASK_STATUSES, isActive, presentJob, presentTask, type JobStore, type TaskDoc } from "../lib/jobs/model";
import { resyncAtStart } from "../lib/jobs/resync-at-start";

const PER_USER = 2;
const TOTAL = 8;
const MAX_ACTIVE_PER_USER = 50;
const KEEP_JOBS_PER_USER = 100;
const MAX_LOG_SCAN = 100_000;
/** Nodes starting within this time of the one that queued the start-up resync do not queue it again. */
const RESYNC_LEASE_MS = 10 * 60_000;
const str = (max = 255) => ({ type: "string", optional: true, max }) as const;
const idParam = { type: "string", optional: true, max: 255, pattern: /^[^/\\\u0000-\u001f]*$/ } as const;

interface CreateParams { JobName: string; JsonParameters?: string }

interface Methods {
	resyncStructured(): Promise<boolean>;
	scheduledDeps(): ScheduledDeps;
	aliveNodes(): Set<string>;
}
interface Vars {
	db: Db;
	repo: JobStore;
	engine: JobEngine;
	userJobs: UserJobs;
	/** Null on SQLite: a single node, which resyncs whenever it starts. */
	resyncLease: PeriodicLease | null;
	dataStore(name: string): Promise<DataStoreHandle>;
	orphanTimer?: NodeJS.Timeout;
}
type This = Service & Methods & Vars;

const JobsService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "jobs",
	mixins: [DatabaseMixin, DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		create: {
			rest: "PUT /jobs/user/:JobName",
			params: { JobName: { type: "string", min: 1, max: 64 }, JsonParameters: { type: "string", optional: true, max: 1_000_000 } },
			async handler(this: This, ctx: Context<CreateParams, Meta>) {
				return this.userJobs.create(requireUser(ctx), ctx.params.JobName, ctx.params.JsonParameters);
			},
		},
		list: {
			rest: "POST /jobs/user",
			read: true,
			params: {
				Owner: str(), EventsOnly: { type: "boolean", optional: true }, TimersOnly: { type: "boolean", optional: true },
				LoadTasks: { type: "enum", optional: true, values: [...TASK_STATUSES] }, JobIDs: { type: "array", optional: true, items: "string", max: 1000 },
				TasksOffset: { type: "number", optional: true, integer: true, min: 0 }, TasksLimit: { type: "number", optional: true, integer: true, min: 0 },
			},
			async handler(this: This, ctx: Context<ListParams, Meta>) {
				return this.userJobs.list(requireUser(ctx), ctx.params);
			},
		},
		control: {
			rest: "PUT /jobs/user",
			params: {
				Cmd: { type: "enum", optional: true, values: ["None", "Pause", "Resume", "Stop", "Delete", "RunOnce", "Inactive", "Active"] },
				JobId: idParam, TaskId: idParam, OwnerId: str(), RunParameters: { type: "record", optional: true },
			},
			async handler(this: This, ctx: Context<CtrlParams, Meta>) {
				return { Msg: await controlJob(this.engine.controlDeps(), requireUser(ctx), ctx.params) };
			},
		},
		logs: {
			rest: "POST /jobs/tasks/logs",
			read: true,
			params: { Query: str(4096), Page: { type: "number", optional: true, integer: true, min: 0 }, Size: { type: "number", optional: true, integer: true, min: 0, max: 10_000 }, Format: str(16) },
			async handler(this: This, ctx: Context<LogParams, Meta>) {
				return this.userJobs.logs(requireUser(ctx), ctx.params);
			},
		},
		deleteTasks: {
			rest: "POST /jobs/tasks/delete",
			params: {
				JobId: idParam, TaskID: { type: "array", optional: true, items: "string", max: 10_000 },
				Status: { type: "array", optional: true, items: { type: "enum", values: [...TASK_STATUSES] } }, PruneLimit: { type: "number", optional: true, integer: true, min: 0 },
			},
			async handler(this: This, ctx: Context<DeleteTasksParams, Meta>) {
				requireAdmin(ctx);
				return this.userJobs.deleteTasks(ctx.params);
			},
		},
		scheduledPut: {
			visibility: "public",
			params: { Job: { type: "object" } },
			async handler(this: This, ctx: Context<{ Job: ScheduledJob }>) {
				await mirror(this.scheduledDeps(), ctx.params.Job);
				return { Success: true as const };
			},
		},
		scheduledRun: {
			visibility: "public",
			params: { Job: { type: "object" }, Input: { type: "object" } },
			async handler(this: This, ctx: Context<{ Job: ScheduledJob; Input: TaskInput }>) {
				return runScheduled(this.scheduledDeps(), ctx.params.Job, ctx.params.Input);
			},
		},
		scheduledDelete: {
			visibility: "public",
			params: { JobID: { type: "string", min: 1, max: 255 } },
			async handler(this: This, ctx: Context<{ JobID: string }>) {
				const tasks = await this.repo.tasksOf(ctx.params.JobID);
				for (const t of tasks.filter((t) => isActive(t.Status))) await controlJob(this.engine.controlDeps(), SYSTEM_USER, { Cmd: "Stop", TaskId: t.id });
				return { Deleted: await this.repo.deleteJob(ctx.params.JobID) };
			},
		},
	},
	events: {
		async "jobs.task.control"(this: This, ctx: Context<JobTaskControl>) {
			await this.engine?.applyLocal(ctx.params.TaskId, ctx.params.Cmd);
		},
		"$node.disconnected"(this: This, ctx: Context<{ node: { id: string } }>) {
			void this.engine?.recover((t: TaskDoc) => t.Node === ctx.params.node.id).catch((e: unknown) => this.logger.warn("Recovering tasks failed:", e));
		},
	},
	methods: {
		/**
		 * Queues a resync of every structured datasource (see resyncOnRestart), as the system user, on one node of
		 * a cluster starting together (the lease's holder); whether this node did.
		 */
		async resyncStructured(this: This): Promise<boolean> {
			return resyncAtStart({
				servicesUp: () => this.broker.waitForServices(["datasources", "tree"], 60_000).then(() => true, () => false),
				stopping: () => this.engine.closing || !!(this.broker as { stopping?: boolean }).stopping,
				datasources: () => call(this.broker, "datasources.list", {}),
				queue: (dsName) => call(this.broker, "jobs.create", { JobName: "datasource-resync", JsonParameters: JSON.stringify({ dsName }) }, { meta: { user: SYSTEM_USER } }),
				lease: this.resyncLease,
				warn: (m) => this.logger.warn(m),
				now: () => Math.floor(Date.now() / 1000),
			});
		},
		scheduledDeps(this: This): ScheduledDeps {
			return { repo: this.repo, newTask: (jobId, owner, input) => this.engine.newTask(jobId, owner, input), now: () => Math.floor(Date.now() / 1000) };
		},
		/** Nodes known to be alive now. */
		aliveNodes(this: This): Set<string> {
			return new Set(this.broker.registry.nodes.list({ onlyAvailable: true }).map((n: { id: string }) => n.id));
		},
	},
	async started(this: This) {
		const cfg = loadConfig();
		const imported = await importNedbCollectionOnce(this.db, cfg.dataDir, "jobs", async (trx, docs) => void (await JobsRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} jobs, tasks and logs from ${imported.backup}`);
		this.repo = new JobsRepo(this.db);
		const me = this.broker.nodeID;
		let ready: Promise<void> | undefined;
		this.engine = new JobEngine({
			repo: this.repo,
			nodeId: me,
			publish: (job, task) => broadcast(this.broker, "jobs.task.changed", { job: presentJob(job), task: presentTask(task) }),
			sendControl: (taskId, cmd) => broadcast(this.broker, "jobs.task.control", { TaskId: taskId, Cmd: cmd }),
			nodeAvailable: (node) => !!this.broker.registry.nodes.get(node)?.available,
			call: (action, params, user) => call(this.broker, action, params, { meta: { user }, timeout: 0 }),
			hasAction: (action) => !(this.broker.findNextActionEndpoint(action) instanceof Error),
			// A task recovered at a start runs once every service of this node has started (the tree and what it asks
			// register in parallel with this one); after 30 s it runs anyway rather than wait for ever.
			ready: () =>
				(ready ??= (async () => {
					for (let i = 0; i < 600 && !this.broker.started; i++) await new Promise((r) => setTimeout(r, 50));
				})()),
			store: async (ds) => (await this.dataStore(ds)).store,
			ownerInfo: (uuid) =>
				call(this.broker, "users.authInfo", { uuid }).catch((e: { name?: string }) => (e?.name === "ServiceNotFoundError" ? undefined : Promise.reject(e))),
			warn: (m, e) => this.logger.warn(m, e ?? ""),
			error: (m, e) => this.logger.error(m, e ?? ""),
			limits: { perUser: PER_USER, total: TOTAL, keepJobsPerUser: KEEP_JOBS_PER_USER },
		});
		this.userJobs = new UserJobs({
			repo: this.repo,
			newTask: (jobId, owner) => this.engine.newTask(jobId, owner),
			requireDatasource: (name) => call(this.broker, "datasources.get", { name }),
			precheck: (user, name, params) => precheck({ call: (a, p) => call(this.broker, a, p, { meta: { user }, timeout: 0 }), store: async (ds) => (await this.dataStore(ds)).store }, name, params),
			uuid: randomUUID,
			limits: { maxActivePerUser: MAX_ACTIVE_PER_USER, maxLogScan: MAX_LOG_SCAN },
		});
		// Kept after the run (nodes starting together skip it), given up when this node stops cleanly (its restart
		// resyncs again). A node that crashed comes back as the same holder if its NODE_ID is set, and resyncs.
		this.resyncLease = this.db.dialect === "postgres" ? new PeriodicLease(new LeasesRepo(this.db), "datasources.resync-at-start", me, RESYNC_LEASE_MS) : null;
		const clustered = !!this.broker.transit;
		// Alone: every unfinished task is ours. In a cluster: ours now, the dead nodes' once discovery had time.
		await this.engine.recover((t: TaskDoc) => !clustered || t.Node === me);
		// Not awaited: the datasources and tree services may start after this one.
		void this.resyncStructured();
		if (clustered) {
			this.orphanTimer = setTimeout(() => {
				const alive = this.aliveNodes();
				void this.engine.recover((t: TaskDoc) => !alive.has(t.Node)).catch((e: unknown) => this.logger.warn("Recovering tasks failed:", e));
			}, 15_000);
			this.orphanTimer.unref?.();
		}
	},
	async stopped(this: This) {
		if (this.orphanTimer) clearTimeout(this.orphanTimer);
		await this.engine?.close();
		await this.resyncLease?.release().catch(() => undefined);
	},
};

export = JobsService;
