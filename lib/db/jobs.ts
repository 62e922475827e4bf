// Jobs and their tasks (Cells' jobsJob / jobsTask), field names as the jobs service stores them today. The point
// of this repository for a cluster is `claim`: several nodes may see the same queued task (a restart, a broadcast)
// and exactly one must run it. A claim is one conditional UPDATE (`... where status = 'Queued'`): the database
// applies it to the first claimer and to no one after, on SQLite and PostgreSQL alike.
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { JobsTable, TasksTable } from "./schema";
import { flag, fromJson, orNull, orUndefined } from "./sql";

export const QUEUED = "Queued";
export const RUNNING = "Running";

export interface JobRecord<P = unknown, U = unknown> {
	id: string;
	Name: string;
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

export interface TaskRecord {
	id: string;
	JobID: string;
	Owner: string;
	/** Cells' status names (Queued, Running, Finished, Error, Interrupted, Paused...). */
	Status: string;
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
}

function jobOf<P, U>(r: Selectable<JobsTable>): JobRecord<P, U> {
	const j: JobRecord<P, U> = {
		id: r.id,
		Name: r.name,
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

function taskOf(r: Selectable<TasksTable>): TaskRecord {
	const t: TaskRecord = {
		id: r.id,
		JobID: r.job_id,
		Owner: r.owner,
		Status: r.status,
		StatusMessage: r.status_message,
		TriggerOwner: r.trigger_owner,
		Progress: r.progress,
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
	return t;
}

export class JobsRepo<P = unknown, U = unknown> {
	constructor(
		private readonly db: Db,
		private readonly now: () => number = () => Math.floor(Date.now() / 1000),
	) {}

	async createJob(j: JobRecord<P, U>): Promise<void> {
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

	async job(id: string): Promise<JobRecord<P, U> | null> {
		const r = await this.db.kysely.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? jobOf<P, U>(r) : null;
	}

	/** A task of an existing job (a missing job is a foreign-key error, not a silent orphan). */
	async createTask(t: TaskRecord): Promise<void> {
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
			})
			.execute();
	}

	async task(id: string): Promise<TaskRecord | null> {
		const r = await this.db.kysely.selectFrom("tasks").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? taskOf(r) : null;
	}

	/** Tasks of a job, newest first. */
	async tasksOf(jobId: string): Promise<TaskRecord[]> {
		return (await this.db.kysely.selectFrom("tasks").selectAll().where("job_id", "=", jobId).orderBy("created", "desc").orderBy("id").execute()).map(taskOf);
	}

	/** Queued tasks, oldest first (what a node looks for after a restart). */
	async queued(limit = 100): Promise<TaskRecord[]> {
		return (await this.db.kysely.selectFrom("tasks").selectAll().where("status", "=", QUEUED).orderBy("created").orderBy("id").limit(limit).execute()).map(taskOf);
	}

	/** Takes a queued task for `node`: whether this node won it. The winner's task is Running on `node`. */
	async claim(taskId: string, node: string): Promise<boolean> {
		const r = await this.db.kysely
			.updateTable("tasks")
			.set({ status: RUNNING, node, start_time: this.now() })
			.where("id", "=", taskId)
			.where("status", "=", QUEUED)
			.executeTakeFirst();
		return r.numUpdatedRows === 1n;
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

	/** Removes a job with its tasks and their logs (cascading foreign keys). */
	async deleteJob(id: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("jobs").where("id", "=", id).executeTakeFirst();
		return r.numDeletedRows === 1n;
	}
}
