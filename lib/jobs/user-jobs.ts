// The user jobs API's rules (PUT /jobs/user/{JobName}, POST /jobs/user, POST /jobs/tasks/logs,
// POST /jobs/tasks/delete) over the job store: what a job's parameters must be, who may start a resync, how many
// jobs a user may have waiting, one resync job per datasource (its id is derived from the datasource, so a second
// create meets the first one's primary key), whose jobs and logs a caller sees, which tasks a prune deletes.
// Running the tasks is the engine's (lib/jobs/engine); the cluster comes in as UserJobsDeps.
import type { Identity } from "../auth/identity";
import { isAdmin } from "../auth/identity";
import type { LogFilter } from "../db/jobs";
import { BadRequestError, ConflictError, ForbiddenError, TooManyRequestsError } from "../errors";
import { LOG_DB_FIELDS, LOG_FIELDS, isActive, presentJob, presentLog, snapshotOf, type JobDoc, type JobStore, type TaskDoc, type TaskStatus } from "./model";
import { isJobName, jobId, jobLabel, jobParams, parseJsonParameters, type JobName, type JobParams, type ResyncParams } from "./params";
import { isChain } from "./chain";
import { checkFields, fullyPrefiltered, matches, parseQuery, prefilter } from "./query";

export interface ListParams { Owner?: string; EventsOnly?: boolean; TimersOnly?: boolean; LoadTasks?: TaskStatus; JobIDs?: string[]; TasksOffset?: number; TasksLimit?: number }
export interface LogParams { Query?: string; Page?: number; Size?: number; Format?: string }
export interface DeleteTasksParams { JobId?: string; TaskID?: string[]; Status?: TaskStatus[]; PruneLimit?: number }

export interface UserJobsDeps {
	repo: JobStore;
	/** Queues a new task of the job (JobEngine.newTask). */
	newTask(jobId: string, owner: string): Promise<unknown>;
	/** Rejects (NotFound) when there is no datasource of this name. */
	requireDatasource(name: string): Promise<unknown>;
	/** Checks, as the user, what the job will need (lib/jobs/runners' precheck): refused before it is recorded. */
	precheck(user: Identity, name: JobName, params: JobParams): Promise<void>;
	/** A fresh uuid (jobs other than resyncs get one each). */
	uuid(): string;
	now?(): number;
	limits: {
		/** Jobs waiting or running per user. */
		maxActivePerUser: number;
		/** Log lines read to answer a query the database cannot filter alone. */
		maxLogScan: number;
	};
}

export class UserJobs {
	private readonly now: () => number;

	constructor(private readonly deps: UserJobsDeps) {
		this.now = deps.now ?? (() => Math.floor(Date.now() / 1000));
	}

	/** PUT /jobs/user/{JobName}: the job recorded (or found, for a resync) and a new task queued. */
	async create(user: Identity, name: string, jsonParameters: string | undefined): Promise<{ JobUuid: string }> {
		const { repo } = this.deps;
		if (!isJobName(name)) throw new BadRequestError(`unknown job name ${name}`);
		const params = jobParams(name, parseJsonParameters(jsonParameters));
		if (name === "datasource-resync") {
			if (!isAdmin(user)) throw new ForbiddenError("Only administrators can resync a datasource", "forbidden.resync");
			// A flat datasource is checked against its storage instead (see lib/jobs/runners): the name must exist.
			await this.deps.requireDatasource((params as ResyncParams).dsName);
		}
		const max = this.deps.limits.maxActivePerUser;
		if ((await repo.countActive(user.Login)) >= max) throw new TooManyRequestsError(`You already have ${max} jobs waiting or running`);
		await this.deps.precheck(user, name, params);
		const id = jobId(name, params, this.deps.uuid());
		const underWay = async () => (await repo.tasksOf(id)).some((t: TaskDoc) => isActive(t.Status));
		const existing = await repo.job(id);
		if (existing) {
			// One resync job per datasource: a new run is a new task, unless one is already under way.
			if (await underWay()) return { JobUuid: id };
			await repo.updateJob(id, { Params: params, User: snapshotOf(user), Owner: user.Login, OwnerUuid: user.Uuid, ModifiedAt: this.now(), Inactive: false });
		} else {
			const t = this.now();
			try {
				await repo.createJob({ id, Name: name, Label: jobLabel(name, params), Owner: user.Login, OwnerUuid: user.Uuid, Params: params, User: snapshotOf(user), CreatedAt: t, ModifiedAt: t });
			} catch (e) {
				// The same job (one resync job per datasource) created a moment ago by another request or node.
				if (!(e instanceof ConflictError)) throw e;
				if (await underWay()) return { JobUuid: id };
			}
		}
		await this.deps.newTask(id, user.Login);
		return { JobUuid: id };
	}

	/**
	 * POST /jobs/user: the caller's jobs with their tasks. Administrators may ask for someone else's jobs, or
	 * everybody's ("*"), and get the jobs they name whoever owns them (a resync they start may be the one the
	 * server already runs as its system user: same datasource, same job).
	 */
	async list(user: Identity, p: ListParams): Promise<{ Jobs: ReturnType<typeof presentJob>[] }> {
		const owner = isAdmin(user) && p.Owner ? p.Owner : isAdmin(user) && p.JobIDs?.length ? "*" : user.Login;
		let jobs: JobDoc[] = await this.deps.repo.jobs(owner === "*" ? undefined : owner, p.JobIDs);
		// Only the scheduler's jobs (lib/jobs/scheduled) are triggered by events or a schedule.
		if (p.EventsOnly || p.TimersOnly) jobs = jobs.filter((j) => isChain(j.Params) && ((p.EventsOnly && j.Params.events) || (p.TimersOnly && j.Params.timer)));
		const wanted = !p.LoadTasks || p.LoadTasks === "Unknown" || p.LoadTasks === "Any" ? undefined : p.LoadTasks;
		// Every job's page of tasks in one statement, joined here by job.
		const tasks: TaskDoc[] = await this.deps.repo.tasksOfJobs(
			jobs.map((j) => j.id),
			{ status: wanted, offset: p.TasksOffset, limit: p.TasksLimit || undefined },
		);
		const byJob = new Map<string, TaskDoc[]>();
		for (const t of tasks) {
			const mine = byJob.get(t.JobID);
			if (mine) mine.push(t);
			else byJob.set(t.JobID, [t]);
		}
		return { Jobs: jobs.map((j) => presentJob(j, byJob.get(j.id) ?? [])) };
	}

	/** POST /jobs/tasks/logs: a Bleve-lite query over the caller's task logs (everybody's for administrators). */
	async logs(user: Identity, p: LogParams): Promise<{ Logs: ReturnType<typeof presentLog>[] }> {
		if (p.Format && p.Format !== "JSON") throw new BadRequestError(`Log format ${p.Format} is not supported: use JSON`);
		const clauses = parseQuery(p.Query);
		checkFields(clauses, LOG_FIELDS);
		const query: LogFilter = {};
		for (const [field, v] of Object.entries(prefilter(clauses, LOG_FIELDS))) query[LOG_DB_FIELDS[field]] = v;
		if (!isAdmin(user)) query.Owner = { eq: user.Login };
		const size = p.Size || 100;
		const from = (p.Page ?? 0) * size;
		// The usual queries (by job, task or operation) page in the database; others are filtered here.
		if (fullyPrefiltered(clauses, LOG_FIELDS)) return { Logs: (await this.deps.repo.logs(query, size, from)).map(presentLog) };
		const docs = await this.deps.repo.logs(query, this.deps.limits.maxLogScan);
		const hits = docs.map(presentLog).filter((l) => matches(clauses, l, LOG_FIELDS, "Msg"));
		return { Logs: hits.slice(from, from + size) };
	}

	/**
	 * POST /jobs/tasks/delete (administrators): the finished tasks selected by job, ids or status; with
	 * PruneLimit, all but that many newest per job. Tasks still under way are never deleted here (stop them first).
	 */
	async deleteTasks(p: DeleteTasksParams): Promise<{ Deleted: string[] }> {
		const { JobId, TaskID, Status, PruneLimit } = p;
		if (!JobId && !TaskID?.length && !Status?.length) throw new BadRequestError("Pass a JobId, TaskID or Status to select the tasks to delete");
		const statuses = Status?.filter((s) => s !== "Any" && s !== "Unknown");
		let tasks = (await this.deps.repo.tasks({ jobId: JobId || undefined, ids: TaskID?.length ? TaskID : undefined, statuses: statuses?.length ? statuses : undefined })).filter((t) => !isActive(t.Status));
		if (PruneLimit && !TaskID?.length) {
			const kept = new Map<string, number>();
			tasks = tasks.filter((t) => {
				const n = (kept.get(t.JobID) ?? 0) + 1;
				kept.set(t.JobID, n);
				return n > PruneLimit;
			});
		}
		const ids = tasks.map((t) => t.id);
		await this.deps.repo.deleteTasks(ids);
		return { Deleted: ids };
	}
}
