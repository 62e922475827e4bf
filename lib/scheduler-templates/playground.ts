// POST /a/scheduler/templates/playground: a node selector or filter tried on sample input before it goes into a
// job. The code is data (JSON), never run: an entSelectorTemplate holding a NodesSelector, an action's
// {"NodesSelector"} or {"NodesFilter"}, or a bare jobsNodesSelector. It is applied to Input.Nodes, or, when
// there are none and the selector lists Pathes, to the nodes at those paths as the caller sees them (a path
// ending in "/*" stands for the folder's children). The output is the jobsActionMessage of the kept nodes.
import { BadRequestError } from "../errors";
import { definition } from "../cells/spec";
import { encode } from "../cells/codec";
import { compileSelector, selectNodes, type PlainNode } from "./nodes";
import type { NodesSelector } from "./model";

export interface ActionMessage {
	Nodes?: PlainNode[];
	[field: string]: unknown;
}

export interface PlaygroundRequest {
	Code?: string;
	CodeMime?: string;
	Input?: ActionMessage;
	LastOutputJsonBody?: string;
}

export interface PlaygroundResponse extends PlaygroundRequest {
	Output: string;
}

export interface PlaygroundDeps {
	/** The nodes at these paths (a trailing "/*": the children) as the caller may read them. */
	nodesAt: (paths: string[]) => Promise<PlainNode[]>;
	now?: () => number;
}

export const PLAYGROUND_MIMES = ["application/json", "text/json"];
const MAX_CODE = 64 * 1024;
const MAX_INPUT_NODES = 10_000;
const SELECTOR_KEYS = new Set(["All", "Pathes", "Query", "Range", "Label", "Description", "FanOutInput", "ClearInput", "Collect", "Timeout"]);
const SUPPORTED = `the playground evaluates JSON (${PLAYGROUND_MIMES[0]}): a jobsNodesSelector, {"NodesSelector": …} or {"NodesFilter": …}, or a selector template with a NodesSelector`;

/** The selector the code holds, and whether it filters the input (rather than collecting nodes). */
function parseCode(code: string): { selector: NodesSelector; filter: boolean } {
	let v: unknown;
	try {
		v = JSON.parse(code);
	} catch (err) {
		throw new BadRequestError(`Code is not JSON (${(err as Error).message}): ${SUPPORTED}`);
	}
	if (!v || typeof v !== "object" || Array.isArray(v)) throw new BadRequestError(`Code must be a JSON object: ${SUPPORTED}`);
	const o = v as Record<string, unknown>;
	const keys = Object.keys(o);
	if (o.NodesFilter !== undefined) return { selector: o.NodesFilter as NodesSelector, filter: true };
	if (o.NodesSelector !== undefined) return { selector: o.NodesSelector as NodesSelector, filter: o.AsFilter === true };
	if (keys.length && keys.every((k) => SELECTOR_KEYS.has(k))) return { selector: o as NodesSelector, filter: false };
	const other = keys.filter((k) => /(Selector|Filter)$/.test(k));
	throw new BadRequestError(other.length ? `${other.join(", ")} cannot be evaluated here: ${SUPPORTED}` : `Code holds no nodes selector: ${SUPPORTED}`);
}

export async function runPlayground(req: PlaygroundRequest, deps: PlaygroundDeps): Promise<PlaygroundResponse> {
	const code = req.Code ?? "";
	if (!code.trim()) throw new BadRequestError(`Code is required: ${SUPPORTED}`);
	if (code.length > MAX_CODE) throw new BadRequestError(`Code is longer than ${MAX_CODE} characters`);
	const mime = (req.CodeMime ?? "").split(";")[0].trim().toLowerCase();
	if (mime && !PLAYGROUND_MIMES.includes(mime)) throw new BadRequestError(`CodeMime "${mime.slice(0, 64)}" is not supported: ${SUPPORTED}; scripts and Go templates are not run`);
	const { selector, filter } = parseCode(code);
	const compiled = compileSelector(selector, filter ? "NodesFilter" : "NodesSelector", true, (deps.now ? deps.now() : Date.now()) / 1000);
	const input = req.Input?.Nodes ?? [];
	if (!Array.isArray(input)) throw new BadRequestError("Input.Nodes must be a list of nodes");
	if (input.length > MAX_INPUT_NODES) throw new BadRequestError(`Input.Nodes holds at most ${MAX_INPUT_NODES} nodes`);
	let kept: PlainNode[];
	if (input.length) kept = selectNodes(compiled, input);
	else if (filter) throw new BadRequestError("A filter keeps some of the input nodes: give Input.Nodes");
	else if (compiled.pathes && !compiled.all) kept = selectNodes(compiled, await deps.nodesAt(compiled.pathes), true);
	else throw new BadRequestError("Give Input.Nodes to select from, or Pathes in the selector to select from the tree");
	const { schema, defs } = definition("jobsActionMessage");
	const Output = JSON.stringify(encode({ Nodes: kept }, schema, defs) ?? {});
	return { ...req, Output };
}
