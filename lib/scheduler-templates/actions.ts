// The action ids a template may name: the job actions this server describes (lib/jobs/catalog, by their names and
// by the Cells ids their runners stand for) and the Cells ids admins' job definitions commonly use. A template
// naming anything else could never run here, so it is refused when stored.
import { BadRequestError } from "../errors";
import { JOB_ACTIONS, type ActionParam, type ActionSpec } from "../jobs/catalog";
import { ACTION_IDS } from "../jobs/model";
import { JOB_NAMES } from "../jobs/params";
import type { Job, JobAction } from "./model";

export interface KnownAction {
	id: string;
	label: string;
	description: string;
	category: string;
	params: ActionParam[];
}

/** Cells' remote download, which the catalog has no runner for: accepted in templates, described here. */
const WGET: KnownAction = {
	id: "actions.cmd.wget",
	label: "Remote download",
	description: "Downloads a URL into a folder",
	category: "Files",
	params: [
		{ name: "url", type: "string", mandatory: true, description: "URL to download (http or https)" },
		{ name: "target", type: "string", mandatory: true, description: "Folder to save the download in" },
	],
};

function fromSpec(id: string, spec: ActionSpec): KnownAction {
	return { id, label: spec.Label, description: spec.Description, category: spec.Category, params: spec.params };
}

/** A Cells id standing for several catalog actions (copy and move): their parameters merged, `type` choosing. */
function merged(id: string, names: readonly (keyof typeof JOB_ACTIONS)[]): KnownAction {
	if (names.length === 1) return fromSpec(id, JOB_ACTIONS[names[0]]);
	const params: ActionParam[] = [{ name: "type", type: "select", mandatory: true, description: "Which of them", choices: [...names] }];
	for (const n of names) for (const p of JOB_ACTIONS[n].params) if (!params.some((q) => q.name === p.name)) params.push(p);
	return {
		id,
		label: names.map((n) => JOB_ACTIONS[n].Label).join(" / "),
		description: names.map((n) => JOB_ACTIONS[n].Description).join("; "),
		category: JOB_ACTIONS[names[0]].Category,
		params,
	};
}

function build(): Map<string, KnownAction> {
	const out = new Map<string, KnownAction>();
	const byCellsId = new Map<string, (keyof typeof JOB_ACTIONS)[]>();
	for (const name of JOB_NAMES) byCellsId.set(ACTION_IDS[name], [...(byCellsId.get(ACTION_IDS[name]) ?? []), name]);
	for (const [id, names] of [...byCellsId].sort(([a], [b]) => (a < b ? -1 : 1))) out.set(id, merged(id, names));
	out.set(WGET.id, WGET);
	for (const name of JOB_NAMES) out.set(name, fromSpec(name, JOB_ACTIONS[name]));
	return out;
}

let known: Map<string, KnownAction> | undefined;

/** Every action id a template may use, Cells ids first. */
export function knownActions(): KnownAction[] {
	known ??= build();
	return [...known.values()];
}

export function isKnownAction(id: string): boolean {
	known ??= build();
	return known.has(id);
}

/** Bounds a job definition's action tree (a template is a definition, not a data store). */
const MAX_ACTIONS = 256;
const MAX_DEPTH = 32;

/** Every action of a chain with its place ("Actions[0].ChainedActions[1]"), checked to be an object. */
function walk(list: unknown, at: string, depth: number, out: { action: JobAction; at: string }[]): void {
	if (list === undefined) return;
	if (!Array.isArray(list)) throw new BadRequestError(`${at} must be a list of actions`);
	list.forEach((a, i) => visit(a, `${at}[${i}]`, depth, out));
}

function visit(a: unknown, at: string, depth: number, out: { action: JobAction; at: string }[]): void {
	if (a === undefined) return;
	if (!a || typeof a !== "object" || Array.isArray(a)) throw new BadRequestError(`${at} must be an action object`);
	if (depth > MAX_DEPTH) throw new BadRequestError(`${at}: actions are nested more than ${MAX_DEPTH} levels deep`);
	const action = a as JobAction;
	out.push({ action, at });
	if (out.length > MAX_ACTIONS) throw new BadRequestError(`A template holds at most ${MAX_ACTIONS} actions`);
	walk(action.ChainedActions, `${at}.ChainedActions`, depth + 1, out);
	walk(action.FailedFilterActions, `${at}.FailedFilterActions`, depth + 1, out);
	visit(action.MergeAction, `${at}.MergeAction`, depth + 1, out);
}

function checkIds(all: { action: JobAction; at: string }[]): void {
	for (const { action, at } of all) {
		const id = typeof action.ID === "string" ? action.ID.trim() : "";
		if (!id) throw new BadRequestError(`${at}.ID is required: the action to run`);
		if (!isKnownAction(id)) throw new BadRequestError(`${at}.ID "${id.slice(0, 128)}" is not an action this server knows; the actions are ${knownActions().map((k) => k.id).join(", ")}`);
		if (action.Parameters !== undefined) {
			if (!action.Parameters || typeof action.Parameters !== "object" || Array.isArray(action.Parameters) || Object.values(action.Parameters).some((v) => typeof v !== "string"))
				throw new BadRequestError(`${at}.Parameters must map names to strings`);
		}
	}
}

/** The actions of a job definition, checked: each an object naming a known action (its whole chain too). */
export function checkJob(job: Job): { action: JobAction; at: string }[] {
	const all: { action: JobAction; at: string }[] = [];
	if (!Array.isArray(job.Actions) || !job.Actions.length) throw new BadRequestError("Job.Actions is required: a job template runs at least one action");
	walk(job.Actions, "Job.Actions", 1, all);
	visit(job.MergeAction, "Job.MergeAction", 1, all);
	checkIds(all);
	return all;
}

/** The actions of one action (itself and its chain), checked as checkJob does. */
export function checkAction(action: JobAction, at = "Template.Action"): { action: JobAction; at: string }[] {
	const all: { action: JobAction; at: string }[] = [];
	if (!action || typeof action !== "object") throw new BadRequestError(`${at} is required`);
	visit(action, at, 1, all);
	checkIds(all);
	return all;
}
