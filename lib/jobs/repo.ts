// The jobs collection: jobs, their tasks and the tasks' logs, told apart by `kind`.
import type { Store } from "../../mixins/db.mixin";
import { ACTIVE_STATUSES, type JobDoc, type LogDoc, type TaskDoc, type TaskStatus } from "./model";

export type JobsDoc = JobDoc | TaskDoc | LogDoc;

export class JobsRepo {
	constructor(private readonly store: Store<JobsDoc>) {}

	async job(id: string): Promise<JobDoc | null> {
		const d = await this.store.get(id);
		return d?.kind === "job" ? (d as JobDoc) : null;
	}

	async task(id: string): Promise<TaskDoc | null> {
		const d = await this.store.get(id);
		return d?.kind === "task" ? (d as TaskDoc) : null;
	}

	async insert<T extends JobsDoc>(doc: T): Promise<T> {
		return (await this.store.insert(doc)) as T;
	}

	async patchJob(id: string, fields: Partial<JobDoc>): Promise<void> {
		await this.store.patch(id, fields);
	}

	async patchTask(id: string, fields: Partial<TaskDoc>): Promise<void> {
		await this.store.patch(id, fields);
	}

	/** Sets fields on a task only if it is still in `status` (and on `node`): a claim, safe between nodes. */
	async claimTask(id: string, status: TaskStatus, node: string, fields: Partial<TaskDoc>): Promise<boolean> {
		return (await this.store.updateMany({ _id: id, kind: "task", Status: status, Node: node }, { $set: fields })) > 0;
	}

	/** Jobs of an owner (undefined: everybody's), newest first. */
	async jobs(owner: string | undefined, ids?: string[]): Promise<JobDoc[]> {
		const query: Record<string, unknown> = { kind: "job" };
		if (owner !== undefined) query.Owner = owner;
		if (ids?.length) query._id = { $in: ids };
		return (await this.store.find({ query, sort: ["-CreatedAt"] })) as JobDoc[];
	}

	/** Tasks of some jobs, newest first. */
	async tasksOf(jobIds: string[]): Promise<TaskDoc[]> {
		if (!jobIds.length) return [];
		return (await this.store.find({ query: { kind: "task", JobID: { $in: jobIds } }, sort: ["-Created"] })) as TaskDoc[];
	}

	async tasks(query: Record<string, unknown>): Promise<TaskDoc[]> {
		return (await this.store.find({ query: { ...query, kind: "task" }, sort: ["-Created"] })) as TaskDoc[];
	}

	async activeTasks(): Promise<TaskDoc[]> {
		return this.tasks({ Status: { $in: ACTIVE_STATUSES } });
	}

	async countActive(owner: string): Promise<number> {
		return this.store.count({ kind: "task", Owner: owner, Status: { $in: ACTIVE_STATUSES } });
	}

	/** Logs, newest first. */
	async logs(query: Record<string, unknown>, limit: number, offset = 0): Promise<LogDoc[]> {
		return (await this.store.find({ query: { ...query, kind: "log" }, sort: ["-Seq"], limit, offset })) as LogDoc[];
	}

	/** Removes tasks and their logs. */
	async removeTasks(ids: string[]): Promise<void> {
		if (!ids.length) return;
		await this.store.removeMany({ kind: "log", TaskID: { $in: ids } });
		await this.store.removeMany({ kind: "task", _id: { $in: ids } });
	}

	/** Removes a job with its tasks and logs. */
	async removeJob(id: string): Promise<void> {
		await this.store.removeMany({ kind: "log", JobID: id });
		await this.store.removeMany({ kind: "task", JobID: id });
		await this.store.remove(id);
	}

	/** Keeps an owner's `keep` newest jobs; older jobs whose tasks are all over are removed. */
	async prune(owner: string, keep: number): Promise<number> {
		const jobs = await this.jobs(owner);
		let removed = 0;
		for (const j of jobs.slice(keep)) {
			const active = await this.store.count({ kind: "task", JobID: j._id, Status: { $in: ACTIVE_STATUSES } });
			if (active) continue;
			await this.removeJob(j._id);
			removed++;
		}
		return removed;
	}
}
