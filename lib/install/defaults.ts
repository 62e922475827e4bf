// `GET /a/install`: Cells' InstallConfig filled with what this server actually runs on. Never a secret:
// no password, and a MONGO_URI is described without its credentials.
import type { CellarConfig } from "../config";
import { APPLICATION_TITLE } from "../frontend/bootconf";
import { DEFAULT_LANGUAGE } from "../frontend/messages";

export interface InstallConfig {
	dbConnectionType?: string;
	dbUseDefaults?: boolean;
	dbTCPHostname?: string;
	dbTCPPort?: string;
	dbTCPName?: string;
	dbManualDSN?: string;
	dsName?: string;
	dsType?: string;
	dsFolder?: string;
	dsPort?: string;
	frontendApplicationTitle?: string;
	frontendDefaultLanguage?: string;
	frontendLogin?: string;
	frontendHosts?: string;
	internalUrl?: string;
	licenseRequired?: boolean;
	CheckResults?: Array<{ Name: string; Success: boolean; JsonResult: string }>;
}

export interface MongoTarget {
	hosts: string[];
	database: string;
	/** The URI with any `user:password@` removed. */
	redacted: string;
}

/** `mongodb://user:pw@h1:27017,h2/db?x=y` -> hosts, database and a URI safe to show. */
export function describeMongoUri(uri: string): MongoTarget {
	const m = /^(mongodb(?:\+srv)?:\/\/)(?:[^@/?#]*@)?([^/?#]*)(?:\/([^?#]*))?(\?[^#]*)?/.exec(uri.trim());
	if (!m) return { hosts: [], database: "", redacted: "(unparsable MONGO_URI)" };
	const hosts = m[2].split(",").filter(Boolean);
	const database = decodeURIComponent(m[3] ?? "");
	const query = (m[4] ?? "").replace(/([?&](?:password|authMechanismProperties|tlsCertificateKeyFilePassword)=)[^&]*/gi, "$1***");
	return { hosts, database, redacted: `${m[1]}${hosts.join(",")}${database ? "/" + encodeURIComponent(database) : "/"}${query}` };
}

function displayHost(host: string): string {
	if (host === "" || host === "0.0.0.0" || host === "::") return "127.0.0.1";
	return host.includes(":") ? `[${host}]` : host;
}

export function publicUrl(cfg: Pick<CellarConfig, "host">, port: number): string {
	return `http://${displayHost(cfg.host)}:${port}`;
}

export interface DefaultsOptions {
	/** Show who administers and where data lives (admins, or anyone before installation). */
	detailed: boolean;
	/** The port the gateway really listens on, when known. */
	port?: number;
}

export function installDefaults(cfg: CellarConfig, opts: DefaultsOptions): InstallConfig {
	const port = opts.port ?? cfg.port;
	const out: InstallConfig = {
		frontendApplicationTitle: APPLICATION_TITLE,
		frontendDefaultLanguage: DEFAULT_LANGUAGE,
		frontendHosts: `${cfg.host}:${port}`,
		internalUrl: publicUrl(cfg, port),
		dsName: "pydiods1",
		dsType: "LOCAL",
		licenseRequired: false,
	};
	if (cfg.mongoUri) {
		const t = describeMongoUri(cfg.mongoUri);
		const [first = ""] = t.hosts;
		const idx = first.lastIndexOf(":");
		out.dbConnectionType = "mongo";
		out.dbUseDefaults = false;
		out.dbTCPHostname = idx > 0 && !first.endsWith("]") ? first.slice(0, idx) : first;
		out.dbTCPPort = idx > 0 && !first.endsWith("]") ? first.slice(idx + 1) : "27017";
		out.dbTCPName = t.database;
		if (opts.detailed) out.dbManualDSN = t.redacted;
	} else {
		out.dbConnectionType = "embedded";
		out.dbUseDefaults = true;
	}
	if (opts.detailed) {
		out.frontendLogin = cfg.adminLogin;
		out.dsFolder = cfg.dataDir;
	}
	return out;
}
