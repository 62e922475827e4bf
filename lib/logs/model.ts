// The log store's records, and the wire shape Cells clients read (log.LogMessage).
export type LogKind = "sys" | "audit";

/** Moleculer's levels, most severe first. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const isLogLevel = (t: string): t is LogLevel => (LOG_LEVELS as readonly string[]).includes(t);

/** Whether `level` is at least as severe as `threshold`. */
export function atLeast(level: LogLevel, threshold: LogLevel): boolean {
	return LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf(threshold);
}

/** The optional, queryable fields of a record (one column each). */
export const LOG_FIELDS = ["msgId", "userName", "userUuid", "remoteAddress", "userAgent", "nodeUuid", "nodePath", "wsUuid", "operationUuid", "spanUuid"] as const;
export type LogField = (typeof LOG_FIELDS)[number];

export interface LogRecord extends Partial<Record<LogField, string>> {
	id: string;
	kind: LogKind;
	/** Unix ms. */
	ts: number;
	level: LogLevel;
	/** The service (or broker module) that wrote it. */
	logger: string;
	/** The cluster node it comes from. */
	node: string;
	msg: string;
	/** Other fields, shown as Cells' JsonZaps. */
	extra?: Record<string, unknown>;
}

/** log.LogMessage, as the swagger spells it (zero values left out). */
export interface LogMessage {
	Ts: number;
	Level: string;
	Logger: string;
	Msg: string;
	MsgId?: string;
	UserName?: string;
	UserUuid?: string;
	RemoteAddress?: string;
	UserAgent?: string;
	NodeUuid?: string;
	NodePath?: string;
	WsUuid?: string;
	OperationUuid?: string;
	SpanUuid?: string;
	JsonZaps?: string;
}

const WIRE: Record<LogField, keyof LogMessage> = {
	msgId: "MsgId",
	userName: "UserName",
	userUuid: "UserUuid",
	remoteAddress: "RemoteAddress",
	userAgent: "UserAgent",
	nodeUuid: "NodeUuid",
	nodePath: "NodePath",
	wsUuid: "WsUuid",
	operationUuid: "OperationUuid",
	spanUuid: "SpanUuid",
};

export function toMessage(r: LogRecord): LogMessage {
	const m: LogMessage = { Ts: Math.floor(r.ts / 1000), Level: r.level, Logger: r.logger, Msg: r.msg };
	for (const f of LOG_FIELDS) {
		const v = r[f];
		if (v) (m as unknown as Record<string, string>)[WIRE[f]] = v;
	}
	// The node is not a LogMessage field: it travels with the other fields, as Cells' JsonZaps does.
	const zaps = { Node: r.node, ...(r.extra ?? {}) };
	m.JsonZaps = JSON.stringify(zaps);
	return m;
}
