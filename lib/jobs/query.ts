// "Bleve-lite": the subset of Bleve's query-string syntax that Cells clients send to /jobs/tasks/logs, e.g.
// `+OperationUuid:"copy-move-1234-abcd1234*"`, `+SchedulerJobUuid:"x" -Level:debug`, `+Ts:>=1700000000`, `word`.
// Clauses: `+` must match, `-` must not match, plain ones "should" (at least one when there is no `+` clause).
// Values may be quoted; `*` and `?` are wildcards; `>`, `>=`, `<`, `<=` compare numbers; a value without a
// field searches the message text.
import { BadRequestError } from "../errors";

/** A database pre-filter on an identifier: its exact value, or how it begins. */
export type IdMatch = { eq: string } | { prefix: string };

export type Occur = "must" | "should" | "not";
export type Op = "eq" | "glob" | ">" | ">=" | "<" | "<=";

export interface Clause {
	occur: Occur;
	/** undefined: the default field (message text). */
	field?: string;
	op: Op;
	value: string;
}

export function parseQuery(q: string | undefined): Clause[] {
	const s = (q ?? "").trim();
	if (s.length > 4096) throw new BadRequestError("Query is too long");
	const out: Clause[] = [];
	let i = 0;
	const ws = () => {
		while (i < s.length && /\s/.test(s[i])) i++;
	};
	const readValue = (): { value: string; quoted: boolean; wild: boolean } => {
		let value = "";
		let wild = false;
		if (s[i] === '"') {
			i++;
			for (;;) {
				if (i >= s.length) throw new BadRequestError("Unterminated quoted value in query");
				const c = s[i++];
				if (c === '"') break;
				if (c === "\\" && i < s.length) value += s[i++];
				else {
					if (c === "*" || c === "?") wild = true;
					value += c === "*" || c === "?" ? `\u0000${c}` : c;
				}
			}
			return { value, quoted: true, wild };
		}
		while (i < s.length && !/\s/.test(s[i])) {
			const c = s[i++];
			if (c === "\\" && i < s.length) value += s[i++];
			else if (c === "(" || c === ")" || c === "{" || c === "}" || c === "[" || c === "]" || c === "^" || c === "~") throw new BadRequestError(`Unsupported query syntax "${c}"`);
			else {
				if (c === "*" || c === "?") wild = true;
				value += c === "*" || c === "?" ? `\u0000${c}` : c;
			}
		}
		return { value, quoted: false, wild };
	};
	while ((ws(), i < s.length)) {
		let occur: Occur = "should";
		if (s[i] === "+") {
			occur = "must";
			i++;
		} else if (s[i] === "-") {
			occur = "not";
			i++;
		}
		let field: string | undefined;
		const m = /^([A-Za-z_][A-Za-z0-9_.]*):/.exec(s.slice(i));
		if (m) {
			field = m[1];
			i += m[0].length;
		}
		let op: Op = "eq";
		if (field !== undefined) {
			const cmp = /^(>=|<=|>|<)/.exec(s.slice(i));
			if (cmp) {
				op = cmp[1] as Op;
				i += cmp[1].length;
			}
		}
		if (i >= s.length || /\s/.test(s[i])) throw new BadRequestError(`Missing value in query${field ? ` for ${field}` : ""}`);
		const v = readValue();
		if (op !== "eq") {
			if (v.wild || !/^-?\d+(\.\d+)?$/.test(v.value)) throw new BadRequestError(`${field}: ${op} needs a number`);
			out.push({ occur, field, op, value: v.value });
			continue;
		}
		if (!v.value) throw new BadRequestError("Empty value in query");
		out.push({ occur, field, op: v.wild ? "glob" : "eq", value: v.value });
	}
	return out;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A wildcard value as a RegExp (anchored). */
export function globRegExp(value: string, flags = ""): RegExp {
	let re = "";
	for (let i = 0; i < value.length; i++) {
		if (value[i] === "\u0000") {
			re += value[i + 1] === "*" ? ".*" : ".";
			i++;
		} else re += esc(value[i]);
	}
	return new RegExp(`^${re}$`, flags);
}

/** The literal prefix of a wildcard value ("abc*" -> "abc"), or null if the value is not a pure prefix pattern. */
export function globPrefix(value: string): string | null {
	const at = value.indexOf("\u0000");
	if (at < 0) return value;
	if (at === value.length - 2 && value[at + 1] === "*") return value.slice(0, at);
	return null;
}

export interface FieldSpec {
	/** "id": exact (case-sensitive), "keyword": exact case-insensitive, "text": word / substring, "number" */
	kind: "id" | "keyword" | "text" | "number";
}

function clauseMatches(c: Clause, doc: Record<string, unknown>, fields: Record<string, FieldSpec>, defaultField: string): boolean {
	const name = c.field ?? defaultField;
	const spec = fields[name];
	const raw = doc[name];
	if (spec.kind === "number") {
		const n = Number(raw);
		const v = Number(c.value);
		if (!Number.isFinite(n)) return false;
		switch (c.op) {
			case ">":
				return n > v;
			case ">=":
				return n >= v;
			case "<":
				return n < v;
			case "<=":
				return n <= v;
			default:
				return c.op === "eq" ? n === v : globRegExp(c.value).test(String(n));
		}
	}
	const text = raw === undefined || raw === null ? "" : String(raw);
	if (c.op !== "eq" && c.op !== "glob") return false;
	if (spec.kind === "text") {
		if (c.op === "glob") return text.split(/\s+/).some((w) => globRegExp(c.value, "i").test(w)) || globRegExp(c.value, "i").test(text);
		return text.toLowerCase().includes(c.value.toLowerCase());
	}
	const flags = spec.kind === "keyword" ? "i" : "";
	if (c.op === "glob") return globRegExp(c.value, flags).test(text);
	return spec.kind === "keyword" ? text.toLowerCase() === c.value.toLowerCase() : text === c.value;
}

/** Checks that every field is known; throws a 400 naming the unknown one. */
export function checkFields(clauses: Clause[], fields: Record<string, FieldSpec>): void {
	for (const c of clauses) {
		if (c.field !== undefined && !fields[c.field]) throw new BadRequestError(`Unsupported field ${c.field} in query (supported: ${Object.keys(fields).join(", ")})`);
		if (c.op !== "eq" && c.op !== "glob" && c.field !== undefined && fields[c.field].kind !== "number") throw new BadRequestError(`${c.field} cannot be compared with ${c.op}`);
	}
}

export function matches(clauses: Clause[], doc: Record<string, unknown>, fields: Record<string, FieldSpec>, defaultField: string): boolean {
	let hasMust = false;
	let anyShould = false;
	let shouldCount = 0;
	for (const c of clauses) {
		const ok = clauseMatches(c, doc, fields, defaultField);
		if (c.occur === "must") {
			hasMust = true;
			if (!ok) return false;
		} else if (c.occur === "not") {
			if (ok) return false;
		} else {
			shouldCount++;
			if (ok) anyShould = true;
		}
	}
	return hasMust || shouldCount === 0 || anyShould;
}

/**
 * A database pre-filter from the required clauses on `id` fields (exact values and prefix patterns), to narrow
 * what is read before `matches` runs on the rest.
 */
export function prefilter(clauses: Clause[], fields: Record<string, FieldSpec>): Record<string, IdMatch> {
	const q: Record<string, IdMatch> = {};
	for (const c of clauses) {
		if (c.occur !== "must" || c.field === undefined || fields[c.field]?.kind !== "id" || c.field in q) continue;
		if (c.op === "eq") q[c.field] = { eq: c.value };
		else if (c.op === "glob") {
			const p = globPrefix(c.value);
			if (p !== null) q[c.field] = { prefix: p };
		}
	}
	return q;
}

/** True when `prefilter` captures the whole query (only required id clauses, exact or prefix): the database can page. */
export function fullyPrefiltered(clauses: Clause[], fields: Record<string, FieldSpec>): boolean {
	const seen = new Set<string>();
	return clauses.every((c) => {
		if (c.occur !== "must" || c.field === undefined || fields[c.field]?.kind !== "id" || seen.has(c.field)) return false;
		seen.add(c.field);
		return c.op === "eq" || (c.op === "glob" && globPrefix(c.value) !== null);
	});
}
