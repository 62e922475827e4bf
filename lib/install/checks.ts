// `POST /a/install/check`: real checks of what this server runs on. The store and folder checked are
// always the ones this server is configured with (DATA_DIR, DATABASE_URL), never addresses from the request:
// an anonymous caller must not be able to make the server connect elsewhere. MongoDB is not a store of this
// version (a MONGO_URI stops the start, lib/config): the MONGO check says so and points to the DB check.
import { randomBytes } from "node:crypto";
import { rmSync, statfsSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CellarConfig } from "../config";
import { ensureDir } from "../config";
import { BadRequestError } from "../errors";
import { acquireDatabase, storeVersion } from "../db/shared";

export interface CheckResult {
	Name: string;
	Success: boolean;
	/** A JSON document describing what was checked, or the error. */
	JsonResult: string;
}

export const CHECK_NAMES = ["DB", "MONGO", "DATA_DIR", "LICENSE", "S3_KEYS"];

function result(Name: string, Success: boolean, data: Record<string, unknown>): CheckResult {
	return { Name, Success, JsonResult: JSON.stringify(data) };
}

/** Creates, reads back and removes a file in `dir`. */
function probeWritable(dir: string): void {
	ensureDir(dir);
	const file = join(dir, `.cellar-check-${randomBytes(6).toString("hex")}`);
	const token = randomBytes(16).toString("hex");
	try {
		writeFileSync(file, token, { mode: 0o600 });
		if (readFileSync(file, "utf8") !== token) throw new Error("a file written there reads back differently");
	} finally {
		rmSync(file, { force: true });
	}
}

function freeBytes(dir: string): number | undefined {
	try {
		const s = statfsSync(dir);
		return Number(s.bavail) * Number(s.bsize);
	} catch {
		return undefined;
	}
}

/** Opens the SQL store the node uses and asks its version: what a DB check can tell an installer. */
export type SqlProbe = (cfg: CellarConfig) => Promise<{ type: "sqlite" | "postgres"; location: string; version: string }>;

export const defaultSqlProbe: SqlProbe = async (cfg) => {
	const { db, release } = await acquireDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir });
	try {
		return { type: db.dialect, location: db.location, version: await storeVersion(db) };
	} finally {
		await release();
	}
};

function postgresLocation(url: string): string {
	try {
		const u = new URL(url);
		return `${u.host}${u.pathname}`;
	} catch {
		return "(unparsable DATABASE_URL)";
	}
}

async function checkSql(name: string, cfg: CellarConfig, probe: SqlProbe): Promise<CheckResult> {
	// DATABASE_URL's credentials never reach the answer: only host and database name.
	const location = cfg.databaseUrl ? postgresLocation(cfg.databaseUrl) : undefined;
	try {
		const r = await probe(cfg);
		return result(name, true, { type: r.type, location: location ?? r.location, serverVersion: r.version });
	} catch (err) {
		const message = (err as Error).message.replace(/\/\/[^@/]*@/g, "//");
		return result(name, false, { type: cfg.databaseUrl ? "postgres" : "sqlite", location: location ?? cfg.dataDir, error: `cannot open the SQL store: ${message}` });
	}
}

export async function performCheck(rawName: string, cfg: CellarConfig, sql: SqlProbe = defaultSqlProbe): Promise<CheckResult> {
	const name = rawName.trim().toUpperCase();
	switch (name) {
		case "DB":
			return checkSql(name, cfg, sql);
		case "MONGO":
			// Cells' installer checks the MongoDB it would store into; this version has none to check.
			return result(name, false, {
				type: cfg.databaseUrl ? "postgres" : "sqlite",
				error: "MongoDB is not a supported store in this version: the data is in the SQL store (check DB instead; DATABASE_URL selects PostgreSQL for a cluster)",
			});
		case "DATA_DIR":
			try {
				probeWritable(cfg.dataDir);
				return result(name, true, { path: cfg.dataDir, writable: true, freeBytes: freeBytes(cfg.dataDir) });
			} catch (err) {
				return result(name, false, { path: cfg.dataDir, writable: false, error: (err as Error).message });
			}
		case "LICENSE":
			return result(name, true, { license: "AGPL-3.0-or-later", message: "Cellar is free software: no license key is needed" });
		case "S3_KEYS":
			// Probing an address given by an anonymous installer would let anyone make the server connect anywhere.
			throw new BadRequestError("S3 keys are checked when an S3 datasource is created: POST /a/config/datasource/{Name} (administrators) verifies the bucket with them");
		default:
			throw new BadRequestError(`Unknown check "${rawName.slice(0, 64)}": supported checks are ${CHECK_NAMES.join(", ")}`);
	}
}
