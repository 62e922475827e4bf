// Jobs, their tasks and the tasks' logs (Cells' jobsJob / jobsTask / logLogMessage), field names as the jobs
// service handles them. The point of this repository for a cluster is `claim`: several nodes may see the same
// queued task (a restart, a broadcast, a dead node's tasks taken over by every survivor) and exactly one must run
// it. A claim is one conditional UPDATE (`... where status = 'Queued'`): the database applies it to the first
// claimer and to no one after, on SQLite and PostgreSQL alike. Taking over a dead node's task is one too.
import type { Insertable, Selectable, Transaction, Updateable } from "kysely";
import { ACTIVE_STATUSES } from "../jobs/model";
import type { IdMatch } from "../jobs/query";
import type { Db } from "./index";
import type { NedbDoc, NedbSource } from "./nedb-import";
import type { Database, JobsTable, TaskLogsTable, TasksTable } from "./schema";
import { flag, fromJson, orNull, orUndefined, prefixEnd } from "./sql";

export const QUEUED = "Queued";
export const RUNNING = "Running";
export const PAUSED = "Paused";
/** A task in one of these states (lib/jobs/model ACTIVE_STATUSES) is not over: it cannot be deleted, and a restart must deal with it. */
const ACTIVE: readonly string[] = ACTIVE_STATUSES;

export interface JobRecord<P = unknown, U = unknown, N extends string = string> {
	id: string;
	Name: N;
	Label: string;
	Owner: string;
	OwnerUuid: string;
	Params: P;
	/** Who the job runs for. */
	User: U;
	Inactive?: boolean;
	/** Unix seconds. */
	CreatedAt: number;
	ModifiedAt: number;
}

export interface TaskRecord<S extends string = string> {
	id: string;
	JobID: string;
	Owner: string;
	/** Cells' status names (Queued, Running, Finished, Error, Interrupted, Paused...). */
	Status: S;
	StatusMessage: string;
	TriggerOwner: string;
	StartTime?: number;
	EndTime?: number;
	Progress: number;
	HasProgress: boolean;
	CanStop: boolean;
	CanPause: boolean;
	/** The node that runs (or ran) it; "" until claimed. */
	Node: string;
	/** Unix ms. */
	Created: number;
	/** What started it, for tasks of scheduler jobs (JSON, lib/jobs/chain's TaskInput). */
	Input?: string;
}

export interface LogRecord<L extends string = string> {
	id: string;
	JobID: string;
	TaskID: string;
	Owner: string;
	OwnerUuid: string;
	/** Unix seconds. */
	Ts: number;
	/** Orders the logs (unix µs, increasing within a task). */
	Seq: number;
	Level: L;
	Msg: string;
	OperationUuid: string;
}

/** What a task update may change. */
export type TaskFields<S extends string = string> = Partial<Omit<TaskRecord<S>, "id" | "JobID" | "Created">>;
/** What a job update may change. */
export type JobFields<P = unknown, U = unknown> = Partial<Pick<JobRecord<P, U>, "Params" | "User" | "Owner" | "OwnerUuid" | "Inactive" | "ModifiedAt" | "Label">>;

/** The log fields a query can narrow the database read with. */
export type LogFilter = Partial<Record<"id" | "JobID" | "TaskID" | "Owner" | "OwnerUuid" | "OperationUuid", IdMatch>>;

export interface TaskFilter<S extends string = string> {
	jobId?: string;
	ids?: string[];
	statuses?: S[];
	owner?: string;
}

const LOG_COLUMNS = { id: "id", JobID: "job_id", TaskID: "task_id", Owner: "owner", OwnerUuid: "owner_uuid", OperationUuid: "operation_uuid" } as const;

function jobOf<P, U, N extends string>(r: Selectable<JobsTable>): JobRecord<P, U, N> {
	const j: JobRecord<P, U, N> = {
		id: r.id,
		Name: r.name as N,
		Label: r.label,
		Owner: r.owner,
		OwnerUuid: r.owner_uuid,
		Params: fromJson<P>(r.params, {} as P),
		User: fromJson<U>(r.user, {} as U),
		CreatedAt: Number(r.created_at),
		ModifiedAt: Number(r.modified_at),
	};
	if (r.inactive) j.Inactive = true;
	return j;
}

function taskOf<S extends string>(r: Selectable<TasksTable>): TaskRecord<S> {
	const t: TaskRecord<S> = {
		id: r.id,
		JobID: r.job_id,
		Owner: r.owner,
		Status: r.status as S,
		StatusMessage: r.status_message,
		TriggerOwner: r.trigger_owner,
		Progress: Number(r.progress),
		HasProgress: !!r.has_progress,
		CanStop: !!r.can_stop,
		CanPause: !!r.can_pause,
		Node: r.node,
		Created: Number(r.created),
	};
	const start = orUndefined(r.start_time);
	const end = orUndefined(r.end_time);
	if (start !== undefined) t.StartTime = Number(start);
	if (end !== undefined) t.EndTime = Number(end);
	if (r.input) t.Input = r.input;
	return t;
}

function logOf<L extends string>(r: Selectable<TaskLogsTable>): LogRecord<L> {
	return {
		id: r.id,
		JobID: r.job_id,
		TaskID: r.task_id,
		Owner: r.owner,
		OwnerUuid: r.owner_uuid,
		Ts: Number(r.ts),
		Seq: Number(r.seq),
		Level: r.level as L,
		Msg: r.msg,
		OperationUuid: r.operation_uuid,
	};
}

function taskColumns(f: TaskFields): Updateable<TasksTable> {
	const set: Updateable<TasksTable> = {};
	if (f.Owner !== undefined) set.owner = f.Owner;
	if (f.Status !== undefined) set.status = f.Status;
	if (f.StatusMessage !== undefined) set.status_message = f.StatusMessage;
	if (f.TriggerOwner !== undefined) set.trigger_owner = f.TriggerOwner;
	if ("StartTime" in f) set.start_time = orNull(f.StartTime);
	if ("EndTime" in f) set.end_time = orNull(f.EndTime);
	if (f.Progress !== undefined) set.progress = f.Progress;
	if (f.HasProgress !== undefined) set.has_progress = flag(f.HasProgress);
	if (f.CanStop !== undefined) set.can_stop = flag(f.CanStop);
	if (f.CanPause !== undefined) set.can_pause = flag(f.CanPause);
	if (f.Node !== undefined) set.node = f.Node;
	return set;
}

export class JobsRepo<P = unknown, U = unknown, S extends string = string, L extends string = string, N extends string = string> {
	constructor(
		private readonly db: Db,
		private readonly now: () => number = () => Math.floor(Date.now() / 1000),
	) {}

	// ---- jobs ----

	async createJob(j: JobRecord<P, U, N>): Promise<void> {
		await this.db.kysely
			.insertInto("jobs")
			.values({
				id: j.id,
				name: j.Name,
				label: j.Label,
				owner: j.Owner,
				owner_uuid: j.OwnerUuid,
				params: JSON.stringify(j.Params ?? {}),
				user: JSON.stringify(j.User ?? {}),
				inactive: flag(j.Inactive),
				created_at: j.CreatedAt,
				modified_at: j.ModifiedAt,
			})
			.execute();
	}

	async job(id: string): Promise<JobRecord<P, U, N> | null> {
		const r = await this.db.kysely.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? jobOf<P, U, N>(r) : null;
	}

	async updateJob(id: string, f: JobFields<P, U>): Promise<boolean> {
		const set: Updateable<JobsTable> = {};
		if (f.Params !== undefined) set.params = JSON.stringify(f.Params);
		if (f.User !== undefined) set.user = JSON.stringify(f.User);
		if (f.Owner !== undefined) set.owner = f.Owner;
		if (f.OwnerUuid !== undefined) set.owner_uuid = f.OwnerUuid;
		if (f.Inactive !== undefined) set.inactive = flag(f.Inactive);
		if (f.ModifiedAt !== undefined) set.modified_at = f.ModifiedAt;
		if (f.Label !== undefined) set.label = f.Label;
		if (!Object.keys(set).length) return false;
		const r = await this.db.kysely.updateTable("jobs").set(set).where("id", "=", id).executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/** Jobs of an owner (undefined: everybody's), restricted to `ids` when given, newest first. */
	async jobs(owner: string | undefined, ids?: string[]): Promise<JobRecord<P, U, N>[]> {
		let q = this.db.kysely.selectFrom("jobs").selectAll();
		if (owner !== undefined) q = q.where("owner", "=", owner);
		if (ids?.length) q = q.where("id", "in", ids);
		return (await q.orderBy("created_at", "desc").orderBy("id").execute()).map((r) => jobOf<P, U, N>(r));
	}

	/** Removes a job with its tasks and their logs (cascading foreign keys). */
	async deleteJob(id: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("jobs").where("id", "=", id).executeTakeFirst();
		return r.numDeletedRows === 1n;
	}

	/** Keeps an owner's `keep` newest jobs; the older ones whose tasks are all over go, in one statement. How many. */
	async prune(owner: string, keep: number): Promise<number> {
		const r = await this.db.kysely
			.deleteFrom("jobs")
			.where("owner", "=", owner)
			.where("id", "not in", (eb) => eb.selectFrom("jobs").select("id").where("owner", "=", owner).orderBy("created_at", "desc").orderBy("id").limit(keep))
			.where(({ not, exists, selectFrom }) => not(exists(selectFrom("tasks").select("tasks.id").whereRef("tasks.job_id", "=", "jobs.id").where("tasks.status", "in", ACTIVE))))
			.executeTakeFirst();
		return Number(r.numDeletedRows);
	}

	// ---- tasks ----

	/** A task of an existing job (a missing job is a foreign-key error, not a silent orphan). */
	async createTask(t: TaskRecord<S>): Promise<void> {
		await this.db.kysely
			.insertInto("tasks")
			.values({
				id: t.id,
				job_id: t.JobID,
				owner: t.Owner,
				status: t.Status,
				status_message: t.StatusMessage,
				trigger_owner: t.TriggerOwner,
				start_time: orNull(t.StartTime),
				end_time: orNull(t.EndTime),
				progress: t.Progress,
				has_progress: flag(t.HasProgress),
				can_stop: flag(t.CanStop),
				can_pause: flag(t.CanPause),
				node: t.Node,
				created: t.Created,
				input: orNull(t.Input),
			})
			.execute();
	}

	async task(id: string): Promise<TaskRecord<S> | null> {
		const r = await this.db.kysely.selectFrom("tasks").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? taskOf<S>(r) : null;
	}

	/** Tasks of a job, newest first. */
	async tasksOf(jobId: string): Promise<TaskRecord<S>[]> {
		return this.tasks({ jobId });
	}

	/**
	 * Tasks of some jobs, newest first, in one statement: of each job, those of `status` (any when absent), from its
	 * `offset`-th newest, at most `limit` (a page of tasks per job, counted in SQL: a job's long history is not read).
	 */
	async tasksOfJobs(jobIds: string[], page: { status?: S; offset?: number; limit?: number } = {}): Promise<TaskRecord<S>[]> {
		if (!jobIds.length) return [];
		let q = this.db.kysely.selectFrom("tasks").selectAll().where("job_id", "in", jobIds);
		if (page.status !== undefined) q = q.where("status", "=", page.status);
		const offset = page.offset ?? 0;
		if (!offset && page.limit === undefined) return (await q.orderBy("created", "desc").orderBy("id").execute()).map((r) => taskOf<S>(r));
		const ranked = q.select((eb) => eb.fn.agg<number>("row_number").over((ob) => ob.partitionBy("job_id").orderBy("created", "desc").orderBy("id")).as("rank"));
		let w = this.db.kysely.selectFrom(ranked.as("t")).selectAll().where("t.rank", ">", offset);
		if (page.limit !== undefined) w = w.where("t.rank", "<=", offset + page.limit);
		return (await w.orderBy("t.created", "desc").orderBy("t.id").execute()).map((r) => taskOf<S>(r));
	}

	/** Tasks matching every given criterion, newest first. */
	async tasks(f: TaskFilter<S>): Promise<TaskRecord<S>[]> {
		let q = this.db.kysely.selectFrom("tasks").selectAll();
		if (f.jobId !== undefined) q = q.where("job_id", "=", f.jobId);
		if (f.ids) q = f.ids.length ? q.where("id", "in", f.ids) : q.where("id", "is", null);
		if (f.statuses) q = f.statuses.length ? q.where("status", "in", f.statuses) : q.where("id", "is", null);
		if (f.owner !== undefined) q = q.where("owner", "=", f.owner);
		return (await q.orderBy("created", "desc").orderBy("id").execute()).map((r) => taskOf<S>(r));
	}

	/** Tasks not over yet (queued, running or paused), newest first. */
	async activeTasks(): Promise<TaskRecord<S>[]> {
		return this.tasks({ statuses: ACTIVE as S[] });
	}

	async countActive(owner: string): Promise<number> {
		const r = await this.db.kysely
			.selectFrom("tasks")
			.select((eb) => eb.fn.countAll<number>().as("n"))
			.where("owner", "=", owner)
			.where("status", "in", ACTIVE)
			.executeTakeFirstOrThrow();
		return Number(r.n);
	}

	/** Tasks by status (the jobs queue's depth in /metrics). */
	async countByStatus(): Promise<Record<string, number>> {
		const rows = await this.db.kysely.selectFrom("tasks").select(["status", (eb) => eb.fn.countAll<number>().as("n")]).groupBy("status").execute();
		return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
	}

	/** Queued tasks, oldest first (what a node looks for after a restart). */
	async queued(limit = 100): Promise<TaskRecord<S>[]> {
		return (await this.db.kysely.selectFrom("tasks").selectAll().where("status", "=", QUEUED).orderBy("created").orderBy("id").limit(limit).execute()).map((r) => taskOf<S>(r));
	}

	/**
	 * Takes a task that has not started (Queued, or Paused before it started) for `node`: whether this node won it.
	 * The winner's task is `status` (Running, or Paused when it starts paused) on `node`, started now.
	 */
	async claim(taskId: string, node: string, status: string = RUNNING): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("tasks")
			.set({ status, node, start_time: this.now(), status_message: RUNNING })
			.where("id", "=", taskId)
			.where((eb) => eb.or([eb("status", "=", QUEUED), eb.and([eb("status", "=", PAUSED), eb("start_time", "is", null)])]))
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/**
	 * Takes over a task of another node (gone, or stopped) that is still `status` on `fromNode`, writing `fields`:
	 * whether this caller did. Of the nodes that see the same dead node's task, one takes it.
	 */
	async takeOver(taskId: string, fromNode: string, status: string, fields: TaskFields<S>): Promise<boolean> {
		const r = await this.db.kysely.updateTable("tasks").set(taskColumns(fields)).where("id", "=", taskId).where("node", "=", fromNode).where("status", "=", status).executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/**
	 * Writes task fields; with `onNode`, only while the task is still that node's (a node presumed dead whose
	 * task was taken over must not overwrite it). Whether it was written.
	 */
	async updateTask(taskId: string, fields: TaskFields<S>, onNode?: string): Promise<boolean> {
		const set = taskColumns(fields);
		if (!Object.keys(set).length) return false;
		let q = this.db.kysely.updateTable("tasks").set(set).where("id", "=", taskId);
		if (onNode !== undefined) q = q.where("node", "=", onNode);
		return (await q.executeTakeFirst()).numUpdatedRows === 1n;
	}

	/**
	 * Ends a task `node` runs, with its final status; false (and no change) when the task is not Running on `node`
	 * (it was stopped, or taken over after this node was presumed dead).
	 */
	async finish(taskId: string, node: string, status: string, message = ""): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("tasks")
			.set({ status, status_message: message, end_time: this.now() })
			.where("id", "=", taskId)
			.where("node", "=", node)
			.where("status", "=", RUNNING)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
	}

	/** Removes tasks with their logs (cascading foreign key). */
	async deleteTasks(ids: string[]): Promise<number> {
		if (!ids.length) return 0;
		return Number((await this.db.kysely.deleteFrom("tasks").where("id", "in", ids).executeTakeFirst()).numDeletedRows);
	}

	// ---- logs ----

	async addLog(l: LogRecord<L>): Promise<void> {
		await this.db.kysely
			.insertInto("task_logs")
			.values({ id: l.id, job_id: l.JobID, task_id: l.TaskID, owner: l.Owner, owner_uuid: l.OwnerUuid, ts: l.Ts, seq: l.Seq, level: l.Level, msg: l.Msg, operation_uuid: l.OperationUuid })
			.execute();
	}

	/** Logs matching the filter, newest first. */
	async logs(filter: LogFilter, limit: number, offset = 0): Promise<LogRecord<L>[]> {
		let q = this.db.kysely.selectFrom("task_logs").selectAll();
		for (const [field, m] of Object.entries(filter) as [keyof LogFilter, IdMatch][]) {
			const col = LOG_COLUMNS[field];
			if ("eq" in m) q = q.where(col, "=", m.eq);
			else {
				q = q.where(col, ">=", m.prefix);
				const end = prefixEnd(m.prefix);
				if (end !== undefined) q = q.where(col, "<", end);
			}
		}
		q = q.orderBy("seq", "desc").orderBy("id").limit(limit);
		if (offset) q = q.offset(offset);
		return (await q.execute()).map((r) => logOf<L>(r));
	}

	/**
	 * The NeDB `jobs` collection (jobs, tasks and logs in one, told apart by `kind`), inside the import's
	 * transaction. Tasks of a job that is gone and logs of a task that is gone are left out (the foreign keys
	 * would refuse them; nothing could show them). Read three times, jobs then tasks then logs: a job rewritten
	 * after its tasks were (its last line after theirs) is in the table before them.
	 */
	static async importNedb(trx: Transaction<Database>, docs: NedbSource): Promise<{ jobs: number; tasks: number; logs: number }> {
		const s = (d: NedbDoc, k: string, def = "") => (typeof d[k] === "string" ? (d[k] as string) : def);
		const n = (d: NedbDoc, k: string, def = 0) => (typeof d[k] === "number" && Number.isFinite(d[k]) ? (d[k] as number) : def);
		const insert = async <T extends "jobs" | "tasks" | "task_logs">(table: T, rows: Insertable<Database[T]>[]): Promise<number> => {
			for (let i = 0; i < rows.length; i += 200) await trx.insertInto(table).values(rows.slice(i, i + 200)).execute();
			return rows.length;
		};
		/** Those of `ids` that `table` holds. */
		const present = async (table: "jobs" | "tasks", ids: string[]): Promise<Set<string>> =>
			new Set(ids.length ? (await trx.selectFrom(table).select("id").where("id", "in", [...new Set(ids)]).execute()).map((r) => r.id) : []);
		let jobs = 0;
		for await (const batch of docs.batches()) {
			const rows: Insertable<JobsTable>[] = [];
			for (const d of batch) {
				if (d.kind !== "job" || typeof d.Name !== "string") continue;
				rows.push({
					id: d._id,
					name: d.Name,
					label: s(d, "Label", d.Name),
					owner: s(d, "Owner"),
					owner_uuid: s(d, "OwnerUuid"),
					params: JSON.stringify(d.Params ?? {}),
					user: JSON.stringify(d.User ?? {}),
					inactive: flag(d.Inactive === true),
					created_at: n(d, "CreatedAt"),
					modified_at: n(d, "ModifiedAt", n(d, "CreatedAt")),
				});
			}
			jobs += await insert("jobs", rows);
		}
		/** One reading: the documents of `kind` whose `ref` names a row `parents` holds, as rows of `table`. */
		const children = async <T extends "tasks" | "task_logs">(kind: string, ref: "JobID" | "TaskID", parents: "jobs" | "tasks", table: T, row: (d: NedbDoc, parent: string) => Insertable<Database[T]>): Promise<number> => {
			let count = 0;
			for await (const batch of docs.batches()) {
				const candidates = batch.flatMap((d) => (d.kind === kind && typeof d[ref] === "string" ? [{ d, parent: d[ref] as string }] : []));
				const known = await present(parents, candidates.map((c) => c.parent));
				count += await insert(table, candidates.filter((c) => known.has(c.parent)).map((c) => row(c.d, c.parent)));
			}
			return count;
		};
		const tasks = await children("task", "JobID", "jobs", "tasks", (d, parent) => ({
			id: d._id,
			job_id: parent,
			owner: s(d, "Owner"),
			status: s(d, "Status", "Unknown"),
			status_message: s(d, "StatusMessage"),
			trigger_owner: s(d, "TriggerOwner"),
			start_time: typeof d.StartTime === "number" ? d.StartTime : null,
			end_time: typeof d.EndTime === "number" ? d.EndTime : null,
			progress: n(d, "Progress"),
			has_progress: flag(d.HasProgress === true),
			can_stop: flag(d.CanStop === true),
			can_pause: flag(d.CanPause === true),
			node: s(d, "Node"),
			created: n(d, "Created"),
		}));
		const logs = await children("log", "TaskID", "tasks", "task_logs", (d, parent) => ({
			id: d._id,
			job_id: s(d, "JobID"),
			task_id: parent,
			owner: s(d, "Owner"),
			owner_uuid: s(d, "OwnerUuid"),
			ts: n(d, "Ts"),
			seq: n(d, "Seq"),
			level: s(d, "Level", "info"),
			msg: s(d, "Msg"),
			operation_uuid: s(d, "OperationUuid"),
		}));
		return { jobs, tasks, logs };
	}
}
