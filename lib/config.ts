// Configuration from the environment, read once. Secrets that are not given are generated on first start and
// kept under DATA_DIR so that a restart keeps tokens valid; a cluster must share JWT_SECRET explicitly.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync, renameSync, existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { isIpOrCidr } from "./policy/ipban";

export interface CellarConfig {
	port: number;
	host: string;
	dataDir: string;
	adminLogin: string;
	adminPassword?: string;
	transporter?: string;
	/** postgres://… : the shared SQL store of a cluster; unset, SQLite in DATA_DIR/cellar.db. */
	databaseUrl?: string;
	nodeId?: string;
	namespace: string;
	logLevel: string;
	accessTokenTtl: number;
	refreshTokenTtl: number;
	maxFailedLogins: number;
	ipBanThreshold: number;
	ipBanWindow: number;
	ipBanDuration: number;
	bodyLimit: string;
	requestTimeout: number;
	heartbeatInterval: number;
	heartbeatTimeout: number;
	/** scrypt cost of password hashes. */
	scryptN: number;
	/** Password hashes computed at once. */
	kdfParallel: number;
	metrics: boolean;
	/** With METRICS: a port where Moleculer's Prometheus reporter also serves the node's metrics (nodes without a gateway); unset: none. */
	metricsPort?: number;
	mailFrom: string;
	/** smtp:// or smtps:// URL of the relay that delivers Cellar's mails; unset, they are written to DATA_DIR/outbox. */
	smtpUrl?: string;
	/** Seconds before a failed mail is tried again (doubling at each failure, at most an hour). */
	mailRetryDelay: number;
	/** Delivery attempts of a mail before it is given up (its error kept in the queue). */
	mailMaxAttempts: number;
	/** The address users open Cellar at, for the links in mails; unset, http://<HOST>:<PORT>. */
	publicUrl?: string;
	/** The address other nodes use to reach this node's gateway for the LOCAL datasources it holds (PEER_URL). */
	peerUrl?: string;
	/** The main datasource made structured on first start. */
	defaultDsStructured: boolean;
	/** Absolute folders where LOCAL datasources may live besides DATA_DIR. */
	allowedLocalFolders: string[];
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
	/** Least severe level a node ships to the cluster's log (`POST /a/log/sys`); "silent": none. */
	logShipLevel: string;
	/** Days the system log keeps an entry; 0: no age limit (LOG_MAX_ROWS still bounds it). */
	logRetentionDays: number;
	/** Most system log entries kept (the oldest go first); 0: no row limit (LOG_RETENTION_DAYS still bounds it). */
	logMaxRows: number;
	/** Days the audit trail keeps an entry (at least 1). */
	auditRetentionDays: number;
	/** Largest avatar or logo accepted by POST /frontend/binaries, in bytes. */
	binaryMaxSize: number;
	/** Where POST /update asks for newer versions (Cells' update-server protocol); unset: no update source. */
	updateUrl?: string;
	/** Days an activity stays in the feeds. */
	activityRetentionDays: number;
	/** Hours between activity digest mails (unread inbox activities mailed to users with an email); 0 = none. */
	activityDigestHours: number;
	/** Activities kept per feed (a node's, a user's inbox or outbox), the newest. */
	activityMaxPerFeed: number;
}

/**
 * Every variable Cellar reads, with its default as the README's configuration table shows it (a test compares
 * the two). JWT_SECRET and SERVICES are read where they are used (lib/auth/jwt, lib/runner) but listed here.
 */
export const VARIABLES = [
	"PORT", "HOST", "DATA_DIR", "ADMIN_LOGIN", "ADMIN_PASSWORD", "JWT_SECRET", "TRANSPORTER", "MONGO_URI", "DATABASE_URL", "SERVICES", "NODE_ID",
	"NAMESPACE", "LOG_LEVEL", "ACCESS_TOKEN_TTL", "REFRESH_TOKEN_TTL", "MAX_FAILED_LOGINS", "LOGIN_LOCK_DURATION", "LOGIN_DELAY_MAX", "IP_BAN_THRESHOLD",
	"IP_BAN_WINDOW", "IP_BAN_DURATION", "BODY_LIMIT", "BODY_TIMEOUT", "IDLE_TIMEOUT", "TRUSTED_PROXIES", "REQUEST_TIMEOUT", "HEARTBEAT_INTERVAL",
	"HEARTBEAT_TIMEOUT", "SCRYPT_N", "METRICS", "METRICS_PORT", "MAIL_FROM", "SMTP_URL", "MAIL_RETRY_DELAY", "MAIL_MAX_ATTEMPTS", "PUBLIC_URL", "KDF_PARALLEL", "CELLAR_DEFAULT_DS_STRUCT", "ALLOWED_LOCAL_FOLDERS",
	"LOG_SHIP_LEVEL", "LOG_RETENTION_DAYS", "LOG_MAX_ROWS", "AUDIT_RETENTION_DAYS",
	"BINARY_MAX_SIZE", "UPDATE_URL", "PEER_URL",
	"ACTIVITY_RETENTION_DAYS", "ACTIVITY_MAX_PER_FEED", "ACTIVITY_DIGEST_HOURS",
] as const;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Every problem of a configuration at once, so that one start tells the operator all there is to fix. */
export class ConfigError extends Error {
	constructor(readonly problems: string[]) {
		super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
		this.name = "ConfigError";
	}
}

/** Reads and checks the configuration from `env`; a ConfigError lists every variable that is wrong. */
export function parseConfig(env: NodeJS.ProcessEnv): CellarConfig {
	const problems: string[] = [];
	const text = (name: string): string | undefined => {
		const v = env[name];
		return v === undefined || v.trim() === "" ? undefined : v;
	};
	const num = (name: string, def: number, check: { min?: number; max?: number; integer?: boolean } = {}): number => {
		const v = text(name);
		if (v === undefined) return def;
		const n = Number(v);
		const { min = 0, max = Number.MAX_SAFE_INTEGER, integer = true } = check;
		if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
			const range = max < Number.MAX_SAFE_INTEGER ? ` from ${min} to ${max}` : min > 0 ? `, at least ${min}` : ", 0 or more";
			problems.push(`${name} must be ${integer ? "a whole number" : "a number"}${range}, got "${v}"`);
			return def;
		}
		return n;
	};
	const bool = (name: string, def: boolean): boolean => {
		const v = text(name)?.trim().toLowerCase();
		if (v === undefined) return def;
		if (v === "true" || v === "1") return true;
		if (v === "false" || v === "0") return false;
		problems.push(`${name} must be true or false, got "${env[name]}"`);
		return def;
	};
	const list = (name: string, check: (e: string) => string | null): string[] => {
		const entries = (text(name) ?? "").split(",").map((e) => e.trim()).filter(Boolean);
		for (const e of entries) {
			const why = check(e);
			if (why) problems.push(`${name}: ${why}`);
		}
		return entries;
	};
	const logLevel = text("LOG_LEVEL")?.trim() ?? "info";
	if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
	// Earlier versions kept their data in MongoDB when MONGO_URI was set. Starting on SQLite instead, with the
	// operator believing the data is in their MongoDB cluster, would split it across stores without a word.
	if (text("MONGO_URI")) {
		problems.push(
			"MONGO_URI is set, but MongoDB is not a supported store in this version (the data would silently go to SQLite in DATA_DIR instead). " +
				"Unset MONGO_URI; for a store shared by the nodes of a cluster, set DATABASE_URL to a PostgreSQL database (postgres://user:password@host:5432/db)",
		);
	}
	const logShipLevel = text("LOG_SHIP_LEVEL")?.trim() ?? "info";
	if (!LOG_LEVELS.includes(logShipLevel)) problems.push(`LOG_SHIP_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logShipLevel}"`);
	const logRetentionDays = num("LOG_RETENTION_DAYS", 7, { max: 36500 });
	const logMaxRows = num("LOG_MAX_ROWS", 100000);
	// The system log must stay bounded on disk: by age, by rows, or both.
	if (logRetentionDays === 0 && logMaxRows === 0) problems.push("LOG_RETENTION_DAYS and LOG_MAX_ROWS cannot both be 0 (the system log would grow without bound)");
	const databaseUrl = text("DATABASE_URL")?.trim();
	if (databaseUrl && !/^postgres(ql)?:\/\//i.test(databaseUrl)) problems.push(`DATABASE_URL must be a postgres:// or postgresql:// URL (got "${databaseUrl.slice(0, 12)}…")`);
	const smtpUrl = text("SMTP_URL")?.trim();
	if (smtpUrl && !/^smtps?:\/\/[^/?#]/i.test(smtpUrl)) problems.push(`SMTP_URL must be an smtp:// or smtps:// URL such as smtp://user:pass@mail.example.com:587 (got "${smtpUrl.slice(0, 8)}…")`);
	const peerUrl = text("PEER_URL")?.trim().replace(/\/+$/, "") || undefined;
	if (peerUrl && !/^https?:\/\/[^/?#\s]+$/i.test(peerUrl)) problems.push(`PEER_URL must be an http:// or https:// URL with a host and port only, such as http://10.0.0.2:8080, got "${peerUrl}"`);
	const publicUrlText = text("PUBLIC_URL")?.trim().replace(/\/+$/, "");
	if (publicUrlText && !/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/i.test(publicUrlText)) problems.push(`PUBLIC_URL must be an http:// or https:// URL such as https://files.example.com, got "${publicUrlText}"`);
	const bodyLimit = text("BODY_LIMIT")?.trim() ?? "1mb";
	if (!/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i.test(bodyLimit)) problems.push(`BODY_LIMIT must be a size such as 1mb or 512kb, got "${bodyLimit}"`);
	const scryptN = num("SCRYPT_N", 16384, { min: 2, max: 1 << 22 });
	if ((scryptN & (scryptN - 1)) !== 0) problems.push(`SCRYPT_N must be a power of two, got ${scryptN}`);
	const heartbeatInterval = num("HEARTBEAT_INTERVAL", 5, { min: 1 });
	const heartbeatTimeout = num("HEARTBEAT_TIMEOUT", 15, { min: 1 });
	if (heartbeatTimeout <= heartbeatInterval) problems.push(`HEARTBEAT_TIMEOUT (${heartbeatTimeout}) must be longer than HEARTBEAT_INTERVAL (${heartbeatInterval})`);
	const updateUrl = text("UPDATE_URL")?.trim();
	if (updateUrl && !/^https?:\/\/[^\s]+$/i.test(updateUrl)) problems.push(`UPDATE_URL must be an http:// or https:// URL, got "${updateUrl}"`);
	const config: CellarConfig = {
		port: num("PORT", 8080, { max: 65535 }),
		host: text("HOST")?.trim() ?? "0.0.0.0",
		dataDir: resolve(text("DATA_DIR") ?? "./data"),
		adminLogin: text("ADMIN_LOGIN")?.trim() ?? "admin",
		adminPassword: text("ADMIN_PASSWORD"),
		transporter: text("TRANSPORTER")?.trim(),
		databaseUrl,
		nodeId: text("NODE_ID")?.trim(),
		namespace: text("NAMESPACE")?.trim() ?? "cellar",
		logLevel,
		accessTokenTtl: num("ACCESS_TOKEN_TTL", 600, { min: 1 }),
		refreshTokenTtl: num("REFRESH_TOKEN_TTL", 30 * 24 * 3600, { min: 1 }),
		maxFailedLogins: num("MAX_FAILED_LOGINS", 10, { min: 1 }),
		ipBanThreshold: num("IP_BAN_THRESHOLD", 30, { min: 1 }),
		ipBanWindow: num("IP_BAN_WINDOW", 300, { min: 1 }),
		ipBanDuration: num("IP_BAN_DURATION", 900, { min: 1 }),
		bodyLimit,
		requestTimeout: num("REQUEST_TIMEOUT", 30000, { min: 1 }),
		heartbeatInterval,
		heartbeatTimeout,
		scryptN,
		kdfParallel: num("KDF_PARALLEL", Math.max(1, availableParallelism() - 1), { min: 1 }),
		metrics: bool("METRICS", false),
		metricsPort: text("METRICS_PORT") === undefined ? undefined : num("METRICS_PORT", 0, { min: 1, max: 65535 }),
		mailFrom: text("MAIL_FROM") ?? "Cellar <no-reply@localhost>",
		smtpUrl,
		mailRetryDelay: num("MAIL_RETRY_DELAY", 30, { min: 1, max: 3600 }),
		mailMaxAttempts: num("MAIL_MAX_ATTEMPTS", 10, { min: 1, max: 100 }),
		publicUrl: publicUrlText,
		peerUrl,
		defaultDsStructured: bool("CELLAR_DEFAULT_DS_STRUCT", false),
		allowedLocalFolders: list("ALLOWED_LOCAL_FOLDERS", (e) => (isAbsolute(e) ? null : `"${e}" is not an absolute folder`)),
		trustedProxies: list("TRUSTED_PROXIES", (e) => (isIpOrCidr(e) ? null : `"${e}" is not an IP address or a network such as 10.0.0.0/8`)),
		loginLockDuration: num("LOGIN_LOCK_DURATION", 900),
		loginDelayMax: num("LOGIN_DELAY_MAX", 300),
		bodyTimeout: num("BODY_TIMEOUT", 15, { min: 1 }),
		idleTimeout: num("IDLE_TIMEOUT", 60, { min: 1 }),
		logShipLevel,
		logRetentionDays,
		logMaxRows,
		auditRetentionDays: num("AUDIT_RETENTION_DAYS", 365, { min: 1, max: 36500 }),
		binaryMaxSize: num("BINARY_MAX_SIZE", 5 * 1024 * 1024, { min: 1024, max: 64 * 1024 * 1024 }),
		updateUrl,
		activityRetentionDays: num("ACTIVITY_RETENTION_DAYS", 90, { min: 1 }),
		activityMaxPerFeed: num("ACTIVITY_MAX_PER_FEED", 1000, { min: 1 }),
		activityDigestHours: num("ACTIVITY_DIGEST_HOURS", 0, { min: 0, max: 24 * 366, integer: false }),
	};
	if (problems.length) throw new ConfigError(problems);
	return config;
}

/** The node's configuration, from its environment (read when a service is created: tests start nodes in turn). */
export function loadConfig(): CellarConfig {
	return parseConfig(process.env);
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
