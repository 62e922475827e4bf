/**
 * install — the first-run set-up and Cells' install routes. On start, in the background (a cluster may start
 * it before the services it needs), it waits for roles/users/workspaces and calls their idempotent `ensure*`
 * actions, retrying until it succeeds; then it writes DATA_DIR/install.json and prints, once, the URL and the
 * administrator's credentials. A node that finds install.json only prints where it listens.
 * REST: GET /install (defaults describing this server), POST /install (409 once installed), POST /install/check,
 * GET /install/agreement, GET /install/events.
 * Internal: `install.status` {} -> {Installed, State, InstalledAt?, LastError?, Events[{Step, Progress, Message, Timestamp, Success}]}; `install.ready` {timeout?} waits
 * for the set-up to finish (tests, scripts).
 * Calls: `roles.ensureDefaults`, `users.ensureAdmin` {login, password?}, `workspaces.ensureDefaults`.
 * Emits nothing.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { AddressInfo } from "node:net";
import { loadConfig, type CellarConfig } from "../lib/config";
import { isAdmin, type Meta } from "../lib/auth/identity";
import { BadRequestError, ConflictError, ForbiddenError } from "../lib/errors";
import { checkIdentifier } from "../lib/identity/validate";
import { packageInfo } from "../lib/frontend/version";
import { readRecord, writeRecord, type InstallEvent, type InstallRecord } from "../lib/install/record";
import { runSetup, type SetupResult } from "../lib/install/setup";
import { installDefaults, publicUrl, type InstallConfig } from "../lib/install/defaults";
import { performCheck } from "../lib/install/checks";
import { agreementText } from "../lib/install/agreement";
import { formatBanner, formatReadyLine, type BannerInput } from "../lib/install/banner";
import { gatewayServing } from "../lib/gateway/readiness";
import { call, serviceRuns } from "../lib/contracts";

type State = "pending" | "running" | "failed" | "done";
type Settings = ServiceSettingSchema & { rest: string };

interface Vars {
	cfg: CellarConfig;
	state: State;
	record: InstallRecord | null;
	events: InstallEvent[];
	lastError?: string;
	running?: Promise<SetupResult>;
	background?: Promise<void>;
	stopping: boolean;
	/** Pending sleeps, ended early when the node stops. */
	sleepers: Set<() => void>;
}
interface Methods {
	backgroundSetup(): Promise<void>;
	performSetup(login: string, password: string | undefined, source: "start" | "installer"): Promise<SetupResult>;
	waitForServicesOrStop(names: string[], timeoutMs: number): Promise<void>;
	sleep(ms: number): Promise<void>;
	gatewayUrl(): Promise<string | undefined>;
	gatewayNodes(): string[];
	print(text: string): void;
}
type InstallThis = Service<Settings> & Vars & Methods;

interface PostParams {
	config?: InstallConfig & { frontendPassword?: string; frontendRepeatPassword?: string };
}

const InstallService: ServiceSchema<Settings, Methods, Vars> = {
	name: "install",
	settings: { rest: "/" },
	actions: {
		getInstall: {
			rest: "GET /install",
			params: {},
			async handler(this: InstallThis, ctx: Context<unknown, Meta>) {
				// Before installation anyone may see what will be set up; afterwards only admins see who administers
				// the server and where its data lives.
				const detailed = !this.record || isAdmin(ctx.meta.user);
				const port = await this.gatewayUrl().then((u) => (u ? Number(new URL(u).port) : undefined));
				return { config: installDefaults(this.cfg, { detailed, port }) };
			},
		},
		postInstall: {
			rest: "POST /install",
			params: { config: { type: "object", optional: true } },
			async handler(this: InstallThis, ctx: Context<PostParams, Meta>) {
				if (this.record) throw new ConflictError("Already installed", "install.done");
				if (this.running) throw new ConflictError("Installation in progress, retry in a moment", "install.running");
				const c = ctx.params.config ?? {};
				const login = c.frontendLogin ? checkIdentifier("frontendLogin", c.frontendLogin, 128) : this.cfg.adminLogin;
				let password = c.frontendPassword || undefined;
				if (password !== undefined) {
					if (password.length < 8) throw new BadRequestError("frontendPassword must be at least 8 characters long");
					if (c.frontendRepeatPassword !== undefined && c.frontendRepeatPassword !== password) throw new BadRequestError("frontendPassword and frontendRepeatPassword differ");
				}
				if (this.cfg.adminPassword) {
					// The operator chose the password: an installer may only confirm it.
					if (password !== undefined && password !== this.cfg.adminPassword) throw new ForbiddenError("ADMIN_PASSWORD is set on this server: the administrator password cannot be chosen here", "install.password.fixed");
					password = this.cfg.adminPassword;
				}
				if (c.dsType && c.dsType !== "LOCAL") throw new BadRequestError(`dsType ${c.dsType} is not supported: Cellar stores files on the local disk (LOCAL)`);
				await this.performSetup(login, password, "installer");
				return { success: true };
			},
		},
		check: {
			rest: "POST /install/check",
			params: { Name: { type: "string", min: 1, max: 64 }, Config: { type: "object", optional: true } },
			async handler(this: InstallThis, ctx: Context<{ Name: string }, Meta>) {
				if (this.record && !isAdmin(ctx.meta.user)) throw new ConflictError("Already installed: checks are reserved to administrators", "install.done");
				return { Result: await performCheck(ctx.params.Name, this.cfg) };
			},
		},
		agreement: {
			rest: "GET /install/agreement",
			params: {},
			handler() {
				return { Text: agreementText() };
			},
		},
		events: {
			rest: "GET /install/events",
			params: {},
			// Cells' InstallEventsResponse only has Success (the set-up is complete). The recorded steps, with their
			// progress, are in install.json and in the internal `install.status` answer.
			handler(this: InstallThis) {
				return { Success: !!this.record };
			},
		},
		status: {
			params: {},
			handler(this: InstallThis) {
				return { Installed: !!this.record, State: this.state, InstalledAt: this.record?.installedAt, LastError: this.lastError, Events: this.record?.events ?? this.events };
			},
		},
		ready: {
			params: { timeout: { type: "number", optional: true, integer: true, min: 0, max: 600_000 } },
			async handler(this: InstallThis, ctx: Context<{ timeout?: number }>) {
				const deadline = Date.now() + (ctx.params.timeout ?? 30_000);
				while (!this.record && Date.now() < deadline && !this.stopping) await new Promise((r) => setTimeout(r, 50));
				return { Installed: !!this.record, State: this.state, LastError: this.lastError };
			},
		},
	},
	methods: {
		async backgroundSetup(this: InstallThis) {
			const existing = readRecord(this.cfg.dataDir);
			if (existing.error) this.logger.warn(`${existing.error}; running the first-run set-up again`);
			if (existing.record) {
				this.record = existing.record;
				this.state = "done";
				const url = await this.gatewayUrl();
				if (url && !this.stopping) this.print(formatReadyLine(url, existing.record.installedAt));
				return;
			}
			let delay = 1000;
			while (!this.stopping && !this.record) {
				try {
					if (this.running) await this.running.catch(() => undefined);
					else await this.performSetup(this.cfg.adminLogin, this.cfg.adminPassword, "start");
				} catch (err) {
					if (this.stopping) return;
					this.logger.warn(`First-run set-up failed (${(err as Error).message}); retrying in ${delay / 1000}s`);
					await this.sleep(delay);
					delay = Math.min(delay * 2, 30_000);
				}
			}
		},

		async performSetup(this: InstallThis, login: string, password: string | undefined, source: "start" | "installer") {
			if (this.running) throw new ConflictError("Installation in progress, retry in a moment", "install.running");
			this.state = "running";
			this.events = [];
			this.running = runSetup(
				{
					call: (action, params) => call(this.broker, action, params, { timeout: 30_000 }),
					waitForServices: (names, timeoutMs) => this.waitForServicesOrStop(names, timeoutMs),
					onEvent: (e) => this.events.push(e),
				},
				{ adminLogin: login, adminPassword: password, version: packageInfo().version, nodeID: this.broker.nodeID },
			);
			try {
				const result = await this.running;
				if (this.stopping) return result;
				writeRecord(this.cfg.dataDir, result.record);
				this.record = result.record;
				this.state = "done";
				this.lastError = undefined;
				const admin = result.admin;
				const banner: BannerInput = {
					url: await this.gatewayUrl(),
					gatewayNodes: this.gatewayNodes(),
					adminLogin: admin.login,
					password: admin.generatedPassword
						? { kind: "generated", value: admin.generatedPassword }
						: !admin.created
							? { kind: "existing" }
							: source === "installer" && password !== this.cfg.adminPassword
								? { kind: "installer" }
								: { kind: "env" },
				};
				this.print(formatBanner(banner));
				return result;
			} catch (err) {
				this.state = "failed";
				this.lastError = (err as Error).message ?? String(err);
				throw err;
			} finally {
				this.running = undefined;
			}
		},

		async waitForServicesOrStop(this: InstallThis, names: string[], timeoutMs: number) {
			const deadline = Date.now() + timeoutMs;
			for (;;) {
				if (this.stopping) throw new Error("the node is stopping");
				const missing = names.filter((n) => !serviceRuns(this.broker, n));
				if (missing.length === 0) return;
				if (Date.now() >= deadline) throw new Error(`service(s) not available after ${Math.round(timeoutMs / 1000)}s: ${missing.join(", ")}`);
				await this.sleep(100);
			}
		},

		sleep(this: InstallThis, ms: number) {
			return new Promise<void>((resolve) => {
				const done = () => {
					clearTimeout(t);
					this.sleepers.delete(done);
					resolve();
				};
				const t = setTimeout(done, ms);
				this.sleepers.add(done);
			});
		},

		/** Where this node's gateway listens, once it does; undefined when this node runs no gateway. */
		async gatewayUrl(this: InstallThis) {
			const api = this.broker.getLocalService("api") as unknown as { server?: { address?: () => AddressInfo | string | null; listening?: boolean } } | undefined;
			if (!api) return undefined;
			for (let i = 0; i < 300 && !this.stopping; i++) {
				const addr = api.server?.listening ? api.server.address?.() : null;
				// The URL is printed as "ready": only once the gateway answers every route of the node.
				if (addr && typeof addr === "object" && gatewayServing(api)) return publicUrl(this.cfg, addr.port);
				await this.sleep(100);
			}
			return publicUrl(this.cfg, this.cfg.port);
		},

		gatewayNodes(this: InstallThis) {
			const list = this.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }) as unknown as Array<{ name: string; nodeID: string }>;
			return [...new Set(list.filter((s) => s.name === "api").map((s) => s.nodeID))];
		},

		print(text: string) {
			// eslint-disable-next-line no-console
			console.log(text);
		},
	},
	created(this: InstallThis) {
		// Read now: a test (or a second node in one process) may change the environment after creation.
		this.cfg = loadConfig();
		this.state = "pending";
		this.record = null;
		this.events = [];
		this.stopping = false;
		this.sleepers = new Set();
	},
	started(this: InstallThis) {
		// Not awaited: the services the set-up needs may live on nodes that start later.
		this.background = this.backgroundSetup().catch((err) => this.logger.error("First-run set-up stopped:", err));
	},
	async stopped(this: InstallThis) {
		this.stopping = true;
		for (const wake of [...this.sleepers]) wake();
		// A set-up call in flight may take a moment to settle: do not hold the shutdown for it.
		await Promise.race([this.background, new Promise((r) => setTimeout(r, 2000).unref())]);
	},
};

export = InstallService;
