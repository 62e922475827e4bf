/**
 * frontend — what a Cells web client reads to boot: `GET /frontend/bootconf` (JSON), `GET /frontend/state`
 * (the XML registry with the caller's workspaces), the i18n dictionaries (`GET /frontend/messages/{Lang}`), the
 * plugins manifest (`GET /frontend/plugins/{Lang}`) and the admin console's menu (`GET /frontend/settings-menu`),
 * both listing what the cluster's running services offer, and the enterprise login helpers
 * `GET /frontend/auth/state` and `GET /frontend/login/connectors`. Stateless: it owns no data.
 * Consumes (calls): `workspaces.accessible` {roles} -> [{UUID, Slug, Label, Description, Scope, Access}];
 * `config.get` frontend/plugin/core.pydio (APPLICATION_TITLE in bootconf), kept until a `config.changed` touching it;
 * `oauth2.loginConnectors` {} -> [{Id, Name, Type}] (when the oauth2 service runs).
 * Emits nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { checkIdentifier } from "../lib/identity/validate";
import { buildBootConf, APPLICATION_TITLE, CORE_CONFIG_PATH, titleFromConfig } from "../lib/frontend/bootconf";
import { CachedConfig } from "../lib/config-tree/cached";
import type { ConfigChange } from "../lib/contracts";
import { buildStateXml, type AccessibleWorkspace } from "../lib/frontend/state";
import { call, serviceRuns } from "../lib/contracts";
import { messagesFor, resolveLanguage } from "../lib/frontend/i18n";
import { pluginsXml, settingsMenu } from "../lib/frontend/catalog";
import { loadConfig } from "../lib/config";
import { requireAdmin } from "../lib/identity/resource-policy";

interface StateParams {
	ws?: string;
	lang?: string;
	XPath?: string;
}

interface FrontendMethods {
	accessibleWorkspaces(ctx: Context<unknown, Meta>): Promise<AccessibleWorkspace[]>;
	mailerAvailable(): boolean;
	runningServices(): Set<string>;
}
type Settings = ServiceSettingSchema & { rest: string };
interface FrontendVars {
	core: CachedConfig<string | undefined>;
}
type FrontendThis = Service<Settings> & FrontendMethods & FrontendVars;

const FrontendService: ServiceSchema<Settings, FrontendMethods, FrontendVars> = {
	name: "frontend",
	settings: { rest: "/" },
	actions: {
		bootconf: {
			rest: "GET /frontend/bootconf",
			httpCache: true,
			read: true,
			params: {},
			async handler(this: FrontendThis, ctx: Context<Record<string, unknown>, Meta>): Promise<string> {
				const conf = buildBootConf({ logged: !!ctx.meta.user, validMailer: this.mailerAvailable(), title: await this.core.get().catch(() => undefined) });
				// A free-form JSON document, not the spec's JsonData map: written as is, not re-encoded.
				ctx.meta.$responseType = "application/json; charset=utf-8";
				return JSON.stringify(conf);
			},
		},
		state: {
			rest: "GET /frontend/state",
			httpCache: true,
			read: true,
			params: {
				ws: { type: "string", optional: true, max: 255 },
				lang: { type: "string", optional: true, max: 16 },
				XPath: { type: "string", optional: true, max: 256 },
			},
			async handler(this: FrontendThis, ctx: Context<StateParams, Meta>): Promise<string> {
				const { ws, lang, XPath } = ctx.params;
				if (ws !== undefined && ws !== "") checkIdentifier("ws", ws, 255);
				const user = ctx.meta.user ?? null;
				const workspaces = user ? await this.accessibleWorkspaces(ctx) : [];
				const xml = buildStateXml({ user, workspaces, ws: ws || undefined, lang, xPath: XPath || undefined });
				ctx.meta.$responseType = "text/xml; charset=utf-8";
				return xml;
			},
		},
		messages: {
			rest: "GET /frontend/messages/:Lang",
			httpCache: true,
			read: true,
			params: { Lang: { type: "string", max: 32 } },
			handler(ctx: Context<{ Lang: string }, Meta>): string {
				// Cells answers the flat key -> text map, not the spec's {Messages}: what its web client reads.
				ctx.meta.$responseType = "application/json; charset=utf-8";
				ctx.meta.$responseHeaders = { "Content-Language": resolveLanguage(ctx.params.Lang) };
				return JSON.stringify(messagesFor(ctx.params.Lang));
			},
		},
		plugins: {
			rest: "GET /frontend/plugins/:Lang",
			httpCache: true,
			read: true,
			params: { Lang: { type: "string", max: 32 } },
			handler(this: FrontendThis, ctx: Context<{ Lang: string }, Meta>): string {
				const cfg = loadConfig();
				ctx.meta.$responseType = "text/xml; charset=utf-8";
				return pluginsXml({ services: this.runningServices(), binaryMaxSize: cfg.binaryMaxSize, updateConfigured: !!cfg.updateUrl }, messagesFor(ctx.params.Lang));
			},
		},
		settingsMenu: {
			rest: "GET /frontend/settings-menu",
			httpCache: true,
			params: {},
			handler(this: FrontendThis, ctx: Context<Record<string, unknown>, Meta>) {
				requireAdmin(ctx);
				return settingsMenu(this.runningServices());
			},
		},
		authState: {
			rest: "GET /frontend/auth/state",
			httpCache: true,
			read: true,
			params: {},
			// No Cells spec definition exists for this enterprise route: the answer is the caller's login state.
			handler(ctx: Context<Record<string, unknown>, Meta>) {
				const u = ctx.meta.user;
				if (!u) return { Logged: false, Connectors: ["pydio"] };
				return { Logged: true, Login: u.Login, Uuid: u.Uuid, Profile: u.Profile, GroupPath: u.GroupPath, TokenKind: u.TokenKind, ExpiresAt: u.ExpiresAt, Connectors: ["pydio"] };
			},
		},
		loginConnectors: {
			rest: "GET /frontend/login/connectors",
			// Not from the gateway's response cache: a connector an admin just added or removed shows at once.
			read: true,
			params: {},
			async handler(this: FrontendThis, ctx: Context<Record<string, never>, Meta>) {
				// Cellar's own password login, then the connectors admins configured (the oauth2 service's).
				if (!serviceRuns(this.broker, "oauth2")) return { Connectors: [{ Id: "pydio", Name: APPLICATION_TITLE, Type: "pydio" }] };
				return { Connectors: await call(ctx, "oauth2.loginConnectors", {}, { retries: 2 }) };
			},
		},
	},
	methods: {
		runningServices(this: FrontendThis): Set<string> {
			const list = (this.broker.registry as unknown as { getServiceList(o: { onlyAvailable: boolean; skipInternal: boolean }): { name: string }[] }).getServiceList({ onlyAvailable: true, skipInternal: true });
			return new Set(list.map((s) => s.name));
		},
		mailerAvailable(this: FrontendThis): boolean {
			return serviceRuns(this.broker, "mailer");
		},
		async accessibleWorkspaces(this: FrontendThis, ctx: Context<unknown, Meta>): Promise<AccessibleWorkspace[]> {
			const roles = ctx.meta.user?.Roles ?? [];
			const list = await call(ctx, "workspaces.accessible", { roles }, { retries: 2 });
			if (!Array.isArray(list)) throw new Error("workspaces.accessible did not answer a list");
			return list;
		},
	},
	events: {
		"config.changed"(this: FrontendThis, ctx: Context<ConfigChange>) {
			this.core.changed(ctx.params.Path);
		},
	},
	created(this: FrontendThis) {
		// A cluster without a config service boots with Cellar's defaults.
		const hasConfig = () => serviceRuns(this.broker, "config");
		this.core = new CachedConfig(CORE_CONFIG_PATH, async (path) => (hasConfig() ? call(this.broker, "config.get", { Path: path }) : null), titleFromConfig);
	},
};

export = FrontendService;
