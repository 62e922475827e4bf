// The scheduler's admin-defined jobs (Cells' jobsJob, PUT /a/scheduler/jobs): the subset this server honours,
// checked and normalised. Whatever a definition asks that the server would not do (filters on users or
// datasources, parallel branches, templates other than job parameters, …) is a 400 naming it, never dropped:
// a saved job does what it says. Actions map to the job runners (lib/jobs/runners) by their Cells ids; a job
// runs them one after the other (lib/jobs/chain).
import { BadRequestError } from "../errors";
import { JOB_ACTIONS } from "../jobs/catalog";
import { parameterRefs, stepParams, type ChainParams, type ChainStep } from "../jobs/chain";
import type { UserSnapshot } from "../jobs/model";
import type { JobName } from "../jobs/params";
import type { TreeChange } from "../contracts";
import { parseSchedule, type Schedule } from "./schedule";

export const SYSTEM_OWNER = "pydio.system.user";

export interface JobHook {
	ApiSlug: string;
	PresetParameters?: Record<string, string>;
	AllowOverridePresets?: boolean;
	Metadata?: Record<string, string>;
}

export interface JobParameter {
	Name: string;
	Value?: string;
	Description?: string;
	Mandatory?: boolean;
	Type?: string;
	JsonChoices?: string;
}

export interface JobAction {
	ID: string;
	Label?: string;
	Description?: string;
	Parameters?: Record<string, string>;
	ChainedActions?: JobAction[];
}

/** A job as stored and presented (Cells' field names). */
export interface SchedulerJob {
	ID: string;
	Label: string;
	Owner: string;
	Inactive?: boolean;
	Custom: true;
	EventNames?: string[];
	Schedule?: { Iso8601Schedule: string; Iso8601MinDelta?: string };
	Hooks?: JobHook[];
	Actions: JobAction[];
	MaxConcurrency?: number;
	AutoStart?: boolean;
	Parameters?: JobParameter[];
	NodeEventFilter?: { Pathes?: string[]; All?: boolean; Label?: string; Description?: string };
	Metadata?: Record<string, string>;
	CreatedAt: number;
	ModifiedAt: number;
}

/** The stored job and, not presented, the administrator whose rights its actions use. */
export interface StoredJob {
	job: SchedulerJob;
	user: UserSnapshot;
}

/** Cells' NODE_CHANGE event types (tree.NodeChangeEvent_EventType) and the tree.changed type of each. */
export const NODE_CHANGE: Record<string, TreeChange["type"]> = {
	"NODE_CHANGE:0": "create",
	"NODE_CHANGE:2": "move",
	"NODE_CHANGE:3": "content",
	"NODE_CHANGE:4": "delete",
	"NODE_CHANGE:5": "meta",
};

/** Cells action ids this server runs, and the runner of each (copymove: by its `type` parameter). */
const ACTIONS: Record<string, (p: Record<string, string>) => JobName> = {
	"actions.tree.copymove": (p) => {
		const t = p.type ?? "copy";
		if (t !== "copy" && t !== "move") throw new BadRequestError(`actions.tree.copymove: type must be copy or move, not ${t}`);
		return t;
	},
	"actions.tree.delete": () => "delete",
	"actions.archive.compress": () => "compress",
	"actions.archive.extract": () => "extract",
	"actions.cmd.resync": () => "datasource-resync",
};

// Job fields that only describe state (sent back by clients that PUT a job as they read it): not behaviour.
const READ_ONLY = new Set(["Tasks", "CreatedAt", "ModifiedAt", "Custom", "Owner"]);
const JOB_FIELDS = new Set(["ID", "Label", "Inactive", "EventNames", "Schedule", "Hooks", "Actions", "MaxConcurrency", "AutoStart", "Parameters", "NodeEventFilter", "Metadata", ...READ_ONLY]);
const ACTION_FIELDS = new Set(["ID", "Label", "Description", "Parameters", "ChainedActions"]);
const HOOK_FIELDS = new Set(["ApiSlug", "PresetParameters", "AllowOverridePresets", "Metadata", "Policies"]);
const FILTER_FIELDS = new Set(["Pathes", "All", "Label", "Description"]);
const PARAM_FIELDS = new Set(["Name", "Value", "Description", "Mandatory", "Type", "JsonChoices"]);
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Paths a task takes as input when checking a definition whose actions expect the trigger's nodes. */
const SAMPLE_INPUT = ["workspace/input"];

const isEmpty = (v: unknown): boolean =>
	v === undefined || v === null || v === false || v === "" || v === 0 || (Array.isArray(v) && v.length === 0) || (typeof v === "object" && !Array.isArray(v) && Object.values(v as object).every(isEmpty));

/** Fields set (not empty) that the server does not honour: a 400 naming them. */
function refuseUnknown(o: Record<string, unknown>, known: Set<string>, where: string): void {
	const extra = Object.keys(o).filter((k) => !known.has(k) && !isEmpty(o[k]));
	if (extra.length) throw new BadRequestError(`${where}: ${extra.join(", ")} ${extra.length > 1 ? "are" : "is"} not supported by this server`);
}

function obj(v: unknown, where: string): Record<string, unknown> {
	if (!v || typeof v !== "object" || Array.isArray(v)) throw new BadRequestError(`${where} must be an object`);
	return v as Record<string, unknown>;
}

function optString(v: unknown, where: string, max = 1024): string | undefined {
	if (v === undefined || v === null) return undefined;
	if (typeof v !== "string" || v.length > max) throw new BadRequestError(`${where} must be a string of at most ${max} characters`);
	return v;
}

function optBool(v: unknown, where: string): boolean | undefined {
	if (v === undefined || v === null) return undefined;
	if (typeof v !== "boolean") throw new BadRequestError(`${where} must be a boolean`);
	return v;
}

export function stringMap(v: unknown, where: string): Record<string, string> | undefined {
	if (v === undefined || v === null) return undefined;
	const o = obj(v, where);
	if (Object.keys(o).length > 100) throw new BadRequestError(`${where}: at most 100 entries`);
	for (const [k, x] of Object.entries(o)) if (typeof x !== "string" || x.length > 65536) throw new BadRequestError(`${where}.${k} must be a string`);
	return o as Record<string, string>;
}

function list(v: unknown, where: string, max = 100): unknown[] {
	if (v === undefined || v === null) return [];
	if (!Array.isArray(v) || v.length > max) throw new BadRequestError(`${where} must be an array of at most ${max} entries`);
	return v;
}

function action(v: unknown, where: string, depth = 0): JobAction {
	const a = obj(v, where);
	refuseUnknown(a, ACTION_FIELDS, where);
	const id = optString(a.ID, `${where}.ID`, 255);
	if (!id) throw new BadRequestError(`${where}.ID is required`);
	if (!ACTIONS[id]) throw new BadRequestError(`${where}: action ${id} is not supported by this server (supported: ${Object.keys(ACTIONS).join(", ")})`);
	const out: JobAction = { ID: id };
	const label = optString(a.Label, `${where}.Label`);
	const description = optString(a.Description, `${where}.Description`);
	const params = stringMap(a.Parameters, `${where}.Parameters`);
	if (label) out.Label = label;
	if (description) out.Description = description;
	if (params && Object.keys(params).length) out.Parameters = params;
	const chained = list(a.ChainedActions, `${where}.ChainedActions`);
	// Several chained actions are parallel branches in Cells: not something this server runs.
	if (chained.length > 1) throw new BadRequestError(`${where}.ChainedActions: parallel branches are not supported (chain one action after another)`);
	if (depth > 20) throw new BadRequestError(`${where}: chain too deep`);
	if (chained.length) out.ChainedActions = [action(chained[0], `${where}.ChainedActions[0]`, depth + 1)];
	return out;
}

/** The runner steps of a job's actions, in order (each action, then its chained one). */
export function stepsOf(actions: JobAction[]): ChainStep[] {
	const steps: ChainStep[] = [];
	const walk = (a: JobAction) => {
		const params = a.Parameters ?? {};
		const name = ACTIONS[a.ID](params);
		const allowed = new Set([...JOB_ACTIONS[name].params.map((p) => p.name), ...(a.ID === "actions.tree.copymove" ? ["type"] : [])]);
		const extra = Object.keys(params).filter((k) => !allowed.has(k));
		if (extra.length) throw new BadRequestError(`${a.ID}: unknown parameter ${extra.join(", ")} (known: ${[...allowed].join(", ")})`);
		steps.push({ action: a.ID, name, ...(a.Label ? { label: a.Label } : {}), params });
		for (const c of a.ChainedActions ?? []) walk(c);
	};
	actions.forEach(walk);
	return steps;
}

/** Job parameters' values as the chain starts with them. */
export function parameterDefaults(job: SchedulerJob): Record<string, string> {
	return Object.fromEntries((job.Parameters ?? []).filter((p) => p.Value !== undefined).map((p) => [p.Name, p.Value as string]));
}

export function chainOf(job: SchedulerJob): ChainParams {
	return { steps: stepsOf(job.Actions), parameters: parameterDefaults(job), ...(job.EventNames ? { events: true } : {}), ...(job.Schedule ? { timer: true } : {}) };
}

/**
 * PUT /a/scheduler/jobs's Job, checked against what this server does; `id` when the body has none, timestamps
 * from `existing`. Steps are checked as a task would run them: with the job parameters' values and, when a
 * trigger gives input nodes (events, hooks), a sample of them.
 */
export function normalizeJob(body: unknown, id: string, now: number, existing?: SchedulerJob): SchedulerJob {
	const j = obj(body, "Job");
	refuseUnknown(j, JOB_FIELDS, "Job");
	const owner = optString(j.Owner, "Job.Owner");
	if (owner && owner !== SYSTEM_OWNER) throw new BadRequestError(`Job.Owner must be ${SYSTEM_OWNER} (scheduler jobs belong to the system)`);
	const jobId = optString(j.ID, "Job.ID", 255) || id;
	if (!NAME.test(jobId)) throw new BadRequestError("Job.ID may only contain letters, digits, '.', '_' and '-'");
	const label = optString(j.Label, "Job.Label") ?? "";
	if (!label.trim()) throw new BadRequestError("Job.Label is required");
	const job: SchedulerJob = { ID: jobId, Label: label, Owner: SYSTEM_OWNER, Custom: true, Actions: [], CreatedAt: existing?.CreatedAt ?? now, ModifiedAt: now };
	if (optBool(j.Inactive, "Job.Inactive")) job.Inactive = true;
	if (optBool(j.AutoStart, "Job.AutoStart")) job.AutoStart = true;
	if (j.MaxConcurrency !== undefined && j.MaxConcurrency !== null) {
		const m = j.MaxConcurrency;
		if (typeof m !== "number" || !Number.isInteger(m) || m < 0 || m > 1000) throw new BadRequestError("Job.MaxConcurrency must be an integer from 0 (no limit) to 1000");
		if (m) job.MaxConcurrency = m;
	}
	const metadata = stringMap(j.Metadata, "Job.Metadata");
	if (metadata && Object.keys(metadata).length) job.Metadata = metadata;

	const events = list(j.EventNames, "Job.EventNames", 10).map((e, i) => {
		if (typeof e !== "string" || !NODE_CHANGE[e]) throw new BadRequestError(`Job.EventNames[${i}]: ${String(e)} is not supported (supported: ${Object.keys(NODE_CHANGE).join(", ")})`);
		return e;
	});
	if (events.length) job.EventNames = [...new Set(events)];

	if (j.Schedule !== undefined && j.Schedule !== null && !isEmpty(j.Schedule)) {
		const s = obj(j.Schedule, "Job.Schedule");
		refuseUnknown(s, new Set(["Iso8601Schedule", "Iso8601MinDelta"]), "Job.Schedule");
		const spec = optString(s.Iso8601Schedule, "Job.Schedule.Iso8601Schedule", 255) ?? "";
		const minDelta = optString(s.Iso8601MinDelta, "Job.Schedule.Iso8601MinDelta", 64);
		parseSchedule(spec, minDelta);
		job.Schedule = { Iso8601Schedule: spec, ...(minDelta ? { Iso8601MinDelta: minDelta } : {}) };
	}

	if (j.NodeEventFilter !== undefined && j.NodeEventFilter !== null && !isEmpty(j.NodeEventFilter)) {
		const f = obj(j.NodeEventFilter, "Job.NodeEventFilter");
		refuseUnknown(f, FILTER_FIELDS, "Job.NodeEventFilter");
		if (!job.EventNames) throw new BadRequestError("Job.NodeEventFilter needs EventNames: it filters the events that trigger the job");
		const pathes = list(f.Pathes, "Job.NodeEventFilter.Pathes").map((p, i) => {
			if (typeof p !== "string" || !p || p.length > 1024) throw new BadRequestError(`Job.NodeEventFilter.Pathes[${i}] must be a path pattern`);
			return p.replace(/^\/+/, "");
		});
		job.NodeEventFilter = {};
		if (pathes.length) job.NodeEventFilter.Pathes = pathes;
		if (optBool(f.All, "Job.NodeEventFilter.All")) job.NodeEventFilter.All = true;
		const l = optString(f.Label, "Job.NodeEventFilter.Label");
		const d = optString(f.Description, "Job.NodeEventFilter.Description");
		if (l) job.NodeEventFilter.Label = l;
		if (d) job.NodeEventFilter.Description = d;
	}

	const params = list(j.Parameters, "Job.Parameters").map((v, i): JobParameter => {
		const p = obj(v, `Job.Parameters[${i}]`);
		refuseUnknown(p, PARAM_FIELDS, `Job.Parameters[${i}]`);
		const name = optString(p.Name, `Job.Parameters[${i}].Name`, 128) ?? "";
		if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new BadRequestError(`Job.Parameters[${i}].Name must be letters, digits, '_' or '-'`);
		const out: JobParameter = { Name: name };
		for (const k of ["Value", "Description", "Type", "JsonChoices"] as const) {
			const s = optString(p[k], `Job.Parameters[${i}].${k}`, 65536);
			if (s !== undefined && s !== "") out[k] = s;
		}
		if (optBool(p.Mandatory, `Job.Parameters[${i}].Mandatory`)) out.Mandatory = true;
		return out;
	});
	if (new Set(params.map((p) => p.Name)).size !== params.length) throw new BadRequestError("Job.Parameters: names must be unique");
	if (params.length) job.Parameters = params;

	const hooks = list(j.Hooks, "Job.Hooks", 20).map((v, i): JobHook => {
		const h = obj(v, `Job.Hooks[${i}]`);
		refuseUnknown(h, HOOK_FIELDS, `Job.Hooks[${i}]`);
		// Per-hook access policies are not enforced: any authenticated caller may trigger a hook (see the service).
		if (!isEmpty(h.Policies)) throw new BadRequestError(`Job.Hooks[${i}].Policies are not supported: hooks are open to every authenticated user`);
		const slug = optString(h.ApiSlug, `Job.Hooks[${i}].ApiSlug`, 128) || jobId;
		if (!NAME.test(slug)) throw new BadRequestError(`Job.Hooks[${i}].ApiSlug may only contain letters, digits, '.', '_' and '-'`);
		const out: JobHook = { ApiSlug: slug };
		const presets = stringMap(h.PresetParameters, `Job.Hooks[${i}].PresetParameters`);
		if (presets && Object.keys(presets).length) out.PresetParameters = presets;
		if (optBool(h.AllowOverridePresets, `Job.Hooks[${i}].AllowOverridePresets`)) out.AllowOverridePresets = true;
		const md = stringMap(h.Metadata, `Job.Hooks[${i}].Metadata`);
		if (md && Object.keys(md).length) out.Metadata = md;
		return out;
	});
	if (new Set(hooks.map((h) => h.ApiSlug)).size !== hooks.length) throw new BadRequestError("Job.Hooks: slugs must be unique");
	if (hooks.length) job.Hooks = hooks;

	const actions = list(j.Actions, "Job.Actions", 50);
	if (!actions.length) throw new BadRequestError("Job.Actions must list at least one action");
	job.Actions = actions.map((a, i) => action(a, `Job.Actions[${i}]`));
	checkSteps(job);
	return job;
}

/** Each step's parameters as a task would resolve them, so that a definition that cannot run is refused now. */
function checkSteps(job: SchedulerJob): void {
	const declared = new Map((job.Parameters ?? []).map((p) => [p.Name, p]));
	for (const h of job.Hooks ?? []) for (const k of Object.keys(h.PresetParameters ?? {})) if (!declared.has(k)) throw new BadRequestError(`Hook ${h.ApiSlug}: preset ${k} is not a job parameter`);
	const steps = stepsOf(job.Actions);
	const values = parameterDefaults(job);
	const withInput = !!(job.EventNames || job.Hooks);
	for (const step of steps) {
		const refs = Object.entries(step.params).flatMap(([k, v]) => parameterRefs(v, `${step.action}.${k}`));
		for (const r of refs) if (!declared.has(r)) throw new BadRequestError(`${step.action}: {{.JobParameters.${r}}} names no job parameter`);
		// Values given only when the job runs (hooks, RunOnce) are checked then.
		if (refs.some((r) => !(r in values))) continue;
		try {
			stepParams(step, { nodes: withInput ? SAMPLE_INPUT : undefined }, values);
		} catch (e) {
			const hint = withInput ? "" : " (no event or hook gives this job input nodes)";
			throw new BadRequestError(`${step.action}: ${(e as Error).message}${hint}`);
		}
	}
}

export type { Schedule };
