/**
 * jobs — file operations as background jobs (Cells' user jobs): copy, move, delete (to the recycle bin),
 * compress (zip), extract (zip), datasource-resync (admin). `PUT /jobs/user/{JobName}` records a job and one
 * task, answers {JobUuid} at once and runs the task in an in-process queue (2 at a time per user); the task's
 * status, progress and logs are persisted (one `jobs` collection: jobs, tasks, logs). `POST /jobs/user` lists the
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
import type { Context, ServiceSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DbMixin } from "../mixins/db.mixin";
import { BadRequestError, ForbiddenError, TooManyRequestsError } from "../lib/errors";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import type { ObjectStore } from "../lib/storage";
import { DataStoresMixin } from "../mixins/datastores.mixin";
import { JobQueue, TaskInterrupted, type TaskControl } from "../lib/jobs/queue";
import { JobsRepo } from "../lib/jobs/repo";
import { controlJob, type ControlDeps, type CtrlParams } from "../lib/jobs/control";
import { isJobName, jobId, jobLabel, jobParams, parseJsonParameters, type JobName } from "../lib/jobs/params";
import { JobFailure, RUNNERS, precheck, type JobEnv } from "../lib/jobs/runners";
import { checkFields, fullyPrefiltered, matches, parseQuery, prefilter } from "../lib/jobs/query";
import {
	LOG_DB_FIELDS, LOG_FIELDS, RESTART_MESSAGE, SYSTEM_USER, TASK_STATUSES, identityOf, isActive, operationUuid, presentJob, presentLog, presentTask, resyncOnRestart, snapshotOf,
	type JobDoc, type LogDoc, type TaskDoc, type TaskStatus,
} from "../lib/jobs/model";

const PER_USER = 2;
const TOTAL = 8;
const MAX_ACTIVE_PER_USER = 50;
const KEEP_JOBS_PER_USER = 100;
const MAX_LOGS_PER_TASK = 2000;
const PROGRESS_EVERY_MS = 500;
const MAX_LOG_SCAN = 100_000;
const now = () => Math.floor(Date.now() / 1000);
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e));
const str = (max = 255) => ({ type: "string", optional: true, max }) as const;
const idParam = { type: "string", optional: true, max: 255, pattern: /^[^/\\\u0000-\u001f]*$/ } as const;

interface CreateParams { JobName: string; JsonParameters?: string }
interface ListParams { Owner?: string; EventsOnly?: boolean; TimersOnly?: boolean; LoadTasks?: TaskStatus; JobIDs?: string[]; TasksOffset?: number; TasksLimit?: number }
interface LogParams { Query?: string; Page?: number; Size?: number; Format?: string }
interface DeleteParams { JobId?: string; TaskID?: string[]; Status?: TaskStatus[]; PruneLimit?: number }

const JobsService: ServiceSchema = {
	name: "jobs",
	mixins: [DbMixin("jobs", { indexes: [{ field: "kind" }, { field: "JobID" }, { field: "TaskID" }] }), DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		create: {
			rest: "PUT /jobs/user/:JobName",
			params: { JobName: { type: "string", min: 1, max: 64 }, JsonParameters: { type: "string", optional: true, max: 1_000_000 } },
			async handler(ctx: Context<CreateParams, Meta>) {
				const user = requireUser(ctx);
				const name = ctx.params.JobName;
				if (!isJobName(name)) throw new BadRequestError(`unknown job name ${name}`);
				const params = jobParams(name, parseJsonParameters(ctx.params.JsonParameters));
				if (name === "datasource-resync") {
					if (!isAdmin(user)) throw new ForbiddenError("Only administrators can resync a datasource", "forbidden.resync");
					// A flat datasource is checked against its storage instead (see lib/jobs/runners): the name must exist.
					await ctx.call("datasources.get", { name: (params as { dsName: string }).dsName });
				}
				if ((await this.repo.countActive(user.Login)) >= MAX_ACTIVE_PER_USER) throw new TooManyRequestsError(`You already have ${MAX_ACTIVE_PER_USER} jobs waiting or running`);
				await precheck({ call: (a, p) => ctx.call(a, p, { meta: { user }, timeout: 0 }), store: (ds) => this.openStore(ds) }, name, params);
				const id = jobId(name, params, randomUUID());
				const existing: JobDoc | null = await this.repo.job(id);
				if (existing) {
					// One resync job per datasource: a new run is a new task, unless one is already under way.
					if ((await this.repo.tasksOf([id])).some((t: TaskDoc) => isActive(t.Status))) return { JobUuid: id };
					await this.repo.patchJob(id, { Params: params, User: snapshotOf(user), Owner: user.Login, OwnerUuid: user.Uuid, ModifiedAt: now(), Inactive: false });
				} else {
					const t = now();
					await this.repo.insert({ _id: id, kind: "job", Name: name, Label: jobLabel(name, params), Owner: user.Login, OwnerUuid: user.Uuid, Params: params, User: snapshotOf(user), CreatedAt: t, ModifiedAt: t } as JobDoc);
				}
				await this.newTask(id, user.Login);
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
			async handler(ctx: Context<ListParams, Meta>) {
				const user = requireUser(ctx);
				const p = ctx.params;
				// The owner is the caller; administrators may ask for someone else's jobs, or everybody's ("*").
				// Administrators asking for given jobs get them whoever owns them (a resync they start may be the
				// one the server already runs as its system user: same datasource, same job).
				const owner = isAdmin(user) && p.Owner ? p.Owner : isAdmin(user) && p.JobIDs?.length ? "*" : user.Login;
				if (p.EventsOnly || p.TimersOnly) return { Jobs: [] };
				const jobs: JobDoc[] = await this.repo.jobs(owner === "*" ? undefined : owner, p.JobIDs);
				const tasks: TaskDoc[] = await this.repo.tasksOf(jobs.map((j) => j._id));
				const wanted = !p.LoadTasks || p.LoadTasks === "Unknown" || p.LoadTasks === "Any" ? null : p.LoadTasks;
				const start = p.TasksOffset ?? 0;
				return {
					Jobs: jobs.map((j) => {
						const mine = tasks.filter((t) => t.JobID === j._id && (!wanted || t.Status === wanted));
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
			async handler(ctx: Context<CtrlParams, Meta>) {
				return { Msg: await controlJob(this.controlDeps(), requireUser(ctx), ctx.params) };
			},
		},
		logs: {
			rest: "POST /jobs/tasks/logs",
			retryPolicy: { enabled: true },
			params: { Query: str(4096), Page: { type: "number", optional: true, integer: true, min: 0 }, Size: { type: "number", optional: true, integer: true, min: 0, max: 10_000 }, Format: str(16) },
			async handler(ctx: Context<LogParams, Meta>) {
				const user = requireUser(ctx);
				const p = ctx.params;
				if (p.Format && p.Format !== "JSON") throw new BadRequestError(`Log format ${p.Format} is not supported: use JSON`);
				const clauses = parseQuery(p.Query);
				checkFields(clauses, LOG_FIELDS);
				const query: Record<string, unknown> = {};
				for (const [field, v] of Object.entries(prefilter(clauses, LOG_FIELDS))) query[LOG_DB_FIELDS[field]] = v;
				if (!isAdmin(user)) query.Owner = user.Login;
				const size = p.Size || 100;
				const from = (p.Page ?? 0) * size;
				// The usual queries (by job, task or operation) page in the database; others are filtered here.
				if (fullyPrefiltered(clauses, LOG_FIELDS)) return { Logs: (await this.repo.logs(query, size, from)).map(presentLog) };
				const docs: LogDoc[] = await this.repo.logs(query, MAX_LOG_SCAN);
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
			async handler(ctx: Context<DeleteParams, Meta>) {
				requireAdmin(ctx);
				const { JobId, TaskID, Status, PruneLimit } = ctx.params;
				if (!JobId && !TaskID?.length && !Status?.length) throw new BadRequestError("Pass a JobId, TaskID or Status to select the tasks to delete");
				const query: Record<string, unknown> = {};
				if (JobId) query.JobID = JobId;
				if (TaskID?.length) query._id = { $in: TaskID };
				const statuses = Status?.filter((s) => s !== "Any" && s !== "Unknown");
				if (statuses?.length) query.Status = { $in: statuses };
				// Tasks still under way are never deleted here (stop them first).
				let tasks = (await this.repo.tasks(query) as TaskDoc[]).filter((t) => !isActive(t.Status));
				if (PruneLimit && !TaskID?.length) {
					const kept = new Map<string, number>();
					tasks = tasks.filter((t) => {
						const n = (kept.get(t.JobID) ?? 0) + 1;
						kept.set(t.JobID, n);
						return n > PruneLimit;
					});
				}
				const ids = tasks.map((t) => t._id);
				await this.repo.removeTasks(ids);
				return { Deleted: ids };
			},
		},
	},
	events: {
		async "jobs.task.control"(ctx: Context<{ TaskId: string; Cmd: "Stop" | "Pause" | "Resume" }>) {
			await this.applyLocal(ctx.params.TaskId, ctx.params.Cmd);
		},
		"$node.disconnected"(ctx: Context<{ node: { id: string } }>) {
			void this.recover((t: TaskDoc) => t.Node === ctx.params.node.id).catch((e: unknown) => this.logger.warn("Recovering tasks failed:", e));
		},
	},
	methods: {
		async newTask(jobId: string, owner: string): Promise<TaskDoc> {
			const task: TaskDoc = {
				_id: randomUUID(), kind: "task", JobID: jobId, Owner: owner, Status: "Queued", StatusMessage: "Queued", TriggerOwner: owner,
				Progress: 0, HasProgress: true, CanStop: true, CanPause: true, Node: this.broker.nodeID, Created: Date.now(),
			};
			await this.repo.insert(task);
			this.queue.enqueue(task._id, owner);
			await this.changed(task);
			return task;
		},

		/** Saves task fields and tells the cluster (`jobs.task.changed`). */
		async updateTask(task: TaskDoc, fields: Partial<TaskDoc>, job?: JobDoc | null) {
			Object.assign(task, fields);
			await this.repo.patchTask(task._id, fields);
			await this.changed(task, job);
		},

		async changed(task: TaskDoc, job?: JobDoc | null) {
			const j = job ?? (await this.repo.job(task.JobID));
			if (j) await this.broker.broadcast("jobs.task.changed", { job: presentJob(j), task: presentTask(task) });
		},

		async openStore(name: string): Promise<ObjectStore> {
			return (await this.dataStore(name)).store;
		},

		/** The owner as the task acts: refreshed from the users service when there is one (roles may have changed). */
		async ownerIdentity(job: JobDoc): Promise<Identity> {
			type Info = { Login: string; Profile: Identity["Profile"]; GroupPath: string; Roles: string[]; Locked?: boolean } | null;
			if (job.User.Uuid === SYSTEM_USER.Uuid) return identityOf(job.User);
			const info = await this.broker.call<Info, { uuid: string }>("users.authInfo", { uuid: job.User.Uuid }).catch((e: { name?: string }) => (e?.name === "ServiceNotFoundError" ? undefined : Promise.reject(e)));
			if (info === undefined) return identityOf(job.User);
			if (!info) throw new JobFailure(`User ${job.Owner} no longer exists`);
			if (info.Locked) throw new JobFailure(`User ${job.Owner} is locked`);
			return identityOf({ ...job.User, Login: info.Login, Profile: info.Profile, GroupPath: info.GroupPath, Roles: info.Roles });
		},

		async runTask(taskId: string, control: TaskControl): Promise<void> {
			const task: TaskDoc | null = await this.repo.task(taskId);
			if (!task || (task.Status !== "Queued" && task.Status !== "Paused")) return;
			const job: JobDoc | null = await this.repo.job(task.JobID);
			let logs = 0;
			let seq = 0;
			const log = async (level: LogDoc["Level"], msg: string) => {
				if (++logs > MAX_LOGS_PER_TASK && (level !== "error" || logs > MAX_LOGS_PER_TASK + 500)) {
					if (logs === MAX_LOGS_PER_TASK + 1) msg = "Too many messages: the following ones are not kept";
					else return;
				}
				seq = Math.max(seq + 1, Date.now() * 1000);
				const doc: LogDoc = { _id: randomUUID(), kind: "log", JobID: task.JobID, TaskID: task._id, Owner: task.Owner, OwnerUuid: job?.OwnerUuid ?? "", Ts: now(), Seq: seq, Level: level, Msg: msg, OperationUuid: operationUuid(task.JobID, task._id) };
				await this.repo.insert(doc).catch((e: unknown) => this.logger.warn("Cannot store a task log:", e));
			};
			let status: TaskStatus = "Finished";
			let message: string;
			try {
				if (!job) throw new JobFailure("The job of this task no longer exists");
				const user = await this.ownerIdentity(job);
				await this.updateTask(task, { Status: control.paused ? "Paused" : "Running", StatusMessage: "Running", StartTime: now(), Node: this.broker.nodeID }, job);
				let lastSaved = 0;
				const env: JobEnv = {
					user,
					control,
					call: (action, params) => this.broker.call(action, params, { meta: { user }, timeout: 0 }),
					hasAction: (action) => !(this.broker.findNextActionEndpoint(action) instanceof Error),
					store: (ds) => this.openStore(ds),
					log: (level, msg) => log(level, msg),
					progress: (done, total) => {
						task.Progress = Math.max(0, Math.min(1, total > 0 ? done / total : 1));
						if (Date.now() - lastSaved < PROGRESS_EVERY_MS) return;
						lastSaved = Date.now();
						void this.updateTask(task, { Progress: task.Progress }, job).catch(() => undefined);
					},
				};
				await log("info", `Started: ${job.Label}`);
				message = await RUNNERS[job.Name as JobName](env, job.Params);
			} catch (e) {
				if (this.shuttingDown || control.reason === "shutdown") return; // left as it is: the next start-up deals with it
				if (e instanceof TaskInterrupted || control.stopped) {
					status = "Interrupted";
					message = "Interrupted by the user";
				} else {
					status = "Error";
					message = errMsg(e);
					if (!(e instanceof JobFailure) && !(e as { code?: number }).code) this.logger.error(`Task ${taskId} failed:`, e);
				}
			}
			if (this.shuttingDown) return;
			await log(status === "Error" ? "error" : "info", message);
			await this.updateTask(task, { Status: status, StatusMessage: message, EndTime: now(), Progress: status === "Finished" ? 1 : task.Progress }, job);
			await this.repo.prune(task.Owner, KEEP_JOBS_PER_USER).catch(() => undefined);
		},

		/** Stop / Pause / Resume on this node, if the task is here (queued or running); false if it is not. */
		controlDeps(): ControlDeps {
			return {
				repo: this.repo,
				applyLocal: (taskId, cmd) => this.applyLocal(taskId, cmd),
				elsewhere: (node) => node !== this.broker.nodeID && !!this.broker.registry.nodes.get(node)?.available,
				sendControl: (taskId, cmd) => this.broker.broadcast("jobs.task.control", { TaskId: taskId, Cmd: cmd }),
				updateTask: (task, fields, job) => this.updateTask(task, fields, job),
				newTask: (jobId, owner) => this.newTask(jobId, owner),
			};
		},
		async applyLocal(taskId: string, cmd: "Stop" | "Pause" | "Resume"): Promise<boolean> {
			const c = this.queue.control(taskId);
			if (!c) return false;
			const started = this.queue.isRunning(taskId);
			const task: TaskDoc | null = await this.repo.task(taskId);
			if (cmd === "Stop") {
				c.stop();
				// A running task ends itself at its next checkpoint; a waiting one never starts.
				if (this.queue.withdraw(taskId) && task) await this.updateTask(task, { Status: "Interrupted", StatusMessage: "Interrupted by the user", EndTime: now() });
			} else {
				if (cmd === "Pause") c.pause();
				else c.resume();
				if (task && isActive(task.Status)) await this.updateTask(task, { Status: cmd === "Pause" ? "Paused" : started ? "Running" : "Queued" });
			}
			this.queue.pump();
			return true;
		},

		/** Queues a resync of every structured datasource (see resyncOnRestart), as the system user. */
		async resyncStructured(): Promise<void> {
			try {
				const startedAt = Math.floor(Date.now() / 1000);
				// A tree of a million nodes takes over a minute to load: wait as long as it takes.
				for (;;) {
					const up = await this.broker.waitForServices(["datasources", "tree"], 60_000).then(() => true, () => false);
					if (up) break;
					if (this.shuttingDown || (this.broker as { stopping?: boolean }).stopping) return;
				}
				const names = resyncOnRestart(await this.broker.call("datasources.list", {}), startedAt);
				for (const dsName of names) await this.broker.call("jobs.create", { JobName: "datasource-resync", JsonParameters: JSON.stringify({ dsName }) }, { meta: { user: SYSTEM_USER } });
			} catch (e) {
				if (!this.shuttingDown && !(this.broker as { stopping?: boolean }).stopping) this.logger.warn(`Resync of structured datasources at start: ${(e as Error).message}`);
			}
		},
		/**
		 * Tasks that a stopped node left behind: queued ones are queued here, those it was running (or had paused)
		 * end in Error, "Interrupted by a server restart". Each task is claimed first, so two nodes never both take it.
		 */
		async recover(which: (t: TaskDoc) => boolean): Promise<void> {
			const me = this.broker.nodeID;
			for (const t of (await this.repo.activeTasks() as TaskDoc[]).filter(which)) {
				if (t.Node === me && this.queue.control(t._id)) continue;
				if (t.Status === "Queued" || (t.Status === "Paused" && !t.StartTime)) {
					if (!(await this.repo.claimTask(t._id, t.Status, t.Node, { Node: me, Status: "Queued" }))) continue;
					this.queue.enqueue(t._id, t.Owner);
				} else {
					const fields = { Status: "Error" as TaskStatus, StatusMessage: RESTART_MESSAGE, EndTime: now(), Node: me };
					if (!(await this.repo.claimTask(t._id, t.Status, t.Node, fields))) continue;
					Object.assign(t, fields);
					await this.repo.insert({ _id: randomUUID(), kind: "log", JobID: t.JobID, TaskID: t._id, Owner: t.Owner, OwnerUuid: "", Ts: now(), Seq: Date.now() * 1000, Level: "error", Msg: RESTART_MESSAGE, OperationUuid: operationUuid(t.JobID, t._id) } as LogDoc);
					await this.changed(t);
				}
			}
		},

		/** Nodes known to be alive now. */
		aliveNodes(): Set<string> {
			return new Set(this.broker.registry.nodes.list({ onlyAvailable: true }).map((n: { id: string }) => n.id));
		},
	},
	created() {
		this.shuttingDown = false;
		this.queue = new JobQueue((taskId, control) => this.runTask(taskId, control), { perUser: PER_USER, total: TOTAL });
	},
	async started() {
		this.repo = new JobsRepo(this.store);
		const me = this.broker.nodeID;
		const clustered = !!this.broker.transit;
		// Alone: every unfinished task is ours. In a cluster: ours now, the dead nodes' once discovery had time.
		await this.recover((t: TaskDoc) => !clustered || t.Node === me);
		// Not awaited: the datasources and tree services may start after this one.
		void this.resyncStructured();
		if (clustered) {
			this.orphanTimer = setTimeout(() => {
				const alive = this.aliveNodes();
				void this.recover((t: TaskDoc) => !alive.has(t.Node)).catch((e: unknown) => this.logger.warn("Recovering tasks failed:", e));
			}, 15_000);
			this.orphanTimer.unref?.();
		}
	},
	async stopped() {
		this.shuttingDown = true;
		if (this.orphanTimer) clearTimeout(this.orphanTimer);
		this.queue.close();
		// Give running tasks a moment to reach a checkpoint; what they leave Running is settled at the next start.
		for (let i = 0; i < 50 && this.queue.runningCount > 0; i++) await new Promise((r) => setTimeout(r, 100));
	},
};

export = JobsService;
