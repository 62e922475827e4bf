// The scheduler's admin-defined jobs and their versions. A PUT of an existing job keeps the definition it replaces
// as a version in the same transaction (so no definition is lost between two concurrent PUTs). `claimRun` is the
// schedule's once-per-cluster guarantee: one conditional UPDATE moves `next_run` from the occurrence the nodes saw
// due to the next one, and only the node whose update applied runs it.
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { SchedulerJobVersionsTable, SchedulerJobsTable } from "./schema";
import { flag, fromJson } from "./sql";

/** A job's definition as the scheduler keeps it (lib/scheduler's StoredJob), opaque here. */
export interface SchedulerRow<D> {
	id: string;
	definition: D;
	inactive: boolean;
	/** Unix ms. */
	nextRun: number | null;
}

export interface JobVersion<D> {
	id: string;
	jobId: string;
	label: string;
	definition: D;
	/** Unix ms (orders versions saved within a second). */
	createdAt: number;
}

function rowOf<D>(r: Selectable<SchedulerJobsTable>): SchedulerRow<D> {
	return { id: r.id, definition: fromJson<D>(r.definition, {} as D), inactive: !!r.inactive, nextRun: r.next_run === null ? null : Number(r.next_run) };
}

function versionOf<D>(r: Selectable<SchedulerJobVersionsTable>): JobVersion<D> {
	return { id: r.id, jobId: r.job_id, label: r.label, definition: fromJson<D>(r.definition, {} as D), createdAt: Number(r.created_at) };
}

export class SchedulerRepo<D> {
	constructor(private readonly db: Db) {}

	/**
	 * Creates or replaces a job; the replaced definition becomes version `versionId` (labelled `versionLabel`).
	 * The previous definition, or null when the job is new. `now` in unix ms.
	 */
	async put(job: { id: string; definition: D; inactive: boolean; nextRun: number | null }, now: number, versionId: string, versionLabel: (previous: D) => string): Promise<D | null> {
		return this.db.transaction(async (trx) => {
			const old = await trx.selectFrom("scheduler_jobs").selectAll().where("id", "=", job.id).executeTakeFirst();
			const fields = { definition: JSON.stringify(job.definition), inactive: flag(job.inactive), next_run: job.nextRun, modified_at: now };
			if (!old) {
				await trx.insertInto("scheduler_jobs").values({ id: job.id, ...fields, created_at: now }).execute();
				return null;
			}
			const previous = fromJson<D>(old.definition, {} as D);
			await trx.insertInto("scheduler_job_versions").values({ id: versionId, job_id: job.id, label: versionLabel(previous), definition: old.definition, created_at: now }).execute();
			await trx.updateTable("scheduler_jobs").set(fields).where("id", "=", job.id).execute();
			return previous;
		});
	}

	async job(id: string): Promise<SchedulerRow<D> | null> {
		const r = await this.db.kysely.selectFrom("scheduler_jobs").selectAll().where("id", "=", id).executeTakeFirst();
		return r ? rowOf<D>(r) : null;
	}

	async jobs(): Promise<SchedulerRow<D>[]> {
		return (await this.db.kysely.selectFrom("scheduler_jobs").selectAll().orderBy("id").execute()).map((r) => rowOf<D>(r));
	}

	/** Active jobs whose next scheduled run is at or before `now` (unix ms). */
	async due(now: number): Promise<SchedulerRow<D>[]> {
		const rows = await this.db.kysely.selectFrom("scheduler_jobs").selectAll().where("next_run", "is not", null).where("next_run", "<=", now).where("inactive", "=", 0).orderBy("next_run").execute();
		return rows.map((r) => rowOf<D>(r));
	}

	/** Moves the job's next run from `seen` to `next`; whether this caller did (and so runs the occurrence). */
	async claimRun(id: string, seen: number, next: number | null): Promise<boolean> {
		const r = await this.db.kysely.updateTable("scheduler_jobs").set({ next_run: next }).where("id", "=", id).where("next_run", "=", seen).executeTakeFirst();
		return Number(r.numUpdatedRows) === 1;
	}

	/** The job and its versions; whether it existed. */
	async delete(id: string): Promise<boolean> {
		return this.db.transaction(async (trx) => {
			await trx.deleteFrom("scheduler_job_versions").where("job_id", "=", id).execute();
			const r = await trx.deleteFrom("scheduler_jobs").where("id", "=", id).executeTakeFirst();
			return Number(r.numDeletedRows) > 0;
		});
	}

	/** Newest first. */
	async versions(jobId: string, offset = 0, limit?: number): Promise<JobVersion<D>[]> {
		const rows = await this.db.kysely
			.selectFrom("scheduler_job_versions")
			.selectAll()
			.where("job_id", "=", jobId)
			.orderBy("created_at", "desc")
			.orderBy("id", "desc")
			// SQLite takes an OFFSET only after a LIMIT.
			.$if(limit !== undefined || offset > 0, (q) => q.limit(limit ?? 1_000_000))
			.$if(offset > 0, (q) => q.offset(offset))
			.execute();
		return rows.map((r) => versionOf<D>(r));
	}

	async version(jobId: string, id: string): Promise<JobVersion<D> | null> {
		const r = await this.db.kysely.selectFrom("scheduler_job_versions").selectAll().where("job_id", "=", jobId).where("id", "=", id).executeTakeFirst();
		return r ? versionOf<D>(r) : null;
	}

	async deleteVersion(jobId: string, id: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("scheduler_job_versions").where("job_id", "=", jobId).where("id", "=", id).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}
}
