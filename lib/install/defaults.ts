// `GET /a/install`: Cells' InstallConfig filled with what this server actually runs on. Never a secret:
// no password, no DATABASE_URL credentials.
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
	out.dbConnectionType = "embedded";
	out.dbUseDefaults = true;
	if (opts.detailed) {
		out.frontendLogin = cfg.adminLogin;
		out.dsFolder = cfg.dataDir;
	}
	return out;
}
