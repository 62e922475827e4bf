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

export function encode(value: unknown, schema: Schema | undefined, defs: Defs): unknown {
	const s = resolve(schema, defs);
	if (value === null || value === undefined) return undefined;
	if (!s) return value;
	const type = s.type ?? (s.properties || s.additionalProperties ? "object" : undefined);
	switch (type) {
		case "object": {
			if (typeof value !== "object" || Array.isArray(value)) return value;
			const out: Record<string, unknown> = {};
			for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
				let sub: Schema | undefined = s.properties?.[k];
				if (!sub) {
					if (s.additionalProperties) sub = s.additionalProperties === true ? {} : s.additionalProperties;
					else if (s.properties) continue; // not part of the message: never leaks to the wire
				}
				const e = encode(v, sub, defs);
				// Map values are kept even when empty: a map entry is data, not a zero field.
				if (!s.properties?.[k] && s.additionalProperties ? e !== undefined : !isZero(e)) out[k] = e;
			}
			return out;
		}
		case "array":
			return Array.isArray(value) ? value.map((v) => encode(v, s.items, defs) ?? {}) : value;
		case "string":
			if (s.enum) {
				const name = typeof value === "number" ? s.enum[value] : value;
				return name === s.enum[0] ? undefined : name;
			}
			if (s.format === "int64" || s.format === "uint64") {
				const str = typeof value === "number" ? String(Math.trunc(value)) : value;
				return str === "0" ? undefined : str;
			}
			return value;
		default:
			return value;
	}
}
