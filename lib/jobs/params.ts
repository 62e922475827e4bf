// `PUT /jobs/user/{JobName}`: the known job names and their JsonParameters, checked and normalised (a 400 for
// anything else). Paths are user paths (`<workspace-slug>/<path>`); a leading "/" is tolerated.
import { BadRequestError } from "../errors";
import { splitPath } from "../tree/paths";

export const JOB_NAMES = ["copy", "move", "delete", "compress", "extract", "datasource-resync"] as const;
export type JobName = (typeof JOB_NAMES)[number];

export interface CopyMoveParams {
	type: "copy" | "move";
	nodes: string[];
	target: string;
	targetParent: boolean;
}
export interface DeleteParams {
	nodes: string[];
}
export type ArchiveFormat = "zip" | "tar" | "tar.gz";
export interface CompressParams {
	nodes: string[];
	archiveName: string;
	format: ArchiveFormat;
}
export interface ExtractParams {
	node: string;
	/** "" = a new folder named after the archive, next to it */
	target: string;
	format: ArchiveFormat;
}
export interface ResyncParams {
	dsName: string;
}
/** A scheduler job's actions (lib/jobs/chain). */
export interface ChainJobParams {
	steps: { action: string; name: JobName; label?: string; params: Record<string, string> }[];
	parameters: Record<string, string>;
	/** How the job is triggered (POST /jobs/user's EventsOnly / TimersOnly select on it). */
	events?: boolean;
	timer?: boolean;
}
export type JobParams = CopyMoveParams | DeleteParams | CompressParams | ExtractParams | ResyncParams | ChainJobParams;

export const MAX_NODES = 1000;
export const SUPPORTED_ARCHIVES: ArchiveFormat[] = ["zip", "tar", "tar.gz"];

export function isJobName(name: string): name is JobName {
	return (JOB_NAMES as readonly string[]).includes(name);
}

/** A user path from job parameters: checked, without leading or trailing slashes. */
export function userPath(v: unknown, what: string, allowEmpty = false): string {
	if (typeof v !== "string") throw new BadRequestError(`${what} must be a string`);
	const p = v.replace(/^\/+/, "");
	if (p === "" || p === "/") {
		if (allowEmpty) return "";
		throw new BadRequestError(`${what} is required`);
	}
	return splitPath(p, what).join("/");
}

function nodeList(v: unknown, what = "nodes"): string[] {
	if (!Array.isArray(v) || v.length === 0) throw new BadRequestError(`${what} must be a non-empty array of paths`);
	if (v.length > MAX_NODES) throw new BadRequestError(`At most ${MAX_NODES} ${what} per job`);
	return [...new Set(v.map((p, i) => userPath(p, `${what}[${i}]`)))];
}

function bool(v: unknown, what: string, def: boolean): boolean {
	if (v === undefined || v === null) return def;
	if (typeof v === "boolean") return v;
	if (v === "true" || v === "false") return v === "true";
	throw new BadRequestError(`${what} must be a boolean`);
}

export function archiveFormat(v: unknown, name: string, what: string): ArchiveFormat {
	if (v === undefined || v === null || v === "" || v === "detect") {
		const lower = name.toLowerCase();
		if (lower.endsWith(".tar.gz") || lower.endsWith(".tgz")) return "tar.gz";
		if (lower.endsWith(".tar")) return "tar";
		if (lower.endsWith(".zip") || v === undefined || v === null || v === "") return "zip";
		throw new BadRequestError(`Cannot detect the archive format of ${name}: pass format zip, tar or tar.gz`);
	}
	if (typeof v !== "string" || !(SUPPORTED_ARCHIVES as string[]).includes(v)) throw new BadRequestError(`${what} must be one of ${SUPPORTED_ARCHIVES.join(", ")}`);
	return v as ArchiveFormat;
}

/** Parses JsonParameters: a JSON object, without template syntax. */
export function parseJsonParameters(raw: string | undefined): Record<string, unknown> {
	const text = raw === undefined || raw === "" ? "{}" : raw;
	if (typeof text !== "string") throw new BadRequestError("JsonParameters must be a JSON-encoded string");
	if (text.includes("{{")) throw new BadRequestError("Job parameters cannot contain templates ({{ … }})");
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch (e) {
		throw new BadRequestError(`JsonParameters is not valid JSON: ${(e as Error).message}`);
	}
	if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new BadRequestError("JsonParameters must encode a JSON object");
	return parsed as Record<string, unknown>;
}

/** The normalised parameters of a job, or a 400. */
export function jobParams(name: JobName, p: Record<string, unknown>): JobParams {
	switch (name) {
		case "copy":
		case "move": {
			const nodes = nodeList(p.nodes);
			const target = userPath(p.target, "target");
			// Several nodes cannot all take the name `target`: it is then the folder that receives them (made if
			// missing), whatever targetParent says. Cells accepts such requests, and its CLI sends them for
			// `cec cp 'dir/*' newdir` when newdir does not exist yet.
			const targetParent = bool(p.targetParent, "targetParent", false) || nodes.length > 1;
			return { type: name, nodes, target, targetParent };
		}
		case "delete":
			return { nodes: nodeList(p.nodes) };
		case "compress": {
			const nodes = nodeList(p.nodes);
			const archiveName = userPath(p.archiveName, "archiveName");
			if (!archiveName.includes("/")) throw new BadRequestError("archiveName must name a file inside a workspace");
			const format = archiveFormat(p.format, archiveName, "format");
			return { nodes, archiveName, format };
		}
		case "extract": {
			const node = userPath(p.node, "node");
			if (!node.includes("/")) throw new BadRequestError("node must name an archive file inside a workspace");
			const target = p.target === undefined || p.target === null ? "" : userPath(p.target, "target", true);
			return { node, target, format: archiveFormat(p.format, node, "format") };
		}
		case "datasource-resync": {
			const ds = p.dsName;
			if (typeof ds !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(ds)) throw new BadRequestError("dsName must be a datasource name");
			return { dsName: ds };
		}
	}
}

export function jobLabel(name: JobName, p: JobParams): string {
	switch (name) {
		case "copy":
		case "move": {
			const c = p as CopyMoveParams;
			const what = c.nodes.length === 1 ? c.nodes[0] : `${c.nodes.length} items`;
			return `${name === "copy" ? "Copy" : "Move"} ${what} to ${c.target}`;
		}
		case "delete": {
			const d = p as DeleteParams;
			return `Delete ${d.nodes.length === 1 ? d.nodes[0] : `${d.nodes.length} items`}`;
		}
		case "compress":
			return `Compress to ${(p as CompressParams).archiveName}`;
		case "extract":
			return `Extract ${(p as ExtractParams).node}`;
		case "datasource-resync":
			return `Resync datasource ${(p as ResyncParams).dsName}`;
	}
}

/** Job ids as Cells names them (`copy-move-<uuid>`, `compress-folders-<uuid>`, …); one resync job per datasource. */
export function jobId(name: JobName, p: JobParams, uuid: string): string {
	switch (name) {
		case "copy":
		case "move":
			return `copy-move-${uuid}`;
		case "delete":
			return `delete-${uuid}`;
		case "compress":
			return `compress-folders-${uuid}`;
		case "extract":
			return `extract-archive-${uuid}`;
		case "datasource-resync":
			return `resync-ds-${(p as ResyncParams).dsName}`;
	}
}
