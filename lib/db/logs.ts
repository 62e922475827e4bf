// The system log and the audit trail (one table, `kind` tells them apart). Entries arrive in batches from the log
// service and are read newest first, filtered by the conditions lib/logs/query makes of a Bleve-like query string:
// every condition is one SQL expression here, so a query never loads more than the page it returns. Retention is
// two deletes (older than a date; beyond a number of rows), so the table stays bounded on disk.
import { sql, type Expression, type ExpressionBuilder, type Selectable, type SqlBool } from "kysely";
import type { Db } from "./index";
import type { Database, LogsTable } from "./schema";
import { CompiledShapes, asciiLower, fromJson } from "./sql";
import type { LogColumn, LogCondition } from "../logs/query";
import { LOG_FIELDS, type LogKind, type LogLevel, type LogRecord } from "../logs/model";

type Column = keyof LogsTable;
const COLUMNS: Record<LogColumn, Column> = {
	ts: "ts",
	level: "level",
	logger: "logger",
	node: "node",
	msg: "msg",
	msgId: "msg_id",
	userName: "user_name",
	userUuid: "user_uuid",
	remoteAddress: "remote_address",
	userAgent: "user_agent",
	nodeUuid: "node_uuid",
	nodePath: "node_path",
	wsUuid: "ws_uuid",
	operationUuid: "operation_uuid",
	spanUuid: "span_uuid",
};

/** Where a reader stopped (the last row it got), for the next batch of a long read. */
export interface LogCursor {
	ts: number;
	id: string;
}

/** Rows of the largest insert statement (18 columns each: 1,152 parameters, within both backends' limits). */
const CHUNK = 64;
/** The order of a row's values in the compiled inserts: every column (checked below). */
const ROW_COLUMNS = ["id", "kind", "ts", "level", "logger", "node", "msg", "msg_id", "user_name", "user_uuid", "remote_address", "user_agent", "node_uuid", "node_path", "ws_uuid", "operation_uuid", "span_uuid", "extra"] as const satisfies readonly Column[];
const EVERY_COLUMN: Exclude<Column, (typeof ROW_COLUMNS)[number]> extends never ? true : never = true;
void EVERY_COLUMN;

function rowOf(r: LogRecord): LogsTable {
	const row: LogsTable = {
		id: r.id, kind: r.kind, ts: Math.floor(r.ts), level: r.level, logger: r.logger, node: r.node, msg: r.msg,
		msg_id: null, user_name: null, user_uuid: null, remote_address: null, user_agent: null, node_uuid: null, node_path: null, ws_uuid: null, operation_uuid: null, span_uuid: null,
		extra: r.extra && Object.keys(r.extra).length ? JSON.stringify(r.extra) : null,
	};
	for (const f of LOG_FIELDS) {
		const v = r[f];
		if (v) (row as unknown as Record<string, string>)[COLUMNS[f]] = v;
	}
	return row;
}

function recordOf(r: Selectable<LogsTable>): LogRecord {
	const out: LogRecord = { id: r.id, kind: r.kind as LogKind, ts: Number(r.ts), level: r.level as LogLevel, logger: r.logger, node: r.node, msg: r.msg };
	for (const f of LOG_FIELDS) {
		const v = r[COLUMNS[f]];
		if (typeof v === "string" && v !== "") out[f] = v;
	}
	const extra = fromJson<Record<string, unknown> | null>(r.extra, null);
	if (extra && typeof extra === "object" && !Array.isArray(extra) && Object.keys(extra).length) out.extra = extra;
	return out;
}

/** A LIKE pattern: the value's own %, _ and \ escaped, its wildcards turned into LIKE's. */
function likePattern(value: string): string {
	let out = "";
	for (let i = 0; i < value.length; i++) {
		const c = value[i];
		if (c === "\u0000") {
			out += value[i + 1] === "*" ? "%" : "_";
			i++;
		} else out += c === "%" || c === "_" || c === "\\" ? `\\${c}` : c;
	}
	return out;
}

type Eb = ExpressionBuilder<Database, "logs">;

/** Ts conditions are on unix seconds, the column in ms: Ts = floor(ts / 1000). */
function tsCondition(eb: Eb, op: LogCondition["op"], v: number): Expression<SqlBool> {
	const ms = (s: number) => s * 1000;
	switch (op) {
		case ">":
			return eb("ts", ">=", ms(Math.floor(v) + 1));
		case ">=":
			return eb("ts", ">=", ms(Math.ceil(v)));
		case "<":
			return eb("ts", "<", ms(Math.ceil(v)));
		case "<=":
			return eb("ts", "<", ms(Math.floor(v) + 1));
		default:
			return Number.isInteger(v) ? eb.and([eb("ts", ">=", ms(v)), eb("ts", "<", ms(v + 1))]) : sql<SqlBool>`1 = 0`;
	}
}

function condition(eb: Eb, c: LogCondition): Expression<SqlBool> {
	const col = COLUMNS[c.column];
	if (c.type === "number") return tsCondition(eb, c.op, Number(c.value));
	// lower() on both sides: ASCII case folding, the same on SQLite and on PostgreSQL's "C" collation; coalesce so
	// that "-Field:x" keeps the rows without the field.
	const lowered = sql<string>`lower(coalesce(${sql.ref(`logs.${col}`)}, ''))`;
	const v = asciiLower(c.value);
	if (c.type === "text") return sql<SqlBool>`${lowered} like ${`%${likePattern(v)}%`} escape '\\'`;
	if (c.op === "glob") return sql<SqlBool>`${lowered} like ${likePattern(v)} escape '\\'`;
	return sql<SqlBool>`${lowered} = ${v}`;
}

/** The WHERE of a query: every `must`, no `not`, and one of the `should` when there is no `must`. */
function where(eb: Eb, kind: LogKind, conditions: LogCondition[]): Expression<SqlBool> {
	const all: Expression<SqlBool>[] = [eb("kind", "=", kind)];
	const should: Expression<SqlBool>[] = [];
	let hasMust = false;
	for (const c of conditions) {
		if (c.occur === "must") {
			hasMust = true;
			all.push(condition(eb, c));
		} else if (c.occur === "not") all.push(eb.not(condition(eb, c)));
		else should.push(condition(eb, c));
	}
	if (!hasMust && should.length) all.push(eb.or(should));
	return eb.and(all);
}

export class LogsRepo {
	constructor(private readonly db: Db) {}

	/**
	 * Stores the records, in batches of a few hundred rows. `once`: a record whose id is already stored is skipped
	 * (an event every log service instance receives, stored by whichever comes first).
	 */
	async add(records: LogRecord[], once = false): Promise<void> {
		const rows = records.map(rowOf);
		// Pieces of fixed sizes (CHUNK, then the powers of two a rest is made of): each size is one statement,
		// built and compiled once and prepared once by the driver, whatever the batch's length.
		for (let i = 0; i < rows.length; ) {
			let n = CHUNK;
			while (n > rows.length - i) n >>= 1;
			const params: unknown[] = [];
			for (const row of rows.slice(i, i + n)) for (const c of ROW_COLUMNS) params.push(row[c]);
			await this.db.kysely.executeQuery(this.inserts.with(`${n}|${once ? "once" : ""}`, params));
			i += n;
		}
	}

	private readonly inserts = new CompiledShapes<`${number}|${"once" | ""}`>((key) => {
		const [n, once] = key.split("|");
		const placeholder = Object.fromEntries(ROW_COLUMNS.map((c) => [c, ""])) as unknown as LogsTable;
		const insert = this.db.kysely.insertInto("logs").values(Array.from({ length: Number(n) }, () => placeholder));
		return (once ? insert.onConflict((oc) => oc.column("id").doNothing()) : insert).compile();
	});

	/** One page of the matching records, newest first. */
	async list(kind: LogKind, conditions: LogCondition[], offset: number, limit: number): Promise<LogRecord[]> {
		let q = this.db.kysely.selectFrom("logs").selectAll().where((eb) => where(eb, kind, conditions)).orderBy("ts", "desc").orderBy("id", "desc").limit(limit);
		if (offset > 0) q = q.offset(offset);
		return (await q.execute()).map(recordOf);
	}

	/** The next `limit` matching records after `cursor` (newest first): a long read (an export) in batches. */
	async after(kind: LogKind, conditions: LogCondition[], cursor: LogCursor | undefined, limit: number): Promise<LogRecord[]> {
		const rows = await this.db.kysely
			.selectFrom("logs")
			.selectAll()
			.where((eb) => {
				const w = where(eb, kind, conditions);
				if (!cursor) return w;
				return eb.and([w, eb.or([eb("ts", "<", cursor.ts), eb.and([eb("ts", "=", cursor.ts), eb("id", "<", cursor.id)])])]);
			})
			.orderBy("ts", "desc")
			.orderBy("id", "desc")
			.limit(limit)
			.execute();
		return rows.map(recordOf);
	}

	/**
	 * How many records of `kind` (with this event id, if given) fall in each of the spans `edges` cut (unix ms,
	 * ascending: span i is `edges[i] <= ts < edges[i + 1]`), in one grouped query. The span is computed by the
	 * database: a division when the spans are equal (hours, days), a CASE over the edges otherwise (calendar
	 * months); the edges are our own integers, inlined so that both dialects see integer arithmetic.
	 */
	async countSpans(kind: LogKind, msgId: string | undefined, edges: number[]): Promise<number[]> {
		const spans = edges.length - 1;
		if (spans < 1) return [];
		const at = edges.map((e) => Math.floor(e));
		const width = at[1] - at[0];
		const uniform = at.every((e, i) => e === at[0] + i * width);
		const bucket = uniform
			? sql<number>`(${sql.ref("ts")} - ${sql.lit(at[0])}) / ${sql.lit(width)}`
			: sql<number>`case ${sql.join(at.slice(1).map((e, i) => sql`when ${sql.ref("ts")} < ${sql.lit(e)} then ${sql.lit(i)}`), sql` `)} end`;
		let q = this.db.kysely
			.selectFrom("logs")
			.select((eb) => [bucket.as("span"), eb.fn.countAll<number | string>().as("n")])
			.where("kind", "=", kind)
			.where("ts", ">=", at[0])
			.where("ts", "<", at[spans]);
		if (msgId) q = q.where("msg_id", "=", msgId);
		const counts = new Array<number>(spans).fill(0);
		for (const r of await q.groupBy(bucket).execute()) counts[Number(r.span)] = Number(r.n);
		return counts;
	}

	/** Deletes the records of `kind` older than `before` (unix ms); how many. */
	async pruneOlder(kind: LogKind, before: number): Promise<number> {
		const r = await this.db.kysely.deleteFrom("logs").where("kind", "=", kind).where("ts", "<", before).executeTakeFirst();
		return Number(r.numDeletedRows ?? 0);
	}

	/** Keeps the `max` newest records of `kind`, deleting the others; how many. */
	async pruneBeyond(kind: LogKind, max: number): Promise<number> {
		const edge = await this.db.kysely.selectFrom("logs").select(["ts", "id"]).where("kind", "=", kind).orderBy("ts", "desc").orderBy("id", "desc").offset(max).limit(1).executeTakeFirst();
		if (!edge) return 0;
		const ts = Number(edge.ts);
		const r = await this.db.kysely
			.deleteFrom("logs")
			.where("kind", "=", kind)
			.where((eb) => eb.or([eb("ts", "<", ts), eb.and([eb("ts", "=", ts), eb("id", "<=", edge.id)])]))
			.executeTakeFirst();
		return Number(r.numDeletedRows ?? 0);
	}
}
