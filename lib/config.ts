// Configuration from the environment, read once. Secrets that are not given are generated on first start and
// kept under DATA_DIR so that a restart keeps tokens valid; a cluster must share JWT_SECRET explicitly.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync, renameSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { isIpOrCidr } from "./policy/ipban";

export interface CellarConfig {
	port: number;
	host: string;
	dataDir: string;
	adminLogin: string;
	adminPassword?: string;
	transporter?: string;
	mongoUri?: string;
	/** postgres://… : the shared SQL store of a cluster; unset, SQLite in DATA_DIR/cellar.db. */
	databaseUrl?: string;
	nodeId?: string;
	logLevel: string;
	accessTokenTtl: number;
	refreshTokenTtl: number;
	maxFailedLogins: number;
	ipBanThreshold: number;
	ipBanWindow: number;
	ipBanDuration: number;
	bodyLimit: string;
	requestTimeout: number;
	/** Addresses or networks of reverse proxies whose X-Forwarded-For / X-Real-IP are believed. */
	trustedProxies: string[];
	/** Seconds a failure-locked account refuses logins from addresses it never logged in from; 0: until an admin unlocks. */
	loginLockDuration: number;
	/** Longest wait (seconds) imposed between failed logins of one address on one account; 0: no waits. */
	loginDelayMax: number;
	/** Seconds a JSON request body may take to arrive, whole. */
	bodyTimeout: number;
	/** Seconds a connection may stay silent while the client owes data (a body) or does not read the answer. */
	idleTimeout: number;
}

function int(name: string, def: number): number {
	const v = process.env[name];
	if (v === undefined || v === "") return def;
	const n = Number(v);
	if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${v}"`);
	return n;
}

export function loadConfig(): CellarConfig {
	return {
		port: int("PORT", 8080),
		host: process.env.HOST || "0.0.0.0",
		dataDir: resolve(process.env.DATA_DIR || "./data"),
		adminLogin: process.env.ADMIN_LOGIN || "admin",
		adminPassword: process.env.ADMIN_PASSWORD || undefined,
		transporter: process.env.TRANSPORTER || undefined,
		mongoUri: process.env.MONGO_URI || undefined,
		databaseUrl: databaseUrl(),
		nodeId: process.env.NODE_ID || undefined,
		logLevel: process.env.LOG_LEVEL || "info",
		accessTokenTtl: int("ACCESS_TOKEN_TTL", 600),
		refreshTokenTtl: int("REFRESH_TOKEN_TTL", 30 * 24 * 3600),
		maxFailedLogins: int("MAX_FAILED_LOGINS", 10),
		ipBanThreshold: int("IP_BAN_THRESHOLD", 30),
		ipBanWindow: int("IP_BAN_WINDOW", 300),
		ipBanDuration: int("IP_BAN_DURATION", 900),
		bodyLimit: process.env.BODY_LIMIT || "1mb",
		requestTimeout: int("REQUEST_TIMEOUT", 30000),
		trustedProxies: addressList("TRUSTED_PROXIES"),
		loginLockDuration: int("LOGIN_LOCK_DURATION", 900),
		loginDelayMax: int("LOGIN_DELAY_MAX", 300),
		bodyTimeout: int("BODY_TIMEOUT", 15),
		idleTimeout: int("IDLE_TIMEOUT", 60),
	};
}

function databaseUrl(): string | undefined {
	const v = process.env.DATABASE_URL?.trim();
	if (!v) return undefined;
	if (!/^postgres(ql)?:\/\//i.test(v)) throw new Error(`DATABASE_URL must be a postgres:// or postgresql:// URL (got "${v.slice(0, 12)}…")`);
	return v;
}

/** A comma-separated list of addresses and networks; a typo stops the start rather than trusting nothing (or anything). */
function addressList(name: string): string[] {
	const entries = (process.env[name] ?? "").split(",").map((s) => s.trim()).filter(Boolean);
	for (const e of entries) if (!isIpOrCidr(e)) throw new Error(`${name}: "${e}" is not an IP address or a network such as 10.0.0.0/8`);
	return entries;
}

export function ensureDir(dir: string): string {
	mkdirSync(dir, { recursive: true });
	return dir;
}

/** Writes a file so that a crash leaves either the old or the new content, never a mix. */
export function writeFileAtomic(file: string, data: string | Buffer, mode = 0o600): void {
	const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
	writeFileSync(tmp, data, { mode });
	renameSync(tmp, file);
}

/** A secret from the environment, or one generated once and kept in DATA_DIR. */
export function secret(envName: string, fileName: string, dataDir: string): string {
	const fromEnv = process.env[envName];
	if (fromEnv) return fromEnv;
	const file = join(ensureDir(dataDir), fileName);
	if (existsSync(file)) return readFileSync(file, "utf8").trim();
	const value = randomBytes(32).toString("base64url");
	writeFileAtomic(file, value);
	return value;
}
