/**
 * config — the configuration tree (GET/PUT /config/{FullPath}, administrators only: the REST policies let no one
 * else in), the sites this cluster's gateways serve (GET /config/sites[/{Filter}]) and the job actions this server
 * runs (GET /config/scheduler/actions[/{ActionName}]). Writes are validated against the shape of known paths (lib/
 * config-tree/schemas, and `settings.configSchema` of any running service), stored atomically in the SQL store,
 * then announced. Applies, on every node, the node-wide settings it owns (`services/config`: logLevel).
 * Internal: `config.get` {Path}. Emits `config.changed` (broadcast, {Path, Author}) after a write; consumes it
 * (re-reads `services/config` and applies it).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { ConfigRepo, type Db } from "../lib/db";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { BadRequestError, NotFoundError } from "../lib/errors";
import { ConfigTree, isWritablePath, normalizePath, type Json, type ObjectSchema } from "../lib/config-tree/tree";
import { FRONTEND_SCHEMAS, NODE_SETTINGS_PATH, NODE_SETTINGS_SCHEMA } from "../lib/config-tree/schemas";
import { isLogLevel } from "../lib/logs/model";
import { LogLevelControl } from "../lib/config-tree/log-level";
import { overlaps } from "../lib/config-tree/cached";
import { JOB_ACTIONS, actionFormXml } from "../lib/jobs/catalog";
import { isJobName } from "../lib/jobs/params";
import type { RegistryService } from "../lib/discovery/model";
import { broadcast, type ConfigChange } from "../lib/contracts";

interface Settings extends ServiceSettingSchema {
	rest: string;
	configSchema: ObjectSchema;
}
interface Methods {
	schemas(): Map<string, ObjectSchema>;
	applyNodeSettings(): Promise<void>;
}
interface Vars {
	db: Db;
	tree: ConfigTree;
	logLevel: LogLevelControl;
}
type This = Service<Settings> & Methods & Vars;

interface Site {
	Binds: string[];
	ReverseProxyURL?: string;
	SSLRedirect?: boolean;
}

const ConfigService: ServiceSchema<Settings, Methods, Vars> = {
	name: "config",
	mixins: [DatabaseMixin],
	settings: { rest: "/", configSchema: NODE_SETTINGS_SCHEMA },
	actions: {
		getConfig: {
			read: true,
			rest: "GET /config/*FullPath",
			params: { FullPath: [{ type: "string", max: 2048 }, { type: "array", items: "string", max: 32 }], Data: { type: "string", optional: true, max: 1 << 20 } },
			async handler(this: This, ctx: Context<{ FullPath: string | string[] }, Meta>) {
				requireAdmin(ctx);
				const path = normalizePath(ctx.params.FullPath);
				// Only these roots can hold anything. Elsewhere is where the routes of a stopped or not yet built service
				// fall (/config/directories…): answered as the unknown route it is, not as an empty configuration.
				if (!isWritablePath(path)) throw new NotFoundError("Unknown API route", "route.not.found");
				const value = await this.tree.get(path);
				return value === undefined ? { FullPath: path } : { FullPath: path, Data: JSON.stringify(value) };
			},
		},
		putConfig: {
			rest: "PUT /config/*FullPath",
			params: { FullPath: [{ type: "string", max: 2048 }, { type: "array", items: "string", max: 32 }], Data: { type: "string", max: 1 << 20 } },
			async handler(this: This, ctx: Context<{ FullPath: string | string[]; Data: string }, Meta>) {
				const user = requireAdmin(ctx);
				const path = normalizePath(ctx.params.FullPath);
				let value: Json;
				try {
					value = JSON.parse(ctx.params.Data) as Json;
				} catch {
					throw new BadRequestError("Data must be a JSON-encoded value");
				}
				await this.tree.put(path, value, user.Login);
				await broadcast(ctx, "config.changed", { Path: path, Author: user.Login });
				return { FullPath: path, Data: ctx.params.Data };
			},
		},
		get: {
			read: true,
			params: { Path: { type: "string", max: 2048 } },
			async handler(this: This, ctx: Context<{ Path: string }>) {
				return (await this.tree.get(normalizePath(ctx.params.Path))) ?? null;
			},
		},
		listSites: {
			rest: ["GET /config/sites", "GET /config/sites/:Filter"],
			params: { Filter: { type: "string", optional: true, max: 1024 } },
			async handler(this: This, ctx: Context<{ Filter?: string }, Meta>) {
				requireAdmin(ctx);
				const cfg = loadConfig();
				const binds = new Set<string>();
				// Each gateway of the cluster publishes the address it binds in its settings.
				for (const s of this.broker.registry.getServiceList({ onlyAvailable: true }) as RegistryService[]) {
					if (s.name !== "api") continue;
					const ip = typeof s.settings?.ip === "string" ? s.settings.ip : cfg.host;
					const port = typeof s.settings?.port === "number" ? s.settings.port : cfg.port;
					binds.add(`${ip}:${port}`);
				}
				if (binds.size === 0) binds.add(`${cfg.host}:${cfg.port}`);
				const sites: Site[] = [...binds].sort().map((b) => ({ Binds: [b] }));
				const f = ctx.params.Filter?.trim();
				const all = !f || f === "*" || f.toLowerCase() === "all";
				return { Sites: all ? sites : sites.filter((s) => s.Binds.some((b) => b.includes(f)) || (s.ReverseProxyURL ?? "").includes(f)) };
			},
		},
		schedulerActions: {
			rest: "GET /config/scheduler/actions",
			params: {},
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				const Actions: Record<string, unknown> = {};
				for (const [name, spec] of Object.entries(JOB_ACTIONS)) {
					const { params, ...desc } = spec;
					Actions[name] = { Name: name, ...desc, HasForm: params.length > 0, SummaryTemplate: params.map((p) => `${p.name}={{.${p.name}}}`).join(" ") };
				}
				return { Actions };
			},
		},
		schedulerActionForm: {
			rest: "GET /config/scheduler/actions/:ActionName",
			params: { ActionName: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ ActionName: string }, Meta>) {
				requireAdmin(ctx);
				const name = ctx.params.ActionName;
				if (!isJobName(name)) throw new NotFoundError(`No job action named ${name.slice(0, 64)}: the actions are ${Object.keys(JOB_ACTIONS).join(", ")}`, "action.notfound");
				ctx.meta.$responseType = "application/xml; charset=utf-8";
				return actionFormXml(name, JOB_ACTIONS[name]);
			},
		},
	},
	events: {
		async "config.changed"(this: This, ctx: Context<ConfigChange>) {
			if (overlaps(ctx.params.Path, NODE_SETTINGS_PATH)) await this.applyNodeSettings();
		},
	},
	methods: {
		schemas(this: This) {
			const out = new Map<string, ObjectSchema>(Object.entries(FRONTEND_SCHEMAS));
			for (const s of this.broker.registry.getServiceList({ onlyAvailable: true }) as RegistryService[]) {
				const schema = s.settings?.configSchema;
				if (schema && typeof schema === "object" && !s.name.startsWith("$")) out.set(`services/${s.name}`, schema as ObjectSchema);
			}
			return out;
		},
		async applyNodeSettings(this: This) {
			const v = await this.tree.get(NODE_SETTINGS_PATH);
			const wanted = v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, Json>).logLevel : undefined;
			// Without a level in the tree, the node keeps (or goes back to) its LOG_LEVEL and LOG_SHIP_LEVEL.
			const level = typeof wanted === "string" && isLogLevel(wanted) ? wanted : undefined;
			if (this.logLevel.apply(level)) this.logger.info(level ? `Log level is now ${level} (console and shipped log)` : "Log level is now LOG_LEVEL's, and LOG_SHIP_LEVEL's for the shipped log");
		},
	},
	created(this: This) {
		const factory = (this.broker as unknown as { loggerFactory?: { appenders?: unknown[] } }).loggerFactory;
		this.logLevel = LogLevelControl.of(this.broker, loadConfig().logLevel, () => factory?.appenders ?? []);
	},
	async started(this: This) {
		this.tree = new ConfigTree({ repo: new ConfigRepo(this.db), schemas: () => this.schemas() });
		await this.applyNodeSettings();
	},
};

export = ConfigService;
