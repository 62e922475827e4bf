// The enterprise scheduler's rules: admin-defined jobs saved (each PUT of an existing job keeps the replaced
// definition as a version), deleted, restored from a version, and their triggers — the schedule (once per
// cluster: the store's claim on the next run), tree events (one node handles them: the one holding the events
// lease) and hooks (POST /a/scheduler/hooks/{slug}). A trigger starts a task of the job in the jobs service's
// engine (lib/jobs/scheduled), where it shows in POST /a/jobs/user and is controlled with PUT /a/jobs/user.
import type { Identity } from "../auth/identity";
import type { SchedulerRepo } from "../db/scheduler";
import { BadRequestError, ConflictError, NotFoundError } from "../errors";
import type { TaskInput } from "../jobs/chain";
import { identityOf, snapshotOf } from "../jobs/model";
import type { RunOutcome, ScheduledJob } from "../jobs/scheduled";
import type { TreeChange } from "../contracts";
import { NODE_CHANGE, chainOf, normalizeJob, stringMap, type SchedulerJob, type StoredJob } from "./model";
import { nextRun, parseSchedule } from "./schedule";

export interface SchedulerDeps {
	repo: SchedulerRepo<StoredJob>;
	/** The job's mirror in the jobs service (jobs.scheduledPut / scheduledDelete). */
	mirror(job: ScheduledJob): Promise<unknown>;
	unmirror(jobId: string): Promise<unknown>;
	/** A task of the job (jobs.scheduledRun). */
	run(job: ScheduledJob, input: TaskInput): Promise<RunOutcome>;
	/** The user paths of a datasource node in the workspaces `user` sees (tree.visible). */
	userPaths(user: Identity, ds: string, path: string): Promise<string[]>;
	/** Rejects when `user` cannot read the path (tree.locate). */
	requireReadable(user: Identity, path: string): Promise<void>;
	/** Whether this node handles tree events now (one node of a cluster does). */
	handlesEvents(): Promise<boolean>;
	uuid(): string;
	/** Unix ms. */
	now(): number;
	warn(message: string, err?: unknown): void;
}

export interface HookBody {
	JobParameters?: Record<string, string>;
	Paths?: string[];
	TaskID?: string;
}

export interface VersionsQuery {
	Offset?: number;
	Limit?: number;
	LoadJobs?: boolean;
}

/** `*` within a path segment, `**` across segments, `?` one character. */
export function globMatcher(pattern: string): RegExp {
	let re = "";
	for (let i = 0; i < pattern.length; i++) {
		const c = pattern[i];
		if (c === "*" && pattern[i + 1] === "*") {
			re += ".*";
			i++;
		} else if (c === "*") re += "[^/]*";
		else if (c === "?") re += "[^/]";
		else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
	}
	return new RegExp(`^${re}$`);
}

const secs = (ms: number) => Math.floor(ms / 1000);

/** Event-triggered jobs are read at most this often: a burst of changes reads them once; an edit reaches every node's
 * event handling within this time. */
const EVENT_JOBS_TTL_MS = 2000;
/** The events lease is renewed (a write) at most this often, well within its lifetime, not at every change. */
const EVENTS_LEASE_CHECK_MS = 5000;

type JobRow = Awaited<ReturnType<SchedulerRepo<StoredJob>["jobs"]>>[number];
/** An event job and its path filter, compiled once per read of the jobs (no filter: every path). */
type EventJob = { row: JobRow; globs: RegExp[] };

export class Scheduler {
	private eventJobs: { at: number; rows: Promise<EventJob[]> } | undefined;
	private eventsLease: { at: number; mine: Promise<boolean> } | undefined;

	constructor(private readonly deps: SchedulerDeps) {}

	/** The active jobs that listen to tree events, from a cache this node's own writes clear. */
	private jobsForEvents(): Promise<EventJob[]> {
		const now = this.deps.now();
		if (!this.eventJobs || now - this.eventJobs.at > EVENT_JOBS_TTL_MS) {
			const rows = this.deps.repo.jobs().then((all) =>
				all
					.filter((r) => !r.inactive && r.definition.job.EventNames?.length)
					.map((row) => {
						const filter = row.definition.job.NodeEventFilter;
						return { row, globs: filter?.All ? [] : (filter?.Pathes ?? []).map(globMatcher) };
					}),
			);
			const entry = { at: now, rows };
			this.eventJobs = entry;
			rows.catch(() => this.eventJobs === entry && (this.eventJobs = undefined));
		}
		return this.eventJobs.rows;
	}

	private handlesEvents(): Promise<boolean> {
		const now = this.deps.now();
		if (!this.eventsLease || now - this.eventsLease.at > EVENTS_LEASE_CHECK_MS) {
			const mine = this.deps.handlesEvents();
			const entry = { at: now, mine };
			this.eventsLease = entry;
			mine.catch(() => this.eventsLease === entry && (this.eventsLease = undefined));
		}
		return this.eventsLease.mine;
	}

	/** This node changed the jobs: its next event reads them again. */
	private changedJobs(): void {
		this.eventJobs = undefined;
	}

	private scheduled(s: StoredJob): ScheduledJob {
		const { job } = s;
		return { JobID: job.ID, Label: job.Label, Owner: job.Owner, User: s.user, Inactive: !!job.Inactive, MaxConcurrency: job.MaxConcurrency ?? 0, Chain: chainOf(job) };
	}

	private firstRun(job: SchedulerJob): number | null {
		if (!job.Schedule) return null;
		return nextRun(parseSchedule(job.Schedule.Iso8601Schedule, job.Schedule.Iso8601MinDelta), this.deps.now());
	}

	/** PUT /a/scheduler/jobs: the job saved (its previous definition kept as a version) and mirrored. */
	async put(admin: Identity, body: unknown): Promise<SchedulerJob> {
		const { repo } = this.deps;
		const given = body && typeof body === "object" ? (body as { ID?: unknown }).ID : undefined;
		const existing = typeof given === "string" && given ? await repo.job(given) : null;
		const now = this.deps.now();
		const job = normalizeJob(body, this.deps.uuid(), secs(now), existing?.definition.job);
		for (const other of await repo.jobs()) {
			if (other.id === job.ID) continue;
			const taken = (other.definition.job.Hooks ?? []).find((h) => job.Hooks?.some((mine) => mine.ApiSlug === h.ApiSlug));
			if (taken) throw new ConflictError(`Hook slug ${taken.ApiSlug} is already used by job ${other.id}`);
		}
		const stored: StoredJob = { job, user: snapshotOf(admin) };
		const previous = await repo.put({ id: job.ID, definition: stored, inactive: !!job.Inactive, nextRun: this.firstRun(job) }, now, this.deps.uuid(), (p) => p.job.Label);
		this.changedJobs();
		await this.deps.mirror(this.scheduled(stored));
		// AutoStart: "start a task as soon as the job is inserted" — on creation, not on each edit.
		if (!previous && job.AutoStart && !job.Inactive) await this.deps.run(this.scheduled(stored), {});
		return job;
	}

	async get(id: string): Promise<StoredJob> {
		const row = await this.deps.repo.job(id);
		if (!row) throw new NotFoundError(`Job ${id} not found`, "job.notfound");
		return row.definition;
	}

	/** DELETE /a/scheduler/jobs/{JobID}: the job, its versions, its mirror and tasks. */
	async delete(id: string): Promise<void> {
		await this.get(id);
		// The mirror first: a failure leaves the job whole (a DELETE again finishes it), never a mirror nothing removes.
		await this.deps.unmirror(id);
		if (!(await this.deps.repo.delete(id))) throw new NotFoundError(`Job ${id} not found`, "job.notfound");
		this.changedJobs();
	}

	/** POST /a/scheduler/versions/{JobID}: the definitions PUTs replaced, newest first. */
	async versions(jobId: string, q: VersionsQuery): Promise<{ ID: string; JobID: string; Label?: string; Date: number; Job?: SchedulerJob }[]> {
		await this.get(jobId);
		const list = await this.deps.repo.versions(jobId, q.Offset ?? 0, q.Limit || undefined);
		return list.map((v) => ({ ID: v.id, JobID: v.jobId, ...(v.label ? { Label: v.label } : {}), Date: secs(v.createdAt), ...(q.LoadJobs ? { Job: v.definition.job } : {}) }));
	}

	/** PATCH /a/scheduler/versions/{JobID}/{VersionID}: that definition saved again (the current one becomes a version). */
	async restore(admin: Identity, jobId: string, versionId: string): Promise<SchedulerJob> {
		await this.get(jobId);
		const v = await this.deps.repo.version(jobId, versionId);
		if (!v) throw new NotFoundError(`Version ${versionId} of job ${jobId} not found`, "version.notfound");
		return this.put(admin, v.definition.job);
	}

	async deleteVersion(jobId: string, versionId: string): Promise<void> {
		if (!(await this.deps.repo.deleteVersion(jobId, versionId))) throw new NotFoundError(`Version ${versionId} of job ${jobId} not found`, "version.notfound");
	}

	/**
	 * POST /a/scheduler/hooks/{slug}: a task of the job exposing that hook. Paths are the task's input nodes: the
	 * caller must be able to read them (the actions run with the job's rights, not the caller's). Body parameters
	 * must be job parameters; they override the hook's presets only when the hook allows it.
	 */
	async hook(caller: Identity, slug: string, body: HookBody): Promise<RunOutcome> {
		const rows = await this.deps.repo.jobs();
		const row = rows.find((r) => r.definition.job.Hooks?.some((h) => h.ApiSlug === slug));
		if (!row) throw new NotFoundError(`No job exposes hook ${slug}`, "hook.notfound");
		const { job } = row.definition;
		const hook = job.Hooks!.find((h) => h.ApiSlug === slug)!;
		if (job.Inactive) throw new BadRequestError(`Job ${job.ID} is inactive`);
		if (body.TaskID) throw new BadRequestError("TaskID is not supported: a hook always starts a new task");
		const given = stringMap(body.JobParameters, "JobParameters") ?? {};
		const declared = new Map((job.Parameters ?? []).map((p) => [p.Name, p]));
		for (const k of Object.keys(given)) if (!declared.has(k)) throw new BadRequestError(`JobParameters.${k} is not a parameter of job ${job.ID}`);
		const presets = hook.PresetParameters ?? {};
		if (!hook.AllowOverridePresets) for (const k of Object.keys(given)) if (k in presets) throw new BadRequestError(`JobParameters.${k} is preset by hook ${slug} and cannot be overridden`);
		const parameters = { ...given, ...presets };
		for (const p of declared.values()) if (p.Mandatory && !(p.Name in parameters) && p.Value === undefined) throw new BadRequestError(`Job parameter ${p.Name} is mandatory`);
		const paths = (body.Paths ?? []).map((p) => {
			if (typeof p !== "string" || !p.replace(/^\/+/, "")) throw new BadRequestError("Paths must be user paths");
			return p.replace(/^\/+/, "");
		});
		if (paths.length > 1000) throw new BadRequestError("At most 1000 Paths");
		for (const p of paths) await this.deps.requireReadable(caller, p);
		const input: TaskInput = {};
		if (paths.length) input.nodes = paths;
		if (Object.keys(parameters).length) input.parameters = parameters;
		return this.deps.run(this.scheduled(row.definition), input);
	}

	/** Runs the occurrences due now, each on the node whose claim moved its job's next run forward. */
	async tick(): Promise<number> {
		const now = this.deps.now();
		let ran = 0;
		for (const row of await this.deps.repo.due(now)) {
			const { job } = row.definition;
			if (!job.Schedule || row.nextRun === null) continue;
			const next = nextRun(parseSchedule(job.Schedule.Iso8601Schedule, job.Schedule.Iso8601MinDelta), now, true);
			if (!(await this.deps.repo.claimRun(row.id, row.nextRun, next))) continue;
			const r = await this.deps.run(this.scheduled(row.definition), {}).catch((e: unknown) => this.deps.warn(`Scheduled run of ${row.id} failed:`, e));
			if (r && "TaskId" in r) ran++;
		}
		return ran;
	}

	/** A tree change: a task (the node as input) of each active job listening to that event whose filter takes the node. */
	async onChange(change: TreeChange): Promise<number> {
		const listening = (await this.jobsForEvents()).filter((j) => j.row.definition.job.EventNames?.some((e) => NODE_CHANGE[e] === change.type));
		if (!listening.length || !(await this.handlesEvents())) return 0;
		let ran = 0;
		// Jobs saved by the same administrator see the node at the same paths: asked once per user and change.
		const placed = new Map<string, Promise<string[]>>();
		for (const { row, globs } of listening) {
			const { job, user } = row.definition;
			let where = placed.get(user.Uuid);
			if (!where) {
				where = this.deps.userPaths(identityOf(user), change.node.ds, change.node.path);
				placed.set(user.Uuid, where);
			}
			const paths = await where.catch((e: unknown) => {
				this.deps.warn(`Cannot place ${change.node.ds}/${change.node.path} for job ${job.ID}:`, e);
				return [];
			});
			const path = paths.find((p) => !globs.length || globs.some((g) => g.test(p)));
			if (!path) continue;
			const r = await this.deps.run(this.scheduled(row.definition), { nodes: [path] }).catch((e: unknown) => this.deps.warn(`Event run of ${job.ID} failed:`, e));
			if (r && "TaskId" in r) ran++;
		}
		return ran;
	}
}
