// The search index's repository (tables of migration 0002): folded names and the words of small text files, and
// the reads a search makes. A search reads the nodes themselves (`nodes`: paths, sizes, times, metadata) joined
// with what search derived from them, so that only the derived parts need keeping current:
// - names: written from `tree.changed` (create, move/rename) by every replica (an idempotent upsert), and compared
//   with nodes.name at start (`staleNames`) to catch the renames and creates missed while no replica ran;
// - text: a replica claims files at their etags before reading them (`claimTexts`: one conditional upsert, so
//   that of several replicas receiving the same event one reads a file), then stores their words (`setTexts`,
//   only for the files that still have that etag). `staleTexts` finds what was missed (new etag, never read,
//   claim abandoned).
// Deletes need nothing: both tables cascade from nodes.
//
// Reads come a page at a time (`rows`), keyed on what the chosen access path returns in order, so that a search
// never holds more than a page of rows whatever the number of nodes:
// - names: SQLite's FTS5 trigram table (keyed on its rowid), PostgreSQL's pg_trgm GIN index (keyed on uuid);
// - words: SQLite's FTS5 words table, PostgreSQL's GIN index over text[];
// - a scope's subtree (no candidate list): SQLite's (ds, path) index, keyed on path; PostgreSQL has no btree on
//   path (paths may exceed a btree entry, see 0001) and walks the primary key in uuid order with the range as a filter.
// Uuids and exact paths (at most 1000 each, checked by lib/search/query) come in one page.
// Queries it decides whole (WalkQuery) are read in path order instead, stopping early: `walk` (SQLite's (ds, path)
// index, candidates tested against a rowid list the FTS5 table gives once per statement) or `sortedCandidates`
// (the candidates ordered in SQL: short lists, and PostgreSQL), then `walkRows` for the page's rows alone.
import { sql, type RawBuilder } from "kysely";
import type { Db } from "./index";
import { prefixEnd } from "./sql";

export interface SearchRow {
	uuid: string;
	ds: string;
	path: string;
	name: string;
	type: "LEAF" | "COLLECTION";
	size: number;
	mtime: number;
	etag: string | null;
	/** The JSON text of nodes.meta. */
	meta: string;
	key: string | null;
	/** 1 when the file's text has every word of `RowQuery.hits.words` (0 when not asked). */
	words_hit: number;
	/** Same for `RowQuery.hits.either`. */
	either_hit: number;
	/** For a read of the scopes' subtrees: the index (in RowQuery.scopes) of the scope whose read returned it. */
	scope?: number;
}

export interface NameEntry {
	uuid: string;
	name: string;
	folded: string;
	ext: string;
}

/** The nodes strictly below `prefix` in datasource `ds` ("" = every node but the root). */
export interface ScopeRange {
	ds: string;
	prefix: string;
}

export interface RowFilter {
	type?: "LEAF" | "COLLECTION";
	minSize?: number;
	maxSize?: number;
	minDate?: number;
	maxDate?: number;
	etag?: string;
	/** Files whose folded name's extension (search_names.ext) is one of these: a superset of the matches of an
	 * Extension query, narrowed further by the caller. */
	exts?: string[];
	/** Nodes whose metadata has a key (case-insensitive) of every group: each group is "any of these keys". */
	metaKeys?: string[][];
}

/** Where the rows come from: every node of the scopes, or a candidate list (still within the scopes). */
export type Candidates =
	| { kind: "scopes" }
	/** Folded names containing `literal` (3 characters at least: trigrams). */
	| { kind: "name"; literal: string }
	/** Text files whose words include every word (a trailing `*`: a word starting with it). */
	| { kind: "words"; words: string[] }
	| { kind: "uuids"; uuids: string[] }
	| { kind: "places"; places: { ds: string; path: string }[] };

/** A scope read in path order: its range, without its recycle bin (datasource path) nor hidden nodes. */
export interface WalkScope extends ScopeRange {
	recycle: string;
}

/**
 * A read in path order (SQLite: the (ds, path) index of `nodes`), a scope after the other in the order given, for
 * queries the store can decide whole: every row it returns matches, so a page is its first rows and a count is
 * exact. Candidates are tested per row against the set an FTS5 table returns (built once per statement), never
 * joined: the walk reads rows in path order and stops at the page's end.
 */
export interface WalkQuery {
	scopes: WalkScope[];
	filter: RowFilter;
	candidates: { kind: "scopes" } | { kind: "name"; literal: string } | { kind: "words"; words: string[] };
	desc: boolean;
}

export interface RowQuery {
	scopes: ScopeRange[];
	filter: RowFilter;
	candidates: Candidates;
	/** Word lists whose presence in each row's text is returned (words_hit, either_hit). */
	hits?: { words?: string[]; either?: string[] };
}

/** What a text catch-up reads. */
export interface TextCandidate {
	uuid: string;
	ds: string;
	path: string;
	name: string;
	size: number;
	etag: string | null;
	key: string | null;
	meta: string;
}

/** Fewest characters a name literal needs for the trigram indexes. */
export const MIN_NAME_LITERAL = 3;

const COLUMNS = sql.raw("n.uuid, n.ds, n.path, n.name, n.type, n.size, n.mtime, n.etag, n.meta, n.key");

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
/** An FTS5 phrase for a literal: quoted, quotes doubled. */
const ftsPhrase = (s: string) => `"${s.replace(/"/g, '""')}"`;
/** An FTS5 query: every word, a trailing `*` a prefix. Words are letters and digits only (lib/search/content). */
const ftsWords = (words: string[]) => words.map((w) => (w.endsWith("*") ? `${ftsPhrase(w.slice(0, -1))}*` : ftsPhrase(w))).join(" ");

export class SearchRepo {
	constructor(private readonly db: Db) {}

	private get pg(): boolean {
		return this.db.dialect === "postgres";
	}

	private async run<T>(q: RawBuilder<T>): Promise<T[]> {
		return (await q.execute(this.db.kysely)).rows;
	}

	// ---- names ----

	/**
	 * Writes folded names (insert or replace); a node that is gone meanwhile is skipped (the rows are inserted from
	 * a join with `nodes`, never violating the foreign key). Idempotent: replicas may write the same names.
	 */
	async upsertNames(entries: readonly NameEntry[]): Promise<void> {
		for (let i = 0; i < entries.length; i += 500) {
			const json = JSON.stringify(entries.slice(i, i + 500));
			const source = this.pg
				? sql`select n.uuid, v.name, v.folded, v.ext from jsonb_to_recordset(${json}::jsonb) as v(uuid text, name text, folded text, ext text) join nodes n on n.uuid = v.uuid`
				: sql`select n.uuid, v.value ->> 'name', v.value ->> 'folded', v.value ->> 'ext' from json_each(${json}) v join nodes n on n.uuid = v.value ->> 'uuid' where true`;
			await sql`insert into search_names (uuid, name, folded, ext) ${source}
				on conflict (uuid) do update set name = excluded.name, folded = excluded.folded, ext = excluded.ext
				where search_names.name <> excluded.name or search_names.folded <> excluded.folded or search_names.ext <> excluded.ext`.execute(this.db.kysely);
		}
	}

	/**
	 * The nodes whose name is not indexed as it is now (never indexed, or renamed since), `window` nodes of the
	 * store at a time in uuid order: each page is a bounded read, whatever the number of nodes, and a short one
	 * (better-sqlite3 holds the event loop while a statement runs).
	 */
	async *staleNames(window = 1000): AsyncGenerator<{ uuid: string; name: string }[]> {
		for (let after = ""; ; ) {
			const end = await this.windowEnd("nodes", after, window);
			const upto = end === undefined ? sql`` : sql`and n.uuid <= ${end}`;
			const rows = await this.run(sql<{ uuid: string; name: string }>`select n.uuid, n.name from nodes n left join search_names s on s.uuid = n.uuid
				where n.uuid > ${after} ${upto} and (s.uuid is null or s.name <> n.name)`);
			if (rows.length) yield rows;
			if (end === undefined) return;
			after = end;
		}
	}

	/** The `window`-th uuid of `table` after `after`, or undefined when fewer remain. */
	private async windowEnd(table: "nodes", after: string, window: number): Promise<string | undefined> {
		const rows = await this.run(sql<{ uuid: string }>`select uuid from ${sql.table(table)} where uuid > ${after} order by uuid limit 1 offset ${window - 1}`);
		return rows[0]?.uuid;
	}

	// ---- text ----

	/**
	 * Claims the reading of files' texts at their etags; the uuids this caller is to read: those with no words for
	 * this etag yet that nobody claimed in the last `staleAfterMs`. Not the nodes that are gone, nor the files whose
	 * words for this etag are stored or being read by someone else. One statement for the whole list.
	 */
	async claimTexts(items: readonly { uuid: string; etag: string }[], staleAfterMs = 600_000): Promise<string[]> {
		if (!items.length) return [];
		const now = Date.now();
		const json = JSON.stringify(items);
		const source = this.pg
			? sql`select n.uuid, v.etag, null::text[], ${now}::bigint from jsonb_to_recordset(${json}::jsonb) as v(uuid text, etag text) join nodes n on n.uuid = v.uuid`
			: sql`select n.uuid, v.value ->> 'etag', null, ${now} from json_each(${json}) v join nodes n on n.uuid = v.value ->> 'uuid' where true`;
		const rows = await this.run(sql<{ uuid: string }>`insert into search_text (uuid, etag, words, claimed_at) ${source}
			on conflict (uuid) do update set etag = excluded.etag, words = null, claimed_at = excluded.claimed_at
			where search_text.etag <> excluded.etag or (search_text.claimed_at is not null and search_text.claimed_at < ${now - staleAfterMs})
			returning uuid`);
		return rows.map((r) => r.uuid);
	}

	/**
	 * Stores the words of files claimed at `etag` (null or none: no text), one UPDATE for 500 files, in one
	 * transaction; a file with another etag since (a newer claim) or gone is left alone. How many were stored.
	 */
	async setTexts(items: readonly { uuid: string; etag: string; words: readonly string[] | null }[]): Promise<number> {
		if (!items.length) return 0;
		// A file given twice at one etag: its last words, as the writes one after the other stored them.
		const last = new Map(items.map((it) => [`${it.uuid}\n${it.etag}`, it]));
		const rows = [...last.values()].map((it) => ({ uuid: it.uuid, etag: it.etag, words: !it.words?.length ? null : this.pg ? it.words : it.words.join(" ") }));
		return this.db.transaction(async (trx) => {
			let n = 0;
			for (let i = 0; i < rows.length; i += 500) {
				const json = JSON.stringify(rows.slice(i, i + 500));
				const r = this.pg
					? await sql`update search_text t set words = v.words, claimed_at = null
						from jsonb_to_recordset(${json}::jsonb) as v(uuid text, etag text, words text[])
						where t.uuid = v.uuid and t.etag = v.etag`.execute(trx)
					: await sql`update search_text set words = v.value ->> 'words', claimed_at = null
						from json_each(${json}) v
						where search_text.uuid = v.value ->> 'uuid' and search_text.etag = v.value ->> 'etag'`.execute(trx);
				n += Number(r.numAffectedRows ?? 0);
			}
			return n;
		});
	}

	/**
	 * Files that may hold text (at most `maxBytes`, an extension in `exts` or a `mime` metadata) whose words are not
	 * stored for their current etag (never read, changed since, or claimed more than `staleAfterMs` ago), a window of
	 * `window` nodes at a time. Names must be current (staleNames first): the extension comes from search_names.
	 */
	async *staleTexts(opts: { maxBytes: number; exts: readonly string[]; staleAfterMs?: number; window?: number }): AsyncGenerator<TextCandidate[]> {
		const window = opts.window ?? 1000;
		const cutoff = Date.now() - (opts.staleAfterMs ?? 600_000);
		const exts = this.pg ? sql`s.ext = any(${[...opts.exts]}::text[])` : sql`s.ext in (select value from json_each(${JSON.stringify(opts.exts)}))`;
		for (let after = ""; ; ) {
			const end = await this.windowEnd("nodes", after, window);
			const upto = end === undefined ? sql`` : sql`and n.uuid <= ${end}`;
			const rows = await this.run(sql<TextCandidate>`select n.uuid, n.ds, n.path, n.name, n.size, n.etag, n.key, n.meta from nodes n
				join search_names s on s.uuid = n.uuid
				left join search_text t on t.uuid = n.uuid
				where n.uuid > ${after} ${upto} and n.type = 'LEAF' and n.size <= ${opts.maxBytes} and (${exts} or n.meta like '%"mime"%')
				and (t.uuid is null or t.etag <> coalesce(n.etag, '') or (t.claimed_at is not null and t.claimed_at < ${cutoff}))`);
			if (rows.length) yield rows;
			if (end === undefined) return;
			after = end;
		}
	}

	async counts(): Promise<{ names: number; texts: number }> {
		const [a] = await this.run(sql<{ c: number }>`select count(*) as c from search_names`);
		const [b] = await this.run(sql<{ c: number }>`select count(*) as c from search_text where words is not null`);
		return { names: Number(a.c), texts: Number(b.c) };
	}

	// ---- reads ----

	/** Whether `walk` and `walkRows` are available: an index on (ds, path) to read in path order (SQLite). */
	get canWalk(): boolean {
		return !this.pg;
	}

	/**
	 * How many rows a candidate list holds, in the whole index (not only the caller's scopes): the cost of reading
	 * it. Reads the FTS posting lists alone (SQLite), the GIN index and the rows it points to (PostgreSQL).
	 */
	async candidateCount(c: Candidates): Promise<number> {
		let q: RawBuilder<{ c: number }>;
		if (c.kind === "name")
			q = this.pg
				? sql`select count(*) as c from search_names s where s.folded like ${`%${likeEscape(c.literal)}%`}`
				: sql`select count(*) as c from search_names_fts where search_names_fts match ${ftsPhrase(c.literal)}`;
		else if (c.kind === "words")
			q = this.pg ? sql`select count(*) as c from search_text t where ${this.pgWords("t", c.words)}` : sql`select count(*) as c from search_text_fts where search_text_fts match ${ftsWords(c.words)}`;
		else throw new Error(`candidateCount: not a candidate list (${c.kind})`);
		const [r] = await this.run(q);
		return Number(r.c);
	}

	/**
	 * The next rows of scope `k` of a walk after path `after` (before it when descending), at most `limit`: their
	 * uuids and paths only (a walk counts far more rows than it returns; `walkRows` reads the page's).
	 */
	async walk(q: WalkQuery, k: number, after: string | undefined, limit: number): Promise<{ uuid: string; path: string }[]> {
		const key = after === undefined ? sql`` : q.desc ? sql`and n.path < ${after}` : sql`and n.path > ${after}`;
		return this.run(sql<{ uuid: string; path: string }>`select n.uuid, n.path from ${this.walkFrom(q, q.scopes[k])} ${key}
			order by n.path ${q.desc ? sql`desc` : sql`asc`} limit ${limit}`);
	}

	/** About how many rows the names (or texts) index holds: its largest rowid / row count, read from one index. */
	async indexSize(kind: "name" | "words"): Promise<number> {
		const table = sql.table(kind === "name" ? "search_names" : "search_text");
		const [r] = await this.run(sql<{ c: number | null }>`select ${this.pg ? sql`(select reltuples::bigint from pg_class where relname = ${kind === "name" ? "search_names" : "search_text"})` : sql`max(id)`} as c from ${table} ${this.pg ? sql`limit 1` : sql``}`);
		return Math.max(0, Number(r?.c ?? 0));
	}

	/**
	 * A walk's rows from its candidate list instead (every candidate read once, ordered by the store): the first
	 * `limit` as a walk would return them (`k`: the index of their scope), and their exact number. For short
	 * candidate lists, and on PostgreSQL (no index on paths to walk).
	 */
	async sortedCandidates(q: WalkQuery, limit: number): Promise<{ rows: { uuid: string; path: string; k: number }[]; total: number }> {
		const c = q.candidates;
		if (c.kind === "scopes") throw new Error("sortedCandidates: not a candidate list");
		let from: RawBuilder<unknown>;
		if (c.kind === "name")
			from = this.pg
				? sql`search_names s join nodes n on n.uuid = s.uuid where s.folded like ${`%${likeEscape(c.literal)}%`}`
				: sql`search_names_fts f join search_names s on s.id = f.rowid join nodes n on n.uuid = s.uuid where search_names_fts match ${ftsPhrase(c.literal)}`;
		else
			from = this.pg
				? sql`search_text t join nodes n on n.uuid = t.uuid where ${this.pgWords("t", c.words)}`
				: sql`search_text_fts f join search_text t on t.id = f.rowid join nodes n on n.uuid = t.uuid where search_text_fts match ${ftsWords(c.words)}`;
		const k = sql`case ${sql.join(q.scopes.map((s, i) => sql`when ${this.visibleIn(s)} then ${sql.lit(i)}`), sql` `)} end`;
		const where = sql`${from} and (${sql.join(q.scopes.map((s) => sql`(${this.visibleIn(s)})`), sql` or `)}) ${this.filterSql(q.filter)}`;
		// The count over every row comes with the page, from the same read.
		const rows = await this.run(
			sql<{ uuid: string; path: string; k: number; total: number }>`select n.uuid, n.path, ${k} as k, count(*) over () as total from ${where} order by 3, n.path ${q.desc ? sql`desc` : sql`asc`} limit ${limit}`,
		);
		if (rows.length) return { rows: rows.map((r) => ({ uuid: r.uuid, path: r.path, k: Number(r.k) })), total: Number(rows[0].total) };
		const [t] = await this.run(sql<{ c: number }>`select count(*) as c from ${where}`);
		return { rows: [], total: Number(t.c) };
	}

	/** The rows of nodes a walk returned (at most 1000), in no particular order. */
	async walkRows(q: WalkQuery, uuids: string[]): Promise<SearchRow[]> {
		if (!uuids.length) return [];
		const hit = q.candidates.kind === "words" ? sql`1` : sql`0`;
		return this.run(sql<SearchRow>`select ${COLUMNS}, ${hit} as words_hit, 0 as either_hit from nodes n where n.uuid in (${sql.join(uuids)})`);
	}

	/** The rows of a walk's scope: `from` (nodes n, its matching candidate s or t) and the condition. */
	private walkFrom(q: WalkQuery, s: WalkScope): RawBuilder<unknown> {
		const c = q.candidates;
		// The FTS rowids form a list built once per statement, tested (`+`: not used to drive the join) as each row
		// of the walk comes: the walk stays in path order.
		// An ASCII literal is first looked for in the path (read from the index: most rows of the walk are left without
		// reading them) and in the name, ASCII case folded by LIKE, unless the name has a non-ASCII character (its
		// folded form may differ from it): a superset of the names whose folded form contains it, tested for free.
		const like = c.kind === "name" && /^[\x20-\x7e]+$/.test(c.literal) ? `%${likeEscape(c.literal)}%` : undefined;
		const pre = like === undefined ? sql`` : sql`n.path like ${like} escape '\\' and (n.name like ${like} escape '\\' or n.name glob '*[^ -~]*') and`;
		const from =
			c.kind === "name"
				? sql`nodes n indexed by nodes_ds_path_key join search_names s on s.uuid = n.uuid where ${pre} +s.id in (select rowid from search_names_fts where search_names_fts match ${ftsPhrase(c.literal)}) and`
				: c.kind === "words"
					? sql`nodes n indexed by nodes_ds_path_key join search_text t on t.uuid = n.uuid where +t.id in (select rowid from search_text_fts where search_text_fts match ${ftsWords(c.words)}) and`
					: sql`nodes n indexed by nodes_ds_path_key where`;
		return sql`${from} ${this.visibleIn(s)} ${this.filterSql(q.filter)}`;
	}

	/** The nodes of a scope a search may return: in its range, not hidden, not in its recycle bin. */
	private visibleIn(s: WalkScope): RawBuilder<unknown> {
		const binLo = `${s.recycle}/`;
		const binHi = prefixEnd(binLo);
		const bin = binHi === undefined ? sql`n.path >= ${binLo}` : sql`(n.path >= ${binLo} and n.path < ${binHi})`;
		// Hidden: a path segment that starts with a dot (lib/search isHiddenPath). LIKE: '.' and '/' are literal.
		return sql`${this.rangeSql(s)} and n.path not like '.%' and n.path not like '%/.%' and n.path <> ${s.recycle} and not ${bin}`;
	}

	/** The rows of a query, `pageSize` at a time, in no particular order (the caller orders its hits). */
	async *rows(q: RowQuery, pageSize = 2000): AsyncGenerator<SearchRow[]> {
		if (!q.scopes.length) return;
		const filter = this.filterSql(q.filter);
		const hits = sql`, ${this.hitSql(q.hits?.words)} as words_hit, ${this.hitSql(q.hits?.either)} as either_hit`;
		const c = q.candidates;
		if (c.kind === "scopes") {
			for (let i = 0; i < q.scopes.length; i++) {
				for await (const rows of this.scopeRows(q.scopes[i], filter, hits, pageSize)) {
					for (const r of rows) r.scope = i;
					yield rows;
				}
			}
			return;
		}
		const scopes = sql.join(q.scopes.map((s) => this.rangeSql(s)), sql` or `);
		const where = sql`(${scopes}) ${filter}`;
		if (c.kind === "uuids" || c.kind === "places") {
			if (c.kind === "uuids" && !c.uuids.length) return;
			if (c.kind === "places" && !c.places.length) return;
			const which = c.kind === "uuids" ? sql`n.uuid in (${sql.join(c.uuids)})` : sql.join(c.places.map((p) => sql`(n.ds = ${p.ds} and n.path = ${p.path})`), sql` or `);
			const rows = await this.run(sql<SearchRow>`select ${COLUMNS} ${hits} from nodes n where (${which}) and ${where}`);
			if (rows.length) yield rows;
			return;
		}
		// Keyset pages over the candidate index: `k` is what it returns in order.
		type Keyed = SearchRow & { k: string | number };
		let page: (after: string | number | undefined) => RawBuilder<Keyed>;
		if (c.kind === "name") {
			page = this.pg
				? (after) => sql<Keyed>`select ${COLUMNS} ${hits}, s.uuid as k from search_names s join nodes n on n.uuid = s.uuid
					where s.folded like ${`%${likeEscape(c.literal)}%`} ${after === undefined ? sql`` : sql`and s.uuid > ${after}`} and ${where} order by s.uuid limit ${pageSize}`
				: (after) => sql<Keyed>`select ${COLUMNS} ${hits}, f.rowid as k from search_names_fts f join search_names s on s.id = f.rowid join nodes n on n.uuid = s.uuid
					where search_names_fts match ${ftsPhrase(c.literal)} ${after === undefined ? sql`` : sql`and f.rowid > ${after}`} and ${where} order by f.rowid limit ${pageSize}`;
		} else {
			page = this.pg
				? (after) => sql<Keyed>`select ${COLUMNS} ${hits}, t.uuid as k from search_text t join nodes n on n.uuid = t.uuid
					where ${this.pgWords("t", c.words)} ${after === undefined ? sql`` : sql`and t.uuid > ${after}`} and ${where} order by t.uuid limit ${pageSize}`
				: (after) => sql<Keyed>`select ${COLUMNS} ${hits}, f.rowid as k from search_text_fts f join search_text t on t.id = f.rowid join nodes n on n.uuid = t.uuid
					where search_text_fts match ${ftsWords(c.words)} ${after === undefined ? sql`` : sql`and f.rowid > ${after}`} and ${where} order by f.rowid limit ${pageSize}`;
		}
		for (let after: string | number | undefined; ; ) {
			const rows = await this.run(page(after));
			if (rows.length) yield rows;
			if (rows.length < pageSize) return;
			after = rows[rows.length - 1].k;
		}
	}

	private async *scopeRows(s: ScopeRange, filter: RawBuilder<unknown>, hits: RawBuilder<unknown>, pageSize: number): AsyncGenerator<SearchRow[]> {
		const range = this.rangeSql(s);
		if (this.pg) {
			for (let after = ""; ; ) {
				const rows = await this.run(sql<SearchRow>`select ${COLUMNS} ${hits} from nodes n where ${range} ${filter} and n.uuid > ${after} order by n.uuid limit ${pageSize}`);
				if (rows.length) yield rows;
				if (rows.length < pageSize) return;
				after = rows[rows.length - 1].uuid;
			}
		}
		for (let after = s.prefix === "" ? "" : `${s.prefix}/`; ; ) {
			const rows = await this.run(sql<SearchRow>`select ${COLUMNS} ${hits} from nodes n where ${range} ${filter} and n.path > ${after} order by n.path limit ${pageSize}`);
			if (rows.length) yield rows;
			if (rows.length < pageSize) return;
			after = rows[rows.length - 1].path;
		}
	}

	/** The nodes strictly below a scope's prefix, as an index range on (ds, path). */
	private rangeSql(s: ScopeRange): RawBuilder<unknown> {
		if (s.prefix === "") return sql`(n.ds = ${s.ds} and n.path <> '')`;
		const lo = `${s.prefix}/`;
		const hi = prefixEnd(lo);
		return hi === undefined ? sql`(n.ds = ${s.ds} and n.path >= ${lo})` : sql`(n.ds = ${s.ds} and n.path >= ${lo} and n.path < ${hi})`;
	}

	private filterSql(f: RowFilter): RawBuilder<unknown> {
		const parts: RawBuilder<unknown>[] = [];
		if (f.type) parts.push(sql`n.type = ${f.type}`);
		if (f.minSize !== undefined) parts.push(sql`n.size >= ${f.minSize}`);
		if (f.maxSize !== undefined) parts.push(sql`n.size <= ${f.maxSize}`);
		if (f.minDate !== undefined) parts.push(sql`n.mtime >= ${f.minDate}`);
		if (f.maxDate !== undefined) parts.push(sql`n.mtime <= ${f.maxDate}`);
		if (f.etag !== undefined) parts.push(sql`n.etag = ${f.etag}`);
		// search_names.ext is the part after the last dot, or the whole name without one; with a dot after the first
		// character (`_%.%`) it is the extension lib/search compares (extensionOf): the test is exact.
		if (f.exts) parts.push(sql`n.type = 'LEAF' and exists (select 1 from search_names s where s.uuid = n.uuid and s.ext in (${sql.join(f.exts.length ? f.exts : [""])}) and s.folded like '_%.%')`);
		for (const group of f.metaKeys ?? []) {
			// The key as it appears in the JSON text of nodes.meta; ASCII case folded by LIKE (SQLite) / ILIKE.
			const likes = group.map((k) => (this.pg ? sql`n.meta ilike ${`%${likeEscape(JSON.stringify(k))}:%`}` : sql`n.meta like ${`%${likeEscape(JSON.stringify(k))}:%`} escape '\\'`));
			if (likes.length) parts.push(sql`(${sql.join(likes, sql` or `)})`);
		}
		return parts.length ? sql`and ${sql.join(parts, sql` and `)}` : sql``;
	}

	/** 1 when the row's text has every word, as a column; one uncorrelated subquery, evaluated once per statement. */
	private hitSql(words: string[] | undefined): RawBuilder<unknown> {
		if (!words?.length) return sql`0`;
		const inner = this.pg
			? sql`select t.uuid from search_text t where ${this.pgWords("t", words)}`
			: sql`select t.uuid from search_text_fts f join search_text t on t.id = f.rowid where search_text_fts match ${ftsWords(words)}`;
		return sql`case when n.uuid in (${inner}) then 1 else 0 end`;
	}

	/** PostgreSQL: the text (alias `t`) has every word; whole words through the GIN index, prefixes by unnesting. */
	private pgWords(t: string, words: string[]): RawBuilder<unknown> {
		const exact = words.filter((w) => !w.endsWith("*"));
		const prefixes = words.filter((w) => w.endsWith("*")).map((w) => w.slice(0, -1));
		const col = sql.ref(`${t}.words`);
		const parts: RawBuilder<unknown>[] = [sql`${col} is not null`];
		if (exact.length) parts.push(sql`${col} @> ${exact}::text[]`);
		for (const p of prefixes) parts.push(sql`exists (select 1 from unnest(${col}) w where starts_with(w, ${p}))`);
		return sql`(${sql.join(parts, sql` and `)})`;
	}
}
