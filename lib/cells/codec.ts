// Cells JSON on the wire, plain objects inside. `decode` turns a request body into what actions validate
// (nulls dropped, int64 strings to numbers, enum numbers to names, unknown fields refused); `encode` turns an
// action's result into protojson as Cells writes it (int64 as strings, enums as names, zero values omitted).
import { BadRequestError } from "../errors";
import { resolve, type Schema } from "./spec";

type Defs = Record<string, Schema>;

export function decode(value: unknown, schema: Schema | undefined, defs: Defs, at = "body"): unknown {
	const s = resolve(schema, defs);
	if (value === null || value === undefined) return undefined;
	if (!s) return value;
	const type = s.type ?? (s.properties || s.additionalProperties ? "object" : undefined);
	switch (type) {
		case "object": {
			if (typeof value !== "object" || Array.isArray(value)) throw new BadRequestError(`${at} must be an object`);
			const out: Record<string, unknown> = {};
			for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
				const prop = s.properties?.[k];
				let sub: Schema | undefined = prop;
				if (!sub) {
					if (s.additionalProperties) sub = s.additionalProperties === true ? {} : s.additionalProperties;
					else if (s.properties) throw new BadRequestError(`Unknown field "${k}" in ${at}`);
				}
				const d = decode(v, sub, defs, `${at}.${k}`);
				if (d !== undefined) out[k] = d;
			}
			return out;
		}
		case "array": {
			if (!Array.isArray(value)) throw new BadRequestError(`${at} must be an array`);
			return value.map((v, i) => decode(v, s.items, defs, `${at}[${i}]`)).filter((v) => v !== undefined);
		}
		case "string": {
			if (s.enum) {
				if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value < s.enum.length) return s.enum[value];
				if (typeof value === "string" && s.enum.includes(value)) return value;
				throw new BadRequestError(`${at} must be one of ${s.enum.join(", ")}`);
			}
			if (s.format === "int64" || s.format === "uint64") {
				if (typeof value === "number" && Number.isInteger(value)) return value;
				if (typeof value === "string" && /^-?\d+$/.test(value)) return Number(value);
				throw new BadRequestError(`${at} must be an integer (number or string of digits)`);
			}
			if (typeof value !== "string") throw new BadRequestError(`${at} must be a string`);
			return value;
		}
		case "integer": {
			if (typeof value === "number" && Number.isInteger(value)) return value;
			if (typeof value === "string" && /^-?\d+$/.test(value)) return Number(value);
			throw new BadRequestError(`${at} must be an integer`);
		}
		case "number": {
			if (typeof value === "number") return value;
			if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
			throw new BadRequestError(`${at} must be a number`);
		}
		case "boolean": {
			if (typeof value !== "boolean") throw new BadRequestError(`${at} must be true or false`);
			return value;
		}
		default:
			return value;
	}
}

function isZero(v: unknown): boolean {
	if (v === undefined || v === null || v === false || v === 0 || v === "") return true;
	if (Array.isArray(v)) return v.length === 0;
	if (typeof v === "object") return Object.keys(v as object).length === 0;
	return false;
}

type Encoder = (value: unknown) => unknown;

/** Encoders by document (its definitions) and schema: each schema is walked once, not at every answer. */
const encoders = new WeakMap<Defs, WeakMap<Schema, Encoder>>();
/** A schema that says nothing of its values (`additionalProperties: true`, a missing `items`). */
const ANY: Schema = {};

const asIs: Encoder = (v) => (v === null || v === undefined ? undefined : v);

export function encode(value: unknown, schema: Schema | undefined, defs: Defs): unknown {
	return encoderFor(schema, defs)(value);
}

/** `encode` for one schema, made once: the $refs resolved, the properties' encoders looked up by name. */
function encoderFor(schema: Schema | undefined, defs: Defs): Encoder {
	if (!schema) return asIs;
	let byDoc = encoders.get(defs);
	if (!byDoc) encoders.set(defs, (byDoc = new WeakMap()));
	const known = byDoc.get(schema);
	if (known) return known;
	// Stored before its parts are made: a schema that contains itself (a node's children) finds it.
	let impl: Encoder = asIs;
	const enc: Encoder = (v) => impl(v);
	byDoc.set(schema, enc);
	impl = compileEncoder(schema, defs);
	return enc;
}

function compileEncoder(schema: Schema, defs: Defs): Encoder {
	const s = resolve(schema, defs);
	if (!s) return asIs;
	const type = s.type ?? (s.properties || s.additionalProperties ? "object" : undefined);
	switch (type) {
		case "object": {
			const props = s.properties ? new Map(Object.entries(s.properties).map(([k, sub]) => [k, encoderFor(sub, defs)])) : undefined;
			const extra = s.additionalProperties ? encoderFor(s.additionalProperties === true ? ANY : s.additionalProperties, defs) : undefined;
			return (value) => {
				if (value === null || value === undefined) return undefined;
				if (typeof value !== "object" || Array.isArray(value)) return value;
				const out: Record<string, unknown> = {};
				const obj = value as Record<string, unknown>;
				for (const k of Object.keys(obj)) {
					const prop = props?.get(k);
					if (prop) {
						const e = prop(obj[k]);
						if (!isZero(e)) out[k] = e;
					} else if (extra) {
						// Map values are kept even when empty: a map entry is data, not a zero field.
						const e = extra(obj[k]);
						if (e !== undefined) out[k] = e;
					} else if (!props) {
						const e = asIs(obj[k]);
						if (!isZero(e)) out[k] = e;
					}
					// else: not part of the message, never leaks to the wire
				}
				return out;
			};
		}
		case "array": {
			const item = encoderFor(s.items ?? ANY, defs);
			return (value) => (value === null || value === undefined ? undefined : Array.isArray(value) ? value.map((v) => item(v) ?? {}) : value);
		}
		case "string":
			if (s.enum) {
				const names = s.enum;
				return (value) => {
					if (value === null || value === undefined) return undefined;
					const name = typeof value === "number" ? names[value] : value;
					return name === names[0] ? undefined : name;
				};
			}
			if (s.format === "int64" || s.format === "uint64")
				return (value) => {
					if (value === null || value === undefined) return undefined;
					const str = typeof value === "number" ? String(Math.trunc(value)) : value;
					return str === "0" ? undefined : str;
				};
			return asIs;
		default:
			return asIs;
	}
}
