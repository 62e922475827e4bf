// The scheduler's templates (Cells enterprise): job templates (a job definition kept under a name), action
// templates (one action with its chain) and selector templates (a selector or filter to reuse). Each is checked
// before it is stored, as it would have to run: actions this server knows, nodes selectors that compile. A PUT
// creates or replaces the template of that name (Cells' semantics), in one statement.
import { BadRequestError, NotFoundError } from "../errors";
import type { SchedulerTemplatesRepo } from "../db/scheduler-templates";
import { checkAction, checkJob } from "./actions";
import { cellsSelector, compileSelector } from "./nodes";
import { SELECTOR_FIELDS, type ActionTemplate, type Job, type JobAction, type NodesSelector, type SelectorField, type SelectorTemplate } from "./model";

export interface SchedulerTemplatesDeps {
	repo: SchedulerTemplatesRepo;
	now?: () => number;
}

/** What `Filter` of a selector templates listing may name: a selector kind (its field or a short name), or the role. */
const FILTERS: Record<string, SelectorField | "filter" | "selector"> = {
	nodes: "NodesSelector",
	idm: "IdmSelector",
	users: "IdmSelector",
	datasource: "DataSourceSelector",
	datasources: "DataSourceSelector",
	output: "ActionOutputFilter",
	context: "ContextMetaFilter",
	trigger: "TriggerFilter",
	filter: "filter",
	filters: "filter",
	selector: "selector",
	selectors: "selector",
	...Object.fromEntries(SELECTOR_FIELDS.map((f) => [f.toLowerCase(), f])),
};

function checkName(name: string | undefined, what: string): string {
	const n = (name ?? "").trim();
	if (!n) throw new BadRequestError(`${what} is required`);
	if (n.length > 128) throw new BadRequestError(`${what} is longer than 128 characters`);
	// eslint-disable-next-line no-control-regex
	if (/[\u0000-\u001f/\\]/.test(n)) throw new BadRequestError(`${what} cannot hold slashes or control characters`);
	return n;
}

/** A nodes selector checked to compile, as Cells writes it. */
function checkSelector(sel: NodesSelector, at: string): NodesSelector {
	compileSelector(sel, at, false);
	return cellsSelector(sel);
}

/** The nodes selectors and filters of some actions (copies the caller owns), checked and rewritten as Cells writes them. */
function checkSelectors(actions: { action: JobAction; at: string }[]): void {
	for (const { action, at } of actions) {
		if (action.NodesSelector !== undefined) action.NodesSelector = checkSelector(action.NodesSelector, `${at}.NodesSelector`);
		if (action.NodesFilter !== undefined) action.NodesFilter = checkSelector(action.NodesFilter, `${at}.NodesFilter`);
	}
}

export class SchedulerTemplates {
	constructor(private readonly deps: SchedulerTemplatesDeps) {}

	// ---- jobs ----

	async listJobs(): Promise<Job[]> {
		return (await this.deps.repo.list<Job>("job")).map((t) => t.body);
	}

	async job(name: string): Promise<Job> {
		const t = await this.deps.repo.get<Job>("job", name);
		if (!t) throw new NotFoundError(`No job template named ${name.slice(0, 128)}`, "template.notfound");
		return t.body;
	}

	/** Stores a job definition as the template of that name: its ID is the name, its label the name by default. */
	async putJob(name: string, job: Job | undefined, by: string): Promise<Job> {
		const n = checkName(name, "Name");
		if (!job || typeof job !== "object" || Array.isArray(job)) throw new BadRequestError("Job is required: the job definition to keep as a template");
		const stored: Job = { ...structuredClone(job), ID: n, Label: (job.Label ?? "").trim() || n };
		checkSelectors(checkJob(stored));
		if (stored.NodeEventFilter !== undefined) stored.NodeEventFilter = checkSelector(stored.NodeEventFilter, "Job.NodeEventFilter");
		await this.deps.repo.put("job", n, stored, by, this.now());
		return stored;
	}

	async deleteJob(name: string): Promise<void> {
		if (!(await this.deps.repo.delete("job", name))) throw new NotFoundError(`No job template named ${name.slice(0, 128)}`, "template.notfound");
	}

	// ---- actions ----

	async listActions(): Promise<ActionTemplate[]> {
		return (await this.deps.repo.list<ActionTemplate>("action")).map((t) => t.body);
	}

	async putAction(t: Partial<ActionTemplate> | undefined, by: string): Promise<ActionTemplate> {
		const name = checkName(t?.Name, "Template.Name");
		if (!t?.Action) throw new BadRequestError("Template.Action is required");
		const stored: ActionTemplate = { Name: name, Action: structuredClone(t.Action) };
		checkSelectors(checkAction(stored.Action));
		await this.deps.repo.put("action", name, stored, by, this.now());
		return stored;
	}

	async deleteAction(name: string): Promise<void> {
		if (!(await this.deps.repo.delete("action", name))) throw new NotFoundError(`No action template named ${name.slice(0, 128)}`, "template.notfound");
	}

	// ---- selectors ----

	/** All selector templates, or those of one kind or role (`Filter`). */
	async listSelectors(filter?: string): Promise<SelectorTemplate[]> {
		const f = (filter ?? "").trim();
		const want = f ? FILTERS[f.toLowerCase()] : undefined;
		if (f && !want) throw new BadRequestError(`Filter "${f.slice(0, 64)}" is not a selector kind: use ${[...SELECTOR_FIELDS, "filter", "selector"].join(", ")} (or nodes, idm, datasource, output, context, trigger)`);
		const all = (await this.deps.repo.list<SelectorTemplate>("selector")).map((t) => t.body);
		if (!want) return all;
		if (want === "filter") return all.filter((t) => t.AsFilter === true);
		if (want === "selector") return all.filter((t) => t.AsFilter !== true);
		return all.filter((t) => t[want] !== undefined);
	}

	async putSelector(t: Partial<SelectorTemplate> | undefined, by: string): Promise<SelectorTemplate> {
		const name = checkName(t?.Name, "Template.Name");
		const kinds = SELECTOR_FIELDS.filter((f) => t?.[f] !== undefined);
		if (kinds.length !== 1) throw new BadRequestError(`A selector template holds one selector: one of ${SELECTOR_FIELDS.join(", ")}${kinds.length ? ` (not ${kinds.join(" and ")})` : ""}`);
		const stored = { ...t, Name: name } as SelectorTemplate;
		if (stored.NodesSelector) stored.NodesSelector = checkSelector(stored.NodesSelector, "Template.NodesSelector");
		await this.deps.repo.put("selector", name, stored, by, this.now());
		return stored;
	}

	async deleteSelector(name: string): Promise<void> {
		if (!(await this.deps.repo.delete("selector", name))) throw new NotFoundError(`No selector template named ${name.slice(0, 128)}`, "template.notfound");
	}

	private now(): number {
		return this.deps.now ? this.deps.now() : Date.now();
	}
}
