// `GET /a/frontend/bootconf`: the boot configuration a Cells web client reads before anything else
// (behaviour.md 1.7). The same keys for everyone; only the version fields depend on the caller being known.
import { AVAILABLE_LANGUAGES, DEFAULT_LANGUAGE, MESSAGES_EN } from "./messages";
import { packageInfo, versionHash } from "./version";

export const APPLICATION_TITLE = "Cellar";

export interface BootConfOptions {
	/** A valid session or token came with the request: the real version is shown. */
	logged: boolean;
	/** Some mail sender is configured in the cluster. */
	validMailer: boolean;
	/** Minutes of inactivity before the web client ends a session (Cells' CLIENT_TIMEOUT, default 24). */
	clientTimeoutMinutes?: number;
	/** Minutes before that end when the client warns (Cells' CLIENT_TIMEOUT_WARN, default 3). */
	clientTimeoutWarning?: number;
	/** The configured APPLICATION_TITLE (configuration tree frontend/plugin/core.pydio); Cellar's name without. */
	title?: string;
	now?: Date;
}

export interface BootConfBackend {
	PackageType: string;
	PackageLabel: string;
	Version: string;
	BuildRevision: string;
	BuildStamp: string;
	License: string;
	ServerOffset: number;
	PackagingInfo: string[];
}

export interface BootConf {
	ajxpResourcesFolder: string;
	ENDPOINT_REST_API: string;
	ENDPOINT_S3_GATEWAY: string;
	ENDPOINT_WEBSOCKET: string;
	PUBLIC_BASEURI: string;
	zipEnabled: boolean;
	multipleFilesDownloadEnabled: boolean;
	customWording: { title: string; icon: string; iconBinary: string; loginTitle: string; loginLegend: string };
	usersEnabled: boolean;
	loggedUser: boolean;
	currentLanguage: string;
	session_timeout: number;
	client_timeout: number;
	client_timeout_warning: number;
	availableLanguages: Record<string, string>;
	usersEditable: boolean;
	ajxpVersion: string;
	ajxpVersionDate: string;
	i18nMessages: Record<string, string>;
	theme: string;
	ajxpImagesCommon: boolean;
	validMailer: boolean;
	backend: BootConfBackend;
}

export function buildBootConf(opts: BootConfOptions): BootConf {
	const pkg = packageInfo();
	const now = opts.now ?? new Date();
	const timeout = (opts.clientTimeoutMinutes ?? 24) * 60;
	const version = opts.logged ? pkg.version : versionHash(pkg.version);
	const date = opts.logged ? pkg.date : "";
	return {
		ajxpResourcesFolder: "plug/gui.ajax/res",
		ENDPOINT_REST_API: "/a",
		ENDPOINT_S3_GATEWAY: "/io",
		ENDPOINT_WEBSOCKET: "/ws/event",
		PUBLIC_BASEURI: "/public",
		zipEnabled: true,
		multipleFilesDownloadEnabled: true,
		customWording: {
			title: opts.title || APPLICATION_TITLE,
			icon: "",
			iconBinary: "",
			loginTitle: MESSAGES_EN["ajax_gui.login.title"],
			loginLegend: MESSAGES_EN["ajax_gui.login.legend"],
		},
		usersEnabled: true,
		// Always false here, as in Cells: the client learns about its user from /frontend/state.
		loggedUser: false,
		currentLanguage: DEFAULT_LANGUAGE,
		session_timeout: timeout,
		client_timeout: timeout,
		client_timeout_warning: opts.clientTimeoutWarning ?? 3,
		availableLanguages: { ...AVAILABLE_LANGUAGES },
		usersEditable: true,
		ajxpVersion: version,
		ajxpVersionDate: date,
		i18nMessages: { ...MESSAGES_EN },
		theme: "material",
		ajxpImagesCommon: true,
		validMailer: opts.validMailer,
		backend: {
			PackageType: "cellar",
			PackageLabel: APPLICATION_TITLE,
			Version: version,
			BuildRevision: "",
			BuildStamp: date,
			License: "agplv3",
			// Seconds east of UTC, as Go's time.Zone() gives it.
			ServerOffset: -now.getTimezoneOffset() * 60 || 0,
			PackagingInfo: opts.logged ? [`${APPLICATION_TITLE} ${pkg.version} on Node.js ${process.version.slice(1)}`] : [],
		},
	};
}

/** Where the configuration tree keeps the core front-end settings (APPLICATION_TITLE). */
export const CORE_CONFIG_PATH = "frontend/plugin/core.pydio";

/** The configured application title, if any (a string of the core plugin's configuration). */
export function titleFromConfig(value: unknown): string | undefined {
	const t = value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>).APPLICATION_TITLE : undefined;
	return typeof t === "string" && t.trim() ? t.trim() : undefined;
}
