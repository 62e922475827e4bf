// The log service's rules (services/log.service.ts is the thin shell): system log batches and audit events become
// records, queries become pages (`POST /a/log/sys`, `/a/log/audit`), exports become streams (JSON or CSV, read from
// the store in batches, never held whole), audit counts become chart points, retention prunes the store.
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { BadRequestError } from "../errors";
import type { AuditEntry, LogBatch } from "../contracts";
import type { LogCursor, LogsRepo } from "../db/logs";
import { toMessage, type LogKind, type LogMessage, type LogRecord } from "./model";
import { parseLogQuery } from "./query";

export interface ListParams {
	Query?: string;
	Page?: number;
	Size?: number;
	Format?: string;
}

export interface Retention {
	/** Days; 0: no age limit. */
	sysDays: number;
	/** Rows; 0: no row limit. */
	sysMaxRows: number;
	auditDays: number;
}

export interface Clock {
	now(): number;
}

export const DEFAULT_SIZE = 100;
export const MAX_SIZE = 1000;
const EXPORT_BATCH = 500;
const DAY_MS = 24 * 3600_000;

let seq = 0;
/** This process's part of the ids: two nodes' entries of one millisecond and sequence number still differ. */
const PROCESS_ID = randomBytes(4).toString("hex");
/** Ids that sort like the entries' times (same millisecond: in arrival order on this node). */
function newId(ts: number): string {
	seq = (seq + 1) % 1_000_000;
	return `${String(Math.max(0, Math.floor(ts))).padStart(13, "0")}-${String(seq).padStart(6, "0")}-${PROCESS_ID}`;
}

const AUDIT_TEXT: Record<AuditEntry["action"], string> = {
	"login.succeeded": "logged in",
	"login.failed": "failed to log in",
	"token.impersonate": "obtained an impersonation token for",
	"role.update": "changed role",
	"role.delete": "deleted role",
	"user.roles": "changed the roles of",
	"user.delete": "deleted user",
	"acl.update": "changed permissions on",
	"acl.delete": "removed permissions on",
	"node.delete": "deleted",
	"share.changed": "changed share",
	"template.update": "saved template",
	"template.delete": "deleted template",
	"oauth2.update": "changed OAuth2",
	"oauth2.delete": "deleted OAuth2",
	"scheduler.update": "saved scheduler job",
	"scheduler.delete": "deleted scheduler job",
	"directory.update": "saved external directory",
	"directory.delete": "deleted external directory",
};

/** The sentence an audit entry shows as its Msg. */
export function auditMessage(e: AuditEntry): string {
	const who = e.actor || "Someone";
	const target = e.action === "login.succeeded" || e.action === "login.failed" ? "" : ` ${e.target ?? e.nodePath ?? ""}`.trimEnd();
	const from = e.ip ? ` from ${e.ip}` : "";
	return `${who} ${AUDIT_TEXT[e.action] ?? e.action}${target}${from}${e.detail ? `: ${e.detail}` : ""}`;
}

/** One point of a chart (log.TimeRangeResult). */
export interface TimeRangeResult {
	Name: string;
	Start: number;
	End: number;
	Count: number;
	Relevance: number;
}
export interface TimeRangeCursor {
	Rel: "FIRST" | "PREV" | "NEXT" | "LAST";
	RefTime: number;
	Count?: number;
}
export interface TimeRangeParams {
	MsgId?: string;
	TimeRangeType?: string;
	RefTime?: number;
}

/**
 * The chart's ranges: the type names the span of one point; a chart shows the points of the span that ends with
 * RefTime's point (H: 12 points of 5 minutes, D: 24 hours, W: 7 days, M: 30 days, Y: 12 calendar months; UTC).
 */
const RANGES: Record<string, { points: number; start(t: number): number; next(t: number): number; label(t: number): string }> = {
	H: { points: 12, start: (t) => t - (t % 300_000), next: (t) => t + 300_000, label: (t) => new Date(t).toISOString().slice(11, 16) },
	D: { points: 24, start: (t) => t - (t % 3600_000), next: (t) => t + 3600_000, label: (t) => new Date(t).toISOString().slice(11, 16) },
	W: { points: 7, start: (t) => t - (t % DAY_MS), next: (t) => t + DAY_MS, label: (t) => new Date(t).toISOString().slice(0, 10) },
	M: { points: 30, start: (t) => t - (t % DAY_MS), next: (t) => t + DAY_MS, label: (t) => new Date(t).toISOString().slice(0, 10) },
	Y: {
		points: 12,
		start: (t) => {
			const d = new Date(t);
			return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
		},
		next: (t) => {
			const d = new Date(t);
			return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
		},
		label: (t) => new Date(t).toISOString().slice(0, 7),
	},
};

const CSV_COLUMNS: (keyof LogMessage | "Date")[] = ["Date", "Ts", "Level", "Logger", "Msg", "MsgId", "UserName", "UserUuid", "RemoteAddress", "UserAgent", "NodeUuid", "NodePath", "WsUuid", "OperationUuid", "SpanUuid", "JsonZaps"];

function csvCell(v: unknown): string {
	let s = v === undefined || v === null ? "" : String(v);
	// A cell a spreadsheet would run as a formula (user-typed logins and paths end up here) is kept as text.
	if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
	return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvLine(m: LogMessage): string {
	const withDate = { ...m, Date: new Date(m.Ts * 1000).toISOString() } as Record<string, unknown>;
	return `${CSV_COLUMNS.map((c) => csvCell(withDate[c])).join(",")}\r\n`;
}

export interface ExportFile {
	stream: Readable;
	contentType: string;
	fileName: string;
}

export class LogBook {
	constructor(
		private readonly repo: LogsRepo,
		private readonly clock: Clock = { now: () => Date.now() },
	) {}

	/** A node's shipped batch; the entries it had to drop become one warning of their own. */
	async ingest(batch: LogBatch): Promise<number> {
		const records: LogRecord[] = batch.entries.map((e) => ({ id: newId(e.ts), kind: "sys", ts: e.ts, level: e.level, logger: e.logger, node: batch.node, msg: e.msg }));
		if (batch.dropped > 0) {
			const ts = this.clock.now();
			records.push({ id: newId(ts), kind: "sys", ts, level: "warn", logger: "log", node: batch.node, msg: `${batch.dropped} log entries of node ${batch.node} were dropped (its log buffer was full or the log service unreachable)` });
		}
		await this.repo.add(records);
		return records.length;
	}

	/**
	 * An audit event, from the service that emitted it (`logger`) on `node`. `onceKey`: the same key from every
	 * receiver of a broadcast event, so that it is stored once whichever log service instances receive it.
	 */
	async audit(e: AuditEntry, logger: string, node: string, onceKey?: string): Promise<void> {
		const ts = Number.isFinite(e.time) && e.time > 0 ? Math.floor(e.time * 1000) : this.clock.now();
		const extra: Record<string, unknown> = {};
		if (e.target) extra.Target = e.target;
		if (e.targetUuid) extra.TargetUuid = e.targetUuid;
		if (e.tokenId) extra.TokenId = e.tokenId;
		if (e.expiresAt) extra.ExpiresAt = e.expiresAt;
		if (e.detail) extra.Detail = e.detail;
		await this.repo.add([
			{
				id: onceKey ? `audit-${createHash("sha256").update(onceKey).digest("hex").slice(0, 32)}` : newId(ts), kind: "audit", ts, level: e.action === "login.failed" ? "warn" : "info", logger, node, msg: auditMessage(e),
				msgId: e.action, userName: e.actor || undefined, userUuid: e.actorUuid, remoteAddress: e.ip, userAgent: e.userAgent,
				nodePath: e.nodePath, nodeUuid: e.nodeUuid, wsUuid: e.wsUuid, extra,
			},
		], onceKey !== undefined);
	}

	/** One page, newest first: log.ListLogRequest → rest.LogMessageCollection. */
	async list(kind: LogKind, p: ListParams): Promise<{ Logs: LogMessage[] }> {
		const conditions = parseLogQuery(p.Query);
		const size = p.Size && p.Size > 0 ? Math.min(p.Size, MAX_SIZE) : DEFAULT_SIZE;
		const page = Math.max(0, p.Page ?? 0);
		const records = await this.repo.list(kind, conditions, page * size, size);
		return { Logs: records.map(toMessage) };
	}

	/**
	 * Every matching record (Page and Size ignored: an export is the whole result), as a stream read from the store
	 * in batches: JSON (the LogMessageCollection, `{"Logs":[…]}`) or CSV. XLSX is refused (400).
	 */
	export(kind: LogKind, p: ListParams): ExportFile {
		const format = (p.Format || "JSON").toUpperCase();
		if (format === "XLSX") throw new BadRequestError("XLSX export is not supported: ask for Format CSV or JSON");
		if (format !== "CSV" && format !== "JSON") throw new BadRequestError(`Unknown Format "${p.Format}": CSV or JSON`);
		const conditions = parseLogQuery(p.Query);
		const repo = this.repo;
		const stamp = new Date(this.clock.now()).toISOString().slice(0, 19).replace(/[:T]/g, "-");
		const csv = format === "CSV";
		async function* lines(): AsyncGenerator<string> {
			yield csv ? `${CSV_COLUMNS.join(",")}\r\n` : '{"Logs":[';
			let cursor: LogCursor | undefined;
			let first = true;
			for (;;) {
				const batch = await repo.after(kind, conditions, cursor, EXPORT_BATCH);
				if (!batch.length) break;
				let chunk = "";
				for (const r of batch) {
					const m = toMessage(r);
					chunk += csv ? csvLine(m) : `${first ? "" : ","}${JSON.stringify(m)}`;
					first = false;
				}
				yield chunk;
				const last = batch[batch.length - 1];
				cursor = { ts: last.ts, id: last.id };
				if (batch.length < EXPORT_BATCH) break;
			}
			if (!csv) yield "]}";
		}
		return {
			stream: Readable.from(lines(), { objectMode: false }),
			contentType: csv ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
			fileName: `${kind === "sys" ? "system" : "audit"}-log-${stamp}.${csv ? "csv" : "json"}`,
		};
	}

	/** Audit counts per point of a time range: log.TimeRangeRequest → rest.TimeRangeResultCollection. */
	async chart(p: TimeRangeParams): Promise<{ Results: TimeRangeResult[]; Links: TimeRangeCursor[] }> {
		const type = (p.TimeRangeType || "D").toUpperCase();
		const range = RANGES[type];
		if (!range) throw new BadRequestError(`Unknown TimeRangeType "${p.TimeRangeType}": H, D, W, M or Y`);
		const now = this.clock.now();
		const ref = p.RefTime && p.RefTime > 0 ? Math.min(p.RefTime * 1000, now) : now;
		// The points: the last one holds RefTime, the others go back from it.
		const starts: number[] = [range.start(ref)];
		for (let i = 1; i < range.points; i++) starts.unshift(range.start(starts[0] - 1));
		const edges = [...starts, range.next(starts[starts.length - 1])];
		const counts = await this.repo.countSpans("audit", p.MsgId || undefined, edges);
		const results: TimeRangeResult[] = [];
		for (const [i, start] of starts.entries()) {
			const end = edges[i + 1];
			let count = counts[i];
			let relevance = 100;
			if (end > now && now > start) {
				// A point still under way: its count so far, scaled to the whole span, with how much of it is known.
				const part = (now - start) / (end - start);
				relevance = Math.max(1, Math.round(part * 100));
				count = Math.round(count / Math.max(part, 0.01));
			}
			results.push({ Name: range.label(start), Start: Math.floor(start / 1000), End: Math.floor(end / 1000), Count: count, Relevance: relevance });
		}
		const span = range.next(starts[starts.length - 1]) - starts[0];
		const links: TimeRangeCursor[] = [{ Rel: "FIRST", RefTime: Math.floor(now / 1000) }, { Rel: "PREV", RefTime: Math.floor((starts[0] - 1) / 1000) }];
		const nextRef = ref + span;
		if (range.start(ref) < range.start(now)) links.push({ Rel: "NEXT", RefTime: Math.floor(Math.min(nextRef, now) / 1000) });
		links.push({ Rel: "LAST", RefTime: 0 });
		return { Results: results, Links: links };
	}

	/** Applies the retention; how many records went. */
	async prune(r: Retention): Promise<{ sys: number; audit: number }> {
		const now = this.clock.now();
		let sys = 0;
		if (r.sysDays > 0) sys += await this.repo.pruneOlder("sys", now - r.sysDays * DAY_MS);
		if (r.sysMaxRows > 0) sys += await this.repo.pruneBeyond("sys", r.sysMaxRows);
		const audit = await this.repo.pruneOlder("audit", now - r.auditDays * DAY_MS);
		return { sys, audit };
	}
}
