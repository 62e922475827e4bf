// The job actions this server runs (GET /a/config/scheduler/actions): one description per runner of ./runners,
// typed as a record over JOB_NAMES so that a new job cannot be added without its description, with the
// JsonParameters ./params accepts for it.
import type { JobName } from "./params";

export interface ActionParam {
	name: string;
	type: "string" | "string[]" | "boolean" | "select";
	mandatory: boolean;
	description: string;
	choices?: string[];
	default?: string;
}

export interface ActionSpec {
	Label: string;
	Description: string;
	Category: string;
	Icon: string;
	InputDescription: string;
	OutputDescription: string;
	params: ActionParam[];
}

const nodes: ActionParam = { name: "nodes", type: "string[]", mandatory: true, description: "Paths of the files and folders (<workspace-slug>/<path>)" };

export const JOB_ACTIONS: Record<JobName, ActionSpec> = {
	copy: {
		Label: "Copy",
		Description: "Copies files and folders to a target folder, renaming on conflict",
		Category: "Files",
		Icon: "content-copy",
		InputDescription: "Selected nodes",
		OutputDescription: "The copies",
		params: [nodes, { name: "target", type: "string", mandatory: true, description: "Target folder (or target path when targetParent is false)" }, { name: "targetParent", type: "boolean", mandatory: false, description: "target is the parent folder of the copies", default: "true" }],
	},
	move: {
		Label: "Move",
		Description: "Moves files and folders to a target folder",
		Category: "Files",
		Icon: "folder-move",
		InputDescription: "Selected nodes",
		OutputDescription: "The moved nodes",
		params: [nodes, { name: "target", type: "string", mandatory: true, description: "Target folder (or target path when targetParent is false)" }, { name: "targetParent", type: "boolean", mandatory: false, description: "target is the parent folder of the moved nodes", default: "true" }],
	},
	delete: {
		Label: "Delete",
		Description: "Moves files and folders to the recycle bin, or deletes them for good from the recycle bin",
		Category: "Files",
		Icon: "delete",
		InputDescription: "Selected nodes",
		OutputDescription: "Nothing",
		params: [nodes],
	},
	compress: {
		Label: "Compress",
		Description: "Builds an archive of files and folders next to them",
		Category: "Archives",
		Icon: "archive",
		InputDescription: "Selected nodes",
		OutputDescription: "The archive",
		params: [nodes, { name: "archiveName", type: "string", mandatory: true, description: "Path of the archive to create" }, { name: "format", type: "select", mandatory: false, description: "Archive format", choices: ["zip", "tar", "tar.gz"], default: "zip" }],
	},
	extract: {
		Label: "Extract",
		Description: "Extracts an archive into a folder",
		Category: "Archives",
		Icon: "package-up",
		InputDescription: "One archive",
		OutputDescription: "The extracted files",
		params: [
			{ name: "node", type: "string", mandatory: true, description: "Path of the archive" },
			{ name: "target", type: "string", mandatory: false, description: "Target folder (empty: a new folder named after the archive)" },
			{ name: "format", type: "select", mandatory: false, description: "Archive format (empty: from the name)", choices: ["zip", "tar", "tar.gz"] },
		],
	},
	"datasource-resync": {
		Label: "Resynchronize a datasource",
		Description: "Rebuilds the index of a datasource from its storage (added, changed and removed objects)",
		Category: "Datasources",
		Icon: "sync",
		InputDescription: "A datasource name",
		OutputDescription: "Counts of added, updated, removed and unchanged nodes",
		params: [{ name: "dsName", type: "string", mandatory: true, description: "Name of the datasource" }],
	},
};

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The action's form, as Cells' scheduler forms are served (XML). */
export function actionFormXml(name: string, spec: ActionSpec): string {
	const params = spec.params.map((p) => {
		const attrs: [string, string][] = [["name", p.name], ["type", p.type === "string[]" ? "textarea" : p.type], ["label", p.name], ["description", p.description], ["mandatory", String(p.mandatory)]];
		if (p.choices) attrs.push(["choices", p.choices.map((c) => `${c}|${c}`).join(",")]);
		if (p.default !== undefined) attrs.push(["default", p.default]);
		return `\t<param ${attrs.map(([a, v]) => `${a}="${esc(v)}"`).join(" ")}/>`;
	});
	return `<?xml version="1.0" encoding="UTF-8"?>\n<action name="${esc(name)}" label="${esc(spec.Label)}">\n${params.join("\n")}\n</action>\n`;
}
