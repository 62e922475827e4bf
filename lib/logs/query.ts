// The log queries Cells clients send (`log.ListLogRequest.Query`, Bleve's query-string syntax), in the subset
// lib/jobs/query parses: `+` must match, `-` must not, plain clauses "should" (at least one of them when there is
// no `+` clause); `Field:value`, values quoted or not, `*` and `?` wildcards, `Field:>n` `>=` `<` `<=` on numbers;
// a value without a field searches the message. Fields:
//   Ts                    unix seconds; compared as numbers (`+Ts:>=1700000000 +Ts:<1700086400`)
//   Msg (the default)     the message: a value matches a part of it, case-insensitively (`+Msg:"disk full"`,
//                         `foo*` = a part starting with foo)
//   Level, Logger, Node,  whole value, case-insensitive, wildcards allowed (`+Level:error`, `+Logger:tree*`);
//   MsgId, UserName, UserUuid, RemoteAddress, UserAgent, NodeUuid, NodePath, WsUuid, OperationUuid, SpanUuid
// Anything else (another field, ranges `[a TO b]`, boosts, fuzzy `~`, groups) is a 400 that says so. The query
// becomes SQL (lib/db/logs): nothing is filtered in memory.
import { BadRequestError } from "../errors";
import { parseQuery, type Occur, type Op } from "../jobs/query";
import type { LogField } from "./model";

export type LogColumn = "ts" | "level" | "logger" | "node" | "msg" | LogField;

export interface LogCondition {
	occur: Occur;
	column: LogColumn;
	/** number: Ts (unix seconds); text: the message (a part of it); keyword: the whole value, case-insensitive. */
	type: "number" | "text" | "keyword";
	op: Op;
	/** Wildcards as lib/jobs/query marks them (\u0000 before * or ?). */
	value: string;
}

const FIELDS: Record<string, { column: LogColumn; type: LogCondition["type"] }> = {
	Ts: { column: "ts", type: "number" },
	Msg: { column: "msg", type: "text" },
	Level: { column: "level", type: "keyword" },
	Logger: { column: "logger", type: "keyword" },
	Node: { column: "node", type: "keyword" },
	MsgId: { column: "msgId", type: "keyword" },
	UserName: { column: "userName", type: "keyword" },
	UserUuid: { column: "userUuid", type: "keyword" },
	RemoteAddress: { column: "remoteAddress", type: "keyword" },
	UserAgent: { column: "userAgent", type: "keyword" },
	NodeUuid: { column: "nodeUuid", type: "keyword" },
	NodePath: { column: "nodePath", type: "keyword" },
	WsUuid: { column: "wsUuid", type: "keyword" },
	OperationUuid: { column: "operationUuid", type: "keyword" },
	SpanUuid: { column: "spanUuid", type: "keyword" },
};

export const QUERY_FIELDS = Object.keys(FIELDS);

/** The conditions of a query string; a 400 naming what is not understood. */
export function parseLogQuery(q: string | undefined): LogCondition[] {
	const clauses = parseQuery(q);
	if (clauses.length > 32) throw new BadRequestError("Query has too many clauses (at most 32)");
	return clauses.map((c) => {
		const name = c.field ?? "Msg";
		const spec = FIELDS[name];
		if (!spec) throw new BadRequestError(`Unsupported field ${name} in query (supported: ${QUERY_FIELDS.join(", ")})`);
		if (spec.type === "number") {
			if (c.op === "glob" || !/^-?\d+(\.\d+)?$/.test(c.value)) throw new BadRequestError(`${name} needs a number (unix seconds), got "${c.value.replace(/\u0000/g, "")}"`);
		} else if (c.op !== "eq" && c.op !== "glob") throw new BadRequestError(`${name} cannot be compared with ${c.op}: only Ts can`);
		return { occur: c.occur, column: spec.column, type: spec.type, op: c.op, value: c.value };
	});
}
