// The OpenAPI (Swagger 2.0) document of what the cluster serves right now, built from the live registry: every
// published action's `rest` declaration becomes an operation, its fastest-validator params the parameters (path
// parameters from the route, the rest as the query of a GET or DELETE, else as the JSON body).
import type { RegistryService } from "./model";

type SwaggerSchema = Record<string, unknown>;

export interface OpenApiOptions {
	title: string;
	version: string;
	basePath: string;
}

interface Route {
	method: string;
	path: string;
}

/** "GET /config/:Name" (settings.rest "/" as base) → { GET, /config/{Name} }; objects { method, path } too. */
export function routesOf(rest: unknown, base: string): Route[] {
	const one = (r: unknown): Route | null => {
		if (typeof r === "string") {
			const [m, p] = r.includes(" ") ? r.split(/\s+/, 2) : ["*", r];
			return { method: m.toUpperCase(), path: p };
		}
		if (r && typeof r === "object") {
			const o = r as { method?: string; path?: string };
			if (typeof o.path === "string") return { method: (o.method ?? "*").toUpperCase(), path: o.path };
		}
		return null;
	};
	const list = Array.isArray(rest) ? rest : [rest];
	const prefix = base === "/" ? "" : base.replace(/\/+$/, "");
	return list.map(one).filter((r): r is Route => r !== null).map((r) => ({ method: r.method, path: (prefix + "/" + r.path.replace(/^\/+/, "")).replace(/\/+$/, "") || "/" }));
}

/** A fastest-validator rule as a JSON schema (the common types; anything else is an untyped value). */
export function ruleSchema(rule: unknown): SwaggerSchema {
	if (typeof rule === "string") return ruleSchema({ type: rule.split("|")[0] });
	if (Array.isArray(rule)) return {};
	if (!rule || typeof rule !== "object") return {};
	const r = rule as Record<string, unknown>;
	const out: SwaggerSchema = {};
	if (typeof r.description === "string") out.description = r.description;
	switch (r.type) {
		case "string":
		case "email":
		case "url":
		case "uuid":
			out.type = "string";
			if (typeof r.max === "number") out.maxLength = r.max;
			if (typeof r.min === "number") out.minLength = r.min;
			if (r.type === "email") out.format = "email";
			break;
		case "number":
			out.type = r.integer ? "integer" : "number";
			if (typeof r.min === "number") out.minimum = r.min;
			if (typeof r.max === "number") out.maximum = r.max;
			break;
		case "boolean":
			out.type = "boolean";
			break;
		case "enum":
			out.type = "string";
			if (Array.isArray(r.values)) out.enum = r.values;
			break;
		case "array":
			out.type = "array";
			out.items = r.items === undefined ? {} : ruleSchema(r.items);
			break;
		case "object":
			out.type = "object";
			if (r.props && typeof r.props === "object") Object.assign(out, objectSchema(r.props as Record<string, unknown>));
			break;
		case "multi":
			break;
		default:
			break;
	}
	return out;
}

function optional(rule: unknown): boolean {
	if (typeof rule === "string") return rule.includes("optional");
	if (Array.isArray(rule)) return rule.some(optional);
	return !!(rule && typeof rule === "object" && ((rule as { optional?: boolean }).optional || (rule as { default?: unknown }).default !== undefined));
}

function objectSchema(props: Record<string, unknown>): SwaggerSchema {
	const properties: Record<string, SwaggerSchema> = {};
	const required: string[] = [];
	for (const [k, rule] of Object.entries(props)) {
		if (k.startsWith("$$")) continue;
		properties[k] = ruleSchema(rule);
		if (!optional(rule)) required.push(k);
	}
	const out: SwaggerSchema = { type: "object", properties };
	if (required.length) out.required = required;
	return out;
}

export function buildOpenApi(services: RegistryService[], opts: OpenApiOptions): Record<string, unknown> {
	const paths: Record<string, Record<string, unknown>> = {};
	const tags = new Set<string>();
	const seen = new Set<string>();
	for (const svc of services) {
		if (svc.name.startsWith("$")) continue;
		const rest = svc.settings?.rest;
		const base = typeof rest === "string" ? rest : `/${svc.name}`;
		for (const action of Object.values(svc.actions ?? {})) {
			if (!action.rest || (action.visibility && action.visibility !== "published")) continue;
			for (const route of routesOf(action.rest, base)) {
				const methods = route.method === "*" ? ["GET", "POST", "PUT", "PATCH", "DELETE"] : [route.method];
				const pathKeys = [...route.path.matchAll(/[:*]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
				const swaggerPath = route.path.replace(/[:*]([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");
				for (const method of methods) {
					const key = `${method} ${swaggerPath}`;
					if (seen.has(key)) continue;
					seen.add(key);
					const params = action.params ?? {};
					const parameters: Record<string, unknown>[] = pathKeys.map((k) => ({ name: k, in: "path", required: true, type: "string" }));
					const rest = Object.fromEntries(Object.entries(params).filter(([k]) => !pathKeys.includes(k) && !k.startsWith("$$")));
					if (method === "GET" || method === "DELETE") {
						for (const [k, rule] of Object.entries(rest)) {
							const s = ruleSchema(rule);
							const type = typeof s.type === "string" && s.type !== "object" ? s.type : "string";
							const p: Record<string, unknown> = { name: k, in: "query", required: !optional(rule), type };
							if (type === "array") p.items = { type: "string" };
							if (s.enum) p.enum = s.enum;
							parameters.push(p);
						}
					} else if (Object.keys(rest).length) {
						parameters.push({ name: "body", in: "body", required: true, schema: objectSchema(rest) });
					}
					tags.add(svc.name);
					(paths[swaggerPath] ??= {})[method.toLowerCase()] = {
						operationId: action.name,
						tags: [svc.name],
						parameters,
						responses: { "200": { description: "A successful response." }, default: { description: "An error: {Code, Title, Detail}" } },
					};
				}
			}
		}
	}
	const sorted = Object.fromEntries(Object.keys(paths).sort().map((p) => [p, paths[p]]));
	return {
		swagger: "2.0",
		info: { title: opts.title, version: opts.version },
		basePath: opts.basePath,
		schemes: ["http", "https"],
		consumes: ["application/json"],
		produces: ["application/json"],
		tags: [...tags].sort().map((name) => ({ name })),
		paths: sorted,
	};
}
