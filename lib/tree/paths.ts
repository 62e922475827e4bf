// Node paths as clients send them (`<workspace-slug>/<path>`) and as the index keeps them (`<datasource>/<path>`).
// Anything that could step outside a datasource is refused here, once, for every service.
import { BadRequestError } from "../errors";

const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 4096;

/** Splits and checks a relative path; "" and "/" give []. A trailing slash is tolerated (Cells clients send it). */
export function splitPath(path: string, what = "Path"): string[] {
	if (typeof path !== "string") throw new BadRequestError(`${what} must be a string`);
	if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw new BadRequestError(`${what} is too long`);
	if (path.startsWith("/") && path !== "/") throw new BadRequestError(`${what} must be relative (start with a workspace slug), not "${path.slice(0, 64)}"`);
	const trimmed = path.endsWith("/") ? path.slice(0, -1) : path;
	if (trimmed === "") return [];
	const segments = trimmed.split("/");
	for (const s of segments) {
		if (s === "") throw new BadRequestError(`${what} has an empty segment`);
		if (s === "." || s === "..") throw new BadRequestError(`${what} may not contain "." or ".." segments`);
		// eslint-disable-next-line no-control-regex
		if (/[\u0000-\u001f\u007f\\]/.test(s)) throw new BadRequestError(`${what} contains a forbidden character`);
		if (Buffer.byteLength(s) > MAX_SEGMENT_BYTES) throw new BadRequestError(`A name in ${what} is longer than ${MAX_SEGMENT_BYTES} bytes`);
	}
	return segments;
}

export function joinPath(...parts: string[]): string {
	return parts.filter((p) => p !== "").join("/");
}

export function parentOf(path: string): string {
	const i = path.lastIndexOf("/");
	return i < 0 ? "" : path.slice(0, i);
}

export function baseName(path: string): string {
	return path.slice(path.lastIndexOf("/") + 1);
}

/** Every ancestor of `path`, root ("") first, excluding `path` itself. */
export function ancestors(path: string): string[] {
	if (path === "") return [];
	const segs = path.split("/");
	const out = [""];
	for (let i = 1; i < segs.length; i++) out.push(segs.slice(0, i).join("/"));
	return out;
}

export function isHidden(name: string): boolean {
	return name.startsWith(".");
}
