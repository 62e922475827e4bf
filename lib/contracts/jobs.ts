// jobs — `jobs.create` (the jobs service queues its own start-up resyncs through it, as the system user), the
// `jobs.scheduled*` actions the scheduler runs its admin-defined jobs through (lib/jobs/scheduled), and the
// events of its tasks: `jobs.task.changed` (broadcast to every node: watchers, the web UI's feed) and
// `jobs.task.control` (Stop/Pause/Resume, broadcast so that it reaches the node running the task).
import type { JobName } from "../jobs/params";
import type { presentJob, presentTask } from "../jobs/model";
import type { ListParams } from "../jobs/user-jobs";
import type { RunOutcome, ScheduledJob } from "../jobs/scheduled";
import type { TaskInput } from "../jobs/chain";

export interface JobsActions {
	"jobs.create": { params: { JobName: JobName; JsonParameters?: string }; result: { JobUuid: string } };
	/** POST /jobs/user: the caller's jobs (an administrator's Owner "*": everybody's), with their tasks. */
	"jobs.list": { params: ListParams; result: { Jobs: ReturnType<typeof presentJob>[] } };
	/** Internal (the scheduler): mirrors an admin-defined job into the jobs store, after each PUT of it. */
	"jobs.scheduledPut": { params: { Job: ScheduledJob }; result: { Success: true } };
	/** Internal (the scheduler): a task of a mirrored job, with what triggered it; Skipped when it did not run. */
	"jobs.scheduledRun": { params: { Job: ScheduledJob; Input: TaskInput }; result: RunOutcome };
	/** Internal (the scheduler): the mirror and its tasks deleted; false when there was none. */
	"jobs.scheduledDelete": { params: { JobID: string }; result: { Deleted: boolean } };
}

export interface JobTaskChanged {
	job: ReturnType<typeof presentJob>;
	task: ReturnType<typeof presentTask>;
}

export interface JobTaskControl {
	TaskId: string;
	Cmd: "Stop" | "Pause" | "Resume";
}

export interface JobsEvents {
	"jobs.task.changed": JobTaskChanged;
	"jobs.task.control": JobTaskControl;
}
