/**
 * api — the HTTP gateway (moleculer-web). Publishes every service's `rest` actions under /a (auto-aliases),
 * decodes Cells JSON requests and encodes responses once, at the edge (lib/cells/codec), resolves the caller's
 * credentials (auth.resolve, cached) and enforces IP bans and the REST security policies before any action runs.
 * Consumes: `identity.changed`, `token.revoked` (clear the credential cache), `policy.changed` (reload policies),
 * `config.changed` (empties the response cache, re-reads the upload limit: `config.get` core.uploader),
 * `tree.changed`, `usermeta.changed`, `versions.changed` and `datasources.changed` (drop cached reads and store handles).
 * Serves the LOCAL datasources this node holds to the other nodes at /_peer/store/ (signed with the cluster
 * secret; lib/peers/server) and announces its address for them as `peerUrl` in the node's metadata. In a cluster it
 * claims the LOCAL datasources no node holds yet (`datasources.claimHolder`, lib/peers/holder): all of them once
 * the datasources service answers, then any one created or changed without a holder.
 * Also answers GET /healthz and /readyz (anonymous: lib/gateway/health) and, with METRICS=true, GET /metrics
 * (Prometheus: lib/metrics/gateway-metrics). Emits nothing.
 */

import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway, { type ApiSettingsSchema, type ApiRouteSchema } from "moleculer-web";
import type { IncomingMessage, ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { loadConfig } from "../lib/config";
import { decode, encode } from "../lib/cells/codec";
import { findOperation, type Operation } from "../lib/cells/spec";
import { toRestError, BodyTimeoutError, ForbiddenError, UnauthorizedError, NotFoundError, ServiceUnavailableError } from "../lib/errors";
import { subjectsOf, type Identity, type Meta } from "../lib/auth/identity";
import { AccessControl } from "../lib/gateway/access";
import { IdentityCache } from "../lib/gateway/identity-cache";
import { ClientAddress } from "../lib/gateway/client-address";
import { triesCredentials } from "../lib/gateway/credential-routes";
import { isScoped, scopedRouteAllowed } from "../lib/gateway/scoped-tokens";
import { applyServerTimeouts, bodyDeadline } from "../lib/gateway/timeouts";
import { ResponseCache, cacheKey, cacheableRequest } from "../lib/gateway/response-cache";
import { CachedConfig } from "../lib/config-tree/cached";
import { UPLOADER_CONFIG_PATH, uploadMaxFromConfig } from "../lib/config-tree/schemas";
import { parseSize, readBody, parseJsonBody } from "../lib/gateway/read-json";
import { IoGateway } from "../lib/io/gateway";
import { isS3Request } from "../lib/io/request";
import { S3Error, errorResponse } from "../lib/io/xml";
import type { GatewayReadiness } from "../lib/gateway/readiness";
import { DataStoresMixin, holderClaim, type DataStoreHandle } from "../mixins/datastores.mixin";
import { derivedKey } from "../lib/auth/jwt";
import { call, type ActivityPosted, type ConfigChange, type DatasourcesChanged, type IdentityChange, type TokenRevoked, type TreeChange, serviceRuns } from "../lib/contracts";
import { EventSocket } from "../lib/gateway/websocket";
import { PublicPages } from "../lib/web/public-page";
import { PeerStoreServer } from "../lib/peers/server";
import { PEER_SECRET_LABEL, advertisedPeerUrl, holds, unheld, withHolder } from "../lib/peers/holder";
import { openStore, type ObjectStore } from "../lib/storage";
import { answerHealth, isHealthRequest } from "../lib/gateway/health";
import { nodeProbes, type NodeProbes } from "../lib/gateway/probes";
import { acceptedLanguage } from "../lib/frontend/i18n";

const cfg = loadConfig();
// Set once the service exists: the request log goes through the service's logger (and its LOG_LEVEL).
let requestLogger: (line: string) => void = () => {};

type Req = IncomingMessage & {
	body?: unknown;
	$params?: Record<string, unknown>;
	$ctx?: Context<unknown, Meta>;
	$alias?: Alias;
	originalUrl?: string;
	$action?: { httpCache?: boolean };
	$cacheKey?: string;
	$cacheGen?: number;
};
interface Alias {
	method: string;
	action?: string;
	path: string;
	fullPath: string;
	$op?: Operation | null;
	$pathKeys?: string[];
	type?: string;
}

function bearer(req: IncomingMessage): string | undefined {
	const h = req.headers.authorization;
	if (h && h.startsWith("Bearer ")) return h.slice(7).trim() || undefined;
	return undefined;
}

/**
 * What Cells' gateway accepts and moleculer-web would not: a trailing slash (`/a/frontend/session/`) names the
 * same route, and a body sent without a JSON Content-Type (curl's `-d` sends a form type) is read as JSON, as
 * grpc-gateway reads every body. A body that does not parse then gets a clear 400 instead of being ignored.
 */
function normaliseRestRequest(req: IncomingMessage): void {
	const url = req.url ?? "";
	const q = url.indexOf("?");
	const path = q < 0 ? url : url.slice(0, q);
	if (path.length > 3 && path.endsWith("/")) req.url = path.replace(/\/+$/, "") + (q < 0 ? "" : url.slice(q));
	const type = String(req.headers["content-type"] ?? "").toLowerCase();
	const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
	if (hasBody && !type.includes("json") && !type.startsWith("multipart/") && !type.startsWith("application/octet-stream")) req.headers["content-type"] = "application/json";
}

function operationOf(alias: Alias): Operation | undefined {
	if (alias.$op === undefined) {
		// moleculer-web keeps alias paths without their leading "/" ("policy/ipbans"): the spec keys have one.
		alias.$op = findOperation(alias.method, "/" + alias.path.replace(/^\/+/, "")) ?? null;
		alias.$pathKeys = [...alias.path.matchAll(/[:*]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
	}
	return alias.$op ?? undefined;
}

const ApiService: ServiceSchema<ApiSettingsSchema, GatewayMethods, GatewayVars> = {
	name: "api",
	mixins: [ApiGateway, DataStoresMixin],
	settings: {
		port: cfg.port,
		ip: cfg.host,
		// autoAliases regenerate after service changes; keep the window short so a starting node answers soon.
		debounceTime: 100,
		log4XXResponses: false,
		logRequest: null,
		logResponse: null,
		use: [
			function requestLog(req: Req, res: ServerResponse, next: () => void) {
				const started = process.hrtime.bigint();
				const id = (req.headers["x-request-id"] as string | undefined)?.slice(0, 128) || randomUUID();
				res.setHeader("X-Request-Id", id);
				res.once("finish", () => {
					const ms = Number(process.hrtime.bigint() - started) / 1e6;
					const user = req.$ctx?.meta.user?.Login ?? "-";
					requestLogger(`${req.method} ${req.originalUrl ?? req.url} ${res.statusCode} ${ms.toFixed(1)}ms ${user}`);
				});
				next();
			},
		] as unknown as ApiSettingsSchema["use"],
		cors: {
			origin: "*",
			methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"],
			allowedHeaders: ["Authorization", "Content-Type", "X-Request-Id", "X-Pydio-Language", "X-Pydio-Minisite"],
			exposedHeaders: ["X-Request-Id"],
			maxAge: 3600,
		},
		routes: [
			{
				path: "/a",
				autoAliases: true,
				mappingPolicy: "restrict",
				bodyParsers: { json: { strict: true, limit: cfg.bodyLimit }, urlencoded: false },
				callOptions: { timeout: cfg.requestTimeout },
				onBeforeCall(this: GatewayThis, ctx: Context<unknown, Meta>, _route: unknown, req: Req, _res: ServerResponse, alias: Alias) {
					return this.prepareCall(ctx, req, alias);
				},
				onAfterCall(this: GatewayThis, ctx: Context<unknown, Meta>, _route: unknown, req: Req, _res: ServerResponse, data: unknown) {
					const op = req.$alias ? operationOf(req.$alias) : undefined;
					if (data === null || typeof data !== "object" || Buffer.isBuffer(data) || typeof (data as { pipe?: unknown }).pipe === "function") return this.remember(ctx, req, data);
					if (!op?.response || ctx.meta.$responseType) return data;
					return this.remember(ctx, req, encode(data, op.response, op.defs) ?? {});
				},
			} as unknown as ApiRouteSchema,
		],
		onError: function (this: GatewayThis, req: Req, res: ServerResponse, err: unknown) {
			this.writeError(req, res, err);
		} as unknown as ApiSettingsSchema["onError"],
	},
	events: {
		// Every local service has started: routes are generated now, not after the debounce, and the node serves.
		"$broker.started"(this: GatewayThis) {
			for (const route of this.routes) if (route.opts.autoAliases) this.regenerateAutoAliases(route);
			this.serving = true;
		},
		"identity.changed"(this: GatewayThis, ctx: Context<IdentityChange>) {
			this.forget();
			this.sockets.identityChanged(ctx.params);
		},
		// Cached tree reads (stat, listings) are only as old as the last change anywhere in the tree.
		"tree.changed"(this: GatewayThis, ctx: Context<TreeChange>) {
			this.responses.clear();
			this.sockets.treeChanged(ctx.params);
		},
		// Pushed to the websocket sessions of their owners (lib/gateway/websocket).
		"jobs.task.changed"(this: GatewayThis, ctx: Context<{ job: Record<string, unknown>; task: Record<string, unknown> }>) {
			this.sockets.taskChanged(ctx.params);
		},
		"activity.posted"(this: GatewayThis, ctx: Context<ActivityPosted>) {
			this.sockets.activityPosted(ctx.params.items);
		},
		// Listings show what the caller follows (`user_subscriptions`).
		"activity.subscribed"(this: GatewayThis) {
			this.responses.clear();
		},
		// Answers built from the configuration tree (bootconf's title) follow it at once.
		"config.changed"(this: GatewayThis, ctx: Context<ConfigChange>) {
			this.responses.clear();
			this.uploadLimit.changed(ctx.params.Path);
		},
		// Stats and listings show the user metadata of their nodes.
		"usermeta.changed"(this: GatewayThis) {
			this.responses.clear();
		},
		// Listings with Versions:true show kept versions: pruned ones must not linger in cached answers.
		"versions.changed"(this: GatewayThis) {
			this.responses.clear();
		},
		"token.revoked"(this: GatewayThis, ctx: Context<TokenRevoked>) {
			this.forget();
			this.sockets.revoked(ctx.params);
		},
		"datasources.changed"(this: GatewayThis, ctx: Context<DatasourcesChanged>) {
			this.responses.clear();
			this.heldStores.clear();
			// Before this node knows the datasources service, the sweep waiting for it at start claims them all.
			if ("name" in ctx.params && serviceRuns(this.broker, "datasources")) void this.claimUnheld([ctx.params.name]);
		},
		"policy.changed"(this: GatewayThis) {
			this.access.invalidate();
			this.forget();
		},
	},
	methods: {
		/**
		 * moleculer-web orders aliases by depth, then by name, where "*" sorts first: `/config/*FullPath` would shadow
		 * `/config/ctl` and every other route of its depth. A wildcard alias takes only what no other alias matches.
		 */
		optimizeAliasesOrder(this: GatewayThis) {
			(ApiGateway.methods as { optimizeAliasesOrder(this: unknown): void }).optimizeAliasesOrder.call(this);
			const wild = (a: { path: string }) => /(^|\/)\*/.test(a.path);
			this.aliases = [...this.aliases.filter((a) => !wild(a)), ...this.aliases.filter(wild)];
		},
		async prepareCall(this: GatewayThis, ctx: Context<unknown, Meta>, req: Req, alias: Alias) {
			const ip = this.addresses.of(req);
			ctx.meta.ip = ip;
			ctx.meta.userAgent = String(req.headers["user-agent"] ?? "").slice(0, 256);
			if (req.headers.cookie) ctx.meta.cookie = req.headers.cookie;
			if (alias.type === "stream") ctx.meta.contentType = String(req.headers["content-type"] ?? "").slice(0, 512);
			const minisite = req.headers["x-pydio-minisite"];
			if (typeof minisite === "string" && minisite) ctx.meta.minisite = minisite.slice(0, 256);
			const language = acceptedLanguage(req.headers["accept-language"]);
			if (language) ctx.meta.language = language;
			const snapshot = await this.access.current();
			if (this.access.isBlocked(snapshot, ip)) throw new ForbiddenError(`Access from ${ip} is refused`, "ip.banned");

			const op = operationOf(alias);
			if (op && req.body !== undefined && req.$params) {
				// Clients send the whole message, path parameters included (Cells reads the full entity): the
				// path's value wins, so those fields are set aside before the body is checked against the spec.
				const keep: Record<string, unknown> = {};
				for (const k of alias.$pathKeys ?? []) if (k in req.$params) keep[k] = req.$params[k];
				let body = req.body;
				if (body && typeof body === "object" && !Array.isArray(body) && alias.$pathKeys?.length) {
					body = { ...(body as Record<string, unknown>) };
					for (const k of alias.$pathKeys) delete (body as Record<string, unknown>)[k];
				}
				const decoded = (decode(body, op.request ?? { type: "object" }, op.defs) ?? {}) as Record<string, unknown>;
				if (req.body && typeof req.body === "object") for (const k of Object.keys(req.body)) delete req.$params[k];
				Object.assign(req.$params, decoded, keep);
			}

			// Whatever token comes along: a valid one of your own does not make guessing other people's passwords right.
			if (triesCredentials(alias.action, req.$params) && this.access.isBanned(snapshot, ip))
				throw new ForbiddenError(`Access from ${ip} is temporarily banned from logging in after too many failed logins`, "ip.banned");

			const token = bearer(req);
			ctx.meta.user = token ? await this.resolveIdentity(token, ip) : null;
			if (isScoped(ctx.meta.user) && !scopedRouteAllowed(alias.action, req.$params, token))
				throw new ForbiddenError(`This token is limited to some files: it cannot call ${req.method} /a/${alias.path.replace(/^\/+/, "")} (only reads and writes of its files, their metadata and its own session state)`, "token.scope.route");

			const path = (req.originalUrl ?? req.url ?? "").split("?")[0].slice(2) || "/";
			if (!this.access.allowed(snapshot, subjectsOf(ctx.meta.user), `rest:${path}`, req.method ?? "GET", ip)) {
				if (ctx.meta.user) throw new ForbiddenError(`You are not allowed to call ${req.method} /a${alias.path.startsWith("/") ? "" : "/"}${alias.path}`, "rest.forbidden");
				throw new UnauthorizedError("You must be logged in to call this operation", "unauthorized");
			}
		},

		async resolveIdentity(this: GatewayThis, token: string, ip: string | undefined): Promise<Identity> {
			const hit = this.identities.get(token);
			if (hit) return hit;
			const generation = this.identities.generation;
			const identity = await call(this.broker, "auth.resolve", { token }, { meta: { ip } });
			this.identities.remember(token, identity, Date.now(), generation);
			return identity;
		},

		/** `peerUrl` in the node's metadata (sent with the node's INFO): where other nodes reach the stores it holds. */
		announcePeerUrl(this: GatewayThis, port: number) {
			if (!port) return;
			const local = (this.broker.registry as unknown as { nodes: { localNode?: { ipList?: string[] } } }).nodes.localNode;
			const url = advertisedPeerUrl({ peerUrl: loadConfig().peerUrl, host: loadConfig().host, port, ips: local?.ipList ?? [] });
			const meta = this.broker.metadata as Record<string, unknown>;
			if (meta.peerUrl === url) return;
			meta.peerUrl = url;
			(this.broker.registry as unknown as { regenerateLocalRawInfo(incSeq: boolean): void }).regenerateLocalRawInfo(true);
		},

		/** Claims the named datasources (all of them when none is named) that no node holds yet, in the background. */
		async claimUnheld(this: GatewayThis, names?: string[]) {
			const claim = holderClaim(this.broker);
			if (!claim.clustered) return;
			try {
				// A change names its datasource: that one is read, not the whole list (a deleted one answers 404: nothing to claim).
				const named = names && (await Promise.all(names.map((name) => call(this.broker, "datasources.get", { name }).catch((e: { code?: number }) => (e?.code === 404 ? null : Promise.reject(e))))));
				const list = named ? named.filter((ds) => ds !== null) : await call(this.broker, "datasources.list", {});
				for (const ds of list) if (unheld(ds, true)) this.logger.info(`Datasource ${ds.Name} is now held by node ${(await withHolder(ds, claim)).PeerAddress}`);
			} catch (err) {
				// The datasources service gone, or a datasource deleted while claimed: the next open claims it (the mixin).
				this.logger.warn(`Could not claim the datasources without a holder: ${(err as Error).message}`);
			}
		},

		forget(this: GatewayThis) {
			this.identities.clear();
			this.responses.clear();
		},

		/** Keeps the answer of an `httpCache` read for the same caller and request (see lib/gateway/response-cache). */
		remember(this: GatewayThis, ctx: Context<unknown, Meta>, req: Req, data: unknown): unknown {
			if (!req.$cacheKey || !req.$action?.httpCache || ctx.meta.$responseHeaders || (ctx.meta.$statusCode ?? 200) !== 200) return data;
			if (data === null || data === undefined || Buffer.isBuffer(data) || (typeof data === "object" && typeof (data as { pipe?: unknown }).pipe === "function")) return data;
			const body = Buffer.from(typeof data === "string" ? data : JSON.stringify(data));
			const type = ctx.meta.$responseType ?? "application/json; charset=utf-8";
			const user = ctx.meta.user;
			this.responses.set(req.$cacheKey, { type, body, user: user?.Login ?? "-" }, user ? user.ExpiresAt * 1000 : Infinity, Date.now(), req.$cacheGen);
			ctx.meta.$responseType = type;
			// The bytes just cached are the answer: moleculer-web sends a Buffer as it is, with $responseType.
			return body;
		},

		/** Answers from the response cache when it can; otherwise hands the request to moleculer-web. */
		onRequest(this: GatewayThis, req: Req, res: ServerResponse, next: (req: Req, res: ServerResponse) => void) {
			const url = req.url ?? "";
			this.probes.metrics.track(req, res);
			if (isHealthRequest(url)) return void answerHealth(req, res, this.probes.health);
			if (url === "/metrics" || url.startsWith("/metrics?")) return this.answerMetrics(req, res);
			const io = isS3Request(req.method, url, req.headers);
			if (!this.serving) return this.answerStarting(req, res, io);
			if (io) return void this.io.handle(req, res);
			if (PeerStoreServer.handles(url)) return void this.peers.handle(req, res);
			if (PublicPages.handles(url)) return void this.web.handle(req, res);
			// Both body readers (readBody below, moleculer-web's parser) wait as long as the client makes them.
			bodyDeadline(req, res, this.bodyTimeoutMs, () => this.writeError(req, res, new BodyTimeoutError(`The request body did not arrive within ${this.bodyTimeoutMs / 1000} s`)));
			if (url.startsWith("/a/")) normaliseRestRequest(req);
			if (!cacheableRequest(req)) return next(req, res);
			const started = process.hrtime.bigint();
			// On a miss the request goes on to moleculer-web; a POST body, already read here, is parsed for it (its
			// own parser sees a finished stream and keeps req.body).
			const pass = (rawBody: string, key?: string) => {
				if (req.method === "POST") {
					try {
						req.body = parseJsonBody(rawBody) ?? {};
					} catch (err) {
						return this.writeError(req, res, err);
					}
				}
				if (key) {
					req.$cacheKey = key;
					req.$cacheGen = this.responses.generation;
				}
				next(req, res);
			};
			const lookup = (rawBody: string) => {
				const snapshot = this.access.peek();
				const token = bearer(req);
				const ip = this.addresses.of(req);
				if (!snapshot || this.access.isBlocked(snapshot, ip)) return pass(rawBody);
				const identity = token ? this.identities.get(token) : null;
				if (identity === undefined) return pass(rawBody);
				const key = cacheKey(req, token, rawBody);
				const hit = this.responses.get(key);
				const path = (req.url ?? "").split("?")[0].slice(2);
				if (hit && this.access.allowed(snapshot, subjectsOf(identity), `rest:${path}`, req.method ?? "GET", ip)) {
					const id = (req.headers["x-request-id"] as string | undefined)?.slice(0, 128) || randomUUID();
					this.responses.serve(res, hit, id);
					requestLogger(`${req.method} ${req.url} 200 ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(1)}ms ${hit.user} (cached)`);
					return;
				}
				pass(rawBody, key);
			};
			if (req.method !== "POST") return lookup("");
			if (req.headers["content-encoding"]) return next(req, res);
			readBody(req, this.bodyLimit).then(lookup, (err) => this.writeError(req, res, err));
		},

		/** Prometheus' text of this node (404 when METRICS is off: nothing is collected then). */
		answerMetrics(this: GatewayThis, req: Req, res: ServerResponse) {
			req.resume();
			if (!this.probes.metrics.enabled) return this.writeError(req, res, new NotFoundError("Metrics are disabled on this node: start it with METRICS=true", "metrics.disabled"));
			this.probes.metrics.render().then(
				(text) => {
					res.setHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
					res.setHeader("Cache-Control", "no-store");
					res.end(req.method === "HEAD" ? undefined : text);
				},
				(err) => this.writeError(req, res, err),
			);
		},

		/** 503 + Retry-After while the node starts, in the caller's dialect (S3 XML on /io, Cells JSON elsewhere). */
		answerStarting(this: GatewayThis, req: Req, res: ServerResponse, io: boolean) {
			req.resume();
			res.statusCode = 503;
			res.setHeader("Retry-After", "1");
			if (io) {
				const r = errorResponse(new S3Error("ServiceUnavailable", "Cellar is starting: retry in a moment"), (req.url ?? "/").split("?")[0], randomUUID());
				for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
				return void res.end(req.method === "HEAD" ? undefined : r.body);
			}
			res.setHeader("Content-Type", "application/json; charset=utf-8");
			res.end(JSON.stringify(toRestError(new ServiceUnavailableError("Cellar is starting: retry in a moment")).body));
		},

		writeError(this: GatewayThis, req: Req, res: ServerResponse, err: unknown) {
			const e = err as { name?: string; code?: number; status?: number; type?: string };
			let mapped = err;
			if (e?.name === "NotFoundError" && e.code === 404 && !(err instanceof NotFoundError)) mapped = new NotFoundError("Unknown API route", "route.not.found");
			else if (typeof e?.status === "number" && e.code === undefined) mapped = { ...e, message: (err as Error).message, code: e.status, type: e.status === 413 ? "payload.too.large" : "bad.request" };
			const { status, body } = toRestError(mapped);
			// A service not (yet) reachable is expected while nodes start or leave: one line, and clients may retry.
			if (status === 503) this.logger.warn(`${req.method} ${req.originalUrl ?? req.url}: ${(err as Error).message}`);
			else if (status >= 500) this.logger.error(`${req.method} ${req.originalUrl ?? req.url}:`, err);
			if (res.headersSent) return void res.end();
			res.statusCode = status;
			if (status === 503) res.setHeader("Retry-After", "1");
			const retryAfter = (err as { data?: { retryAfter?: unknown } } | undefined)?.data?.retryAfter;
			if (status === 429 && typeof retryAfter === "number") res.setHeader("Retry-After", String(Math.ceil(retryAfter)));
			res.setHeader("Content-Type", "application/json; charset=utf-8");
			res.end(JSON.stringify(body));
		},
	},
	created(this: GatewayThis) {
		// Read when the service is created: a test or a second node in the same process may use another port.
		const now = loadConfig();
		this.settings.port = now.port;
		this.settings.ip = now.host;
		requestLogger = (line) => this.logger.info(line);
		this.serving = false;
		this.identities = new IdentityCache();
		this.responses = new ResponseCache();
		this.bodyLimit = parseSize(now.bodyLimit);
		this.bodyTimeoutMs = now.bodyTimeout * 1000;
		this.addresses = new ClientAddress(now.trustedProxies);
		// moleculer-web created its server in its own created(): put the response cache in front of its handler.
		const server = this.server as unknown as import("node:http").Server;
		const [handler] = server.listeners("request") as ((req: Req, res: ServerResponse) => void)[];
		server.removeAllListeners("request");
		server.on("request", (req: Req, res: ServerResponse) => this.onRequest(req, res, handler));
		applyServerTimeouts(server, now.idleTimeout * 1000);
		// Read again after a `config.changed` that touches it; without a config service, no limit.
		const hasConfig = () => serviceRuns(this.broker, "config");
		this.uploadLimit = new CachedConfig(UPLOADER_CONFIG_PATH, async (path) => (hasConfig() ? call(this.broker, "config.get", { Path: path }) : null), uploadMaxFromConfig);
		this.io = new IoGateway({
			identity: (token, ip) => this.resolveIdentity(token, ip),
			call: (action, params, user) => call(this.broker, action, params, { meta: { user } }),
			store: async (name) => (await this.dataStore(name)).store,
			secret: () => derivedKey("io-multipart-uploads"),
			clientIp: (req) => this.addresses.of(req),
			// Only the blacklist: a login ban leaves valid tokens working, and a bad token is refused anyway.
			banned: (ip) => this.access.blockedNow(ip),
			log: (line) => requestLogger(line),
			// A limit that cannot be read (no config node answering) does not stop uploads: it bounds sizes, it
			// grants no access; the next upload reads it again.
			maxUploadSize: () => this.uploadLimit.get().catch(() => 0),
		});
		// The public link page (/public/<hash>) and the web front end's files (/web/assets/…).
		this.web = new PublicPages({ publicLink: (hash) => call(this.broker, "share.publicLink", { hash }, { timeout: cfg.requestTimeout }), log: (line) => this.logger.warn(line) });
		this.access = new AccessControl(() => call(this.broker, "policy.snapshot", {}, { timeout: cfg.requestTimeout, retries: 2 }));
		// `/ws/event` on the same server (lib/gateway/websocket).
		this.sockets = new EventSocket({
			identity: (token, ip) => this.resolveIdentity(token, ip),
			visible: (user, nodes) => call(this.broker, "tree.visible", { Nodes: nodes }, { meta: { user } }),
			workspaces: async (user) => (await call(this.broker, "tree.roots", {}, { meta: { user } })).map((w) => w.UUID),
			clientIp: (req) => this.addresses.of(req),
			blocked: (ip) => this.access.blockedNow(ip),
			log: (line) => this.logger.warn(line),
		});
		this.sockets.attach(server);
		// The raw stores of the LOCAL datasources this node holds, for the other nodes (encryption, if any, is
		// applied by the node that reads: the bytes on the wire are the bytes on disk).
		this.heldStores = new Map();
		this.peers = new PeerStoreServer({
			secret: () => derivedKey(PEER_SECRET_LABEL),
			store: (name) => {
				let s = this.heldStores.get(name);
				if (!s) {
					s = call(this.broker, "datasources.get", { name }).then((ds) => {
						if (!holds(ds, this.broker.nodeID, !!cfg.transporter)) {
							throw new NotFoundError(`Datasource ${name} is not held by node ${this.broker.nodeID}${ds.PeerAddress ? ` (its holder is ${ds.PeerAddress})` : ""}`, "peer.not.holder");
						}
						return openStore(ds, cfg.dataDir);
					});
					s.catch(() => this.heldStores.delete(name));
					this.heldStores.set(name, s);
				}
				return s;
			},
			log: (line) => this.logger.warn(line),
		});
		this.announcePeerUrl(now.port);
		this.probes = nodeProbes(this.broker, this.io.transfers, () => this.serving, now);
	},
	async stopped(this: GatewayThis) {
		this.sockets?.close();
		await this.probes?.release();
	},
	started(this: GatewayThis) {
		const addr = this.server?.address?.() as { port?: number } | null | undefined;
		if (addr?.port) this.logger.info(`Cellar gateway listening on http://127.0.0.1:${addr.port}/a`);
		if (addr?.port) this.announcePeerUrl(addr.port);
		// Not awaited: the datasources service may run on a node that starts later.
		if (loadConfig().transporter) void this.broker.waitForServices("datasources").then(() => this.claimUnheld(), () => undefined);
	},
};

interface GatewayVars extends GatewayReadiness {
	/** moleculer-web's routes (its own typings do not list them). */
	routes: { opts: { autoAliases?: boolean } }[];
	/** moleculer-web's aliases, in matching order. */
	aliases: { path: string }[];
	identities: IdentityCache;
	io: IoGateway;
	web: PublicPages;
	responses: ResponseCache;
	uploadLimit: CachedConfig<number>;
	bodyLimit: number;
	bodyTimeoutMs: number;
	addresses: ClientAddress;
	access: AccessControl;
	sockets: EventSocket;
	peers: PeerStoreServer;
	heldStores: Map<string, Promise<ObjectStore>>;
	probes: NodeProbes;
	server?: { address?: () => unknown };
}
interface GatewayMethods {
	prepareCall(ctx: Context<unknown, Meta>, req: Req, alias: Alias): Promise<void>;
	resolveIdentity(token: string, ip: string | undefined): Promise<Identity>;
	writeError(req: Req, res: ServerResponse, err: unknown): void;
	answerStarting(req: Req, res: ServerResponse, io: boolean): void;
	regenerateAutoAliases(route: { opts: { autoAliases?: boolean } }): void;
	dataStore(name: string): Promise<DataStoreHandle>;
	forget(): void;
	announcePeerUrl(port: number): void;
	claimUnheld(names?: string[]): Promise<void>;
	optimizeAliasesOrder(): void;
	remember(ctx: Context<unknown, Meta>, req: Req, data: unknown): unknown;
	onRequest(req: Req, res: ServerResponse, next: (req: Req, res: ServerResponse) => void): void;
	answerMetrics(req: Req, res: ServerResponse): void;
}
type GatewayThis = Service<ApiSettingsSchema> & GatewayVars & GatewayMethods;

export = ApiService;
