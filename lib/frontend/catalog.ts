// What the web client is told exists: the front plugins (GET /frontend/plugins/{Lang}) and the admin console's
// pages (GET /frontend/settings-menu). Each names the service that does the work; only what the running cluster
// has is listed (a node started with SERVICES=… and no `versions` service shows no versioning page).
import { ENROLL_TYPE, LOGIN_CODE_KEY } from "../auth/second-factor";
import { TOTP_DIGITS, TOTP_PERIOD } from "../auth/totp";
import { UPLOAD_FIELD } from "./binaries";
import type { MessageKey } from "./i18n";
import { IMAGE_MIME } from "./images";
import { xmlDocument, type XmlElement } from "./xml";

export interface PluginDef {
	id: string;
	/** Listed when one of these services runs. */
	services: string[];
	label: MessageKey;
	description: MessageKey;
	/** Settings the client may read, with their current value (client_settings). */
	clientSettings?: (ctx: CatalogContext) => Record<string, string>;
}

export interface CatalogContext {
	/** Services the cluster runs now (registry). */
	services: Set<string>;
	binaryMaxSize: number;
	updateConfigured: boolean;
}

export const PLUGINS: PluginDef[] = [
	{ id: "gui.ajax", services: ["frontend"], label: "plugins.gui.ajax", description: "plugins.gui.ajax.description" },
	{ id: "core.auth", services: ["auth"], label: "plugins.core.auth", description: "plugins.core.auth.description" },
	{ id: "authfront.totp", services: ["mfa"], label: "plugins.authfront.totp", description: "plugins.authfront.totp.description", clientSettings: () => ({ ENROLL_TYPE, LOGIN_FIELD: LOGIN_CODE_KEY, DIGITS: String(TOTP_DIGITS), PERIOD: String(TOTP_PERIOD) }) },
	{ id: "access.gateway", services: ["tree"], label: "plugins.access.gateway", description: "plugins.access.gateway.description" },
	{ id: "meta.user", services: ["meta"], label: "plugins.meta.user", description: "plugins.meta.user.description" },
	{ id: "action.share", services: ["share"], label: "plugins.action.share", description: "plugins.action.share.description" },
	{ id: "meta.versions", services: ["versions"], label: "plugins.meta.versions", description: "plugins.meta.versions.description" },
	{ id: "index.search", services: ["search"], label: "plugins.index.search", description: "plugins.index.search.description" },
	{
		id: "action.avatar",
		services: ["binaries"],
		label: "plugins.action.avatar",
		description: "plugins.action.avatar.description",
		clientSettings: (c) => ({ UPLOAD_FIELD, MAX_SIZE: String(c.binaryMaxSize), MIME_TYPES: Object.values(IMAGE_MIME).join(",") }),
	},
	{ id: "action.scheduler", services: ["jobs"], label: "plugins.action.scheduler", description: "plugins.action.scheduler.description" },
	{ id: "editor.templates", services: ["templates"], label: "plugins.editor.templates", description: "plugins.editor.templates.description" },
];

/** The XML manifest of the plugins the cluster has, labels in `messages`' language. */
export function pluginsXml(ctx: CatalogContext, messages: Record<MessageKey, string>): string {
	const plugins: XmlElement[] = PLUGINS.filter((p) => p.services.some((s) => ctx.services.has(s))).map((p) => {
		const settings = p.clientSettings?.(ctx) ?? {};
		return {
			name: "ajxp_plugin",
			attrs: { id: p.id, enabled: "true", label: messages[p.label], description: messages[p.description] },
			children: [
				{ name: "plugin_info", children: [{ name: "core_relation", attrs: { packaged: "true", tested: "true" } }] },
				{ name: "client_settings", children: Object.entries(settings).map(([name, value]) => ({ name: "param", attrs: { name, value } })) },
			],
		};
	});
	return xmlDocument({ name: "plugins", children: plugins });
}

// ---- the admin console ----

export interface SettingsAccess {
	Label: string;
	Description?: string;
	Policies: { Action: string; Resource: string }[];
}

export interface SettingsEntry {
	Key: string;
	LABEL: string;
	DESCRIPTION: string;
	ALIAS: string;
	METADATA: { icon_class: string; component: string; props: string };
	Accesses: Record<string, SettingsAccess>;
}

export interface SettingsSection {
	Key: string;
	LABEL: string;
	DESCRIPTION: string;
	CHILDREN: SettingsEntry[];
}

export interface SettingsMenu {
	__metadata__: { icon_class: string; component: string };
	Sections: SettingsSection[];
}

interface EntryDef {
	key: string;
	service: string;
	icon: string;
	component: string;
	/** The REST endpoints the page drives: given to the page as props, and as the accesses it needs. */
	api: { read: [string, string][]; write: [string, string][] };
}

const SECTIONS: { key: string; entries: EntryDef[] }[] = [
	{
		key: "people",
		entries: [
			{ key: "users", service: "users", icon: "mdi mdi-account-multiple", component: "AdminPeople.Dashboard", api: { read: [["POST", "/user"], ["GET", "/user/<.+>"]], write: [["PUT", "/user/<.+>"], ["DELETE", "/user/<.+>"], ["PUT", "/user/roles/<.+>"]] } },
			{ key: "roles", service: "roles", icon: "mdi mdi-account-key", component: "AdminPeople.RolesDashboard", api: { read: [["POST", "/role"], ["GET", "/role/<.+>"]], write: [["PUT", "/role/<.+>"], ["DELETE", "/role/<.+>"]] } },
			{ key: "policies", service: "policy", icon: "mdi mdi-security", component: "AdminPeople.PoliciesBoard", api: { read: [["POST", "/policy"]], write: [["PUT", "/policy"], ["DELETE", "/policy/<.+>"]] } },
			{ key: "ipbans", service: "policy", icon: "mdi mdi-lan-disconnect", component: "AdminPeople.IpBans", api: { read: [["GET", "/policy/ipbans"], ["GET", "/policy/iplists/<.+>"]], write: [["POST", "/policy/ipbans"], ["POST", "/policy/iplists"]] } },
			{ key: "tokens", service: "tokens", icon: "mdi mdi-key-chain", component: "AdminPeople.Tokens", api: { read: [["POST", "/auth/tokens"]], write: [["POST", "/auth/token/personal"], ["DELETE", "/auth/tokens/<.+>"]] } },
		],
	},
	{
		key: "data",
		entries: [
			{ key: "workspaces", service: "workspaces", icon: "mdi mdi-folder-network", component: "AdminWorkspaces.WsDashboard", api: { read: [["POST", "/workspace"]], write: [["PUT", "/workspace/<.+>"], ["DELETE", "/workspace/<.+>"]] } },
			{ key: "datasources", service: "datasources", icon: "mdi mdi-database", component: "AdminWorkspaces.DataSourcesBoard", api: { read: [["GET", "/config/datasource"], ["GET", "/config/datasource/<.+>"]], write: [["POST", "/config/datasource/<.+>"], ["DELETE", "/config/datasource/<.+>"]] } },
			{ key: "versioning", service: "versions", icon: "mdi mdi-history", component: "AdminWorkspaces.VersionsDashboard", api: { read: [["GET", "/config/versioning"], ["GET", "/config/versioning/<.+>"]], write: [["POST", "/config/versioning/<.+>"], ["DELETE", "/config/versioning/<.+>"]] } },
			{ key: "encryption", service: "encryption", icon: "mdi mdi-key", component: "AdminWorkspaces.EncryptionKeys", api: { read: [["POST", "/config/encryption/list"]], write: [["POST", "/config/encryption/create"], ["POST", "/config/encryption/delete"], ["POST", "/config/encryption/export"], ["PUT", "/config/encryption/import"]] } },
			{ key: "templates", service: "templates", icon: "mdi mdi-file-document-multiple", component: "AdminWorkspaces.Templates", api: { read: [["GET", "/templates"]], write: [] } },
		],
	},
	{
		key: "system",
		entries: [
			{ key: "update", service: "update", icon: "mdi mdi-update", component: "AdminServices.UpdaterDashboard", api: { read: [["POST", "/update"]], write: [["PATCH", "/update/<.+>"]] } },
			{ key: "license", service: "update", icon: "mdi mdi-license", component: "AdminServices.LicenseStats", api: { read: [["GET", "/license/stats"]], write: [] } },
		],
	},
];

function accesses(api: EntryDef["api"]): Record<string, SettingsAccess> {
	const out: Record<string, SettingsAccess> = {};
	const policies = (list: [string, string][]) => list.map(([Action, path]) => ({ Action, Resource: `rest:${path}` }));
	out.read = { Label: "read", Policies: policies(api.read) };
	if (api.write.length) out.write = { Label: "write", Policies: policies(api.write) };
	return out;
}

/** The admin console's sections and pages for what the cluster runs; labels are i18n keys (the client translates). */
export function settingsMenu(services: Set<string>): SettingsMenu {
	const sections: SettingsSection[] = [];
	for (const s of SECTIONS) {
		const children = s.entries
			.filter((e) => services.has(e.service))
			.map((e) => ({
				Key: e.key,
				LABEL: `settings.${e.key}`,
				DESCRIPTION: `settings.${e.key}.description`,
				ALIAS: `/${s.key}/${e.key}`,
				METADATA: { icon_class: e.icon, component: e.component, props: JSON.stringify({ service: e.service, api: e.api.read.concat(e.api.write).map(([m, p]) => `${m} /a${p.replace("<.+>", "{id}")}`) }) },
				Accesses: accesses(e.api),
			}));
		if (children.length) sections.push({ Key: s.key, LABEL: `settings.section.${s.key}`, DESCRIPTION: `settings.section.${s.key}.description`, CHILDREN: children });
	}
	return { __metadata__: { icon_class: "mdi mdi-settings", component: "AdminDashboard.Dashboard" }, Sections: sections };
}

/** Every i18n key the menu may use (a test checks the dictionaries have them). */
export function settingsMenuKeys(): string[] {
	const keys: string[] = [];
	for (const s of SECTIONS) {
		keys.push(`settings.section.${s.key}`, `settings.section.${s.key}.description`);
		for (const e of s.entries) keys.push(`settings.${e.key}`, `settings.${e.key}.description`);
	}
	return keys;
}
