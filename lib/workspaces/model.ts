// Workspaces (idm.Workspace): stored fields, slugs, attributes and search criteria. Plain functions.
import { BadRequestError } from "../errors";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { ACL } from "../acl/model";

export type Scope = "ANY" | "ADMIN" | "ROOM" | "LINK";
export const SCOPES: Scope[] = ["ANY", "ADMIN", "ROOM", "LINK"];

export interface RootNode {
	Uuid?: string;
	Path?: string;
	[key: string]: unknown;
}

export interface Workspace {
	UUID?: string;
	Slug?: string;
	Label?: string;
	Description?: string;
	Scope?: Scope;
	LastUpdated?: number;
	Policies?: ResourcePolicy[];
	PoliciesContextEditable?: boolean;
	Attributes?: string;
	RootUUIDs?: string[];
	RootNodes?: Record<string, RootNode>;
}

/** Stored form (lib/db/workspaces): roots and default rights live in the acl service, not here. */
export interface WorkspaceDoc {
	UUID: string;
	Slug: string;
	Label: string;
	Description: string;
	Scope: Exclude<Scope, "ANY">;
	LastUpdated: number;
	Policies: ResourcePolicy[];
	/** JSON object text without DEFAULT_RIGHTS / QUOTA (those are ROOT_GROUP ACLs). */
	Attributes: string;
}

/** One entry of workspaces.accessible: what a role stack may open, for the front-end state. */
export interface AccessibleWorkspace {
	UUID: string;
	Slug: string;
	Label: string;
	Description: string;
	Scope: string;
	Access: "r" | "w" | "rw";
	RootNodes: Record<string, RootNode>;
}

export interface WorkspaceSingleQuery {
	uuid?: string;
	slug?: string;
	label?: string;
	description?: string;
	scope?: Scope;
	AttributeName?: string;
	AttributeValue?: string;
	HasAttribute?: string;
	LastUpdated?: string;
	not?: boolean;
}

export const ROOT_GROUP = "ROOT_GROUP";
export const DEFAULT_RIGHTS_VALUES = ["", "r", "w", "rw"];
export const MAX_LABEL = 500;
export const MAX_DESCRIPTION = 1000;
export const MAX_SLUG = 500;

const CONTROL = /[\u0000-\u001f\u007f]/;

/** A slug given by a client (path parameter or body): a single safe token, before normalisation. */
export function checkSlugInput(slug: unknown): string {
	if (slug === undefined || slug === null || slug === "") return "";
	if (typeof slug !== "string") throw new BadRequestError("Slug must be a string");
	if (slug.length > MAX_SLUG) throw new BadRequestError(`Slug is too long (at most ${MAX_SLUG} characters)`);
	if (CONTROL.test(slug) || slug.includes("/") || slug.includes("\\") || slug.includes("..")) throw new BadRequestError("Slug contains forbidden characters");
	return slug;
}

/** Lower-case, accents folded, [a-z0-9-] only, no leading/trailing/double dashes. */
export function slugify(text: string): string {
	return text
		.normalize("NFKD")
		.replace(/[\u0300-\u036f]/g, "")
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, "-")
		.replace(/^-+|-+$/g, "")
		.slice(0, 200)
		.replace(/-+$/g, "");
}

/** `base`, else `base-1`, `base-2`… the first one `taken` does not hold. */
export function dedupSlug(base: string, taken: (slug: string) => boolean): string {
	if (!taken(base)) return base;
	for (let i = 1; ; i++) {
		const s = `${base}-${i}`;
		if (!taken(s)) return s;
	}
}

export function checkText(kind: string, value: unknown, max: number): string {
	if (value === undefined || value === null) return "";
	if (typeof value !== "string") throw new BadRequestError(`${kind} must be a string`);
	if (value.length > max) throw new BadRequestError(`${kind} is too long (at most ${max} characters)`);
	if (value.includes("\u0000")) throw new BadRequestError(`${kind} contains a NUL character`);
	return value;
}

export interface ParsedAttributes {
	/** Attributes to store (without the ACL-backed keys). */
	rest: Record<string, unknown>;
	/** undefined when the key is absent (keep the current rights). */
	defaultRights?: "" | "r" | "w" | "rw";
	quota?: string;
}

/** Parses the Attributes JSON text; DEFAULT_RIGHTS and QUOTA are split out (they become ROOT_GROUP ACLs). */
export function parseAttributes(text: unknown): ParsedAttributes {
	if (text === undefined || text === null || text === "") return { rest: {} };
	if (typeof text !== "string") throw new BadRequestError("Attributes must be a JSON-encoded string");
	if (text.length > 64 * 1024) throw new BadRequestError("Attributes are too long");
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		throw new BadRequestError("Attributes must be a valid JSON object");
	}
	if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new BadRequestError("Attributes must be a JSON object");
	const { DEFAULT_RIGHTS, QUOTA, ...rest } = parsed as Record<string, unknown>;
	const out: ParsedAttributes = { rest };
	if (DEFAULT_RIGHTS !== undefined && DEFAULT_RIGHTS !== null) {
		if (typeof DEFAULT_RIGHTS !== "string" || !DEFAULT_RIGHTS_VALUES.includes(DEFAULT_RIGHTS)) throw new BadRequestError(`DEFAULT_RIGHTS must be one of "", "r", "w", "rw"`);
		out.defaultRights = DEFAULT_RIGHTS as ParsedAttributes["defaultRights"];
	}
	if (QUOTA !== undefined && QUOTA !== null) {
		const q = typeof QUOTA === "number" ? String(Math.trunc(QUOTA)) : QUOTA;
		if (typeof q !== "string" || !/^\d*$/.test(q)) throw new BadRequestError("QUOTA must be a number of bytes");
		out.quota = q === "0" ? "" : q;
	}
	return out;
}

/** The Attributes text a client sees: stored attributes plus what ROOT_GROUP ACLs on the roots say. */
export function presentAttributes(stored: string, rootAcls: ACL[], roots: string[]): string {
	let attrs: Record<string, unknown> = {};
	try {
		const p = JSON.parse(stored || "{}");
		if (p && typeof p === "object" && !Array.isArray(p)) attrs = p;
	} catch {
		attrs = {};
	}
	const onRoots = rootAcls.filter((a) => a.RoleID === ROOT_GROUP && (!roots.length || (a.NodeID !== undefined && roots.includes(a.NodeID))));
	const has = (name: string) => onRoots.some((a) => a.Action?.Name === name && a.Action.Value !== "0" && a.Action.Value !== "false");
	attrs.DEFAULT_RIGHTS = (has("read") ? "r" : "") + (has("write") ? "w" : "");
	const quota = onRoots.find((a) => a.Action?.Name === "quota")?.Action?.Value;
	if (quota) attrs.QUOTA = quota;
	return JSON.stringify(attrs);
}

/** Roots from the workspace-path ACLs of one workspace: node uuid -> {Uuid, Path}. */
export function rootsFromAcls(acls: ACL[]): { RootUUIDs: string[]; RootNodes: Record<string, RootNode> } {
	const RootNodes: Record<string, RootNode> = {};
	const RootUUIDs: string[] = [];
	for (const a of acls) {
		if (a.Action?.Name !== "workspace-path" || !a.NodeID || RootNodes[a.NodeID]) continue;
		const v = a.Action.Value ?? "";
		const node: RootNode = { Uuid: a.NodeID };
		if (v && !v.startsWith("uuid:")) node.Path = v;
		RootNodes[a.NodeID] = node;
		RootUUIDs.push(a.NodeID);
	}
	return { RootUUIDs, RootNodes };
}

const BAD_NODE_ID = /[\u0000-\u001f\u007f\\/]/;

/** Roots asked by a client: from RootNodes (map) or, failing that, RootUUIDs. undefined = not given. */
export function requestedRoots(ws: Workspace): { Uuid: string; Path: string }[] | undefined {
	let list: { Uuid: string; Path: string }[] | undefined;
	if (ws.RootNodes && typeof ws.RootNodes === "object" && Object.keys(ws.RootNodes).length) {
		list = Object.entries(ws.RootNodes).map(([key, node]) => {
			const uuid = (node && typeof node.Uuid === "string" && node.Uuid) || key;
			const path = node && typeof node.Path === "string" ? node.Path : "";
			return { Uuid: uuid, Path: path };
		});
	} else if (Array.isArray(ws.RootUUIDs) && ws.RootUUIDs.length) {
		list = ws.RootUUIDs.map((u) => ({ Uuid: String(u), Path: "" }));
	}
	if (!list) return undefined;
	const seen = new Set<string>();
	const out: { Uuid: string; Path: string }[] = [];
	for (const r of list) {
		if (!r.Uuid || r.Uuid.length > 255 || BAD_NODE_ID.test(r.Uuid) || r.Uuid.includes("..")) throw new BadRequestError(`Invalid root node uuid "${r.Uuid.slice(0, 80)}"`);
		const path = r.Path.replace(/^\/+|\/+$/g, "");
		if (path.length > 4096 || CONTROL.test(path) || path.split("/").some((s) => s === ".." || s === ".")) throw new BadRequestError(`Invalid root node path "${path.slice(0, 80)}"`);
		if (seen.has(r.Uuid)) continue;
		seen.add(r.Uuid);
		out.push({ Uuid: r.Uuid, Path: path });
	}
	return out;
}

function like(pattern: string, value: string | undefined): boolean {
	const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
	return new RegExp(`^${escaped}$`, "i").test(value ?? "");
}

/** `>1700000000`, `<=1700000000`, `<10d` (newer than 10 days), `>2h` (older than 2 hours). */
export function matchLastUpdated(expr: string, lastUpdated: number, now = Date.now() / 1000): boolean {
	const m = /^\s*(<=|>=|<|>|=)?\s*(\d+)\s*([smhdw])?\s*$/.exec(expr);
	if (!m) throw new BadRequestError(`Invalid LastUpdated criterion "${expr}"`);
	const op = m[1] ?? "=";
	const n = Number(m[2]);
	if (m[3]) {
		// A duration: "<10d" = updated less than 10 days ago = after now - 10d.
		const unit = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[3] as "s" | "m" | "h" | "d" | "w"];
		const limit = now - n * unit;
		const age = lastUpdated;
		if (op === "<" || op === "<=") return age >= limit;
		if (op === ">" || op === ">=") return age <= limit;
		return Math.abs(age - limit) < unit;
	}
	switch (op) {
		case "<":
			return lastUpdated < n;
		case "<=":
			return lastUpdated <= n;
		case ">":
			return lastUpdated > n;
		case ">=":
			return lastUpdated >= n;
		default:
			return lastUpdated === n;
	}
}

/** One criterion against a workspace as the client sees it (attributes already synthesised). */
export function matchesQuery(ws: Workspace, q: WorkspaceSingleQuery): boolean {
	let ok = true;
	if (q.uuid) ok &&= ws.UUID === q.uuid;
	if (q.slug) ok &&= q.slug.includes("*") ? like(q.slug, ws.Slug) : ws.Slug === q.slug;
	if (q.label) ok &&= like(q.label, ws.Label);
	if (q.description) ok &&= like(q.description.includes("*") ? q.description : `*${q.description}*`, ws.Description);
	if (q.scope && q.scope !== "ANY") ok &&= (ws.Scope ?? "ADMIN") === q.scope;
	if (q.LastUpdated) ok &&= matchLastUpdated(q.LastUpdated, ws.LastUpdated ?? 0);
	if (q.HasAttribute || q.AttributeName) {
		let attrs: Record<string, unknown> = {};
		try {
			attrs = JSON.parse(ws.Attributes || "{}") as Record<string, unknown>;
		} catch {
			attrs = {};
		}
		if (q.HasAttribute) ok &&= attrs[q.HasAttribute] !== undefined && attrs[q.HasAttribute] !== "";
		if (q.AttributeName) {
			const v = attrs[q.AttributeName];
			const s = typeof v === "string" ? v : v === undefined ? undefined : JSON.stringify(v);
			ok &&= q.AttributeValue !== undefined && q.AttributeValue !== "" ? s !== undefined && like(q.AttributeValue, s) : s !== undefined;
		}
	}
	return q.not ? !ok : ok;
}

export function matchesAll(ws: Workspace, queries: WorkspaceSingleQuery[] | undefined, operation: string | undefined): boolean {
	if (!queries?.length) return true;
	return operation === "AND" ? queries.every((q) => matchesQuery(ws, q)) : queries.some((q) => matchesQuery(ws, q));
}

/** Cells' defaults (first run): fixed UUIDs so that ensuring them twice changes nothing. */
export const DEFAULT_WORKSPACES: { UUID: string; Slug: string; Label: string; Description: string; root: { Uuid: string; Path: string }; defaultRights: "rw" }[] = [
	{
		UUID: "4a6d3c2e-8f51-4b0a-9c7e-c0ff1e000001",
		Slug: "common-files",
		Label: "Common Files",
		Description: "Data shared by all users",
		root: { Uuid: "DATASOURCE:pydiods1", Path: "pydiods1" },
		defaultRights: "rw",
	},
	{
		UUID: "4a6d3c2e-8f51-4b0a-9c7e-c0ff1e000002",
		Slug: "personal-files",
		Label: "My Files",
		Description: "User personal data",
		root: { Uuid: "my-files", Path: "my-files" },
		defaultRights: "rw",
	},
];
