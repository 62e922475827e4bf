// jobs — `jobs.create` (the jobs service queues its own start-up resyncs through it, as the system user) and the
// events of its tasks: `jobs.task.changed` (broadcast to every node: watchers, the web UI's feed) and
// `jobs.task.control` (Stop/Pause/Resume, broadcast so that it reaches the node running the task).
import type { JobName } from "../jobs/params";
import type { presentJob, presentTask } from "../jobs/model";
import type { ListParams } from "../jobs/user-jobs";

export interface JobsActions {
	"jobs.create": { params: { JobName: JobName; JsonParameters?: string }; result: { JobUuid: string } };
	/** POST /jobs/user: the caller's jobs (an administrator's Owner "*": everybody's), with their tasks. */
	"jobs.list": { params: ListParams; result: { Jobs: ReturnType<typeof presentJob>[] } };
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
