// GET /a/scheduler/templates/docs/{Type}: what a template may use, made from what this server knows: the
// selectors' fields with their Cells descriptions (the jobsNodesSelector and treeQuery definitions of the API
// documents) and whether the playground evaluates them, or the actions with their parameters (./actions).
import { BadRequestError } from "../errors";
import { definition, resolve, type Schema } from "../cells/spec";
import { knownActions } from "./actions";
import { EVALUATED_QUERY_FIELDS } from "./nodes";

export interface DocPiece {
	Name: string;
	Context: string;
	Short: string;
	Long: string;
}

/** The documented types, by the names a client may ask for (lower case). */
const TYPES: Record<string, "selectors" | "actions"> = {
	selectors: "selectors",
	selector: "selectors",
	filters: "selectors",
	nodes: "selectors",
	nodesselector: "selectors",
	actions: "actions",
	action: "actions",
};

function typeName(s: Schema | undefined, defs: Record<string, Schema>): string {
	const r = resolve(s, defs);
	if (!r) return "any";
	if (r.enum) return r.enum.join(" | ");
	if (r.type === "array") return `list of ${typeName(r.items, defs)}`;
	if (r.format === "int64") return "integer";
	if (s?.$ref) return s.$ref.slice(s.$ref.lastIndexOf("/") + 1);
	return r.type ?? "object";
}

function fieldsOf(def: string, context: string, note: (field: string) => string): DocPiece[] {
	const { schema, defs } = definition(def);
	return Object.entries(schema.properties ?? {}).map(([name, prop]) => {
		const text = (prop.title ?? prop.description ?? "").trim();
		const [first, ...rest] = text.split("\n");
		return { Name: name, Context: context, Short: first || name, Long: [`Type: ${typeName(prop, defs)}.`, rest.join(" ").trim(), note(name)].filter(Boolean).join(" ") };
	});
}

function selectorDocs(): DocPiece[] {
	const evaluated = new Set<string>(EVALUATED_QUERY_FIELDS);
	return [
		...fieldsOf("jobsNodesSelector", "NodesSelector", (f) => (f === "Query" ? 'Its SubQueries are tree.Query objects ("@type": "type.googleapis.com/tree.Query"), combined by Operation (OR, AND).' : "")),
		...fieldsOf("treeQuery", "tree.Query", (f) => (evaluated.has(f) ? "Evaluated by the playground." : "Kept in templates; needs the search index, not evaluated by the playground.")),
		...fieldsOf("jobsSelectorRange", "NodesSelector.Range", (f) => (f === "OrderBy" ? "Fields: path, name, size, mtime." : "")),
	];
}

function actionDocs(): DocPiece[] {
	return knownActions().map((a) => ({
		Name: a.id,
		Context: a.category,
		Short: `${a.label}: ${a.description}`,
		Long: a.params.length
			? `Parameters: ${a.params
					.map((p) => `${p.name} (${p.type}${p.mandatory ? ", mandatory" : ""}${p.choices ? `, one of ${p.choices.join("|")}` : ""}${p.default !== undefined ? `, default ${p.default}` : ""}): ${p.description}`)
					.join("; ")}.`
			: "No parameters.",
	}));
}

export function docTemplates(type: string): { Type: string; Docs: DocPiece[] } {
	const kind = TYPES[type.toLowerCase()];
	if (!kind) throw new BadRequestError(`No documentation for "${type.slice(0, 64)}": the types are selectors (nodes selectors and filters) and actions`);
	return { Type: type, Docs: kind === "selectors" ? selectorDocs() : actionDocs() };
}
