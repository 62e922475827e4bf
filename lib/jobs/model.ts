// What the jobs service stores (jobs, their tasks and the tasks' logs, as lib/db's JobsRepo keeps them) and how it
// is shown (Cells' jobsJob, jobsTask, logLogMessage).
import type { Identity } from "../auth/identity";
import type { JobRecord, JobsRepo, LogRecord, TaskRecord } from "../db/jobs";
import type { JobName, JobParams } from "./params";
import { isChain } from "./chain";

export const TASK_STATUSES = ["Unknown", "Idle", "Running", "Finished", "Interrupted", "Paused", "Any", "Error", "Queued"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** A task in one of these states is not over: it cannot be deleted, and a restart must deal with it. */
export const ACTIVE_STATUSES: TaskStatus[] = ["Queued", "Running", "Paused"];
export const isActive = (s: TaskStatus): boolean => ACTIVE_STATUSES.includes(s);

export const RESTART_MESSAGE = "Interrupted by a server restart";

/** The caller, as kept with a job so that its tasks can run later (after a restart) on the owner's behalf. */
export interface UserSnapshot {
	Uuid: string;
	Login: string;
	Profile: Identity["Profile"];
	GroupPath: string;
	Roles: string[];
	TokenKind: Identity["TokenKind"];
	Scopes?: string[];
	ImpersonatedBy?: string;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type JobDoc = JobRecord<JobParams, UserSnapshot, JobName>;
export type TaskDoc = TaskRecord<TaskStatus>;
export type LogDoc = LogRecord<LogLevel>;
/** The jobs' storage with these shapes. */
export type JobStore = JobsRepo<JobParams, UserSnapshot, TaskStatus, LogLevel, JobName>;

/** Cells' action ids for the user jobs. */
export const ACTION_IDS: Record<JobName, string> = {
	copy: "actions.tree.copymove",
	move: "actions.tree.copymove",
	delete: "actions.tree.delete",
	compress: "actions.archive.compress",
	extract: "actions.archive.extract",
	"datasource-resync": "actions.cmd.resync",
};

export function snapshotOf(user: Identity): UserSnapshot {
	const s: UserSnapshot = { Uuid: user.Uuid, Login: user.Login, Profile: user.Profile, GroupPath: user.GroupPath, Roles: [...user.Roles], TokenKind: user.TokenKind };
	if (user.Scopes) s.Scopes = [...user.Scopes];
	if (user.ImpersonatedBy) s.ImpersonatedBy = user.ImpersonatedBy;
	return s;
}

/** The identity a task acts with: the owner's, valid for the time of the task. */
export function identityOf(s: UserSnapshot): Identity {
	return { ...s, Roles: [...s.Roles], ExpiresAt: Math.floor(Date.now() / 1000) + 24 * 3600 };
}

/** Who runs the jobs the server starts by itself (Cells' system user): an administrator without roles. */
export const SYSTEM_USER: Identity = { Uuid: "pydio.system.user", Login: "pydio.system.user", Profile: "admin", GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: 0 };

/**
 * The datasources to resync when a node starts, as Cells does: structured ones (files may have been added or
 * removed by other tools, or a crash may have come between a write to storage and its index update), unless
 * their `SkipSyncOnRestart` says not to. Internal ones (versions, thumbnails) have no tree.
 */
export function resyncOnRestart(
	list: { Name: string; FlatStorage?: boolean; SkipSyncOnRestart?: boolean; Disabled?: boolean; CreationDate?: number; StorageConfiguration?: Record<string, string> }[],
	startedAt: number,
): string[] {
	// One created since the node started has nothing to catch up on.
	const old = (d: { CreationDate?: number }) => !d.CreationDate || d.CreationDate <= startedAt;
	return list.filter((d) => d.FlatStorage === false && !d.SkipSyncOnRestart && !d.Disabled && old(d) && d.StorageConfiguration?.cellsInternal !== "true").map((d) => d.Name);
}

/** `<jobId>-<first 8 chars of the task id>`, as Cells names a task's operation in its logs. */
export function operationUuid(jobId: string, taskId: string): string {
	return `${jobId}-${taskId.slice(0, 8)}`;
}

function actionParameters(job: JobDoc): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [k, v] of Object.entries(job.Params as unknown as Record<string, unknown>)) {
		if (k === "type" && job.Name !== "copy" && job.Name !== "move") continue;
		out[k] = typeof v === "string" ? v : JSON.stringify(v);
	}
	if (job.Name === "copy" || job.Name === "move") out.type = job.Name;
	return out;
}

export function presentTask(t: TaskDoc): Record<string, unknown> {
	return {
		ID: t.id,
		JobID: t.JobID,
		Status: t.Status,
		StatusMessage: t.StatusMessage,
		TriggerOwner: t.TriggerOwner,
		StartTime: t.StartTime,
		EndTime: t.EndTime,
		CanStop: t.CanStop && isActive(t.Status),
		CanPause: t.CanPause && isActive(t.Status),
		HasProgress: t.HasProgress,
		Progress: t.Progress,
		ActionsLogs: [],
	};
}

/** A scheduler job's actions as it defined them (lib/jobs/chain), a user job's one action otherwise. */
function presentActions(job: JobDoc): Record<string, unknown>[] {
	if (isChain(job.Params)) return job.Params.steps.map((s) => ({ ID: s.action, ...(s.label ? { Label: s.label } : {}), Parameters: s.params }));
	return [{ ID: ACTION_IDS[job.Name], Label: job.Label, Parameters: actionParameters(job) }];
}

export function presentJob(job: JobDoc, tasks?: TaskDoc[]): Record<string, unknown> {
	const out: Record<string, unknown> = {
		ID: job.id,
		Label: job.Label,
		Owner: job.Owner,
		Inactive: !!job.Inactive,
		Custom: false,
		AutoStart: true,
		AutoClean: false,
		MaxConcurrency: 1,
		CreatedAt: job.CreatedAt,
		ModifiedAt: job.ModifiedAt,
		Actions: presentActions(job),
	};
	if (tasks) out.Tasks = tasks.map(presentTask);
	return out;
}

export function presentLog(l: LogDoc): Record<string, unknown> {
	return {
		Ts: l.Ts,
		Level: l.Level,
		Logger: "pydio.grpc.jobs",
		Msg: l.Msg,
		MsgId: l.id,
		OperationUuid: l.OperationUuid,
		SchedulerJobUuid: l.JobID,
		SchedulerTaskUuid: l.TaskID,
		UserName: l.Owner,
		UserUuid: l.OwnerUuid,
	};
}

/** The fields a log query may use, and how they compare (see lib/jobs/query). */
export const LOG_FIELDS = {
	OperationUuid: { kind: "id" },
	SchedulerJobUuid: { kind: "id" },
	SchedulerTaskUuid: { kind: "id" },
	UserName: { kind: "id" },
	UserUuid: { kind: "id" },
	MsgId: { kind: "id" },
	Level: { kind: "keyword" },
	Logger: { kind: "keyword" },
	Msg: { kind: "text" },
	Ts: { kind: "number" },
} as const;

/** Where each query field lives in a LogDoc. */
export const LOG_DB_FIELDS: Record<string, "OperationUuid" | "JobID" | "TaskID" | "Owner" | "OwnerUuid" | "id"> = {
	OperationUuid: "OperationUuid",
	SchedulerJobUuid: "JobID",
	SchedulerTaskUuid: "TaskID",
	UserName: "Owner",
	UserUuid: "OwnerUuid",
	MsgId: "id",
};
