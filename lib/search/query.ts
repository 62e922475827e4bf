// treeQuery -> a compiled query (all criteria ANDed, checked once, bad input -> 400), and its execution over a
// SearchIndex within the caller's readable workspace roots: the matches, counted, ordered and paged.
import { BadRequestError } from "../errors";
import { splitPath, joinPath } from "../tree/paths";
import { baseName, COLLECTION, depthOf, LEAF, type SearchIndex } from "./index";
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
	type?: number;
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
		if (t === "LEAF" || t === 1) c.type = LEAF;
		else if (t === "COLLECTION" || t === 2) c.type = COLLECTION;
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
	dsId: number;
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

export interface Hit {
	slot: number;
	root: RootInfo;
}

/** Above `rangeScanLimit` nodes in the caller's scope, a name query scans the name text instead of the scope. */
export const tuning = { rangeScanLimit: 100_000 };

function scopesFor(index: SearchIndex, roots: RootInfo[], prefixes: string[] | undefined): Scope[] {
	const readable = roots.filter((r) => r.read !== false);
	const out: Scope[] = [];
	const add = (root: RootInfo, rel: string, depth: number) => {
		const dsId = index.dsId(root.ds);
		if (dsId < 0) return;
		const prefix = joinPath(root.rootPath, rel);
		if (out.some((s) => s.dsId === dsId && s.prefix === prefix)) return;
		out.push({ root, dsId, prefix, recycle: joinPath(root.rootPath, "recycle_bin"), childDepth: depth + 1, prefixDepth: depthOf(prefix), rootDepth: depthOf(root.rootPath) });
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

/** Orders hits: (slot, scope rank) pairs. */
type HitOrder = (a: number, ra: number, b: number, rb: number) => number;

/** The best k hits seen so far (a max-heap: the worst kept hit on top), or the first k when they come in order. */
class TopK {
	slots: number[] = [];
	ranks: number[] = [];
	/** `ordered`: hits arrive already in order, the first k are the answer (no heap). */
	ordered = false;

	constructor(
		private readonly k: number,
		private readonly cmp: HitOrder,
	) {}

	private c(i: number, j: number): number {
		return this.cmp(this.slots[i], this.ranks[i], this.slots[j], this.ranks[j]);
	}

	offer(slot: number, rank: number): void {
		const h = this.slots;
		if (this.k === 0) return;
		if (h.length < this.k) {
			h.push(slot);
			this.ranks.push(rank);
			if (!this.ordered) this.up(h.length - 1);
		} else if (!this.ordered && this.cmp(slot, rank, h[0], this.ranks[0]) < 0) {
			h[0] = slot;
			this.ranks[0] = rank;
			this.down(0);
		}
	}

	private swap(i: number, j: number): void {
		const s = this.slots[i];
		this.slots[i] = this.slots[j];
		this.slots[j] = s;
		const r = this.ranks[i];
		this.ranks[i] = this.ranks[j];
		this.ranks[j] = r;
	}

	private up(i: number): void {
		while (i > 0) {
			const p = (i - 1) >> 1;
			if (this.c(i, p) <= 0) return;
			this.swap(i, p);
			i = p;
		}
	}

	private down(i: number): void {
		const n = this.slots.length;
		for (;;) {
			const l = 2 * i + 1;
			const r = l + 1;
			let m = i;
			if (l < n && this.c(l, m) > 0) m = l;
			if (r < n && this.c(r, m) > 0) m = r;
			if (m === i) return;
			this.swap(i, m);
			i = m;
		}
	}

	/** The kept hits in order, as (slot, rank) pairs. */
	sorted(): { slot: number; rank: number }[] {
		const hits = this.slots.map((slot, i) => ({ slot, rank: this.ranks[i] }));
		return this.ordered ? hits : hits.sort((a, b) => this.cmp(a.slot, a.rank, b.slot, b.rank));
	}
}

/**
 * The order of results: by workspace (scope rank, slug order) then path inside it, which is the user path
 * order; or by a field, ties broken the same way.
 */
function comparator(index: SearchIndex, key: SortKey, desc: boolean): HitOrder {
	const { paths, displaced } = index;
	// Slots untouched since the last layout are numbered in path order: no need to read their paths.
	const byPath: HitOrder = (a, ra, b, rb) => ra - rb || (displaced[a] === 0 && displaced[b] === 0 ? a - b : (paths[a] < paths[b] ? -1 : paths[a] > paths[b] ? 1 : 0) || a - b);
	const sign = desc ? -1 : 1;
	switch (key) {
		case "mtime": {
			const v = index.mtimes;
			return (a, ra, b, rb) => sign * (v[a] - v[b]) || byPath(a, ra, b, rb);
		}
		case "size": {
			const v = index.sizes;
			return (a, ra, b, rb) => sign * (v[a] - v[b]) || byPath(a, ra, b, rb);
		}
		case "name": {
			const v = index.lnames;
			return (a, ra, b, rb) => sign * (v[a] < v[b] ? -1 : v[a] > v[b] ? 1 : 0) || byPath(a, ra, b, rb);
		}
		default:
			return desc ? (a, ra, b, rb) => byPath(b, rb, a, ra) : byPath;
	}
}

/**
 * Runs a compiled query for a caller whose workspaces are `roots`: only nodes below a readable root (not the roots
 * themselves, nothing hidden, nothing in a recycle bin). Returns the total number of matches and the asked page.
 */
export function runSearch(index: SearchIndex, c: CompiledQuery, roots: RootInfo[], opts: SearchOptions): { total: number; hits: Hit[] } {
	const scopes = scopesFor(index, roots, c.prefixes);
	if (!scopes.length) return { total: 0, hits: [] };
	// Scope ranks: workspaces in slug order (then prefix), for the default order of results.
	const rankOf = new Array<number>(scopes.length);
	scopes
		.map((s, k) => ({ s, k }))
		.sort((x, y) => (x.s.root.Slug < y.s.root.Slug ? -1 : x.s.root.Slug > y.s.root.Slug ? 1 : x.s.prefix < y.s.prefix ? -1 : x.s.prefix > y.s.prefix ? 1 : 0))
		.forEach(({ k }, rank) => (rankOf[k] = rank));
	const { types, sizes, mtimes, exts, hidden, lnames, paths, dsIds, depths, binDepths } = index;

	// Allowed extension ids as a lookup table.
	let extOk: Uint8Array | undefined;
	if (c.exts) {
		extOk = new Uint8Array(index.extCount);
		for (const e of c.exts) {
			const id = index.extId(e);
			if (id >= 0) extOk[id] = 1;
		}
	}
	const geoKeys = ["geolocation", "geo", "location"];

	// Which scope a node falls in (the first one), or -1. The typed columns answer before any path is read.
	const scopeOf = (slot: number): number => {
		const ds = dsIds[slot];
		const depth = depths[slot];
		for (let k = 0; k < scopes.length; k++) {
			const s = scopes[k];
			if (s.dsId !== ds || depth <= s.prefixDepth) continue;
			if (s.prefix === "") return k;
			const path = paths[slot];
			if (path.charCodeAt(s.prefix.length) === 47 && path.startsWith(s.prefix)) return k;
		}
		return -1;
	};
	const inRecycleSlot = (slot: number, s: Scope): boolean => {
		const b = binDepths[slot];
		if (b === 0) return false;
		if (b > s.rootDepth) return b === s.rootDepth + 1;
		return inRecycle(paths[slot], s);
	};
	const inRecycle = (path: string, s: Scope) => path === s.recycle || (path.length > s.recycle.length && path.charCodeAt(s.recycle.length) === 47 && path.startsWith(s.recycle));

	const clause = (slot: number, cl: Clause): boolean => {
		switch (cl.kind) {
			case "name":
				return cl.m.test(lnames[slot]);
			case "ext":
				return types[slot] === LEAF && lnames[slot].endsWith(`.${cl.ext}`);
			case "meta": {
				const values = index.metaValuesOf(slot, cl.key);
				return !!values && values.some(cl.value.test);
			}
		}
	};
	const geoOf = (slot: number): { lat: number; lon: number } | null => {
		const m = index.metaOf(slot);
		if (!m) return null;
		for (const [k, raw] of Object.entries(m)) {
			if (!geoKeys.includes(k.toLowerCase())) continue;
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
	};

	let nameDone = false;
	let wordsDone = false;
	const matches = (slot: number, s: Scope): boolean => {
		if (c.type !== undefined && types[slot] !== c.type) return false;
		const size = sizes[slot];
		if (size < c.minSize || size > c.maxSize) return false;
		const mtime = mtimes[slot];
		if (mtime < c.minDate || mtime > c.maxDate) return false;
		if (extOk && (types[slot] !== LEAF || extOk[exts[slot]] !== 1)) return false;
		if (c.etag !== undefined && index.etag(slot) !== c.etag) return false;
		if (c.depth !== undefined) {
			const depth = 1 + depths[slot] - s.rootDepth;
			if (c.depth === -1 ? depth !== s.childDepth : depth !== c.depth) return false;
		}
		if (c.name && !nameDone && !c.name.test(lnames[slot])) return false;
		if (c.words && !wordsDone) for (const w of c.words) if (!index.contentContains(slot, w)) return false;
		if (c.nameOrContent) {
			const { name, words } = c.nameOrContent;
			if (!name.test(lnames[slot]) && !(words.length && words.every((w) => index.contentContains(slot, w)))) return false;
		}
		if (c.free) {
			const f = c.free;
			for (const cl of f.must) if (!clause(slot, cl)) return false;
			for (const cl of f.not) if (clause(slot, cl)) return false;
			if (!f.must.length && f.should.length && !f.should.some((cl) => clause(slot, cl))) return false;
		}
		if (c.geo) {
			const p = geoOf(slot);
			if (!p || !c.geo(p.lat, p.lon)) return false;
		}
		return true;
	};

	const top = new TopK(opts.from + opts.size, comparator(index, opts.sort ?? "path", opts.desc ?? false));
	let total = 0;
	const consider = (slot: number, k: number, checked = false) => {
		const s = scopes[k];
		if (!types[slot] || hidden[slot]) return;
		if (!checked && matches(slot, s) === c.not) return;
		total++;
		top.offer(slot, rankOf[k]);
	};

	// Candidates: an explicit list (uuids, paths, a name scan, content postings, nodes with metadata), or the
	// scopes' runs of the tree. A list is used when it is smaller than what the scopes hold.
	let list: Iterable<number> | null = null;
	if (c.uuids) list = c.uuids.map((u) => index.slotOf(u)).filter((s) => s >= 0);
	else if (c.paths) {
		list = c.paths
			.map((p) => {
				const segs = splitPath(p, "Paths");
				const root = roots.find((r) => r.Slug === segs[0]);
				const id = root ? index.dsId(root.ds) : -1;
				return id < 0 || !root ? -1 : index.sorted.find(id, joinPath(root.rootPath, segs.slice(1).join("/")));
			})
			.filter((s) => s >= 0);
	} else if (!c.not) {
		let inScope = 0;
		for (const s of scopes) {
			const [a, b] = index.sorted.descendants(s.dsId, s.prefix);
			inScope += index.sorted.rank(b) - index.sorted.rank(a);
		}
		if (c.words) {
			const l = index.contentMatchAll(c.words);
			if (l.length < inScope) {
				list = l;
				wordsDone = true;
			}
		}
		if (!list && c.free) {
			// Meta clauses come with their own candidates (the key -> value -> nodes index).
			const metaOf = (cl: Clause) => (cl.kind === "meta" ? index.metaCandidates(cl.key, cl.value.exact, cl.value.test) : null);
			const must = c.free.must.map(metaOf).filter((l): l is number[] => l !== null);
			let l: number[] | null = null;
			if (must.length) l = must.reduce((a, b) => (b.length < a.length ? b : a));
			else if (c.free.should.length && c.free.should.every((cl) => cl.kind === "meta")) l = c.free.should.flatMap((cl) => metaOf(cl) ?? []);
			if (l && l.length < inScope) list = l;
		}
		if (!list && inScope > tuning.rangeScanLimit) {
			if (c.name?.literal) {
				const l: number[] = [];
				index.searchNames(c.name.literal, (slot) => void l.push(slot));
				list = l;
				nameDone = c.name.exact;
			} else if (c.nameOrContent?.name.literal) {
				const l: number[] = [];
				index.searchNames(c.nameOrContent.name.literal, (slot) => void l.push(slot));
				if (c.nameOrContent.words.length) for (const slot of index.contentMatchAll(c.nameOrContent.words)) l.push(slot);
				list = l;
			}
		}
	}

	if (list) {
		const gen = index.newStamp();
		for (const slot of list) {
			if (!index.mark(gen, slot)) continue;
			// The criteria first (most candidates fail them), then where the node is (reads its path).
			const checked = !c.not && c.depth === undefined;
			if (checked && (!types[slot] || hidden[slot] || !matches(slot, scopes[0]))) continue;
			const k = scopeOf(slot);
			if (k < 0 || inRecycleSlot(slot, scopes[k])) continue;
			consider(slot, k, checked);
		}
	} else {
		const overlap = scopes.some((a, i) => scopes.some((b, j) => i !== j && a.dsId === b.dsId && (a.prefix === "" || b.prefix === a.prefix || b.prefix.startsWith(a.prefix + "/"))));
		const sorted = index.sorted;
		// Scopes by rank: without overlap, in the default order, hits then arrive sorted (no heap needed).
		const order = scopes.map((s, k) => ({ s, k })).sort((x, y) => rankOf[x.k] - rankOf[y.k]);
		top.ordered = !overlap && (opts.sort ?? "path") === "path" && !opts.desc;
		// The cheap column tests run inline; `consider` does the rest for the survivors.
		const ctype = c.type ?? 0;
		const { minSize, maxSize, minDate, maxDate } = c;
		const sizeTest = minSize !== -Infinity || maxSize !== Infinity;
		const dateTest = minDate !== -Infinity || maxDate !== Infinity;
		const pre = !c.not;
		for (const { s, k } of order) {
			if (s.prefix !== "" && inRecycle(s.prefix, s)) continue;
			const [from, to] = sorted.descendants(s.dsId, s.prefix);
			const binInside = s.prefix === "" || s.recycle.startsWith(s.prefix + "/");
			// The recycle bin's run (and the bin itself) is skipped.
			const binSlot = binInside ? sorted.find(s.dsId, s.recycle) : -1;
			const [binFrom, binTo] = binInside ? sorted.descendants(s.dsId, s.recycle) : [to, to];
			const run = (blk: readonly number[], a: number, b: number) => {
				for (let i = a; i < b; i++) {
					const slot = blk[i];
					if (pre) {
						if (ctype !== 0 && types[slot] !== ctype) continue;
						if (extOk !== undefined && extOk[exts[slot]] !== 1) continue;
						if (sizeTest && (sizes[slot] < minSize || sizes[slot] > maxSize)) continue;
						if (dateTest && (mtimes[slot] < minDate || mtimes[slot] > maxDate)) continue;
					}
					if (slot === binSlot || (overlap && scopeOf(slot) !== k)) continue;
					consider(slot, k);
				}
			};
			sorted.runs(from, binFrom, run);
			if (binInside) sorted.runs(binTo, to, run);
		}
	}

	const byRank = new Array<Scope>(scopes.length);
	scopes.forEach((s, k) => (byRank[rankOf[k]] = s));
	const hits = top
		.sorted()
		.slice(opts.from)
		.map((h) => ({ slot: h.slot, root: byRank[h.rank].root }));
	return { total, hits };
}

/** A hit as Cells' treeNode, in the caller's user path, with the workspace metas Cells adds to search results. */
export function presentHit(index: SearchIndex, hit: Hit) {
	const { slot, root } = hit;
	const path = index.paths[slot];
	const rel = root.rootPath === "" ? path : path.slice(root.rootPath.length + 1);
	const meta: Record<string, string> = {
		...(index.metaOf(slot) ?? {}),
		name: JSON.stringify(baseName(path)),
		repository_id: JSON.stringify(root.UUID),
		repository_display: JSON.stringify(root.Label),
	};
	if (root.write === false) meta.node_readonly = "true";
	return {
		Uuid: index.uuids[slot] as string,
		Path: joinPath(root.Slug, rel),
		Type: index.types[slot] === COLLECTION ? "COLLECTION" : "LEAF",
		Size: index.sizes[slot],
		MTime: index.mtimes[slot],
		Etag: index.etag(slot),
		MetaStore: meta,
	};
}
