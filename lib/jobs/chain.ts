// Jobs made of several actions (the scheduler's admin-defined jobs, lib/scheduler): their steps as stored in the
// job's Params, and how a step's Cells parameters (a map of strings) become a runner's parameters for one task.
// A step's parameters may name job parameters as `{{.JobParameters.NAME}}` (Cells' syntax; nothing else of Go
// templates is understood), and a step without nodes takes the task's input nodes (the event's node, the hook's
// Paths): the result is checked by ./params like a user job's JsonParameters.
import { BadRequestError } from "../errors";
import { jobParams, type ChainJobParams, type JobParams } from "./params";

/**
 * One action of the chain: the Cells action id, the runner, its parameters as Cells gives them; and the whole
 * chain with the job parameters' default values.
 */
export type ChainParams = ChainJobParams;
export type ChainStep = ChainParams["steps"][number];

/** What a trigger gives a task: the nodes it is about (user paths), the run's parameters. */
export interface TaskInput {
	nodes?: string[];
	parameters?: Record<string, string>;
}

export function isChain(p: unknown): p is ChainParams {
	return !!p && typeof p === "object" && Array.isArray((p as ChainParams).steps);
}

const PARAM_REF = /\{\{\s*\.JobParameters\.([A-Za-z0-9_-]+)\s*\}\}/g;

/** Names of the job parameters a value refers to; a 400 for any other template. */
export function parameterRefs(value: string, where: string): string[] {
	const names = [...value.matchAll(PARAM_REF)].map((m) => m[1]);
	if (value.replace(PARAM_REF, "").includes("{{")) throw new BadRequestError(`${where}: only {{.JobParameters.NAME}} templates are supported`);
	return names;
}

/** A parameter's string as the runner wants it: JSON arrays and booleans decoded, other strings as they are. */
function decode(v: string): unknown {
	const t = v.trim();
	if (t.startsWith("[") || t === "true" || t === "false") {
		try {
			return JSON.parse(t);
		} catch {
			throw new BadRequestError(`Parameter value ${v} is not valid JSON`);
		}
	}
	return v;
}

/** The runner's parameters for one step of one task (a 400 when they are not valid). */
export function stepParams(step: ChainStep, input: TaskInput, defaults: Record<string, string>): JobParams {
	const values = { ...defaults, ...input.parameters };
	const raw: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(step.params)) {
		const resolved = v.replace(PARAM_REF, (_m, name: string) => {
			if (!(name in values)) throw new BadRequestError(`Job parameter ${name} has no value`);
			return values[name];
		});
		raw[k] = decode(resolved);
	}
	if (step.name === "copy" || step.name === "move") delete raw.type;
	if (input.nodes?.length) {
		if (step.name === "extract") raw.node ??= input.nodes[0];
		else if (step.name !== "datasource-resync") raw.nodes ??= input.nodes;
	}
	return jobParams(step.name, raw);
}
