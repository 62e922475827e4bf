// What search knows of a node, as `tree.changed` carries it, and the path and name helpers its matching uses. The
// index itself lives in the SQL store (lib/db/search.ts: folded names, words of text files, read together with
// the nodes table); lib/search/engine.ts keeps it current.
import { foldText } from "../strings";

export type NodeKind = "LEAF" | "COLLECTION";

/** A node as `tree.scan` and `tree.changed` carry it. */
export interface IndexNode {
	Uuid: string;
	ds: string;
	path: string;
	name?: string;
	type: NodeKind;
	size?: number;
	mtime?: number;
	etag?: string;
	meta?: Record<string, string>;
	/** Object key in the datasource store, when the tree sends it. */
	key?: string;
}

/** Number of segments of a datasource path ("" = 0). */
export function depthOf(path: string): number {
	if (path === "") return 0;
	let n = 1;
	for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) n++;
	return n;
}

export function isHiddenPath(path: string): boolean {
	return path.startsWith(".") || path.includes("/.");
}

/** Lower-case extension of a file name ("" when none; a leading dot alone is not an extension). */
export function extensionOf(lowerName: string): string {
	const dot = lowerName.lastIndexOf(".");
	return dot > 0 ? lowerName.slice(dot + 1) : "";
}

/** Decoded, lower-case values of a JSON-encoded meta value; comma-separated lists (tags) also give their items. */
export function metaValues(raw: string): string[] {
	let v: unknown;
	try {
		v = JSON.parse(raw);
	} catch {
		v = raw;
	}
	const flat = (Array.isArray(v) ? v : [v]).map((x) => (typeof x === "string" ? x : x === null || x === undefined ? "" : typeof x === "object" ? JSON.stringify(x) : String(x)));
	const folded = flat.map(foldText);
	const out = new Set<string>();
	for (const s of folded) {
		out.add(s);
		if (s.includes(",")) for (const part of s.split(",")) if (part.trim()) out.add(part.trim());
	}
	return [...out];
}

