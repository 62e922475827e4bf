// What this server says about itself: name, version and build date, from package.json (read once).
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../paths";

export interface PackageInfo {
	name: string;
	version: string;
	/** YYYY-MM-DD of the installed package.json: the closest thing a Node app has to a build stamp. */
	date: string;
	license: string;
}

let cached: PackageInfo | undefined;

export function packageInfo(): PackageInfo {
	if (cached) return cached;
	const file = join(PROJECT_ROOT, "package.json");
	const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string; license?: string };
	cached = {
		name: pkg.name ?? "cellar",
		version: pkg.version ?? "0.0.0",
		date: statSync(file).mtime.toISOString().slice(0, 10),
		license: pkg.license ?? "AGPL-3.0-or-later",
	};
	return cached;
}

/** Cells hides its version from anonymous callers behind an md5 of it: still a cache-buster, not a fingerprint. */
export function versionHash(version = packageInfo().version): string {
	return createHash("md5").update(version).digest("hex");
}
