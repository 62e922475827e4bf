// How a node runs the jobs' tasks, apart from Moleculer: its queue, a task's life (claimed, run, ended, its logs
// kept), Stop/Pause/Resume of the tasks it holds, and the tasks a stopped or dead node left behind. Storage is a
// JobStore (lib/db's JobsRepo), the rest of the cluster comes in as EngineDeps.
//
// Between nodes, the database decides: a task runs on the node whose `claim` took it (one conditional UPDATE), a
// dead node's task is taken over by the node whose `takeOver` succeeded, and a node writes a task's progress and
// end only while the task is still its own.
import { randomUUID } from "node:crypto";
import type { Identity } from "../auth/identity";
import type { ObjectStore } from "../storage";
import { JobQueue, TaskInterrupted, type TaskControl } from "./queue";
import type { ControlDeps } from "./control";
import type { JobName, JobParams } from "./params";
import { isChain, stepParams, type ChainParams, type TaskInput } from "./chain";
import { fromJson } from "../db/sql";
import { JobFailure, RUNNERS, type JobEnv } from "./runners";
import { RESTART_MESSAGE, SYSTEM_USER, identityOf, isActive, operationUuid, type JobDoc, type JobStore, type LogLevel, type TaskDoc, type TaskStatus } from "./model";
import type { ActionName, UserCaller } from "../contracts";

const MAX_LOGS_PER_TASK = 2000;
const PROGRESS_EVERY_MS = 500;
const now = () => Math.floor(Date.now() / 1000);
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** What the users service says of a job's owner: null when the user is gone. */
export type OwnerInfo = { Login: string; Profile: Identity["Profile"]; GroupPath: string; Roles: string[]; Locked?: boolean } | null;

export interface EngineDeps {
	repo: JobStore;
	/** This node, unique in the cluster. */
	nodeId: string;
	/** Tells the cluster a task changed (`jobs.task.changed`). */
	publish(job: JobDoc, task: TaskDoc): Promise<void>;
	/** Asks the node that runs a task to Stop/Pause/Resume it. */
	sendControl(taskId: string, cmd: "Stop" | "Pause" | "Resume"): Promise<unknown>;
	/** Another node of the cluster, and up. */
	nodeAvailable(node: string): boolean;
	/** An internal action, as `user`, without timeout. */
	call: UserCaller<Identity>["call"];
	hasAction(action: ActionName): boolean;
	/** Resolves once the services tasks act through can answer (at a start they may still be registering). */
	ready(): Promise<void>;
	store(ds: string): Promise<ObjectStore>;
	/** The owner as the users service knows them now; undefined when there is no users service. */
	ownerInfo(uuid: string): Promise<OwnerInfo | undefined>;
	warn(message: string, err?: unknown): void;
	error(message: string, err?: unknown): void;
	limits: { perUser: number; total: number; keepJobsPerUser: number };
}

export class JobEngine {
	readonly queue: JobQueue;
	private shuttingDown = false;

	constructor(private readonly deps: EngineDeps) {
		this.queue = new JobQueue((taskId, control) => this.runTask(taskId, control), { perUser: deps.limits.perUser, total: deps.limits.total });
	}

	/** A new task of a job, queued here; `input` is what a scheduler trigger gives it (lib/jobs/chain). */
	async newTask(jobId: string, owner: string, input?: TaskInput): Promise<TaskDoc> {
		const task: TaskDoc = {
			id: randomUUID(),
			JobID: jobId,
			Owner: owner,
			Status: "Queued",
			StatusMessage: "Queued",
			TriggerOwner: owner,
			Progress: 0,
			HasProgress: true,
			CanStop: true,
			CanPause: true,
			Node: this.deps.nodeId,
			Created: Date.now(),
		};
		if (input) task.Input = JSON.stringify(input);
		await this.deps.repo.createTask(task);
		this.queue.enqueue(task.id, owner);
		await this.changed(task);
		return task;
	}

	/** Saves task fields (with `mine`, only while the task is this node's) and tells the cluster. */
	async updateTask(task: TaskDoc, fields: Partial<TaskDoc>, job?: JobDoc | null, mine = false): Promise<boolean> {
		const written = await this.deps.repo.updateTask(task.id, fields, mine ? this.deps.nodeId : undefined);
		if (!written) return false;
		Object.assign(task, fields);
		await this.changed(task, job);
		return true;
	}

	controlDeps(): ControlDeps {
		return {
			repo: this.deps.repo,
			applyLocal: (taskId, cmd) => this.applyLocal(taskId, cmd),
			elsewhere: (node) => node !== this.deps.nodeId && this.deps.nodeAvailable(node),
			sendControl: (taskId, cmd) => this.deps.sendControl(taskId, cmd),
			updateTask: (task, fields, job) => this.updateTask(task, fields, job),
			newTask: (jobId, owner, input) => this.newTask(jobId, owner, input),
		};
	}

	/** Stop / Pause / Resume on this node, if the task is here (queued or running); false if it is not. */
	async applyLocal(taskId: string, cmd: "Stop" | "Pause" | "Resume"): Promise<boolean> {
		const c = this.queue.control(taskId);
		if (!c) return false;
		const started = this.queue.isRunning(taskId);
		const task = await this.deps.repo.task(taskId);
		if (cmd === "Stop") {
			c.stop();
			// A running task ends itself at its next checkpoint; a waiting one never starts.
			if (this.queue.withdraw(taskId) && task) await this.updateTask(task, { Status: "Interrupted", StatusMessage: "Interrupted by the user", EndTime: now() }, null, true);
		} else {
			if (cmd === "Pause") c.pause();
			else c.resume();
			if (task && isActive(task.Status)) await this.updateTask(task, { Status: cmd === "Pause" ? "Paused" : started ? "Running" : "Queued" }, null, true);
		}
		this.queue.pump();
		return true;
	}

	/**
	 * Tasks that a stopped node left behind: queued ones are queued here, those it was running (or had paused)
	 * end in Error, "Interrupted by a server restart". Each is taken over with one conditional update first, so
	 * that of the nodes seeing the same dead node's tasks, one takes each.
	 */
	async recover(which: (t: TaskDoc) => boolean): Promise<void> {
		const me = this.deps.nodeId;
		for (const t of (await this.deps.repo.activeTasks()).filter(which)) {
			if (t.Node === me && this.queue.control(t.id)) continue;
			if (t.Status === "Queued" || (t.Status === "Paused" && !t.StartTime)) {
				if (!(await this.deps.repo.takeOver(t.id, t.Node, t.Status, { Node: me, Status: "Queued" }))) continue;
				this.queue.enqueue(t.id, t.Owner);
			} else {
				const fields = { Status: "Error" as TaskStatus, StatusMessage: RESTART_MESSAGE, EndTime: now(), Node: me };
				if (!(await this.deps.repo.takeOver(t.id, t.Node, t.Status, fields))) continue;
				Object.assign(t, fields);
				await this.deps.repo.addLog({ id: randomUUID(), JobID: t.JobID, TaskID: t.id, Owner: t.Owner, OwnerUuid: "", Ts: now(), Seq: Date.now() * 1000, Level: "error", Msg: RESTART_MESSAGE, OperationUuid: operationUuid(t.JobID, t.id) });
				await this.changed(t);
			}
		}
	}

	/** Stops taking and running tasks (the node stops); what is left running is settled at the next start. */
	async close(): Promise<void> {
		this.shuttingDown = true;
		this.queue.close();
		// Give running tasks a moment to reach a checkpoint.
		for (let i = 0; i < 50 && this.queue.runningCount > 0; i++) await new Promise((r) => setTimeout(r, 100));
	}

	get closing(): boolean {
		return this.shuttingDown;
	}

	private async changed(task: TaskDoc, job?: JobDoc | null): Promise<void> {
		const j = job ?? (await this.deps.repo.job(task.JobID));
		if (j) await this.deps.publish(j, task);
	}

	/** The owner as the task acts: refreshed from the users service when there is one (roles may have changed). */
	private async ownerIdentity(job: JobDoc): Promise<Identity> {
		if (job.User.Uuid === SYSTEM_USER.Uuid) return identityOf(job.User);
		const info = await this.deps.ownerInfo(job.User.Uuid);
		if (info === undefined) return identityOf(job.User);
		if (!info) throw new JobFailure(`User ${job.Owner} no longer exists`);
		if (info.Locked) throw new JobFailure(`User ${job.Owner} is locked`);
		return identityOf({ ...job.User, Login: info.Login, Profile: info.Profile, GroupPath: info.GroupPath, Roles: info.Roles });
	}

	/** A scheduler job's actions, one after the other; the first failure ends the task. */
	private async runChain(env: JobEnv, chain: ChainParams, input: TaskInput): Promise<string> {
		const messages: string[] = [];
		for (const step of chain.steps) {
			await env.control.checkpoint();
			let params: JobParams;
			try {
				params = stepParams(step, input, chain.parameters);
			} catch (e) {
				throw new JobFailure(`${step.action}: ${errMsg(e)}`);
			}
			messages.push(await RUNNERS[step.name](env, params));
		}
		return messages.join("; ");
	}

	private async runTask(taskId: string, control: TaskControl): Promise<void> {
		const me = this.deps.nodeId;
		await this.deps.ready();
		// The claim decides which node runs it: another node may hold the same task in its queue (a takeover).
		if (!(await this.deps.repo.claim(taskId, me, control.paused ? "Paused" : "Running"))) return;
		const task = await this.deps.repo.task(taskId);
		if (!task) return;
		const job = await this.deps.repo.job(task.JobID);
		await this.changed(task, job);
		let logs = 0;
		let seq = 0;
		const log = async (level: LogLevel, msg: string) => {
			if (++logs > MAX_LOGS_PER_TASK && (level !== "error" || logs > MAX_LOGS_PER_TASK + 500)) {
				if (logs === MAX_LOGS_PER_TASK + 1) msg = "Too many messages: the following ones are not kept";
				else return;
			}
			seq = Math.max(seq + 1, Date.now() * 1000);
			await this.deps.repo
				.addLog({ id: randomUUID(), JobID: task.JobID, TaskID: task.id, Owner: task.Owner, OwnerUuid: job?.OwnerUuid ?? "", Ts: now(), Seq: seq, Level: level, Msg: msg, OperationUuid: operationUuid(task.JobID, task.id) })
				.catch((e: unknown) => this.deps.warn("Cannot store a task log:", e));
		};
		let status: TaskStatus = "Finished";
		let message: string;
		try {
			if (!job) throw new JobFailure("The job of this task no longer exists");
			const user = await this.ownerIdentity(job);
			let lastSaved = 0;
			const env: JobEnv = {
				user,
				control,
				call: (action, params) => this.deps.call(action, params, user),
				hasAction: (action) => this.deps.hasAction(action),
				store: (ds) => this.deps.store(ds),
				log: (level, msg) => log(level, msg),
				progress: (done, total) => {
					task.Progress = Math.max(0, Math.min(1, total > 0 ? done / total : 1));
					if (Date.now() - lastSaved < PROGRESS_EVERY_MS) return;
					lastSaved = Date.now();
					void this.updateTask(task, { Progress: task.Progress }, job, true).catch(() => undefined);
				},
			};
			await log("info", `Started: ${job.Label}`);
			message = isChain(job.Params) ? await this.runChain(env, job.Params, fromJson<TaskInput>(task.Input, {})) : await RUNNERS[job.Name as JobName](env, job.Params);
		} catch (e) {
			if (this.shuttingDown || control.reason === "shutdown") return; // left as it is: the next start-up deals with it
			if (e instanceof TaskInterrupted || control.stopped) {
				status = "Interrupted";
				message = "Interrupted by the user";
			} else {
				status = "Error";
				message = errMsg(e);
				if (!(e instanceof JobFailure) && !(e as { code?: number }).code) this.deps.error(`Task ${taskId} failed:`, e);
			}
		}
		if (this.shuttingDown) return;
		await log(status === "Error" ? "error" : "info", message);
		await this.updateTask(task, { Status: status, StatusMessage: message, EndTime: now(), Progress: status === "Finished" ? 1 : task.Progress }, job, true);
		await this.deps.repo.prune(task.Owner, this.deps.limits.keepJobsPerUser).catch(() => undefined);
	}
}
