// Cells' OpenAPI documents, loaded once: they drive the wire encoding of every /a/ request and response, so
// field names, int64-as-string and enum names follow the spec without a hand-written table per route.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../paths";

export interface Schema {
	$ref?: string;
	type?: string;
	format?: string;
	enum?: string[];
	default?: unknown;
	properties?: Record<string, Schema>;
	additionalProperties?: Schema | boolean;
	items?: Schema;
	/** The documents' descriptions of a field (the scheduler's template docs show them). */
	title?: string;
	description?: string;
}

export interface Operation {
	key: string;
	operationId: string;
	request?: Schema;
	response?: Schema;
	defs: Record<string, Schema>;
}

// Earlier documents win: the v4 APIs are the reference, the v3 legacy one only adds what v4 renamed.
const DOCS = ["cells-rest-v4.swagger.json", "cells-enterprise-rest-v4.swagger.json", "cells-enterprise-rest-v3-legacy.swagger.json"];

let operations: Map<string, Operation> | undefined;

interface SwaggerParam {
	in: string;
	schema?: Schema;
}
interface SwaggerOp {
	operationId: string;
	parameters?: SwaggerParam[];
	responses?: Record<string, { schema?: Schema }>;
}

function load(): Map<string, Operation> {
	const ops = new Map<string, Operation>();
	for (const name of DOCS) {
		const doc = JSON.parse(readFileSync(join(PROJECT_ROOT, "lib", "cells", "spec", name), "utf8")) as {
			paths: Record<string, Record<string, SwaggerOp>>;
			definitions: Record<string, Schema>;
		};
		for (const [path, methods] of Object.entries(doc.paths)) {
			for (const [method, op] of Object.entries(methods)) {
				const key = `${method.toUpperCase()} ${normalizeTemplate(path)}`;
				if (ops.has(key)) continue;
				ops.set(key, {
					key,
					operationId: op.operationId,
					request: op.parameters?.find((p) => p.in === "body")?.schema,
					response: op.responses?.["200"]?.schema,
					defs: doc.definitions,
				});
			}
		}
	}
	return ops;
}

/** `/tree/stat/{Node}`, `/tree/stat/:Node` and `/config/*FullPath` all become `/tree/stat/{}` for lookups. */
export function normalizeTemplate(path: string): string {
	return path
		.replace(/\{[^}]+\}/g, "{}")
		.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "{}")
		.replace(/\*[A-Za-z_][A-Za-z0-9_]*/g, "{}");
}

export function findOperation(method: string, template: string): Operation | undefined {
	operations ??= load();
	return operations.get(`${method.toUpperCase()} ${normalizeTemplate(template)}`);
}

export function resolve(schema: Schema | undefined, defs: Record<string, Schema>): Schema | undefined {
	let s = schema;
	for (let i = 0; s?.$ref && i < 16; i++) s = defs[s.$ref.slice(s.$ref.lastIndexOf("/") + 1)];
	return s;
}

export function definition(name: string): { schema: Schema; defs: Record<string, Schema> } {
	operations ??= load();
	for (const op of operations.values()) {
		const s = op.defs[name];
		if (s) return { schema: s, defs: op.defs };
	}
	throw new Error(`No Cells definition named ${name}`);
}
