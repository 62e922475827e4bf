// The jobs service's side of the scheduler's jobs (lib/scheduler): a scheduler job is mirrored as a row of the
// jobs store (Params: its chain of actions, lib/jobs/chain) so that its tasks run in the JobEngine like any user
// job's, and show and are controlled through POST/PUT /a/jobs/user. The scheduler owns the definition; this row
// follows each PUT. Its Inactive flag is the one both APIs switch (PUT /a/jobs/user Active/Inactive too).
import { ConflictError } from "../errors";
import type { ChainParams, TaskInput } from "./chain";
import { isActive, type JobStore, type TaskDoc, type UserSnapshot } from "./model";

/** The scheduler job as the jobs store keeps it. */
export interface ScheduledJob {
	JobID: string;
	Label: string;
	Owner: string;
	/** Who the actions act as. */
	User: UserSnapshot;
	Inactive: boolean;
	MaxConcurrency: number;
	Chain: ChainParams;
}

export interface ScheduledDeps {
	repo: JobStore;
	newTask(jobId: string, owner: string, input?: TaskInput): Promise<TaskDoc>;
	now(): number;
}

/** Writes the mirror row (created, or updated to the new definition). */
export async function mirror(deps: ScheduledDeps, j: ScheduledJob): Promise<void> {
	const fields = { Label: j.Label, Params: j.Chain, User: j.User, Owner: j.Owner, OwnerUuid: j.User.Uuid, Inactive: j.Inactive, ModifiedAt: deps.now() };
	if (await deps.repo.updateJob(j.JobID, fields)) return;
	try {
		await deps.repo.createJob({ id: j.JobID, Name: j.Chain.steps[0].name, ...fields, CreatedAt: deps.now() });
	} catch (e) {
		// Made a moment ago by another trigger or node: it then takes this definition.
		if (!(e instanceof ConflictError)) throw e;
		await deps.repo.updateJob(j.JobID, fields);
	}
}

export type RunOutcome = { TaskId: string } | { Skipped: string };

/**
 * A task of the job with this input, unless the job is inactive (switched off by either API) or already runs
 * MaxConcurrency tasks (a trigger then is dropped, as Cells does).
 */
export async function runScheduled(deps: ScheduledDeps, j: ScheduledJob, input: TaskInput): Promise<RunOutcome> {
	// The row follows the definition the trigger saw (a PUT whose mirroring failed is caught up here), and is made
	// again when it is gone (pruned with the owner's old jobs, deleted with PUT /a/jobs/user Delete). Its Inactive
	// flag is left as it is: PUT /a/jobs/user may have switched the job off.
	const fields = { Label: j.Label, Params: j.Chain, User: j.User, Owner: j.Owner, OwnerUuid: j.User.Uuid };
	let job = await deps.repo.job(j.JobID);
	// Written only when it differs: an event job fires at every matching change, and a row in step needs no write.
	const stale = !job || (Object.keys(fields) as (keyof typeof fields)[]).some((k) => JSON.stringify(job?.[k]) !== JSON.stringify(fields[k]));
	if (stale) {
		if (!(await deps.repo.updateJob(j.JobID, fields))) await mirror(deps, j);
		job = await deps.repo.job(j.JobID);
	}
	if (!job || job.Inactive) return { Skipped: `Job ${j.JobID} is inactive` };
	const running = (await deps.repo.tasksOf(j.JobID)).filter((t) => isActive(t.Status)).length;
	if (j.MaxConcurrency > 0 && running >= j.MaxConcurrency) return { Skipped: `Job ${j.JobID} already runs ${running} task(s)` };
	const task = await deps.newTask(j.JobID, job.Owner, input);
	return { TaskId: task.id };
}
