// SERVICES for moleculer-runner with TypeScript services. The runner's shorthand (`SERVICES=api,users`) only
// looks for `<name>.service.js`, so with `.service.ts` files it silently loads nothing. This turns the short
// names into the service files' absolute paths before the runner reads the variable.
//   SERVICES unset, "" or "all": every service (the glob given on the command line).
//   SERVICES=api,users: services/api.service.ts and services/users.service.ts.
//   SERVICES=!scheduler: every service except that one. Names may be mixed with exclusions.
import { existsSync, readdirSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";

// Compiled (dist/, npm start) the services are .js files; run from sources (tsx) they are .ts files.
const SUFFIX = __filename.endsWith(".js") ? ".service.js" : ".service.ts";

export function availableServices(dir: string): string[] {
	return readdirSync(dir)
		.filter((f) => f.endsWith(SUFFIX))
		.map((f) => f.slice(0, -SUFFIX.length))
		.sort();
}

function fileFor(entry: string, dir: string): string {
	if (entry.endsWith(".ts") || entry.endsWith(".js")) return isAbsolute(entry) ? entry : resolve(entry);
	return join(dir, `${entry}${SUFFIX}`);
}

/** Absolute service files named by SERVICES, or undefined for "every service". Throws on an unknown name. */
export function expandServices(value: string | undefined, dir: string): string[] | undefined {
	const entries = (value ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
	if (entries.length === 0 || (entries.length === 1 && (entries[0] === "all" || entries[0] === "*"))) return undefined;
	const include: string[] = [];
	const exclude = new Set<string>();
	const unknown: string[] = [];
	for (const e of entries) {
		const skip = e.startsWith("!");
		const name = skip ? e.slice(1).trim() : e;
		if (!/^[A-Za-z0-9_.\-/]+$/.test(name)) {
			unknown.push(e);
			continue;
		}
		const file = fileFor(name, dir);
		if (!existsSync(file)) {
			unknown.push(name);
			continue;
		}
		if (skip) exclude.add(file);
		else if (!include.includes(file)) include.push(file);
	}
	if (unknown.length) {
		throw new Error(`SERVICES names unknown service(s): ${unknown.join(", ")}. Available: ${availableServices(dir).join(", ")}`);
	}
	const base = include.length ? include : availableServices(dir).map((n) => join(dir, `${n}${SUFFIX}`));
	return base.filter((f) => !exclude.has(f));
}

/** Rewrites `env.SERVICES` for moleculer-runner (absolute paths, or removed for "all"). */
export function prepareServicesEnv(env: NodeJS.ProcessEnv, dir: string): void {
	const files = expandServices(env.SERVICES, dir);
	if (files === undefined) delete env.SERVICES;
	else if (files.length === 0) throw new Error("SERVICES excludes every service: nothing to run");
	else env.SERVICES = files.join(",");
}
