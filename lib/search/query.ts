// treeQuery -> a compiled query (all criteria ANDed, checked once, bad input -> 400), and its execution over the
// index in the store within the caller's readable workspace roots: the matches, counted, ordered and paged.
//
// Execution: the store narrows (lib/db/search.ts: a candidate list from the name trigrams or the words of text
// files when the query has one, else the scopes' subtrees; with the size, date, type and etag bounds as SQL), and
// every row it returns is checked here against the whole query (wildcards, hidden paths, recycle bins, depth,
// metadata, geo, Not), so that the answer does not depend on which access path the store took. Rows come a page
// at a time: the memory of a search is a page plus the From+Size best hits, whatever the number of nodes.
// A query the store can decide whole (a plain name literal or words, bounds, type, extension), in path order, is
// answered by the store itself instead (walkSearch): it reads the page, not every match, and counts to a bound.
import { BadRequestError } from "../errors";
import { baseName, splitPath, joinPath } from "../tree/paths";
import { depthOf, extensionOf, isHiddenPath, metaValues, type NodeKind } from "./index";
import type { Candidates, RowQuery, SearchRow, WalkQuery } from "../db/search";
import { MIN_NAME_LITERAL } from "../db/search";
import { queryWords } from "./content";
import { escapeRegExp, foldText } from "../strings";

export interface TreeQuery {
	Paths?: string[];
	PathPrefix?: string[];
	MinSize?: number | string;
	MaxSize?: number | string;
	MinDate?: number | string;
	MaxDate?: number | string;
	DurationDate?: string;
	Type?: string | number;
	FileName?: string;
	Content?: string;
	FileNameOrContent?: string;
	FreeString?: string;
	Extension?: string;
	GeoQuery?: GeoQuery;
	PathDepth?: number;
	UUIDs?: string[];
	Not?: boolean;
	ETag?: string;
}

export interface GeoPoint {
	Lat?: number;
	Lon?: number;
}
export interface GeoQuery {
	Center?: GeoPoint;
	Distance?: string;
	TopLeft?: GeoPoint;
	BottomRight?: GeoPoint;
}

/** A workspace of the caller as `tree.roots` returns it. */
export interface RootInfo {
	Slug: string;
	UUID: string;
	Label: string;
	Scope?: string;
	ds: string;
	rootPath: string;
	read: boolean;
	write?: boolean;
}

export interface NameMatcher {
	/** The longest literal run of the pattern (what the name text is scanned for); "" if none. */
	literal: string;
	/** Whether `literal` alone decides the match (no wildcard). */
	exact: boolean;
	test(lowerName: string): boolean;
}

interface ValueMatcher {
	/** The value itself when the pattern has no wildcard. */
	exact?: string;
	test(value: string): boolean;
}
type Clause = { kind: "meta"; key: string; value: ValueMatcher } | { kind: "name"; m: NameMatcher } | { kind: "ext"; ext: string };
interface FreeQuery {
	must: Clause[];
	should: Clause[];
	not: Clause[];
}

export interface CompiledQuery {
	name?: NameMatcher;
	words?: string[];
	nameOrContent?: { name: NameMatcher; words: string[] };
	exts?: string[];
	type?: NodeKind;
	minSize: number;
	maxSize: number;
	minDate: number;
	maxDate: number;
	etag?: string;
	uuids?: string[];
	paths?: string[];
	prefixes?: string[];
	depth?: number;
	free?: FreeQuery;
	geo?: (lat: number, lon: number) => boolean;
	not: boolean;
}


function wildcardRe(pattern: string, anchored: boolean): RegExp {
	const body = pattern
		.split("")
		.map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : escapeRegExp(ch)))
		.join("");
	return new RegExp(anchored ? `^${body}$` : body, "s");
}

/** Case-insensitive substring matcher; `*` and `?` are wildcards (Bleve's), `anchored` for whole-name patterns. */
export function nameMatcher(pattern: string, anchored = false): NameMatcher {
	const p = foldText(pattern);
	if (!/[*?]/.test(p)) {
		if (anchored) return { literal: p, exact: false, test: (n) => n === p };
		return { literal: p, exact: true, test: (n) => n.includes(p) };
	}
	const literal = p.split(/[*?]+/).reduce((a, b) => (b.length > a.length ? b : a), "");
	const re = wildcardRe(p, anchored);
	return { literal, exact: false, test: (n) => re.test(n) };
}

function valueMatcher(pattern: string): ValueMatcher {
	const p = foldText(pattern);
	if (p === "*") return { test: () => true };
	if (!/[*?]/.test(p)) return { exact: p, test: (v) => v === p };
	const re = wildcardRe(p, true);
	return { test: (v) => re.test(v) };
}

function int64(v: unknown, field: string): number | undefined {
	if (v === undefined || v === null || v === "") return undefined;
	const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
	if (!Number.isSafeInteger(n)) throw new BadRequestError(`Query.${field} must be an integer`);
	return n;
}

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 7 * 86400 };

/** `>10d` (modified more than 10 days ago) or `<2h` (less than 2 hours ago) -> a date bound, in unix seconds. */
export function parseDurationDate(spec: string, now: number): { minDate?: number; maxDate?: number } {
	const m = /^\s*([<>])\s*((?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+)$/.exec(spec);
	if (!m) throw new BadRequestError(`Query.DurationDate "${spec.slice(0, 40)}" must look like ">10d" or "<2h" (units ms, s, m, h, d, w)`);
	let seconds = 0;
	for (const part of m[2].matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)/g)) seconds += Number(part[1]) * UNITS[part[2]];
	const at = now - seconds;
	return m[1] === ">" ? { maxDate: at } : { minDate: at };
}

const DISTANCE_UNITS: [RegExp, number][] = [
	[/^(km|kilometers?)$/, 1000],
	[/^(m|meters?)$/, 1],
	[/^(cm|centimeters?)$/, 0.01],
	[/^(mm|millimeters?)$/, 0.001],
	[/^(mi|miles?)$/, 1609.344],
	[/^(yd|yards?)$/, 0.9144],
	[/^(ft|feet)$/, 0.3048],
	[/^(in|inch|inches)$/, 0.0254],
	[/^(nm|nauticalmiles?)$/, 1852],
];

/** Bleve distances ("10km", "3mi", "150"), in meters. */
export function parseDistance(s: string): number {
	const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(s);
	if (!m) throw new BadRequestError(`GeoQuery.Distance "${s.slice(0, 40)}" is not a distance like "10km"`);
	const unit = m[2].toLowerCase();
	if (!unit) return Number(m[1]);
	const f = DISTANCE_UNITS.find(([re]) => re.test(unit));
	if (!f) throw new BadRequestError(`GeoQuery.Distance: unknown unit "${unit}"`);
	return Number(m[1]) * f[1];
}

function geoMatcher(g: GeoQuery): (lat: number, lon: number) => boolean {
	const num = (p: GeoPoint | undefined, what: string) => {
		if (!p || typeof p.Lat !== "number" || typeof p.Lon !== "number") throw new BadRequestError(`GeoQuery.${what} needs Lat and Lon`);
		return { lat: p.Lat, lon: p.Lon };
	};
	if (g.Center || g.Distance) {
		const c = num(g.Center, "Center");
		const meters = parseDistance(g.Distance ?? "");
		const rad = Math.PI / 180;
		return (lat, lon) => {
			const dLat = (lat - c.lat) * rad;
			const dLon = (lon - c.lon) * rad;
			const a = Math.sin(dLat / 2) ** 2 + Math.cos(c.lat * rad) * Math.cos(lat * rad) * Math.sin(dLon / 2) ** 2;
			return 2 * 6371008.8 * Math.asin(Math.min(1, Math.sqrt(a))) <= meters;
		};
	}
	if (g.TopLeft || g.BottomRight) {
		const tl = num(g.TopLeft, "TopLeft");
		const br = num(g.BottomRight, "BottomRight");
		return (lat, lon) => lat <= tl.lat && lat >= br.lat && (tl.lon <= br.lon ? lon >= tl.lon && lon <= br.lon : lon >= tl.lon || lon <= br.lon);
	}
	throw new BadRequestError("GeoQuery needs Center and Distance, or TopLeft and BottomRight");
}

/** The minimal Bleve query-string forms: space-separated `[+-]Field:value` ("value" may be quoted, `*`/`?` wildcards). */
export function parseFreeString(s: string): FreeQuery {
	const q: FreeQuery = { must: [], should: [], not: [] };
	let i = 0;
	const readValue = (): string => {
		if (s[i] === '"') {
			let out = "";
			for (i++; i < s.length && s[i] !== '"'; i++) out += s[i] === "\\" && i + 1 < s.length ? s[++i] : s[i];
			if (s[i] !== '"') throw new BadRequestError("FreeString: unterminated quote");
			i++;
			return out;
		}
		let out = "";
		for (; i < s.length && !/\s/.test(s[i]); i++) out += s[i] === "\\" && i + 1 < s.length ? s[++i] : s[i];
		return out;
	};
	while (i < s.length) {
		if (/\s/.test(s[i])) {
			i++;
			continue;
		}
		let occur: keyof FreeQuery = "should";
		if (s[i] === "+") (occur = "must"), i++;
		else if (s[i] === "-") (occur = "not"), i++;
		let field = "";
		const start = i;
		if (s[i] !== '"') {
			const m = /^([A-Za-z_][\w.\-]*):/.exec(s.slice(i));
			if (m) {
				field = m[1];
				i += m[0].length;
			}
		}
		const value = readValue();
		if (!value && i === start) throw new BadRequestError("FreeString: empty term");
		let clause: Clause;
		if (!field) clause = { kind: "name", m: nameMatcher(value) };
		else if (/^meta\./i.test(field)) {
			if (field.length <= 5) throw new BadRequestError("FreeString: Meta.<key> needs a key");
			clause = { kind: "meta", key: field.slice(5).toLowerCase(), value: valueMatcher(value) };
		} else if (/^(basename|name)$/i.test(field)) clause = { kind: "name", m: nameMatcher(value, true) };
		else if (/^extension$/i.test(field)) clause = { kind: "ext", ext: value.toLowerCase().replace(/^\./, "") };
		else throw new BadRequestError(`FreeString: unsupported field "${field.slice(0, 64)}" (use Meta.<key>, Basename or Extension)`);
		q[occur].push(clause);
	}
	return q;
}

/** Checks and compiles a treeQuery. */
export function compileQuery(q: TreeQuery, now = Date.now() / 1000): CompiledQuery {
	const c: CompiledQuery = { minSize: -Infinity, maxSize: Infinity, minDate: -Infinity, maxDate: Infinity, not: q.Not === true };
	const str = (v: unknown, field: string, max = 1024): string | undefined => {
		if (v === undefined || v === null || v === "") return undefined;
		if (typeof v !== "string") throw new BadRequestError(`Query.${field} must be a string`);
		if (v.length > max) throw new BadRequestError(`Query.${field} is too long`);
		// eslint-disable-next-line no-control-regex
		if (/[\u0000-\u001f]/.test(v)) throw new BadRequestError(`Query.${field} contains a control character`);
		return v;
	};
	const list = (v: unknown, field: string): string[] | undefined => {
		if (v === undefined || v === null) return undefined;
		if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) throw new BadRequestError(`Query.${field} must be a list of strings`);
		if (v.length > 1000) throw new BadRequestError(`Query.${field} has too many entries`);
		return v.length ? (v as string[]) : undefined;
	};
	const fileName = str(q.FileName, "FileName")?.trim();
	if (fileName) c.name = nameMatcher(fileName);
	const content = str(q.Content, "Content", 4096);
	if (content) {
		c.words = queryWords(content);
		if (!c.words.length) throw new BadRequestError("Query.Content has no word to look for");
	}
	const either = str(q.FileNameOrContent, "FileNameOrContent")?.trim();
	if (either) c.nameOrContent = { name: nameMatcher(either), words: queryWords(either) };
	const ext = str(q.Extension, "Extension");
	if (ext) {
		c.exts = ext
			.split("|")
			.map((e) => e.trim().toLowerCase().replace(/^\./, ""))
			.filter(Boolean);
		if (!c.exts.length) c.exts = undefined;
	}
	if (q.Type !== undefined && q.Type !== null) {
		const t = q.Type;
		if (t === "LEAF" || t === 1) c.type = "LEAF";
		else if (t === "COLLECTION" || t === 2) c.type = "COLLECTION";
		else if (t !== "UNKNOWN" && t !== 0) throw new BadRequestError("Query.Type must be LEAF, COLLECTION or UNKNOWN");
	}
	c.minSize = int64(q.MinSize, "MinSize") ?? -Infinity;
	c.maxSize = int64(q.MaxSize, "MaxSize") ?? Infinity;
	c.minDate = int64(q.MinDate, "MinDate") ?? -Infinity;
	c.maxDate = int64(q.MaxDate, "MaxDate") ?? Infinity;
	const duration = str(q.DurationDate, "DurationDate", 64);
	if (duration) {
		const d = parseDurationDate(duration, now);
		if (d.minDate !== undefined) c.minDate = Math.max(c.minDate, d.minDate);
		if (d.maxDate !== undefined) c.maxDate = Math.min(c.maxDate, d.maxDate);
	}
	c.etag = str(q.ETag, "ETag", 256);
	c.uuids = list(q.UUIDs, "UUIDs");
	c.paths = list(q.Paths, "Paths");
	c.prefixes = list(q.PathPrefix, "PathPrefix");
	for (const p of [...(c.paths ?? []), ...(c.prefixes ?? [])]) splitPath(p, "Query path");
	if (q.PathDepth !== undefined && q.PathDepth !== null && q.PathDepth !== 0) {
		if (!Number.isInteger(q.PathDepth) || q.PathDepth < -1) throw new BadRequestError("Query.PathDepth must be -1 or a positive integer");
		if (q.PathDepth === -1 && !c.prefixes) throw new BadRequestError("Query.PathDepth -1 needs a PathPrefix");
		c.depth = q.PathDepth;
	}
	const free = str(q.FreeString, "FreeString", 4096);
	if (free) c.free = parseFreeString(free);
	if (q.GeoQuery && Object.keys(q.GeoQuery).length) c.geo = geoMatcher(q.GeoQuery);
	return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Execution

interface Scope {
	root: RootInfo;
	ds: string;
	/** Datasource path under which nodes are searched ("" = the whole datasource). */
	prefix: string;
	/** The workspace's recycle bin (datasource path), whose content is never returned. */
	recycle: string;
	/** User-path depth of the nodes directly under `prefix`. */
	childDepth: number;
	/** Segments in `prefix` and in the root's path. */
	prefixDepth: number;
	rootDepth: number;
}

export type SortKey = "path" | "mtime" | "size" | "name";

const SORT_FIELDS: Record<string, SortKey> = {
	"": "path",
	path: "path",
	mtime: "mtime",
	modified: "mtime",
	modiftime: "mtime",
	ajxp_modiftime: "mtime",
	time: "mtime",
	size: "size",
	bytesize: "size",
	bytesize_: "size",
	name: "name",
	basename: "name",
	node_name: "name",
	label: "name",
};

export function sortKey(field: string | undefined): SortKey {
	const k = SORT_FIELDS[(field ?? "").toLowerCase()];
	if (!k) throw new BadRequestError(`SortField "${String(field).slice(0, 64)}" is not supported (use path, mtime, size or name)`);
	return k;
}

export interface SearchOptions {
	from: number;
	size: number;
	sort?: SortKey;
	desc?: boolean;
}

/** A row of the store as a search handles it: the folded name, parsed metadata on demand. */
export interface HitNode extends SearchRow {
	lname: string;
	parsedMeta?: Record<string, string>;
}

export interface Hit {
	node: HitNode;
	root: RootInfo;
}

/** Where rows come from (lib/db SearchRepo). */
export interface RowSource {
	rows(q: RowQuery, pageSize?: number): AsyncIterable<SearchRow[]>;
	readonly canWalk?: boolean;
	candidateCount?(c: Candidates): Promise<number>;
	walk?(q: WalkQuery, k: number, after: string | undefined, limit: number): Promise<{ uuid: string; path: string }[]>;
	walkRows?(q: WalkQuery, uuids: string[]): Promise<SearchRow[]>;
	indexSize?(kind: "name" | "words"): Promise<number>;
	sortedCandidates?(q: WalkQuery, limit: number): Promise<{ rows: { uuid: string; path: string; k: number }[]; total: number }>;
}

/**
 * `useCandidates: false` makes every query read its scopes' subtrees (the tests run each query both ways: the
 * answers must not depend on the access path). `pageSize`: rows per statement; small, because on SQLite a
 * statement holds the event loop while it runs.
 */
export const tuning = {
	useCandidates: true,
	pageSize: 500,
	/**
	 * Queries the store decides whole (storeDecides) are answered by it, path-ordered, reading only the page's rows:
	 * by a walk of the (ds, path) index that stops at the bound (SQLite), or, when the candidate list holds at most
	 * `walkAbove` rows (and always on PostgreSQL), by ordering the candidates in SQL (an exact Total). `useWalks: false` leaves every
	 * query to the general path (the tests compare them).
	 */
	useWalks: true,
	/**
	 * "auto": walk when the candidates are many enough that a walk (about totalBound × index size / candidates rows
	 * to reach the bound if matches are spread evenly, each cheaper to test than a candidate to read: `walkCost`)
	 * reads fewer rows than ordering every candidate; a number: walk above that many candidates.
	 */
	walkAbove: "auto" as number | "auto",
	walkCost: { name: 0.3, words: 1 },
	/**
	 * When a walk answers, matches are counted up to max(totalBound, From+Size+1) and Total is
	 * that count: exact below the bound, "at least this many" at it (Elasticsearch's track_total_hits). A client
	 * paging until From reaches Total sees every match: a full page always leaves Total above its end.
	 */
	totalBound: 250,
};

function scopesFor(roots: RootInfo[], prefixes: string[] | undefined): Scope[] {
	const readable = roots.filter((r) => r.read !== false);
	const out: Scope[] = [];
	const add = (root: RootInfo, rel: string, depth: number) => {
		const prefix = joinPath(root.rootPath, rel);
		if (out.some((s) => s.ds === root.ds && s.prefix === prefix)) return;
		out.push({ root, ds: root.ds, prefix, recycle: joinPath(root.rootPath, "recycle_bin"), childDepth: depth + 1, prefixDepth: depthOf(prefix), rootDepth: depthOf(root.rootPath) });
	};
	if (!prefixes) {
		for (const r of readable) add(r, "", 1);
		return out;
	}
	for (const p of prefixes) {
		const segs = splitPath(p, "PathPrefix");
		if (!segs.length) {
			for (const r of readable) add(r, "", 1);
			continue;
		}
		const root = readable.find((r) => r.Slug === segs[0]);
		if (root) add(root, segs.slice(1).join("/"), segs.length);
	}
	return out;
}

interface Ranked {
	node: HitNode;
	rank: number;
}
type HitOrder = (a: Ranked, b: Ranked) => number;

const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The best k hits seen so far: a max-heap, the worst kept hit on top. */
class TopK {
	heap: Ranked[] = [];

	constructor(
		private readonly k: number,
		private readonly cmp: HitOrder,
	) {}

	offer(h: Ranked): void {
		const a = this.heap;
		if (this.k === 0) return;
		if (a.length < this.k) {
			a.push(h);
			for (let i = a.length - 1; i > 0; ) {
				const p = (i - 1) >> 1;
				if (this.cmp(a[i], a[p]) <= 0) break;
				[a[i], a[p]] = [a[p], a[i]];
				i = p;
			}
		} else if (this.cmp(h, a[0]) < 0) {
			a[0] = h;
			for (let i = 0; ; ) {
				const l = 2 * i + 1;
				const r = l + 1;
				let m = i;
				if (l < a.length && this.cmp(a[l], a[m]) > 0) m = l;
				if (r < a.length && this.cmp(a[r], a[m]) > 0) m = r;
				if (m === i) break;
				[a[i], a[m]] = [a[m], a[i]];
				i = m;
			}
		}
	}

	sorted(): Ranked[] {
		return [...this.heap].sort(this.cmp);
	}
}

/**
 * The order of results: by workspace (scope rank, slug order) then path inside it, which is the user path
 * order; or by a field, ties broken the same way.
 */
function comparator(key: SortKey, desc: boolean): HitOrder {
	const byPath: HitOrder = (a, b) => a.rank - b.rank || cmpStr(a.node.path, b.node.path) || cmpStr(a.node.uuid, b.node.uuid);
	const sign = desc ? -1 : 1;
	switch (key) {
		case "mtime":
			return (a, b) => sign * (a.node.mtime - b.node.mtime) || byPath(a, b);
		case "size":
			return (a, b) => sign * (a.node.size - b.node.size) || byPath(a, b);
		case "name":
			return (a, b) => sign * cmpStr(a.node.lname, b.node.lname) || byPath(a, b);
		default:
			return desc ? (a, b) => byPath(b, a) : byPath;
	}
}

function metaOf(n: HitNode): Record<string, string> {
	if (!n.parsedMeta) {
		let m: unknown;
		try {
			m = JSON.parse(n.meta || "{}");
		} catch {
			m = {};
		}
		n.parsedMeta = m && typeof m === "object" && !Array.isArray(m) ? (m as Record<string, string>) : {};
	}
	return n.parsedMeta;
}

/** Decoded lower-case values of one meta key (matched case-insensitively) of a node. */
function metaValuesOf(n: HitNode, key: string): string[] | undefined {
	let out: string[] | undefined;
	for (const [k, v] of Object.entries(metaOf(n))) if (typeof v === "string" && k.toLowerCase() === key) (out ??= []).push(...metaValues(v));
	return out;
}

const GEO_KEYS = ["geolocation", "geo", "location"];

function geoOf(n: HitNode): { lat: number; lon: number } | null {
	for (const [k, raw] of Object.entries(metaOf(n))) {
		if (!GEO_KEYS.includes(k.toLowerCase()) || typeof raw !== "string") continue;
		try {
			const v = JSON.parse(raw) as Record<string, unknown>;
			const lat = Number(v.lat ?? v.Lat ?? v.latitude);
			const lon = Number(v.lon ?? v.Lon ?? v.lng ?? v.longitude);
			if (Number.isFinite(lat) && Number.isFinite(lon)) return { lat, lon };
		} catch {
			/* not a point */
		}
	}
	return null;
}

/**
 * Metadata keys a match must have, as groups of alternatives: each `+Meta.key:...` clause, or the keys of the
 * `Meta.key:...` clauses when every optional clause is one. Only ASCII keys: the store's LIKE folds ASCII case only.
 */
function metaKeyGroups(c: CompiledQuery): string[][] | undefined {
	if (!c.free) return undefined;
	const ascii = (k: string) => /^[\x20-\x7e]*$/.test(k);
	const groups: string[][] = [];
	for (const cl of c.free.must) if (cl.kind === "meta" && ascii(cl.key)) groups.push([cl.key]);
	if (!c.free.must.length && c.free.should.length && c.free.should.every((cl) => cl.kind === "meta" && ascii(cl.key))) groups.push(c.free.should.map((cl) => (cl as { key: string }).key));
	return groups.length ? groups : undefined;
}

/** Which rows the store is asked for: the narrowest candidate list the query has, else the scopes' subtrees. */
function candidatesFor(c: CompiledQuery, roots: RootInfo[]): Candidates {
	if (c.uuids) return { kind: "uuids", uuids: c.uuids };
	if (c.paths) {
		const places: { ds: string; path: string }[] = [];
		for (const p of c.paths) {
			const segs = splitPath(p, "Paths");
			const root = roots.find((r) => r.Slug === segs[0]);
			if (root) places.push({ ds: root.ds, path: joinPath(root.rootPath, segs.slice(1).join("/")) });
		}
		return { kind: "places", places };
	}
	if (c.not || !tuning.useCandidates) return { kind: "scopes" };
	if (c.words) return { kind: "words", words: c.words };
	if (c.name && Array.from(c.name.literal).length >= MIN_NAME_LITERAL) return { kind: "name", literal: c.name.literal };
	return { kind: "scopes" };
}

/**
 * Whether the store decides the whole query (lib/db SearchRepo.walk): a candidate list it tests exactly (a name
 * literal without wildcards, words), bounds and extensions it applies in SQL, nothing checked only here.
 */
function storeDecides(c: CompiledQuery, cand: Candidates): cand is WalkQuery["candidates"] {
	if (c.not || c.uuids || c.paths || c.depth !== undefined || c.free || c.geo || c.nameOrContent) return false;
	if (cand.kind === "name") return !c.words && !!c.name?.exact;
	if (cand.kind === "words") return !c.name;
	return cand.kind === "scopes" && !c.name && !c.words;
}

/**
 * Runs a compiled query for a caller whose workspaces are `roots`: only nodes below a readable root (not the roots
 * themselves, nothing hidden, nothing in a recycle bin). Returns the total number of matches and the asked page.
 */
export async function runSearch(source: RowSource, c: CompiledQuery, roots: RootInfo[], opts: SearchOptions): Promise<{ total: number; hits: Hit[] }> {
	const scopes = scopesFor(roots, c.prefixes);
	if (!scopes.length) return { total: 0, hits: [] };
	// Scope ranks: workspaces in slug order (then prefix), for the default order of results.
	const rankOf = new Array<number>(scopes.length);
	scopes
		.map((s, k) => ({ s, k }))
		.sort((x, y) => cmpStr(x.s.root.Slug, y.s.root.Slug) || cmpStr(x.s.prefix, y.s.prefix))
		.forEach(({ k }, rank) => (rankOf[k] = rank));

	// Which scope a node falls in (the first one), or -1.
	const scopeOf = (n: HitNode): number => {
		for (let k = 0; k < scopes.length; k++) {
			const s = scopes[k];
			if (s.ds !== n.ds) continue;
			if (s.prefix === "" ? n.path !== "" : n.path.length > s.prefix.length && n.path.charCodeAt(s.prefix.length) === 47 && n.path.startsWith(s.prefix)) return k;
		}
		return -1;
	};
	const inRecycle = (path: string, s: Scope) => path === s.recycle || (path.length > s.recycle.length && path.charCodeAt(s.recycle.length) === 47 && path.startsWith(s.recycle));

	const clause = (n: HitNode, cl: Clause): boolean => {
		switch (cl.kind) {
			case "name":
				return cl.m.test(n.lname);
			case "ext":
				return n.type === "LEAF" && n.lname.endsWith(`.${cl.ext}`);
			case "meta": {
				const values = metaValuesOf(n, cl.key);
				return !!values && values.some(cl.value.test);
			}
		}
	};
	const exts = c.exts ? new Set(c.exts) : undefined;
	const matches = (n: HitNode, s: Scope): boolean => {
		if (c.type !== undefined && n.type !== c.type) return false;
		if (n.size < c.minSize || n.size > c.maxSize) return false;
		if (n.mtime < c.minDate || n.mtime > c.maxDate) return false;
		if (exts && (n.type !== "LEAF" || !exts.has(extensionOf(n.lname)))) return false;
		if (c.etag !== undefined && (n.etag ?? undefined) !== c.etag) return false;
		if (c.depth !== undefined) {
			const depth = 1 + depthOf(n.path) - s.rootDepth;
			if (c.depth === -1 ? depth !== s.childDepth : depth !== c.depth) return false;
		}
		if (c.name && !c.name.test(n.lname)) return false;
		if (c.words && Number(n.words_hit) !== 1) return false;
		if (c.nameOrContent) {
			const { name, words } = c.nameOrContent;
			if (!name.test(n.lname) && !(words.length && Number(n.either_hit) === 1)) return false;
		}
		if (c.free) {
			const f = c.free;
			for (const cl of f.must) if (!clause(n, cl)) return false;
			for (const cl of f.not) if (clause(n, cl)) return false;
			if (!f.must.length && f.should.length && !f.should.some((cl) => clause(n, cl))) return false;
		}
		if (c.geo) {
			const p = geoOf(n);
			if (!p || !c.geo(p.lat, p.lon)) return false;
		}
		return true;
	};

	// The bounds the store applies itself (not under Not: a negated query needs the rows that fail them).
	const q: RowQuery = {
		scopes: scopes.map((s) => ({ ds: s.ds, prefix: s.prefix })),
		filter: c.not
			? {}
			: {
					type: c.type,
					// Integer columns: a fractional bound (a DurationDate) is the nearest integer inside it.
					minSize: Number.isFinite(c.minSize) ? Math.ceil(c.minSize) : undefined,
					maxSize: Number.isFinite(c.maxSize) ? Math.floor(c.maxSize) : undefined,
					minDate: Number.isFinite(c.minDate) ? Math.ceil(c.minDate) : undefined,
					maxDate: Number.isFinite(c.maxDate) ? Math.floor(c.maxDate) : undefined,
					etag: c.etag,
					exts: c.exts,
					metaKeys: metaKeyGroups(c),
				},
		candidates: candidatesFor(c, roots),
		hits: { words: c.words, either: c.nameOrContent?.words.length ? c.nameOrContent.words : undefined },
	};

	const walked = await walkSearch(source, c, scopes, rankOf, q, opts, matches, scopeOf);
	if (walked) return walked;

	const top = new TopK(opts.from + opts.size, comparator(opts.sort ?? "path", opts.desc ?? false));
	let total = 0;
	// A node two scopes both hold (overlapping workspaces) comes once per scope from a scope read: it counts in
	// its first scope only. Candidate lists return each node once.
	for await (const page of source.rows(q, tuning.pageSize)) {
		for (const row of page) {
			const n = row as HitNode;
			const k = scopeOf(n);
			if (k < 0) continue;
			if (n.scope !== undefined && n.scope !== k) continue;
			const s = scopes[k];
			if (isHiddenPath(n.path) || inRecycle(n.path, s)) continue;
			n.lname = foldText(n.name);
			if (matches(n, s) === c.not) continue;
			total++;
			top.offer({ node: n, rank: rankOf[k] });
		}
	}
	const byRank = new Array<Scope>(scopes.length);
	scopes.forEach((s, k) => (byRank[rankOf[k]] = s));
	const hits = top
		.sorted()
		.slice(opts.from)
		.map((h) => ({ node: h.node, root: byRank[h.rank].root }));
	return { total, hits };
}

/**
 * When the store decides the whole query (see tuning): the page comes path-ordered from the store, scope after
 * scope in rank order, from a walk of the (ds, path) index that stops at the bound, or from the candidates ordered
 * in SQL; only the page's rows are read whole, and Total is a bounded count. Undefined when the query, its order
 * or the store does not allow it (the general path then reads every match).
 */
async function walkSearch(
	source: RowSource,
	c: CompiledQuery,
	scopes: Scope[],
	rankOf: number[],
	q: RowQuery,
	opts: SearchOptions,
	matches: (n: HitNode, s: Scope) => boolean,
	scopeOf: (n: HitNode) => number,
): Promise<{ total: number; hits: Hit[] } | undefined> {
	if (!tuning.useWalks || !source.walkRows || !source.candidateCount) return undefined;
	if ((opts.sort ?? "path") !== "path" || !storeDecides(c, q.candidates)) return undefined;
	// Nested scopes (a workspace inside another) would show a node twice: the general path counts it once.
	const inside = (a: Scope, b: Scope) => a.ds === b.ds && (b.prefix === "" || a.prefix === b.prefix || a.prefix.startsWith(`${b.prefix}/`));
	if (scopes.some((a, i) => scopes.some((b, j) => i !== j && inside(a, b)))) return undefined;
	const cand = q.candidates;
	let sorted = false;
	if (cand.kind !== "scopes" && source.sortedCandidates) {
		if (!source.canWalk) sorted = true;
		else {
			const n = await source.candidateCount(cand);
			const bound = Math.max(tuning.totalBound, opts.from + opts.size + 1);
			sorted = tuning.walkAbove === "auto" ? n * n <= bound * (source.indexSize ? await source.indexSize(cand.kind) : 0) * tuning.walkCost[cand.kind] : n <= tuning.walkAbove;
		}
	}
	if (!sorted && (!source.canWalk || !source.walk)) return undefined;
	const desc = opts.desc ?? false;
	const order = scopes.map((_, k) => k).sort((a, b) => (desc ? rankOf[b] - rankOf[a] : rankOf[a] - rankOf[b]));
	const wq: WalkQuery = { scopes: order.map((k) => ({ ds: scopes[k].ds, prefix: scopes[k].prefix, recycle: scopes[k].recycle })), filter: q.filter, candidates: cand as WalkQuery["candidates"], desc };
	const need = opts.from + opts.size;
	const bound = Math.max(tuning.totalBound, need + 1);
	const page: { uuid: string; k: number }[] = [];
	let total = 0;
	if (sorted) {
		const r = await source.sortedCandidates!(wq, need);
		for (const row of r.rows.slice(opts.from)) page.push({ uuid: row.uuid, k: order[row.k] });
		total = r.total;
	}
	// Otherwise one pass: the walk counts up to the bound and keeps the page's uuids; then the page's rows are read.
	for (let i = 0; !sorted && i < order.length && total < bound; i++) {
		for (let after: string | undefined; total < bound; ) {
			const limit = Math.min(tuning.pageSize, bound - total);
			const rows = await source.walk!(wq, i, after, limit);
			for (const row of rows) if (total++ >= opts.from && page.length < opts.size) page.push({ uuid: row.uuid, k: order[i] });
			if (rows.length < limit) break;
			after = rows[rows.length - 1].path;
		}
	}
	const byUuid = new Map((await source.walkRows(wq, page.map((p) => p.uuid))).map((r) => [r.uuid, r as HitNode]));
	const hits: Hit[] = [];
	for (const { uuid, k } of page) {
		const n = byUuid.get(uuid);
		// Gone since the walk, or (a guard) a difference between the store's test and this one.
		if (!n) continue;
		n.lname = foldText(n.name);
		if (scopeOf(n) !== k || !matches(n, scopes[k])) continue;
		hits.push({ node: n, root: scopes[k].root });
	}
	return { total, hits };
}

/** A hit as Cells' treeNode, in the caller's user path, with the workspace metas Cells adds to search results. */
export function presentHit(hit: Hit) {
	const { node, root } = hit;
	const path = node.path;
	const rel = root.rootPath === "" ? path : path.slice(root.rootPath.length + 1);
	const meta: Record<string, string> = {
		...metaOf(node),
		name: JSON.stringify(baseName(path)),
		repository_id: JSON.stringify(root.UUID),
		repository_display: JSON.stringify(root.Label),
	};
	if (root.write === false) meta.node_readonly = "true";
	return {
		Uuid: node.uuid,
		Path: joinPath(root.Slug, rel),
		Type: node.type,
		Size: Number(node.size),
		MTime: Number(node.mtime),
		Etag: node.etag ?? undefined,
		MetaStore: meta,
	};
}
