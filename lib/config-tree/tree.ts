// The configuration tree behind GET/PUT /a/config/{FullPath}: a JSON document addressed by slash-separated
// paths ("frontend/plugin/core.pydio"), stored leaf by leaf (lib/db/config) so that a subtree is read and
// replaced in one statement range. Writes go under `frontend/` or `services/` only, as in Cells; a path whose
// shape is known (a schema from ./schemas, or one a running service declares) is validated before it is stored.
import Validator from "fastest-validator";
import { BadRequestError, UnauthorizedError } from "../errors";
import type { ConfigLeaf, ConfigRepo } from "../db/config";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
/** A fastest-validator schema of the object at a known path. */
export type ObjectSchema = Record<string, unknown>;

export const WRITABLE_ROOTS = ["frontend", "services"] as const;
const MAX_DEPTH = 16;

export function isWritablePath(path: string): boolean {
	return (WRITABLE_ROOTS as readonly string[]).includes(path.split("/")[0]);
}
const MAX_LEAVES = 2000;
const SEGMENT = /^[A-Za-z0-9_.\-@$]{1,128}$/;

/** "/frontend//plugin/" → "frontend/plugin"; every segment checked (no "..", no empty or odd names). */
export function normalizePath(raw: string | string[] | undefined): string {
	const text = Array.isArray(raw) ? raw.join("/") : (raw ?? "");
	const segments = text.split("/").filter((s) => s !== "");
	if (segments.length > MAX_DEPTH) throw new BadRequestError(`A configuration path has at most ${MAX_DEPTH} segments`);
	for (const s of segments) {
		if (!SEGMENT.test(s) || s === "." || s === "..") throw new BadRequestError(`Invalid configuration path segment "${s.slice(0, 64)}": letters, digits, ".", "-", "_", "@" and "$" only`);
	}
	return segments.join("/");
}

/** The leaves of `value` placed at `path`: objects are walked, anything else (arrays included) is one leaf. */
export function flatten(path: string, value: Json): ConfigLeaf[] {
	const out: ConfigLeaf[] = [];
	const walk = (at: string, v: Json, depth: number) => {
		if (depth > MAX_DEPTH) throw new BadRequestError(`Configuration values nest at most ${MAX_DEPTH} levels deep`);
		if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 0) {
			for (const [k, child] of Object.entries(v)) {
				if (!SEGMENT.test(k)) throw new BadRequestError(`Invalid configuration key "${k.slice(0, 64)}" under ${at}: letters, digits, ".", "-", "_", "@" and "$" only`);
				walk(`${at}/${k}`, child, depth + 1);
			}
			return;
		}
		if (out.length >= MAX_LEAVES) throw new BadRequestError(`At most ${MAX_LEAVES} values per configuration write`);
		out.push({ path: at, json: JSON.stringify(v) });
	};
	walk(path, value, path.split("/").length);
	return out;
}

/** The value at `path` rebuilt from its leaves (undefined: nothing there). */
export function assemble(path: string, leaves: ConfigLeaf[]): Json | undefined {
	let root: Json | undefined;
	const base = path === "" ? [] : path.split("/");
	for (const l of leaves) {
		const rel = l.path.split("/").slice(base.length);
		const value = JSON.parse(l.json) as Json;
		if (rel.length === 0) {
			root = value;
			continue;
		}
		if (root === undefined || root === null || typeof root !== "object" || Array.isArray(root)) root = {};
		let node = root as { [k: string]: Json };
		for (const seg of rel.slice(0, -1)) {
			const next = node[seg];
			if (next === undefined || next === null || typeof next !== "object" || Array.isArray(next)) node[seg] = {};
			node = node[seg] as { [k: string]: Json };
		}
		node[rel[rel.length - 1]] = value;
	}
	return root;
}

function getIn(value: Json | undefined, rel: string[]): Json | undefined {
	let v = value;
	for (const seg of rel) {
		if (v === undefined || v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
		v = (v as { [k: string]: Json })[seg];
	}
	return v;
}

function setIn(value: Json | undefined, rel: string[], leaf: Json): Json {
	if (rel.length === 0) return leaf;
	const root: { [k: string]: Json } = value !== undefined && value !== null && typeof value === "object" && !Array.isArray(value) ? { ...value } : {};
	root[rel[0]] = setIn(root[rel[0]], rel.slice(1), leaf);
	return root;
}

export interface ConfigTreeDeps {
	repo: ConfigRepo;
	/** Known paths and the schema of the object each holds (static ones and those running services declare). */
	schemas(): Map<string, ObjectSchema>;
	now?: () => number;
}

export class ConfigTree {
	private readonly validator = new Validator({ useNewCustomCheckerFunction: true });
	private readonly compiled = new Map<string, { text: string; check: (v: unknown) => true | { message?: string; field?: string }[] | Promise<unknown> }>();

	constructor(private readonly deps: ConfigTreeDeps) {}

	/** The value at `path` (undefined: nothing stored there). */
	async get(path: string): Promise<Json | undefined> {
		return assemble(path, await this.deps.repo.subtree(path));
	}

	/** Replaces the value at `path` by `value` after the checks. */
	async put(path: string, value: Json, author: string): Promise<void> {
		const segments = path === "" ? [] : path.split("/");
		if (!isWritablePath(path)) throw new UnauthorizedError(`Wrong path: configuration can only be written under ${WRITABLE_ROOTS.map((r) => `${r}/`).join(" or ")}`, "config.wrong.path");
		const leaves = flatten(path, value);
		await this.validate(path, segments, value);
		await this.deps.repo.replace(path, leaves, author, (this.deps.now ?? Date.now)());
	}

	/** Every known schema the write touches is checked against what its object will be after the write. */
	private async validate(path: string, segments: string[], value: Json): Promise<void> {
		for (const [known, schema] of this.deps.schemas()) {
			const k = known.split("/");
			let after: Json | undefined;
			if (k.length >= segments.length && k.slice(0, segments.length).join("/") === path) after = getIn(value, k.slice(segments.length));
			else if (segments.slice(0, k.length).join("/") === known) after = setIn(await this.get(known), segments.slice(k.length), value);
			else continue;
			if (after === undefined) continue;
			if (after === null || typeof after !== "object" || Array.isArray(after)) throw new BadRequestError(`${known} must be a JSON object`);
			const res = this.checker(known, schema)(after);
			if (res !== true) {
				const problems = (res as { message?: string }[]).map((p) => p.message ?? "invalid value").join("; ");
				throw new BadRequestError(`Invalid configuration for ${known}: ${problems}`);
			}
		}
	}

	private checker(path: string, schema: ObjectSchema) {
		const text = JSON.stringify(schema);
		let hit = this.compiled.get(path);
		if (!hit || hit.text !== text) {
			hit = { text, check: this.validator.compile({ $$root: true, type: "object", props: schema }) as never };
			this.compiled.set(path, hit);
		}
		return hit.check as (v: unknown) => true | { message?: string }[];
	}
}
