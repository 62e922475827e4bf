// Small SQL helpers the repositories share: the few expressions that differ between the dialects, and the
// conversions between row values and domain values. Everything dialect-specific in a query goes through here.
import { sql, type CompiledQuery, type RawBuilder } from "kysely";
import type { Flag } from "./schema";

export type DialectName = "sqlite" | "postgres";

/**
 * The database's clock in unix ms. Leases compare times written by different nodes: one clock (the shared
 * database's) instead of each node's own means clock skew between nodes cannot let two of them hold a lease.
 */
export function nowMs(dialect: DialectName): RawBuilder<number> {
	// clock_timestamp(), not now(): now() is frozen at the start of the transaction.
	return dialect === "postgres" ? sql<number>`cast(extract(epoch from clock_timestamp()) * 1000 as bigint)` : sql<number>`cast(unixepoch('subsec') * 1000 as integer)`;
}

/**
 * The smallest string greater than every string starting with `prefix` (undefined: there is none), so that
 * "starts with" is the index range `>= prefix and < end` rather than a LIKE, whose escaping, case rules and index
 * use differ between the dialects. Both compare code points here (SQLite BINARY, PostgreSQL collation "C").
 */
export function prefixEnd(prefix: string): string | undefined {
	const cps = Array.from(prefix);
	while (cps.length) {
		const last = (cps.pop() as string).codePointAt(0) as number;
		if (last < 0x10ffff) {
			// Surrogate code points cannot be encoded: the next character after U+D7FF is U+E000.
			const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
			cps.push(String.fromCodePoint(next));
			return cps.join("");
		}
	}
	return undefined;
}

/** ASCII-only lower case, as SQLite's lower() and PostgreSQL's lower() under collation "C" do it. */
export function asciiLower(s: string): string {
	return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

export const flag = (b: boolean | undefined): Flag => (b ? 1 : 0);

/** A JSON column's value; `fallback` when it does not parse (a column is never trusted to be well-formed). */
export function fromJson<T>(text: string | null | undefined, fallback: T): T {
	if (text === null || text === undefined || text === "") return fallback;
	try {
		return JSON.parse(text) as T;
	} catch {
		return fallback;
	}
}

/** `null` for absent values: drivers reject `undefined` (better-sqlite3) or treat it inconsistently. */
export const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);
/** Absent instead of null on the way out, as the documents had it. */
export const orUndefined = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/** `make()`'s value, made on first use: a query of one shape, compiled by Kysely once (see CompiledShapes). */
export function lazy<T>(make: () => T): () => T {
	let v: T | undefined;
	return () => (v ??= make());
}

/**
 * Queries every stat or listing runs, compiled by Kysely once per shape (which optional filters, how many values
 * in an IN list) and then run with each call's values: building and compiling a query costs as much CPU as
 * running it. `compile(key)` must put the parameters in the order callers pass them to `with`.
 */
export class CompiledShapes<K> {
	private readonly shapes = new Map<K, CompiledQuery>();

	constructor(
		private readonly compile: (key: K) => CompiledQuery,
		private readonly max = 256,
	) {}

	with(key: K, parameters: readonly unknown[]): CompiledQuery {
		let q = this.shapes.get(key);
		if (!q) {
			q = this.compile(key);
			if (this.shapes.size >= this.max) this.shapes.delete(this.shapes.keys().next().value as K);
			this.shapes.set(key, q);
		}
		if (q.parameters.length !== parameters.length) throw new Error(`Compiled query takes ${q.parameters.length} parameters, ${parameters.length} given`);
		return { ...q, parameters };
	}
}
