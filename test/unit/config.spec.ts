// The configuration is read and checked once, every problem listed together, and the README's table names
// exactly the variables Cellar reads, with the defaults it applies.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, parseConfig, VARIABLES, type CellarConfig } from "../../lib/config";

/** The README's configuration table: variable -> its Default cell. */
function readmeTable(): Map<string, string> {
	const readme = readFileSync(join(__dirname, "..", "..", "README.md"), "utf8");
	const section = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("## Running a cluster"));
	const rows = new Map<string, string>();
	for (const m of section.matchAll(/^\| `([A-Z_]+)` \| ([^|]+) \|/gm)) rows.set(m[1], m[2].trim());
	return rows;
}

describe("configuration", () => {
	it("lists every wrong variable at once, and starts nothing with one", () => {
		let caught: unknown;
		try {
			parseConfig({ PORT: "eighty", ACCESS_TOKEN_TTL: "-5", LOG_LEVEL: "loud", TRUSTED_PROXIES: "10.0.0.0/8,proxy.local", DATABASE_URL: "mysql://x", HEARTBEAT_INTERVAL: "20", SCRYPT_N: "1000", METRICS: "maybe" });
		} catch (e) {
			caught = e;
		}
		assert.ok(caught instanceof ConfigError);
		const problems = (caught as ConfigError).problems.join("\n");
		for (const name of ["PORT", "ACCESS_TOKEN_TTL", "LOG_LEVEL", "TRUSTED_PROXIES", "DATABASE_URL", "HEARTBEAT_TIMEOUT", "SCRYPT_N", "METRICS"]) assert.match(problems, new RegExp(name), name);
		assert.match(problems, /proxy\.local/);
		assert.doesNotMatch(problems, /"10\.0\.0\.0\/8"/);
	});

	it("refuses MONGO_URI: MongoDB is not a store, and the data must not silently go to SQLite", () => {
		for (const env of [{ MONGO_URI: "mongodb://mongo:27017/cellar" }, { MONGO_URI: "mongodb://mongo:27017/cellar", DATABASE_URL: "postgres://db/cellar" }]) {
			assert.throws(
				() => parseConfig(env),
				(e: unknown) => e instanceof ConfigError && e.problems.length === 1 && /MONGO_URI.*MongoDB is not a supported store in this version.*DATABASE_URL.*PostgreSQL/s.test(e.problems[0]),
			);
		}
		assert.equal(parseConfig({ MONGO_URI: "  " }).databaseUrl, undefined, "an empty MONGO_URI is no MONGO_URI");
	});

	it("checks the mail settings: an smtp(s):// relay, an http(s):// public URL (its trailing slash dropped)", () => {
		const ok = parseConfig({ SMTP_URL: "smtps://u:p@mail.example.com:465", PUBLIC_URL: "https://files.example.com/", MAIL_RETRY_DELAY: "5", MAIL_MAX_ATTEMPTS: "4" });
		assert.deepEqual([ok.smtpUrl, ok.publicUrl, ok.mailRetryDelay, ok.mailMaxAttempts], ["smtps://u:p@mail.example.com:465", "https://files.example.com", 5, 4]);
		assert.throws(() => parseConfig({ SMTP_URL: "mail.example.com:25", PUBLIC_URL: "files.example.com", MAIL_MAX_ATTEMPTS: "0" }), (e: unknown) => {
			const problems = (e as ConfigError).problems.join("\n");
			return /SMTP_URL/.test(problems) && /PUBLIC_URL/.test(problems) && /MAIL_MAX_ATTEMPTS/.test(problems);
		});
	});

	it("checks the log settings: a level, and a system log bounded by age or by rows", () => {
		const ok = parseConfig({ LOG_SHIP_LEVEL: "warn", LOG_RETENTION_DAYS: "0", LOG_MAX_ROWS: "500", AUDIT_RETENTION_DAYS: "30" });
		assert.deepEqual([ok.logShipLevel, ok.logRetentionDays, ok.logMaxRows, ok.auditRetentionDays], ["warn", 0, 500, 30]);
		assert.throws(() => parseConfig({ LOG_SHIP_LEVEL: "chatty", LOG_RETENTION_DAYS: "0", LOG_MAX_ROWS: "0", AUDIT_RETENTION_DAYS: "0" }), (e: unknown) => {
			const problems = (e as ConfigError).problems.join("\n");
			return /LOG_SHIP_LEVEL/.test(problems) && /both be 0/.test(problems) && /AUDIT_RETENTION_DAYS/.test(problems);
		});
	});

	it("reads METRICS_PORT as a port, and refuses anything else", () => {
		assert.equal(parseConfig({ METRICS: "true", METRICS_PORT: "9464" }).metricsPort, 9464);
		assert.equal(parseConfig({}).metricsPort, undefined);
		assert.throws(() => parseConfig({ METRICS_PORT: "metrics" }), /METRICS_PORT must be a whole number from 1 to 65535/);
	});

	it("applies the defaults the README states, for every variable it reads", () => {
		const rows = readmeTable();
		assert.deepEqual([...rows.keys()].sort(), [...VARIABLES].sort());
		const defaults = parseConfig({});
		const key: Partial<Record<(typeof VARIABLES)[number], keyof CellarConfig>> = {
			PORT: "port", HOST: "host", ADMIN_LOGIN: "adminLogin", NAMESPACE: "namespace", LOG_LEVEL: "logLevel", ACCESS_TOKEN_TTL: "accessTokenTtl",
			REFRESH_TOKEN_TTL: "refreshTokenTtl", MAX_FAILED_LOGINS: "maxFailedLogins", LOGIN_LOCK_DURATION: "loginLockDuration", LOGIN_DELAY_MAX: "loginDelayMax",
			IP_BAN_THRESHOLD: "ipBanThreshold", IP_BAN_WINDOW: "ipBanWindow", IP_BAN_DURATION: "ipBanDuration", BODY_LIMIT: "bodyLimit", BODY_TIMEOUT: "bodyTimeout",
			IDLE_TIMEOUT: "idleTimeout", REQUEST_TIMEOUT: "requestTimeout", HEARTBEAT_INTERVAL: "heartbeatInterval", HEARTBEAT_TIMEOUT: "heartbeatTimeout",
			SCRYPT_N: "scryptN", METRICS: "metrics", MAIL_FROM: "mailFrom", MAIL_RETRY_DELAY: "mailRetryDelay", MAIL_MAX_ATTEMPTS: "mailMaxAttempts", CELLAR_DEFAULT_DS_STRUCT: "defaultDsStructured",
			LOG_SHIP_LEVEL: "logShipLevel", LOG_RETENTION_DAYS: "logRetentionDays", LOG_MAX_ROWS: "logMaxRows", AUDIT_RETENTION_DAYS: "auditRetentionDays",
			BINARY_MAX_SIZE: "binaryMaxSize",
			ACTIVITY_RETENTION_DAYS: "activityRetentionDays", ACTIVITY_MAX_PER_FEED: "activityMaxPerFeed",
			ACTIVITY_DIGEST_HOURS: "activityDigestHours",
		};
		for (const [name, field] of Object.entries(key) as [string, keyof CellarConfig][]) {
			assert.equal(rows.get(name), `\`${String(defaults[field])}\``, name);
		}
		for (const name of ["TRANSPORTER", "MONGO_URI", "DATABASE_URL", "TRUSTED_PROXIES", "ALLOWED_LOCAL_FOLDERS", "SMTP_URL", "PUBLIC_URL", "UPDATE_URL", "METRICS_PORT"]) assert.equal(rows.get(name), "none", name);
		assert.equal(defaults.transporter ?? defaults.databaseUrl, undefined);
		assert.deepEqual([defaults.trustedProxies, defaults.allowedLocalFolders], [[], []]);
	});
});
