// The domain commands of `npm run repl` (bin/repl.ts wires them into moleculer-repl): each one calls the cluster's
// actions through a typed caller and answers the text to print, so that tests run them against a real broker
// without a terminal. They act as an administrator (REPL_USER): whoever reaches the transporter can call any
// action anyway, and the identity's login ("repl") is what the audit trail and the configuration's author show.
import type { Identity } from "../auth/identity";
import { call, type Caller } from "../contracts";
import type { RegistryNode, NodeInfo } from "../discovery/model";
import { BadRequestError } from "../errors";
import { bytes, date, duration, table } from "./format";

export const REPL_USER: Identity = { Uuid: "cellar.repl", Login: "repl", Profile: "admin", GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: 0 };

export interface ReplContext {
	/** Calls the cluster's actions (the REPL's broker). */
	caller: Caller;
	/** The nodes as the REPL's registry knows them, itself included. */
	nodes(): RegistryNode[];
	/** The REPL's own node id: it runs no service and is left out of `peers`. */
	self: string;
}

const AS_ADMIN = { meta: { user: REPL_USER } };
const LIST_LIMIT = 200;

/** `users [text]`: users (and groups) whose login or display name contains the text; every one without it. */
export async function users(r: ReplContext, text?: string): Promise<string> {
	const q = text?.trim();
	const out = await call(r.caller, "users.search", { Queries: q ? [{ Login: `*${q}*` }] : [], Limit: LIST_LIMIT }, AS_ADMIN);
	const list = (out.Users ?? []) as Record<string, unknown>[];
	const groups = (out.Groups ?? []) as Record<string, unknown>[];
	const attr = (u: Record<string, unknown>, k: string) => (u.Attributes as Record<string, string> | undefined)?.[k];
	const rows = list.map((u) => [String(u.Login ?? ""), attr(u, "profile") ?? "", String(u.GroupPath ?? "/"), attr(u, "displayName") ?? "", date(u.LastConnected as number | undefined)]);
	const lines = [rows.length ? table(["LOGIN", "PROFILE", "GROUP", "DISPLAY NAME", "LAST LOGIN"], rows) : q ? `No user matches "${q}".` : "No users."];
	if (groups.length) lines.push(`Groups: ${groups.map((g) => `${String(g.GroupPath ?? "/").replace(/\/$/, "")}/${String(g.GroupLabel ?? "")}`).join(", ")}`);
	const total = Number(out.Total ?? rows.length + groups.length);
	if (total > rows.length + groups.length) lines.push(`(${rows.length + groups.length} of ${total} shown: narrow with users <text>)`);
	return lines.join("\n");
}

/** `tree ls <path>`: the children of a datasource path (`<datasource>/<folder>`); the datasources at the root. */
export async function treeLs(r: ReplContext, path = ""): Promise<string> {
	const out = await call(r.caller, "tree.adminList", { Node: { Path: path.replace(/^\/+/, "") }, Limit: LIST_LIMIT }, AS_ADMIN);
	if (!out.Children.length) return `${out.Parent.Path || "/"}: empty`;
	const rows = out.Children.map((n) => [n.Type === "COLLECTION" ? "dir" : "file", n.Type === "COLLECTION" ? "" : bytes(n.Size), date(n.MTime), n.Path]);
	const more = out.Children.length === LIST_LIMIT ? `\n(first ${LIST_LIMIT} entries)` : "";
	return table(["TYPE", "SIZE", "MODIFIED", "PATH"], rows) + more;
}

/** `tree stat <path>`: one node of the index by its datasource path. */
export async function treeStat(r: ReplContext, path: string): Promise<string> {
	if (!path?.trim()) throw new BadRequestError("Usage: tree stat <datasource>/<path>");
	const { Node } = await call(r.caller, "tree.adminStat", { Node: { Path: path.replace(/^\/+/, "") } }, AS_ADMIN);
	const rows: [string, string][] = [
		["Path", Node.Path],
		["Uuid", Node.Uuid],
		["Type", Node.Type],
		["Size", Node.Size === undefined ? "" : `${bytes(Node.Size)} (${Node.Size})`],
		["Modified", date(Node.MTime)],
		["Etag", Node.Etag ?? ""],
		...Object.entries(Node.MetaStore ?? {}).map(([k, v]): [string, string] => [k, v]),
	];
	return table(["FIELD", "VALUE"], rows.filter(([, v]) => v !== ""));
}

/** `datasources`: every datasource, where its bytes are (never its keys). */
export async function datasources(r: ReplContext): Promise<string> {
	const list = await call(r.caller, "datasources.list", {}, AS_ADMIN);
	if (!list.length) return "No datasources.";
	const where = (d: (typeof list)[number]) => {
		const c = d.StorageConfiguration ?? {};
		if (d.StorageType === "LOCAL") return c.folder ?? d.ObjectsBaseFolder ?? "";
		return [d.ObjectsHost ? `${d.ObjectsHost}${d.ObjectsPort ? `:${d.ObjectsPort}` : ""}` : c.customEndpoint ?? "", d.ObjectsBucket ?? ""].filter(Boolean).join("/");
	};
	const flags = (d: (typeof list)[number]) => [d.FlatStorage ? "flat" : "structured", d.Disabled ? "disabled" : "", d.EncryptionMode && d.EncryptionMode !== "CLEAR" ? `encrypted:${d.EncryptionMode}` : "", d.VersioningPolicyName ? `versions:${d.VersioningPolicyName}` : ""].filter(Boolean).join(",");
	return table(["NAME", "TYPE", "PEER", "WHERE", "FLAGS"], list.map((d) => [d.Name, d.StorageType ?? "", d.PeerAddress ?? "", where(d), flags(d)]));
}

/** `jobs`: every user's jobs with their latest task. */
export async function jobs(r: ReplContext): Promise<string> {
	const { Jobs } = await call(r.caller, "jobs.list", { Owner: "*" }, AS_ADMIN);
	if (!Jobs.length) return "No jobs.";
	const rows = Jobs.map((j) => {
		const tasks = (j.Tasks ?? []) as Record<string, unknown>[];
		const last = tasks.reduce<Record<string, unknown> | undefined>((a, t) => (!a || Number(t.StartTime ?? 0) >= Number(a.StartTime ?? 0) ? t : a), undefined);
		const progress = last?.HasProgress && typeof last.Progress === "number" ? ` ${Math.round(last.Progress * 100)}%` : "";
		return [String(j.ID), String(j.Label ?? ""), String(j.Owner ?? ""), last ? `${String(last.Status)}${progress}` : "-", date(last?.StartTime as number | undefined), String(last?.StatusMessage ?? "").slice(0, 80)];
	});
	return table(["ID", "LABEL", "OWNER", "LAST TASK", "STARTED", "MESSAGE"], rows);
}

/** `peers`: the cluster's nodes, what each says about itself (discovery.nodeInfo on that node). */
export async function peers(r: ReplContext): Promise<string> {
	const nodes = r.nodes().filter((n) => n.id !== r.self);
	if (!nodes.length) return "No other node: this REPL is not connected to a cluster (same NAMESPACE and TRANSPORTER as the nodes?).";
	const infos = await Promise.all(
		nodes.map((n) => (n.available && n.services?.some((s) => s.name === "discovery") ? call(r.caller, "discovery.nodeInfo", {}, { nodeID: n.id, timeout: 3000 }).catch(() => null) : Promise.resolve(null as NodeInfo | null))),
	);
	const rows = nodes.map((n, i) => {
		const info = infos[i];
		const services = (info?.Services ?? (n.services ?? []).map((s) => s.name).filter((s) => !s.startsWith("$"))).filter((s) => !s.startsWith("$"));
		return [
			n.id,
			n.available ? "up" : "down",
			info?.Hostname ?? n.hostname ?? "",
			info?.Addresses[0] ?? n.ipList?.[0] ?? "",
			info ? String(info.Pid) : "",
			info ? duration(info.Uptime) : "",
			info ? bytes(info.MemoryRss) : "",
			info ? `${info.CpuLoad}%` : n.cpu != null ? `${n.cpu}%` : "",
			info?.Version ?? "",
			services.sort().join(","),
		];
	});
	return table(["NODE", "STATE", "HOST", "ADDRESS", "PID", "UPTIME", "RSS", "CPU", "VERSION", "SERVICES"], rows);
}

/** `config get <path>`: the value at a path of the configuration tree, as indented JSON. */
export async function configGet(r: ReplContext, path: string): Promise<string> {
	if (!path?.trim()) throw new BadRequestError("Usage: config get <path> (for instance services/config)");
	const value = await call(r.caller, "config.get", { Path: path }, AS_ADMIN);
	return value === null ? `${path}: not set` : JSON.stringify(value, null, 2);
}

/** `config set <path> <json>`: validated and stored like PUT /a/config/{path}, then applied on every node. */
export async function configSet(r: ReplContext, path: string, json: string): Promise<string> {
	if (!path?.trim() || json === undefined) throw new BadRequestError(`Usage: config set <path> <json> (for instance config set services/config '{"logLevel":"debug"}')`);
	try {
		JSON.parse(json);
	} catch {
		throw new BadRequestError(`Not JSON: ${json.slice(0, 100)} (quote it: config set ${path} '{"key":"value"}')`);
	}
	const out = await call(r.caller, "config.putConfig", { FullPath: path, Data: json }, AS_ADMIN);
	return `${out.FullPath} = ${out.Data}`;
}
