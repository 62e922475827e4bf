// jobsNodesSelector evaluated in memory: which of some nodes a selector (or a filter) keeps. Its Query's
// sub-queries are tree.Query, checked and compiled by search (lib/search/query), then tested here against the
// nodes themselves, the way Cells filters an action's input without its search engine: names, extensions, types,
// sizes, dates, etags, uuids, paths, depth, negation and FreeString over the nodes' metadata. Content and geo
// criteria need the search index: they are kept in stored templates but not evaluated here.
import { BadRequestError } from "../errors";
import { compileQuery, sortKey, type CompiledQuery, type TreeQuery } from "../search/query";
import { depthOf, extensionOf, metaValues } from "../search/index";
import { foldText } from "../strings";
import { definition } from "../cells/spec";
import { encode } from "../cells/codec";
import type { NodesSelector, SelectorRange, ServiceQuery } from "./model";

/** A node as a playground input gives it (treeNode after the gateway's codec). */
export interface PlainNode {
	Uuid?: string;
	Path?: string;
	Type?: string;
	Size?: number;
	MTime?: number;
	Etag?: string;
	MetaStore?: Record<string, string>;
}

/** The tree.Query fields evaluated in memory, and those only a search engine answers. */
export const EVALUATED_QUERY_FIELDS = ["FileName", "Extension", "Type", "MinSize", "MaxSize", "MinDate", "MaxDate", "DurationDate", "ETag", "UUIDs", "Paths", "PathPrefix", "PathDepth", "Not", "FreeString"] as const;
export const SEARCH_ONLY_QUERY_FIELDS = ["Content", "FileNameOrContent", "GeoQuery"] as const;
const QUERY_FIELDS = new Set<string>([...EVALUATED_QUERY_FIELDS, ...SEARCH_ONLY_QUERY_FIELDS]);
const TREE_QUERY_TYPE = /(^|\/)tree\.Query$/;

type Clause = NonNullable<CompiledQuery["free"]>["must"][number];

export interface CompiledSelector {
	all: boolean;
	pathes?: string[];
	operation: "OR" | "AND";
	queries: CompiledQuery[];
	range: { offset: number; limit?: number; order?: ReturnType<typeof sortKey>; desc: boolean };
}

const trim = (p: string) => p.replace(/^\/+|\/+$/g, "");

function rangeNumber(v: string | undefined, field: string): number | undefined {
	if (v === undefined || v === "") return undefined;
	if (!/^\d{1,9}$/.test(v.trim())) throw new BadRequestError(`Range.${field} must be a number here ("${v.slice(0, 40)}": template expressions are not evaluated)`);
	return Number(v);
}

function compileRange(r: SelectorRange | undefined): CompiledSelector["range"] {
	const dir = (r?.OrderDir ?? "").toLowerCase();
	if (dir && dir !== "asc" && dir !== "desc") throw new BadRequestError("Range.OrderDir must be asc or desc");
	return { offset: rangeNumber(r?.Offset, "Offset") ?? 0, limit: rangeNumber(r?.Limit, "Limit"), order: r?.OrderBy ? sortKey(r.OrderBy) : undefined, desc: dir === "desc" };
}

/**
 * Checks a selector and compiles it. `evaluate`: refuse what cannot be evaluated in memory (the playground); a
 * stored template may keep search-only criteria, which Cells' search engine answers.
 */
export function compileSelector(sel: NodesSelector, at: string, evaluate: boolean, now = Date.now() / 1000): CompiledSelector {
	if (!sel || typeof sel !== "object" || Array.isArray(sel)) throw new BadRequestError(`${at} must be an object`);
	const q: ServiceQuery = sel.Query ?? {};
	const queries: CompiledQuery[] = [];
	(q.SubQueries ?? []).forEach((sub, i) => {
		const where = `${at}.Query.SubQueries[${i}]`;
		if (!sub || typeof sub !== "object" || Array.isArray(sub)) throw new BadRequestError(`${where} must be an object`);
		const type = sub["@type"];
		if (type !== undefined && (typeof type !== "string" || !TREE_QUERY_TYPE.test(type))) throw new BadRequestError(`${where}: a nodes selector's sub-queries are tree.Query ("@type": "type.googleapis.com/tree.Query")`);
		const fields = Object.keys(sub).filter((k) => k !== "@type");
		const unknown = fields.filter((k) => !QUERY_FIELDS.has(k));
		if (unknown.length) throw new BadRequestError(`${where}: unknown tree.Query field(s) ${unknown.map((k) => k.slice(0, 64)).join(", ")}`);
		const searchOnly = fields.filter((k) => (SEARCH_ONLY_QUERY_FIELDS as readonly string[]).includes(k));
		if (evaluate && searchOnly.length) throw new BadRequestError(`${where}: ${searchOnly.join(", ")} need the search index and are not evaluated here; the playground evaluates ${EVALUATED_QUERY_FIELDS.join(", ")}`);
		const query: TreeQuery = { ...sub };
		queries.push(compileQuery(query, now));
	});
	if (q.Operation !== undefined && q.Operation !== "OR" && q.Operation !== "AND") throw new BadRequestError(`${at}.Query.Operation must be OR or AND`);
	if (sel.Pathes !== undefined && (!Array.isArray(sel.Pathes) || sel.Pathes.some((p) => typeof p !== "string"))) throw new BadRequestError(`${at}.Pathes must be a list of paths`);
	if ((sel.Pathes?.length ?? 0) > 1000) throw new BadRequestError(`${at}.Pathes lists at most 1000 paths`);
	return {
		all: sel.All === true || sel.FanOutInput === true,
		pathes: sel.Pathes?.length ? sel.Pathes.map(trim) : undefined,
		operation: q.Operation ?? "OR",
		queries,
		range: compileRange(sel.Range),
	};
}

/**
 * The selector as Cells writes it: its sub-queries are protobuf Any, which the gateway's codec passes as they
 * came, so their tree.Query fields are encoded here (int64 as strings, enums as names, zero values omitted).
 */
export function cellsSelector(sel: NodesSelector): NodesSelector {
	const subs = sel.Query?.SubQueries;
	if (!sel.Query || !subs?.length) return sel;
	const { schema, defs } = definition("treeQuery");
	const SubQueries = subs.map((sub) => {
		const { "@type": type, ...fields } = sub;
		return { "@type": type ?? "type.googleapis.com/tree.Query", ...(encode(fields, schema, defs) as TreeQuery) };
	});
	return { ...sel, Query: { ...sel.Query, SubQueries } };
}

function clauseMatches(n: PlainNode, lname: string, cl: Clause): boolean {
	switch (cl.kind) {
		case "name":
			return cl.m.test(lname);
		case "ext":
			return n.Type === "LEAF" && lname.endsWith(`.${cl.ext}`);
		case "meta": {
			const values = Object.entries(n.MetaStore ?? {}).flatMap(([k, v]) => (k.toLowerCase() === cl.key && typeof v === "string" ? metaValues(v) : []));
			return values.some(cl.value.test);
		}
	}
}

/** Whether a node meets one tree.Query. */
export function queryMatches(c: CompiledQuery, n: PlainNode): boolean {
	const path = trim(n.Path ?? "");
	const lname = foldText(path.slice(path.lastIndexOf("/") + 1));
	const size = n.Size ?? 0;
	const mtime = n.MTime ?? 0;
	const ok = ((): boolean => {
		if (c.type !== undefined && n.Type !== c.type) return false;
		if (size < c.minSize || size > c.maxSize) return false;
		if (mtime < c.minDate || mtime > c.maxDate) return false;
		if (c.exts && (n.Type !== "LEAF" || !c.exts.includes(extensionOf(lname)))) return false;
		if (c.etag !== undefined && n.Etag !== c.etag) return false;
		if (c.uuids && !c.uuids.includes(n.Uuid ?? "")) return false;
		if (c.paths && !c.paths.some((p) => trim(p) === path)) return false;
		const prefixes = c.prefixes?.map(trim);
		if (prefixes && !prefixes.some((p) => p === "" || path.startsWith(`${p}/`))) return false;
		if (c.depth !== undefined) {
			const d = depthOf(path);
			if (c.depth === -1 ? !(prefixes ?? []).some((p) => d === depthOf(p) + 1) : d !== c.depth) return false;
		}
		if (c.name && !c.name.test(lname)) return false;
		if (c.free) {
			const f = c.free;
			if (f.must.some((cl) => !clauseMatches(n, lname, cl))) return false;
			if (f.not.some((cl) => clauseMatches(n, lname, cl))) return false;
			if (!f.must.length && f.should.length && !f.should.some((cl) => clauseMatches(n, lname, cl))) return false;
		}
		return true;
	})();
	return ok !== c.not;
}

function orderValue(n: PlainNode, key: ReturnType<typeof sortKey>): string | number {
	const path = trim(n.Path ?? "");
	switch (key) {
		case "size":
			return n.Size ?? 0;
		case "mtime":
			return n.MTime ?? 0;
		case "name":
			return foldText(path.slice(path.lastIndexOf("/") + 1));
		default:
			return path;
	}
}

/**
 * The nodes a selector keeps, in order. `fromPathes`: the nodes were loaded from the selector's Pathes (so they
 * are not filtered by them again).
 */
export function selectNodes(s: CompiledSelector, nodes: PlainNode[], fromPathes = false): PlainNode[] {
	let out = nodes;
	if (!s.all) {
		const pathes = s.pathes;
		if (pathes && !fromPathes) out = out.filter((n) => pathes.includes(trim(n.Path ?? "")));
		if (s.queries.length) out = out.filter((n) => (s.operation === "AND" ? s.queries.every((q) => queryMatches(q, n)) : s.queries.some((q) => queryMatches(q, n))));
	}
	const { order, desc, offset, limit } = s.range;
	if (order) {
		out = [...out].sort((a, b) => {
			const x = orderValue(a, order);
			const y = orderValue(b, order);
			return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
		});
	}
	return out.slice(offset, limit === undefined ? undefined : offset + limit);
}
