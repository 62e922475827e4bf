// Shared checks for identifiers that end up in paths, queries and file names.
import { BadRequestError } from "../errors";

// Control characters (NUL included), path separators and traversal are never part of an identifier.
const FORBIDDEN = /[\u0000-\u001f\u007f\\/]|^\.\.?$/;

export function checkIdentifier(kind: string, value: unknown, max = 128): string {
	if (typeof value !== "string" || value.trim() === "") throw new BadRequestError(`${kind} is required`);
	if (value.length > max) throw new BadRequestError(`${kind} is too long (at most ${max} characters)`);
	if (FORBIDDEN.test(value) || value.includes("..")) throw new BadRequestError(`${kind} contains forbidden characters`);
	return value;
}

/** `/`, `/sales`, `/sales/emea`: absolute, no empty or traversal segments, no trailing slash. */
export function normalizeGroupPath(value: unknown): string {
	if (value === undefined || value === null || value === "") return "/";
	if (typeof value !== "string") throw new BadRequestError("GroupPath must be a string");
	if (value.length > 1024) throw new BadRequestError("GroupPath is too long");
	const segments = value.split("/").filter((s) => s !== "");
	for (const s of segments) checkIdentifier("GroupPath segment", s);
	return "/" + segments.join("/");
}

export function joinGroupPath(parent: string, label: string): string {
	return parent === "/" ? `/${label}` : `${parent}/${label}`;
}

/** `/a/b` -> [`/a`, `/a/b`]: every group a member of `/a/b` belongs to, outermost first. */
export function ancestorGroupPaths(path: string): string[] {
	const segments = path.split("/").filter(Boolean);
	return segments.map((_, i) => "/" + segments.slice(0, i + 1).join("/"));
}

/** Cells search wildcards: `*` anywhere; matching is case-insensitive. */
export function wildcard(pattern: string): RegExp {
	const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
	return new RegExp(`^${escaped}$`, "i");
}
