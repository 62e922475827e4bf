// `POST /a/install/check`: real checks of what this server runs on. The store and folder checked are
// always the ones this server is configured with (DATA_DIR, MONGO_URI), never addresses from the request:
// an anonymous caller must not be able to make the server connect elsewhere.
import { randomBytes } from "node:crypto";
import { rmSync, statfsSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CellarConfig } from "../config";
import { ensureDir } from "../config";
import { BadRequestError } from "../errors";
import { describeMongoUri } from "./defaults";
import { acquireDatabase, storeVersion } from "../db/shared";

export interface CheckResult {
	Name: string;
	Success: boolean;
	/** A JSON document describing what was checked, or the error. */
	JsonResult: string;
}

export const CHECK_NAMES = ["DB", "MONGO", "DATA_DIR", "LICENSE", "S3_KEYS"];

/** Connects, pings, answers the server version, disconnects. Injected in tests. */
export type MongoProbe = (uri: string, timeoutMs: number) => Promise<{ version: string }>;

export const defaultMongoProbe: MongoProbe = async (uri, timeoutMs) => {
	// The driver moleculer-db-adapter-mongo brings (3.x): the one the stores use, so the one worth testing.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { MongoClient } = require("mongodb") as {
		MongoClient: { connect(uri: string, opts: object): Promise<{ db(): { command(c: object): Promise<{ version?: string }> }; close(): Promise<void> }> };
	};
	const client = await MongoClient.connect(uri, { useUnifiedTopology: true, useNewUrlParser: true, serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs });
	try {
		const info = await client.db().command({ buildInfo: 1 });
		return { version: String(info.version ?? "unknown") };
	} finally {
		await client.close().catch(() => undefined);
	}
};

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

async function checkMongo(name: string, cfg: CellarConfig, probe: MongoProbe, timeoutMs: number): Promise<CheckResult> {
	if (!cfg.mongoUri) return result(name, false, { type: "sql", error: "MONGO_URI is not set: this server keeps its data in its SQL store (check DB instead)" });
	const target = describeMongoUri(cfg.mongoUri);
	try {
		const { version } = await probe(cfg.mongoUri, timeoutMs);
		return result(name, true, { type: "mongo", hosts: target.hosts, database: target.database, serverVersion: version, note: "no service keeps its data in MongoDB: the SQL store (DATABASE_URL) holds everything" });
	} catch (err) {
		return result(name, false, { type: "mongo", hosts: target.hosts, database: target.database, error: `cannot reach MongoDB: ${(err as Error).message}` });
	}
}

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

export async function performCheck(rawName: string, cfg: CellarConfig, probe: MongoProbe = defaultMongoProbe, timeoutMs = 5000, sql: SqlProbe = defaultSqlProbe): Promise<CheckResult> {
	const name = rawName.trim().toUpperCase();
	switch (name) {
		case "DB":
			return checkSql(name, cfg, sql);
		case "MONGO":
			return checkMongo(name, cfg, probe, timeoutMs);
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
