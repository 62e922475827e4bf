// Cells' views of the cluster (ctl services, registry items, processes, peers) built from the Moleculer registry.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fieldType } from "../config-tree/schemas";
import type { NodeInfo, RegistryNode, RegistryService } from "./model";

export type ServiceStatus = "STARTED" | "STOPPED";
export interface CtlPeer {
	Id: string;
	Address?: string;
	Metadata?: Record<string, string>;
}
export interface CtlService {
	Name: string;
	Version?: string;
	Description?: string;
	Tag?: string;
	Controllable: boolean;
	Status: ServiceStatus;
	RunningPeers: CtlPeer[];
	Metadata?: Record<string, string>;
}

/** Services no operator may stop: the broker's own. */
export const UNCONTROLLABLE = new Set(["$node"]);

/** First line of a service file's header comment, as its description (services publish it in `metadata`). */
function describe(svc: RegistryService): string | undefined {
	const d = svc.metadata?.description;
	return typeof d === "string" ? d : undefined;
}

/** One entry per service name: where it runs (STARTED), or, for the known service files running nowhere, STOPPED. */
export function serviceCollection(services: RegistryService[], nodes: RegistryNode[], known: string[], describeFile: (name: string) => string | undefined = () => undefined): CtlService[] {
	const byNode = new Map(nodes.map((n) => [n.id, n]));
	const byName = new Map<string, CtlService>();
	for (const svc of services) {
		const entry = byName.get(svc.name) ?? {
			Name: svc.name,
			Version: svc.version === undefined ? undefined : String(svc.version),
			Description: describe(svc) ?? describeFile(svc.name),
			Tag: svc.name.startsWith("$") ? "broker" : "cellar",
			Controllable: !UNCONTROLLABLE.has(svc.name),
			Status: "STARTED" as ServiceStatus,
			RunningPeers: [],
		};
		const ids = svc.nodes ?? (svc.nodeID ? [svc.nodeID] : []);
		for (const id of ids) {
			const n = byNode.get(id);
			if (!n?.available || entry.RunningPeers.some((p) => p.Id === id)) continue;
			entry.RunningPeers.push({ Id: id, Address: n.ipList?.[0], Metadata: { hostname: n.hostname ?? "" } });
		}
		if (entry.RunningPeers.length) byName.set(svc.name, entry);
	}
	for (const name of known) {
		if (!byName.has(name)) byName.set(name, { Name: name, Description: describeFile(name), Tag: "cellar", Controllable: true, Status: "STOPPED", RunningPeers: [] });
	}
	return [...byName.values()].sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
}

export type RegistryType = "ALL" | "NODE" | "SERVICE" | "SERVER" | "ENDPOINT" | "ADDRESS" | "PROCESS" | "TAG" | "EDGE" | "DAO" | "GENERIC" | "STATS";

export interface RegistryItem {
	id: string;
	name: string;
	metadata?: Record<string, string>;
	node?: { hostname?: string; ips?: string[]; advertiseIp?: string; machine?: string };
	service?: { version?: string; tags?: string[] };
	server?: { protocol?: string };
	generic?: { type: RegistryType };
}

function nodeMetadata(info: NodeInfo | undefined, n: RegistryNode): Record<string, string> {
	const m: Record<string, string> = { available: String(n.available) };
	if (n.cpu !== undefined && n.cpu !== null) m.cpu = String(n.cpu);
	if (n.client?.version) m.moleculer = n.client.version;
	if (info) {
		Object.assign(m, {
			pid: String(info.Pid),
			uptime: String(Math.round(info.Uptime)),
			memoryRss: String(info.MemoryRss),
			memoryHeapUsed: String(info.MemoryHeapUsed),
			memoryTotal: String(info.MemoryTotal),
			memoryFree: String(info.MemoryFree),
			cpuLoad: String(info.CpuLoad),
			cores: String(info.Cores),
			version: info.Version,
			nodeVersion: info.NodeVersion,
			logLevel: info.LogLevel,
			services: info.Services.join(","),
		});
	} else if (n.services) m.services = n.services.map((s) => s.name).join(",");
	return m;
}

/** Registry items of the wanted types and names (none given: all). */
export function registryItems(services: RegistryService[], nodes: RegistryNode[], infos: Map<string, NodeInfo>, types: string[], names: string[]): RegistryItem[] {
	const want = (t: RegistryType) => types.length === 0 || types.includes("ALL") || types.includes(t);
	const named = (n: string) => names.length === 0 || names.includes(n);
	const items: RegistryItem[] = [];
	if (want("NODE")) {
		for (const n of nodes) {
			if (!n.available || !named(n.id)) continue;
			items.push({ id: n.id, name: n.id, metadata: nodeMetadata(infos.get(n.id), n), node: { hostname: n.hostname, ips: n.ipList ?? [], advertiseIp: n.ipList?.[0], machine: n.client?.langVersion ? `nodejs ${n.client.langVersion}` : undefined } });
		}
	}
	if (want("SERVICE")) {
		for (const s of services) {
			if (!named(s.name)) continue;
			const at = s.nodes ?? (s.nodeID ? [s.nodeID] : []);
			items.push({ id: s.fullName ?? s.name, name: s.name, metadata: { nodes: at.join(","), ...(describe(s) ? { description: describe(s) as string } : {}) }, service: { version: s.version === undefined ? undefined : String(s.version), tags: s.name.startsWith("$") ? ["broker"] : ["cellar"] } });
		}
	}
	if (want("ENDPOINT")) {
		for (const s of services) {
			for (const a of Object.values(s.actions ?? {})) {
				if (!named(a.name)) continue;
				const rest = typeof a.rest === "string" ? a.rest : a.rest === undefined ? "" : JSON.stringify(a.rest);
				items.push({ id: a.name, name: a.name, metadata: { service: s.name, ...(rest ? { rest } : {}), nodes: (s.nodes ?? []).join(",") } });
			}
		}
	}
	if (want("PROCESS")) {
		for (const [id, info] of infos) {
			if (!named(String(info.Pid)) && !named(id)) continue;
			items.push({ id: `${id}:${info.Pid}`, name: String(info.Pid), metadata: { nodeID: id, parentPid: String(info.ParentPid), services: info.Services.join(",") }, generic: { type: "PROCESS" } });
		}
	}
	if (want("ADDRESS")) {
		for (const n of nodes) for (const ip of n.ipList ?? []) if (n.available && named(ip)) items.push({ id: `${n.id}/${ip}`, name: ip, metadata: { nodeID: n.id }, generic: { type: "ADDRESS" } });
	}
	return items;
}

export interface ProcessView {
	ID: string;
	ParentID: string;
	PeerId: string;
	PeerAddress: string;
	StartTag: string;
	Services: string[];
}

export function processes(infos: NodeInfo[], peerId?: string, serviceName?: string): ProcessView[] {
	return infos
		.filter((i) => (!peerId || i.NodeId === peerId) && (!serviceName || i.Services.includes(serviceName)))
		.map((i) => ({ ID: String(i.Pid), ParentID: String(i.ParentPid), PeerId: i.NodeId, PeerAddress: i.Addresses[0] ?? i.Hostname, StartTag: i.StartTag, Services: i.Services }));
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A Cells admin form (XML) of the object a service keeps at `services/<name>`, from its declared schema. */
export function formXml(service: string, schema: Record<string, unknown>, current: Record<string, unknown> = {}): string {
	const params = Object.entries(schema)
		.filter(([k]) => !k.startsWith("$$"))
		.map(([k, rule]) => {
			const r = (typeof rule === "object" && rule ? rule : {}) as { description?: string; values?: unknown[]; optional?: boolean; default?: unknown };
			const attrs: [string, string][] = [["name", k], ["type", fieldType(rule)], ["label", k], ["description", r.description ?? ""], ["mandatory", String(!r.optional)]];
			if (Array.isArray(r.values)) attrs.push(["choices", r.values.map((v) => `${String(v)}|${String(v)}`).join(",")]);
			if (r.default !== undefined) attrs.push(["default", String(r.default)]);
			if (current[k] !== undefined) attrs.push(["value", typeof current[k] === "string" ? (current[k] as string) : JSON.stringify(current[k])]);
			return `\t\t<global_param ${attrs.map(([a, v]) => `${a}="${esc(v)}"`).join(" ")}/>`;
		});
	return `<?xml version="1.0" encoding="UTF-8"?>\n<server_settings service="${esc(service)}" path="services/${esc(service)}">\n\t<param_group>\n${params.join("\n")}\n\t</param_group>\n</server_settings>\n`;
}

const descriptions = new Map<string, string | undefined>();

/** The start of a file (a header comment is short), or null when it cannot be read. */
function readHead(file: string): string | null {
	try {
		return readFileSync(file, "utf8").slice(0, 4096);
	} catch {
		return null;
	}
}

/**
 * The first sentence of a service file's header comment ("tree — the node index…" → "the node index…"), read
 * once per file (they do not change while the node runs). The compiled file works as well as the source: tsc
 * writes `"use strict";` before the comment, and keeps the comment because a blank line separates it from the
 * first import (a comment attached to an import of types only is dropped with the import).
 */
export function describeServiceFile(file: string, readText: (f: string) => string | null = readHead): string | undefined {
	if (descriptions.has(file)) return descriptions.get(file);
	const text = readText(file);
	const header = text?.match(/^\s*(?:(["'])use strict\1;?\s*)?\/\*\*([\s\S]*?)\*\//)?.[2];
	let out: string | undefined;
	if (header) {
		const flat = header.split("\n").map((l) => l.replace(/^\s*\*\s?/, "").trim()).join(" ").trim();
		const body = flat.replace(/^[\w$-]+\s+[—-]\s+/, "");
		const end = body.search(/[.:;](\s|$)/);
		out = (end > 0 ? body.slice(0, end) : body).slice(0, 300) || undefined;
	}
	descriptions.set(file, out);
	return out;
}

/**
 * What describes the services of `dir` by name: the files this node runs (`<name><suffix>`, `.service.ts` under
 * tsx, `.service.js` in a build), so a build without sources describes its services too.
 */
export function serviceDescriptions(dir: string, suffix: string): (name: string) => string | undefined {
	return (name) => (/^[A-Za-z0-9_.-]+$/.test(name) ? describeServiceFile(join(dir, `${name}${suffix}`)) : undefined);
}
