// `StreamFilter` of POST /activity/stream: Cells takes a Bleve query string over the activity's JSON (its
// fields lower-case, `updated` in unix seconds). This reads the part of that syntax a feed filter uses —
// space-separated clauses, `+` must, `-` must not, bare ones "at least one of them", `field:value` with the value
// quoted or not, and `updated:>N` (`>=`, `<`, `<=`) — over the fields an activity has. Anything else is a 400
// that says what is understood, never a filter silently ignored.
import { BadRequestError } from "../errors";
import type { ActivityObject } from "./model";

const FIELDS: Record<string, (a: ActivityObject, published: number) => string | number | undefined> = {
	type: (a) => a.type,
	name: (a) => a.name,
	"actor.id": (a) => a.actor?.id,
	"actor.name": (a) => a.actor?.name,
	"object.id": (a) => a.object?.id,
	"object.type": (a) => a.object?.type,
	"object.name": (a) => a.object?.name,
	updated: (_a, published) => Math.floor(published / 1000),
};

interface Clause {
	occur: "must" | "not" | "should";
	field: string;
	op: "=" | ">" | ">=" | "<" | "<=";
	value: string;
}

export type ActivityFilter = (a: ActivityObject, published: number) => boolean;

function tokens(q: string): string[] {
	const out: string[] = [];
	const re = /\s*([+-]?[^\s:"]+:(?:[<>]=?)?(?:"(?:[^"\\]|\\.)*"|[^\s"]+))\s*/y;
	let i = 0;
	const s = q.trim();
	while (i < s.length) {
		re.lastIndex = i;
		const m = re.exec(s);
		if (!m) throw new BadRequestError(`StreamFilter: cannot read "${s.slice(i, i + 40)}": use clauses like +type:Create, actor.id:alice, +updated:>1700000000`, "activity.filter");
		out.push(m[1]);
		i = re.lastIndex;
	}
	return out;
}

export function compileFilter(q: string | undefined): ActivityFilter | undefined {
	if (!q || !q.trim()) return undefined;
	if (q.length > 2000) throw new BadRequestError("StreamFilter is too long", "activity.filter");
	const clauses: Clause[] = tokens(q).map((t) => {
		const occur = t.startsWith("+") ? "must" : t.startsWith("-") ? "not" : "should";
		const body = occur === "should" ? t : t.slice(1);
		const colon = body.indexOf(":");
		const field = body.slice(0, colon);
		let rest = body.slice(colon + 1);
		const op = (/^[<>]=?/.exec(rest)?.[0] ?? "=") as Clause["op"];
		rest = rest.slice(op === "=" ? 0 : op.length);
		const value = rest.startsWith('"') ? rest.slice(1, -1).replace(/\\(.)/g, "$1") : rest;
		if (!FIELDS[field]) throw new BadRequestError(`StreamFilter: unknown field ${field} (known: ${Object.keys(FIELDS).join(", ")})`, "activity.filter");
		if (op !== "=" && field !== "updated") throw new BadRequestError(`StreamFilter: ${op} compares only updated`, "activity.filter");
		if (field === "updated" && !/^\d+$/.test(value)) throw new BadRequestError("StreamFilter: updated takes unix seconds", "activity.filter");
		return { occur, field, op, value };
	});
	const test = (c: Clause, a: ActivityObject, published: number): boolean => {
		const v = FIELDS[c.field](a, published);
		if (v === undefined) return false;
		if (c.op === "=") return String(v).toLowerCase() === c.value.toLowerCase();
		const n = Number(c.value);
		const x = Number(v);
		return c.op === ">" ? x > n : c.op === ">=" ? x >= n : c.op === "<" ? x < n : x <= n;
	};
	const must = clauses.filter((c) => c.occur === "must");
	const not = clauses.filter((c) => c.occur === "not");
	const should = clauses.filter((c) => c.occur === "should");
	return (a, published) =>
		must.every((c) => test(c, a, published)) && !not.some((c) => test(c, a, published)) && (must.length > 0 || should.length === 0 || should.some((c) => test(c, a, published)));
}
