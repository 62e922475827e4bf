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
 * Calls tree.locate/prepareWrite/commitWrite/copy/move/remove/create/stats/scan/resyncApply, datasources.get,
 * users.authInfo.
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DatabaseMixin } from "../mixins/database.mixin";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import { JobsRepo, LeasesRepo, type Db } from "../lib/db";
import { importNedbOnce } from "../lib/db/nedb-import";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig } from "../lib/config";
import { BadRequestError, ConflictError, ForbiddenError, TooManyRequestsError } from "../lib/errors";
import { isAdmin, type Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { controlJob, type CtrlParams } from "../lib/jobs/control";
import { JobEngine } from "../lib/jobs/engine";
import { isJobName, jobId, jobLabel, jobParams, parseJsonParameters } from "../lib/jobs/params";
import { precheck } from "../lib/jobs/runners";
import { checkFields, fullyPrefiltered, matches, parseQuery, prefilter } from "../lib/jobs/query";
import type { LogFilter } from "../lib/db/jobs";
import { broadcast, call, type JobTaskControl } from "../lib/contracts";
import {
	LOG_DB_FIELDS, LOG_FIELDS, SYSTEM_USER, TASK_STATUSES, isActive, presentJob, presentLog, presentTask, resyncOnRestart, snapshotOf,
	type JobDoc, type JobStore, type TaskDoc, type TaskStatus,
} from "../lib/jobs/model";

const PER_USER = 2;
const TOTAL = 8;
const MAX_ACTIVE_PER_USER = 50;
const KEEP_JOBS_PER_USER = 100;
const MAX_LOG_SCAN = 100_000;
/** Nodes starting within this time of the one that queued the start-up resync do not queue it again. */
const RESYNC_LEASE_MS = 10 * 60_000;
const now = () => Math.floor(Date.now() / 1000);
const str = (max = 255) => ({ type: "string", optional: true, max }) as const;
const idParam = { type: "string", optional: true, max: 255, pattern: /^[^/\\\u0000-\u001f]*$/ } as const;

interface CreateParams { JobName: string; JsonParameters?: string }
interface ListParams { Owner?: string; EventsOnly?: boolean; TimersOnly?: boolean; LoadTasks?: TaskStatus; JobIDs?: string[]; TasksOffset?: number; TasksLimit?: number }
interface LogParams { Query?: string; Page?: number; Size?: number; Format?: string }
interface DeleteParams { JobId?: string; TaskID?: string[]; Status?: TaskStatus[]; PruneLimit?: number }

interface Methods {
	resyncStructured(): Promise<boolean>;
	aliveNodes(): Set<string>;
}
interface Vars {
	db: Db;
	repo: JobStore;
	engine: JobEngine;
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
				const user = requireUser(ctx);
				const name = ctx.params.JobName;
				if (!isJobName(name)) throw new BadRequestError(`unknown job name ${name}`);
				const params = jobParams(name, parseJsonParameters(ctx.params.JsonParameters));
				if (name === "datasource-resync") {
					if (!isAdmin(user)) throw new ForbiddenError("Only administrators can resync a datasource", "forbidden.resync");
					// A flat datasource is checked against its storage instead (see lib/jobs/runners): the name must exist.
					await call(ctx, "datasources.get", { name: (params as { dsName: string }).dsName });
				}
				if ((await this.repo.countActive(user.Login)) >= MAX_ACTIVE_PER_USER) throw new TooManyRequestsError(`You already have ${MAX_ACTIVE_PER_USER} jobs waiting or running`);
				await precheck({ call: (a, p) => call(ctx, a, p, { meta: { user }, timeout: 0 }), store: async (ds) => (await this.dataStore(ds)).store }, name, params);
				const id = jobId(name, params, randomUUID());
				const existing = await this.repo.job(id);
				if (existing) {
					// One resync job per datasource: a new run is a new task, unless one is already under way.
					if ((await this.repo.tasksOf(id)).some((t: TaskDoc) => isActive(t.Status))) return { JobUuid: id };
					await this.repo.updateJob(id, { Params: params, User: snapshotOf(user), Owner: user.Login, OwnerUuid: user.Uuid, ModifiedAt: now(), Inactive: false });
				} else {
					const t = now();
					try {
						await this.repo.createJob({ id, Name: name, Label: jobLabel(name, params), Owner: user.Login, OwnerUuid: user.Uuid, Params: params, User: snapshotOf(user), CreatedAt: t, ModifiedAt: t });
					} catch (e) {
						// The same job (one resync job per datasource) created a moment ago by another request or node.
						if (!(e instanceof ConflictError)) throw e;
						if ((await this.repo.tasksOf(id)).some((x: TaskDoc) => isActive(x.Status))) return { JobUuid: id };
					}
				}
				await this.engine.newTask(id, user.Login);
				return { JobUuid: id };
			},
		},
		list: {
			rest: "POST /jobs/user",
			retryPolicy: { enabled: true },
			params: {
				Owner: str(), EventsOnly: { type: "boolean", optional: true }, TimersOnly: { type: "boolean", optional: true },
				LoadTasks: { type: "enum", optional: true, values: [...TASK_STATUSES] }, JobIDs: { type: "array", optional: true, items: "string", max: 1000 },
				TasksOffset: { type: "number", optional: true, integer: true, min: 0 }, TasksLimit: { type: "number", optional: true, integer: true, min: 0 },
			},
			async handler(this: This, ctx: Context<ListParams, Meta>) {
				const user = requireUser(ctx);
				const p = ctx.params;
				// The owner is the caller; administrators may ask for someone else's jobs, or everybody's ("*").
				// Administrators asking for given jobs get them whoever owns them (a resync they start may be the
				// one the server already runs as its system user: same datasource, same job).
				const owner = isAdmin(user) && p.Owner ? p.Owner : isAdmin(user) && p.JobIDs?.length ? "*" : user.Login;
				if (p.EventsOnly || p.TimersOnly) return { Jobs: [] };
				const jobs: JobDoc[] = await this.repo.jobs(owner === "*" ? undefined : owner, p.JobIDs);
				const tasks: TaskDoc[] = await this.repo.tasksOfJobs(jobs.map((j) => j.id));
				const wanted = !p.LoadTasks || p.LoadTasks === "Unknown" || p.LoadTasks === "Any" ? null : p.LoadTasks;
				const start = p.TasksOffset ?? 0;
				return {
					Jobs: jobs.map((j) => {
						const mine = tasks.filter((t) => t.JobID === j.id && (!wanted || t.Status === wanted));
						return presentJob(j, mine.slice(start, p.TasksLimit ? start + p.TasksLimit : undefined));
					}),
				};
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
			retryPolicy: { enabled: true },
			params: { Query: str(4096), Page: { type: "number", optional: true, integer: true, min: 0 }, Size: { type: "number", optional: true, integer: true, min: 0, max: 10_000 }, Format: str(16) },
			async handler(this: This, ctx: Context<LogParams, Meta>) {
				const user = requireUser(ctx);
				const p = ctx.params;
				if (p.Format && p.Format !== "JSON") throw new BadRequestError(`Log format ${p.Format} is not supported: use JSON`);
				const clauses = parseQuery(p.Query);
				checkFields(clauses, LOG_FIELDS);
				const query: LogFilter = {};
				for (const [field, v] of Object.entries(prefilter(clauses, LOG_FIELDS))) query[LOG_DB_FIELDS[field]] = v;
				if (!isAdmin(user)) query.Owner = { eq: user.Login };
				const size = p.Size || 100;
				const from = (p.Page ?? 0) * size;
				// The usual queries (by job, task or operation) page in the database; others are filtered here.
				if (fullyPrefiltered(clauses, LOG_FIELDS)) return { Logs: (await this.repo.logs(query, size, from)).map(presentLog) };
				const docs = await this.repo.logs(query, MAX_LOG_SCAN);
				const hits = docs.map(presentLog).filter((l) => matches(clauses, l, LOG_FIELDS, "Msg"));
				return { Logs: hits.slice(from, from + size) };
			},
		},
		deleteTasks: {
			rest: "POST /jobs/tasks/delete",
			params: {
				JobId: idParam, TaskID: { type: "array", optional: true, items: "string", max: 10_000 },
				Status: { type: "array", optional: true, items: { type: "enum", values: [...TASK_STATUSES] } }, PruneLimit: { type: "number", optional: true, integer: true, min: 0 },
			},
			async handler(this: This, ctx: Context<DeleteParams, Meta>) {
				requireAdmin(ctx);
				const { JobId, TaskID, Status, PruneLimit } = ctx.params;
				if (!JobId && !TaskID?.length && !Status?.length) throw new BadRequestError("Pass a JobId, TaskID or Status to select the tasks to delete");
				const statuses = Status?.filter((s) => s !== "Any" && s !== "Unknown");
				// Tasks still under way are never deleted here (stop them first).
				let tasks = (await this.repo.tasks({ jobId: JobId || undefined, ids: TaskID?.length ? TaskID : undefined, statuses: statuses?.length ? statuses : undefined })).filter((t) => !isActive(t.Status));
				if (PruneLimit && !TaskID?.length) {
					const kept = new Map<string, number>();
					tasks = tasks.filter((t) => {
						const n = (kept.get(t.JobID) ?? 0) + 1;
						kept.set(t.JobID, n);
						return n > PruneLimit;
					});
				}
				const ids = tasks.map((t) => t.id);
				await this.repo.deleteTasks(ids);
				return { Deleted: ids };
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
			const stopping = () => this.engine.closing || !!(this.broker as { stopping?: boolean }).stopping;
			try {
				const startedAt = Math.floor(Date.now() / 1000);
				// A tree of a million nodes takes over a minute to load: wait as long as it takes.
				for (;;) {
					const up = await this.broker.waitForServices(["datasources", "tree"], 60_000).then(() => true, () => false);
					if (up) break;
					if (stopping()) return false;
				}
				const queue = async () => {
					const names = resyncOnRestart(await call(this.broker, "datasources.list", {}), startedAt);
					for (const dsName of names) await call(this.broker, "jobs.create", { JobName: "datasource-resync", JsonParameters: JSON.stringify({ dsName }) }, { meta: { user: SYSTEM_USER } });
				};
				if (!this.resyncLease) {
					await queue();
					return true;
				}
				return (await this.resyncLease.run(queue)).ran;
			} catch (e) {
				if (!stopping()) this.logger.warn(`Resync of structured datasources at start: ${(e as Error).message}`);
				return false;
			}
		},
		/** Nodes known to be alive now. */
		aliveNodes(this: This): Set<string> {
			return new Set(this.broker.registry.nodes.list({ onlyAvailable: true }).map((n: { id: string }) => n.id));
		},
	},
	async started(this: This) {
		const cfg = loadConfig();
		const imported = await importNedbOnce(this.db, cfg.dataDir, "jobs", async (trx, docs) => void (await JobsRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} jobs, tasks and logs from ${imported.backup}`);
		this.repo = new JobsRepo(this.db);
		const me = this.broker.nodeID;
		this.engine = new JobEngine({
			repo: this.repo,
			nodeId: me,
			publish: (job, task) => broadcast(this.broker, "jobs.task.changed", { job: presentJob(job), task: presentTask(task) }),
			sendControl: (taskId, cmd) => broadcast(this.broker, "jobs.task.control", { TaskId: taskId, Cmd: cmd }),
			nodeAvailable: (node) => !!this.broker.registry.nodes.get(node)?.available,
			call: (action, params, user) => call(this.broker, action, params, { meta: { user }, timeout: 0 }),
			hasAction: (action) => !(this.broker.findNextActionEndpoint(action) instanceof Error),
			store: async (ds) => (await this.dataStore(ds)).store,
			ownerInfo: (uuid) =>
				call(this.broker, "users.authInfo", { uuid }).catch((e: { name?: string }) => (e?.name === "ServiceNotFoundError" ? undefined : Promise.reject(e))),
			warn: (m, e) => this.logger.warn(m, e ?? ""),
			error: (m, e) => this.logger.error(m, e ?? ""),
			limits: { perUser: PER_USER, total: TOTAL, keepJobsPerUser: KEEP_JOBS_PER_USER },
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
