/**
 * discovery — the cluster as operators and clients see it, read live from the Moleculer registry: endpoints
 * (GET /config/discovery, public as in Cells: clients probe a server with it), the OpenAPI document of every
 * published action (GET /config/discovery/openapi, logged-in callers),
 * a service's configuration form (GET /config/discovery/forms/{ServiceName}), peers and their folders
 * (/config/peers…), registry items (POST /config/registry), processes (POST /config/processes) and service control
 * (GET/POST /config/ctl: the target node really destroys or loads the service; the gateways route around it).
 * Everything but discovery and openapi is for administrators. Per-node internal actions, called on a given node
 * with the `nodeID` option: nodeInfo, listFolders, createFolder (confined to DATA_DIR and ALLOWED_LOCAL_FOLDERS),
 * control. Emits and consumes no events.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { freemem, hostname, loadavg, networkInterfaces, totalmem, availableParallelism } from "node:os";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { BadRequestError, NotFoundError, ServiceUnavailableError } from "../lib/errors";
import { PeerFolders } from "../lib/discovery/folders";
import { buildOpenApi } from "../lib/discovery/openapi";
import { UNCONTROLLABLE, formXml, processes, registryItems, serviceCollection, serviceDescriptions, type CtlService } from "../lib/discovery/views";
import type { NodeInfo, RegistryNode, RegistryService } from "../lib/discovery/model";
import { LogLevelControl } from "../lib/config-tree/log-level";
import { availableServices } from "../lib/runner";
import { call } from "../lib/contracts";
import { packageInfo } from "../lib/frontend/version";

const SUFFIX = __filename.endsWith(".js") ? ".service.js" : ".service.ts";
const INFO_TIMEOUT = 3000;
/** What the gateway calls to admit any request (credentials, then the REST policies), users for the identities. */
const ADMISSION = ["auth", "policy", "users", "tokens"];

interface Methods {
	nodes(): RegistryNode[];
	services(withActions?: boolean): RegistryService[];
	infos(): Promise<Map<string, NodeInfo>>;
	peerNode(address: string): RegistryNode;
	onPeer<T>(node: RegistryNode, fn: () => Promise<T>): Promise<T>;
	ctlEntry(name: string): CtlService;
}
interface Vars {
	folders: PeerFolders;
	/** Services this node stopped through control, with the file to load them again from. */
	stopped: Map<string, string>;
}
type This = Service & Methods & Vars;

/** Every node runs the same code: a service's description is the header comment of its file here. */
const describeLocal = serviceDescriptions(__dirname, SUFFIX);

function addresses(): string[] {
	const out: string[] = [];
	for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (!a.internal && a.family === "IPv4") out.push(a.address);
	return out.length ? out : ["127.0.0.1"];
}

const DiscoveryService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "discovery",
	settings: { rest: "/" },
	actions: {
		endpoints: {
			rest: "GET /config/discovery",
			params: { EndpointType: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<{ EndpointType?: string }, Meta>) {
				let endpoints: Record<string, string> = { rest: "/a", s3: "/io" };
				if (ctx.params.EndpointType) endpoints = Object.fromEntries(Object.entries(endpoints).filter(([k]) => k === ctx.params.EndpointType));
				// Cells answers anonymous callers too (endpoints only); here the server's make-up is for logged-in
				// callers: an anonymous probe gets 401, which is enough to tell a Cells-like server.
				requireUser(ctx);
				return { PackageType: "cellar", PackageLabel: "Cellar", Version: packageInfo().version, Endpoints: endpoints };
			},
		},
		openapi: {
			rest: "GET /config/discovery/openapi",
			params: { EndpointType: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<unknown, Meta>) {
				// The whole API surface is for logged-in callers (the public discovery policy would let anyone in).
				requireUser(ctx);
				const doc = buildOpenApi(this.services(true), { title: "Cellar REST API", version: packageInfo().version, basePath: "/a" });
				return { Data: Buffer.from(JSON.stringify(doc)).toString("base64") };
			},
		},
		forms: {
			rest: "GET /config/discovery/forms/:ServiceName",
			params: { ServiceName: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ ServiceName: string }, Meta>) {
				requireAdmin(ctx);
				const name = ctx.params.ServiceName;
				const svc = this.services().find((s) => s.name === name);
				if (!svc) throw new NotFoundError(`No running service named ${name.slice(0, 64)}`, "service.notfound");
				const schema = (svc.settings?.configSchema ?? {}) as Record<string, unknown>;
				const current = schema && Object.keys(schema).length ? await call(ctx, "config.get", { Path: `services/${name}` }).catch(() => null) : null;
				ctx.meta.$responseType = "application/xml; charset=utf-8";
				return formXml(name, schema, current && typeof current === "object" && !Array.isArray(current) ? current : {});
			},
		},
		peers: {
			read: true,
			rest: "GET /config/peers",
			params: {},
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { PeerAddresses: this.nodes().filter((n) => n.available).map((n) => n.id).sort() };
			},
		},
		listPeerFolders: {
			rest: "POST /config/peers/:PeerAddress",
			params: { PeerAddress: { type: "string", max: 255 }, Path: { type: "string", optional: true, max: 4096 } },
			async handler(this: This, ctx: Context<{ PeerAddress: string; Path?: string }, Meta>) {
				requireAdmin(ctx);
				const node = this.peerNode(ctx.params.PeerAddress);
				return this.onPeer(node, () => call(ctx, "discovery.listFolders", { Path: ctx.params.Path ?? "" }, { nodeID: node.id }));
			},
		},
		createPeerFolder: {
			rest: "PUT /config/peers/:PeerAddress",
			params: { PeerAddress: { type: "string", max: 255 }, Path: { type: "string", max: 4096 } },
			async handler(this: This, ctx: Context<{ PeerAddress: string; Path: string }, Meta>) {
				requireAdmin(ctx);
				const node = this.peerNode(ctx.params.PeerAddress);
				const created = await this.onPeer(node, () => call(ctx, "discovery.createFolder", { Path: ctx.params.Path }, { nodeID: node.id }));
				return { Success: true, Node: created };
			},
		},
		registry: {
			rest: "POST /config/registry",
			params: {
				options: { type: "object", optional: true, props: { types: { type: "array", optional: true, items: "string", max: 16 }, names: { type: "array", optional: true, items: "string", max: 256 } } },
				adjacentsOptions: { type: "object", optional: true },
			},
			async handler(this: This, ctx: Context<{ options?: { types?: string[]; names?: string[] } }, Meta>) {
				requireAdmin(ctx);
				const types = ctx.params.options?.types ?? [];
				const needInfo = types.length === 0 || types.some((t) => t === "ALL" || t === "NODE" || t === "PROCESS");
				const infos = needInfo ? await this.infos() : new Map<string, NodeInfo>();
				return { items: registryItems(this.services(true), this.nodes(), infos, types, ctx.params.options?.names ?? []) };
			},
		},
		processes: {
			rest: "POST /config/processes",
			params: { PeerId: { type: "string", optional: true, max: 255 }, ServiceName: { type: "string", optional: true, max: 255 } },
			async handler(this: This, ctx: Context<{ PeerId?: string; ServiceName?: string }, Meta>) {
				requireAdmin(ctx);
				return { Processes: processes([...(await this.infos()).values()], ctx.params.PeerId || undefined, ctx.params.ServiceName || undefined) };
			},
		},
		listServices: {
			read: true,
			rest: "GET /config/ctl",
			params: { StatusFilter: { type: "enum", optional: true, values: ["ANY", "STOPPED", "STARTING", "STOPPING", "STARTED"] } },
			async handler(this: This, ctx: Context<{ StatusFilter?: string }, Meta>) {
				requireAdmin(ctx);
				const all = serviceCollection(this.services(), this.nodes(), availableServices(__dirname), describeLocal);
				const f = ctx.params.StatusFilter ?? "ANY";
				const Services = f === "ANY" ? all : all.filter((s) => s.Status === f);
				return { Services, Total: Services.length };
			},
		},
		controlService: {
			rest: "POST /config/ctl",
			params: {
				ServiceName: { type: "string", optional: true, max: 255 },
				NodeName: { type: "string", optional: true, max: 255 },
				Command: { type: "enum", optional: true, values: ["START", "STOP"] },
			},
			async handler(this: This, ctx: Context<{ ServiceName?: string; NodeName?: string; Command?: "START" | "STOP" }, Meta>) {
				requireAdmin(ctx);
				const name = ctx.params.ServiceName ?? "";
				if (!name) throw new BadRequestError("ServiceName is required");
				const command = ctx.params.Command ?? "START";
				// The node the request came through: its gateway is the caller's connection.
				const via = ctx.nodeID ?? this.broker.nodeID;
				const target = ctx.params.NodeName || via;
				const node = this.nodes().find((n) => n.id === target && n.available);
				if (!node) throw new NotFoundError(`No live node ${target.slice(0, 64)} (see GET /a/config/peers)`, "peer.notfound");
				if (command === "STOP") {
					if (UNCONTROLLABLE.has(name)) throw new BadRequestError(`${name} is the broker's own service: it cannot be stopped`);
					if (name === "api" && target === via) throw new BadRequestError(`Stopping api on ${target} would cut the connection this request comes through: stop it through another node's gateway`);
					if (name === "discovery") throw new BadRequestError("Stopping discovery on a node would leave no way to start its services again through the API");
					// Without them no request is admitted any more, this API included: the way back would be a restart.
					if (ADMISSION.includes(name) && !this.services().some((s) => s.name === name && (s.nodes ?? [s.nodeID]).some((id) => id !== target))) {
						throw new BadRequestError(`${name} runs only on ${target}, and every request needs it: start it on another node first`);
					}
				}
				await this.onPeer(node, () => call(ctx, "discovery.control", { ServiceName: name, Command: command }, { nodeID: target, timeout: 30_000 }));
				// The caller's registry learns of the change from the target's INFO packet: wait briefly for it.
				for (let i = 0; i < 50; i++) {
					const runs = this.services().some((s) => s.name === name && (s.nodes ?? [s.nodeID]).includes(target));
					if (runs === (command === "START")) break;
					await new Promise((r) => setTimeout(r, 100));
				}
				return this.ctlEntry(name);
			},
		},
		// ---- on the node itself (nodeID option) ----
		nodeInfo: {
			params: {},
			async handler(this: This) {
				const mem = process.memoryUsage();
				const cores = availableParallelism();
				const factory = (this.broker as unknown as { loggerFactory?: { appenders?: unknown[] } }).loggerFactory;
				const info: NodeInfo = {
					NodeId: this.broker.nodeID,
					Hostname: hostname(),
					Addresses: addresses(),
					Pid: process.pid,
					ParentPid: process.ppid,
					Uptime: process.uptime(),
					MemoryRss: mem.rss,
					MemoryHeapUsed: mem.heapUsed,
					MemoryTotal: totalmem(),
					MemoryFree: freemem(),
					CpuLoad: Math.round((loadavg()[0] / cores) * 1000) / 10,
					Cores: cores,
					Version: packageInfo().version,
					NodeVersion: process.version,
					LogLevel: LogLevelControl.of(this.broker, loadConfig().logLevel, () => factory?.appenders ?? []).level,
					StartTag: process.argv.slice(1).join(" ").slice(0, 1024),
					Services: (this.broker.registry.getServiceList({ onlyLocal: true }) as RegistryService[]).map((s) => s.name).sort(),
				};
				return info;
			},
		},
		listFolders: {
			params: { Path: { type: "string", max: 4096 } },
			async handler(this: This, ctx: Context<{ Path: string }>) {
				return this.folders.list(ctx.params.Path);
			},
		},
		createFolder: {
			params: { Path: { type: "string", max: 4096 } },
			async handler(this: This, ctx: Context<{ Path: string }>) {
				return this.folders.create(ctx.params.Path);
			},
		},
		control: {
			params: { ServiceName: { type: "string", max: 255 }, Command: { type: "enum", values: ["START", "STOP"] } },
			async handler(this: This, ctx: Context<{ ServiceName: string; Command: "START" | "STOP" }>) {
				const name = ctx.params.ServiceName;
				const local = () => (this.broker.registry.getServiceList({ onlyLocal: true }) as RegistryService[]).map((s) => s.name);
				if (ctx.params.Command === "STOP") {
					if (UNCONTROLLABLE.has(name) || name === "discovery") throw new BadRequestError(`${name} cannot be stopped`);
					const svc = this.broker.getLocalService(name) as (Service & { __filename?: string }) | undefined;
					if (!svc) throw new NotFoundError(`${name} does not run on ${this.broker.nodeID}`, "service.notrunning");
					const file = svc.__filename ?? join(__dirname, `${name}${SUFFIX}`);
					await this.broker.destroyService(svc);
					this.stopped.set(name, file);
					this.logger.warn(`Service ${name} stopped through the API`);
					return { Services: local() };
				}
				if (this.broker.getLocalService(name)) return { Services: local() };
				const file = this.stopped.get(name) ?? join(__dirname, `${name}${SUFFIX}`);
				if (!/^[A-Za-z0-9_.-]+$/.test(name) || !existsSync(file)) throw new NotFoundError(`No service ${name.slice(0, 64)} to start on ${this.broker.nodeID}: the services are ${availableServices(__dirname).join(", ")}`, "service.notfound");
				this.broker.loadService(file);
				await this.broker.waitForServices([name], 20_000);
				this.stopped.delete(name);
				this.logger.warn(`Service ${name} started through the API`);
				return { Services: local() };
			},
		},
	},
	methods: {
		nodes(this: This) {
			return this.broker.registry.getNodeList({ onlyAvailable: false, withServices: true }) as unknown as RegistryNode[];
		},
		services(this: This, withActions = false) {
			return this.broker.registry.getServiceList({ onlyAvailable: true, grouping: true, withActions }) as unknown as RegistryService[];
		},
		async infos(this: This) {
			const out = new Map<string, NodeInfo>();
			const live = this.nodes().filter((n) => n.available && n.services?.some((s) => s.name === "discovery"));
			const answers = await Promise.all(live.map((n) => call(this.broker, "discovery.nodeInfo", {}, { nodeID: n.id, timeout: INFO_TIMEOUT }).catch(() => null)));
			for (const a of answers) if (a) out.set(a.NodeId, a);
			return out;
		},
		peerNode(this: This, address: string) {
			const live = this.nodes().filter((n) => n.available);
			const byId = live.find((n) => n.id === address);
			if (byId) return byId;
			const matches = live.filter((n) => n.hostname === address || (n.ipList ?? []).includes(address));
			if (matches.length === 1) return matches[0];
			if (matches.length > 1) throw new BadRequestError(`${address} is the address of ${matches.length} nodes (${matches.map((n) => n.id).join(", ")}): name the node by its id`);
			throw new NotFoundError(`No live peer ${address.slice(0, 64)} (see GET /a/config/peers)`, "peer.notfound");
		},
		async onPeer<T>(this: This, node: RegistryNode, fn: () => Promise<T>) {
			if (!node.services?.some((s) => s.name === "discovery")) throw new ServiceUnavailableError(`Node ${node.id} does not run the discovery service: its folders and services cannot be reached`);
			return fn();
		},
		ctlEntry(this: This, name: string) {
			const entry = serviceCollection(this.services(), this.nodes(), availableServices(__dirname), describeLocal).find((s) => s.Name === name);
			return entry ?? { Name: name, Controllable: true, Status: "STOPPED", RunningPeers: [] };
		},
	},
	created(this: This) {
		const cfg = loadConfig();
		this.folders = new PeerFolders([cfg.dataDir, ...cfg.allowedLocalFolders]);
		this.stopped = new Map();
	},
};

export = DiscoveryService;
