// Controlling a user's jobs and tasks (PUT /a/jobs/user): pause, resume and stop the tasks that run (here or on
// the node that runs them), delete finished ones, run a job once more, switch a job on or off.
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import { isAdmin, type Identity } from "../auth/identity";
import { isChain, type TaskInput } from "./chain";
import { isActive, type JobDoc, type JobStore, type TaskDoc } from "./model";

export interface CtrlParams {
	Cmd?: string;
	JobId?: string;
	TaskId?: string;
	OwnerId?: string;
	RunParameters?: Record<string, string>;
}

export interface ControlDeps {
	repo: JobStore;
	/** Applies a command to a task this node queues or runs; false when it is not here. */
	applyLocal(taskId: string, cmd: "Stop" | "Pause" | "Resume"): Promise<boolean>;
	/** The task's node is another node of the cluster, and it is up. */
	elsewhere(node: string): boolean;
	sendControl(taskId: string, cmd: "Stop" | "Pause" | "Resume"): Promise<unknown>;
	updateTask(task: TaskDoc, fields: Partial<TaskDoc>, job?: JobDoc | null): Promise<unknown>;
	newTask(jobId: string, owner: string, input?: TaskInput): Promise<TaskDoc>;
}

const now = () => Math.floor(Date.now() / 1000);

export async function controlJob(deps: ControlDeps, user: Identity, p: CtrlParams): Promise<string> {
	const cmd = p.Cmd ?? "None";
	if (cmd === "None") throw new BadRequestError("Cmd is required (Pause, Resume, Stop, Delete, RunOnce, Active or Inactive)");
	let task: TaskDoc | null = null;
	if (p.TaskId) {
		task = await deps.repo.task(p.TaskId);
		if (!task || (p.JobId && task.JobID !== p.JobId)) throw new NotFoundError(`Task ${p.TaskId} not found`, "task.notfound");
	}
	const jobIdOf = task?.JobID ?? p.JobId;
	if (!jobIdOf) throw new BadRequestError("JobId or TaskId is required");
	const job: JobDoc | null = await deps.repo.job(jobIdOf);
	if (!job) throw new NotFoundError(`Job ${jobIdOf} not found`, "job.notfound");
	if (job.Owner !== user.Login && !isAdmin(user)) throw new ForbiddenError("You can only control your own jobs");
	const tasks: TaskDoc[] = task ? [task] : await deps.repo.tasksOf(job.id);
	switch (cmd) {
		case "Stop":
		case "Pause":
		case "Resume": {
			const targets = tasks.filter((t) => isActive(t.Status));
			if (!targets.length) throw new BadRequestError(`No task of ${job.id} is queued or running`);
			for (const t of targets) {
				if (await deps.applyLocal(t.id, cmd)) continue;
				if (deps.elsewhere(t.Node)) {
					// Running on another node: that node applies it.
					await deps.sendControl(t.id, cmd);
				} else if (cmd === "Stop") {
					// Nobody runs it any more: it is simply ended.
					await deps.updateTask(t, { Status: "Interrupted", StatusMessage: "Interrupted by the user", EndTime: now() }, job);
				} else throw new BadRequestError(`Task ${t.id} is not running on any node`);
			}
			return `${cmd} sent to ${targets.length} task(s)`;
		}
		case "Delete": {
			if (tasks.some((t) => isActive(t.Status))) throw new BadRequestError("Stop the task before deleting it");
			if (task) await deps.repo.deleteTasks([task.id]);
			else await deps.repo.deleteJob(job.id);
			return task ? `Task ${task.id} deleted` : `Job ${job.id} deleted`;
		}
		case "RunOnce": {
			const chain = isChain(job.Params);
			if (p.RunParameters && Object.keys(p.RunParameters).length && !chain) throw new BadRequestError("RunParameters are not supported: a user job runs again with its own parameters");
			if (job.Inactive) throw new BadRequestError(`Job ${job.id} is inactive`);
			if (tasks.some((t) => isActive(t.Status))) throw new BadRequestError(`Job ${job.id} is already running`);
			if (job.Name === "datasource-resync" && !isAdmin(user)) throw new ForbiddenError("Only administrators can resync a datasource");
			await deps.repo.updateJob(job.id, { ModifiedAt: now() });
			// A scheduler job's run parameters override its job parameters' values (lib/jobs/chain).
			const t = await deps.newTask(job.id, job.Owner, chain && p.RunParameters ? { parameters: p.RunParameters } : undefined);
			return `Task ${t.id} queued`;
		}
		case "Active":
		case "Inactive":
			await deps.repo.updateJob(job.id, { Inactive: cmd === "Inactive", ModifiedAt: now() });
			return `Job ${job.id} is now ${cmd === "Inactive" ? "inactive" : "active"}`;
		default:
			throw new BadRequestError(`Unsupported command ${cmd}`);
	}
}
