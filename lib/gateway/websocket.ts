// `/ws/event`, the websocket Cells' web client keeps open (bootconf ENDPOINT_WEBSOCKET). The client sends
// `{"@type":"subscribe","jwt":"…"}` (again when its token is refreshed) and `{"@type":"unsubscribe"}`; the server
// pushes, as Cells' gateway/websocket does:
// - node changes (tree.NodeChangeEvent in protojson: `Type` omitted for CREATE, `Target`/`Source` nodes with their
//   path in the reader's workspace and `MetaStore.EventWorkspaceId`), once per workspace where the reader can read
//   the node; creations and updates of one node are merged for `batchMs`, the rest go at once;
// - task changes (`{TaskUpdated, Job}`) to the task's owner (system tasks to administrators);
// - new inbox activities (`{JsonType:"activity", OwnerType:"USER", OwnerId, BoxName:"inbox", Activity}`) to their
//   owner, unless the owner is the actor;
// - `{JsonType:"idm", Type:"UPDATE", …}` when the session's user, roles, ACLs or workspaces changed: the client
//   reloads what it shows (and the session's identity is resolved again: a revoked token closes it).
// Every node of a cluster runs this for its own connections: the events it pushes are cluster broadcasts.
// Each session sends at most `ratePerSec` messages a second (bursts of twice that), the rest queued up to
// `queueMax`, then dropped (the oldest). Changes ready together are checked in one tree call per distinct user.
// Sockets are pinged every 30 s (one that did not answer is cut); one that does not subscribe within a minute is
// closed.
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, WebSocket, type RawData } from "ws";
import { isAdmin, type Identity } from "../auth/identity";
import type { TreeChange, VisibleNode } from "../contracts/tree";
import type { IdentityChange } from "../contracts/identity";
import type { ActivityObject } from "../activity/model";
import { baseName } from "../tree/paths";

export const WS_EVENT_PATH = "/ws/event";
const SYSTEM_USER = "pydio.system.user";
/** Node changes waiting to be merged or sent, at most: past that they are sent unmerged, then the oldest dropped. */
const MAX_PENDING = 10_000;
/** A socket is pinged this often; one that did not answer the previous ping is cut. */
const PING_MS = 30_000;
/** A socket that does not subscribe within this time is closed (it would only hold a connection). */
const SUBSCRIBE_WITHIN_MS = 60_000;

export interface EventSocketDeps {
	/** The identity of a token (the gateway's credential resolution); throws for a bad one. */
	identity(token: string, ip: string | undefined): Promise<Identity>;
	/** The uuids of the workspaces a user can open (to tell them only about those); absent: every session is told. */
	workspaces?(user: Identity): Promise<string[]>;
	/** Where datasource nodes show for a user (`tree.visible` as that user). */
	visible(user: Identity, nodes: { ds: string; path: string }[]): Promise<VisibleNode[]>;
	clientIp(req: IncomingMessage): string | undefined;
	/** Whether an address is refused everything (the administrators' blacklist). */
	blocked(ip: string | undefined): boolean;
	log(line: string): void;
	batchMs?: number;
	ratePerSec?: number;
	queueMax?: number;
}

interface Session {
	ws: WebSocket;
	ip?: string;
	token?: string;
	user?: Identity;
	tokens: number;
	refilled: number;
	queue: string[];
	timer?: NodeJS.Timeout;
	dropped: number;
	alive: boolean;
	/** The user's workspaces, when known. */
	workspaces?: Set<string>;
	/** Closes the socket if it has not subscribed in time. */
	idle?: NodeJS.Timeout;
}

type WireNode = Record<string, unknown>;

const NODE_EVENT: Record<TreeChange["type"], string | undefined> = { create: undefined, content: "UPDATE_CONTENT", meta: "UPDATE_META", delete: "DELETE", move: "UPDATE_PATH" };

function wireNode(change: TreeChange, path: string, name: string, wsUuid: string): WireNode {
	const n = change.node;
	const meta: Record<string, string> = { ...(n.meta ?? {}), name: JSON.stringify(name), EventWorkspaceId: JSON.stringify(wsUuid) };
	const out: WireNode = { Uuid: n.Uuid, Path: path, Type: n.type === "LEAF" ? "LEAF" : "COLLECTION", MetaStore: meta };
	if (n.size) out.Size = String(n.size);
	if (n.mtime) out.MTime = String(n.mtime);
	if (n.etag) out.Etag = n.etag;
	return out;
}

export class EventSocket {
	private readonly wss: WebSocketServer;
	private readonly sessions = new Set<Session>();
	/** The subscribed sessions by their user's login: what is for one user reaches them without a scan of all. */
	private readonly byLogin = new Map<string, Set<Session>>();
	private readonly pending = new Map<string, { change: TreeChange; timer: NodeJS.Timeout }>();
	private outgoing: TreeChange[] = [];
	private dispatching = false;
	private readonly keepalive: NodeJS.Timeout;
	private readonly batchMs: number;
	private readonly rate: number;
	private readonly queueMax: number;

	constructor(private readonly deps: EventSocketDeps) {
		this.wss = new WebSocketServer({ noServer: true, maxPayload: 8192 });
		this.batchMs = deps.batchMs ?? 500;
		this.rate = deps.ratePerSec ?? 20;
		this.queueMax = deps.queueMax ?? 500;
		this.keepalive = setInterval(() => {
			for (const s of this.sessions) {
				if (!s.alive) {
					this.forget(s);
					s.ws.terminate();
					continue;
				}
				s.alive = false;
				s.ws.ping();
			}
		}, PING_MS);
		this.keepalive.unref?.();
	}

	/** Takes the upgrades of `server` for /ws/event; any other upgrade is answered 404. */
	attach(server: Server): void {
		server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
			const path = (req.url ?? "").split("?")[0].replace(/\/+$/, "");
			const ip = this.deps.clientIp(req);
			if (path !== WS_EVENT_PATH || this.deps.blocked(ip)) {
				socket.end(`HTTP/1.1 ${path !== WS_EVENT_PATH ? "404 Not Found" : "403 Forbidden"}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
				return;
			}
			this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, ip));
		});
	}

	get size(): number {
		return this.sessions.size;
	}

	close(): void {
		clearInterval(this.keepalive);
		for (const p of this.pending.values()) clearTimeout(p.timer);
		this.pending.clear();
		for (const s of this.sessions) this.end(s, 1001, "server stopping");
		this.wss.close();
	}

	private open(ws: WebSocket, ip: string | undefined): void {
		const s: Session = { ws, ip, tokens: this.rate * 2, refilled: Date.now(), queue: [], dropped: 0, alive: true };
		this.sessions.add(s);
		this.expectSubscribe(s);
		ws.on("pong", () => (s.alive = true));
		ws.on("message", (data: RawData) => void this.message(s, data));
		ws.on("close", () => this.forget(s));
		ws.on("error", () => this.forget(s));
	}

	private expectSubscribe(s: Session): void {
		if (s.idle) clearTimeout(s.idle);
		s.idle = setTimeout(() => {
			if (!s.user) this.end(s, 1008, "subscribe first");
		}, SUBSCRIBE_WITHIN_MS);
		s.idle.unref?.();
	}

	private forget(s: Session): void {
		if (s.timer) clearTimeout(s.timer);
		if (s.idle) clearTimeout(s.idle);
		this.setUser(s, undefined);
		this.sessions.delete(s);
	}

	/** A session's user (none: unsubscribed), kept in the index by login. */
	private setUser(s: Session, user: Identity | undefined): void {
		const before = s.user?.Login;
		s.user = user;
		if (before === user?.Login) return;
		if (before !== undefined) {
			const mine = this.byLogin.get(before);
			mine?.delete(s);
			if (mine && !mine.size) this.byLogin.delete(before);
		}
		if (user) {
			let mine = this.byLogin.get(user.Login);
			if (!mine) this.byLogin.set(user.Login, (mine = new Set()));
			mine.add(s);
		}
	}

	private end(s: Session, code: number, reason: string): void {
		this.forget(s);
		try {
			s.ws.close(code, reason.slice(0, 120));
		} catch {
			s.ws.terminate();
		}
	}

	/** Cells answers a bad message or a bad token with an error message, then closes. */
	private refuse(s: Session, error: string): void {
		if (s.ws.readyState === WebSocket.OPEN) s.ws.send(JSON.stringify({ "@type": "error", error }));
		this.end(s, 1008, error);
	}

	private async message(s: Session, data: RawData): Promise<void> {
		let msg: { "@type"?: unknown; jwt?: unknown };
		try {
			msg = JSON.parse(data.toString());
		} catch {
			return this.refuse(s, "invalid message: not JSON");
		}
		if (msg?.["@type"] === "unsubscribe") {
			this.setUser(s, undefined);
			s.token = undefined;
			this.expectSubscribe(s);
			return;
		}
		if (msg?.["@type"] !== "subscribe") return;
		if (typeof msg.jwt !== "string" || !msg.jwt) return this.refuse(s, "empty jwt");
		try {
			const user = await this.deps.identity(msg.jwt, s.ip);
			// Closed while its token was checked: nothing to index.
			if (!this.sessions.has(s)) return;
			this.setUser(s, user);
			s.token = msg.jwt;
			this.loadWorkspaces(s);
		} catch (e) {
			this.refuse(s, `invalid jwt: ${(e as Error).message}`);
		}
	}

	/** Sessions with a user whose token is still valid: all of them, or those of one login. */
	private live(login?: string): (Session & { user: Identity })[] {
		const now = Date.now() / 1000;
		const among = login === undefined ? this.sessions : (this.byLogin.get(login) ?? []);
		return [...among].filter((s): s is Session & { user: Identity } => !!s.user && (!s.user.ExpiresAt || s.user.ExpiresAt > now));
	}

	private send(s: Session, message: string): void {
		if (s.queue.length >= this.queueMax) {
			s.queue.shift();
			s.dropped++;
		}
		s.queue.push(message);
		this.drain(s);
	}

	private drain(s: Session): void {
		if (s.timer) return;
		const now = Date.now();
		s.tokens = Math.min(this.rate * 2, s.tokens + ((now - s.refilled) / 1000) * this.rate);
		s.refilled = now;
		while (s.queue.length && s.tokens >= 1 && s.ws.readyState === WebSocket.OPEN) {
			s.tokens--;
			s.ws.send(s.queue.shift() as string);
		}
		if (s.queue.length && s.ws.readyState === WebSocket.OPEN) {
			s.timer = setTimeout(() => {
				s.timer = undefined;
				this.drain(s);
			}, Math.ceil(1000 / this.rate));
			s.timer.unref?.();
		}
	}

	// ---- node changes ----

	treeChanged(change: TreeChange): void {
		if (!this.sessions.size) return;
		const uuid = change.node.Uuid;
		const mergeable = change.type === "create" || change.type === "content" || change.type === "meta";
		if (mergeable && uuid && this.batchMs > 0 && this.pending.size < MAX_PENDING) {
			const waiting = this.pending.get(uuid);
			// A creation followed by updates is still a creation for whoever has not seen it.
			const merged: TreeChange = waiting && waiting.change.type === "create" ? { ...change, type: "create" } : change;
			if (waiting) {
				waiting.change = merged;
				return;
			}
			const timer = setTimeout(() => {
				const p = this.pending.get(uuid);
				this.pending.delete(uuid);
				if (p) this.ready(p.change);
			}, this.batchMs);
			timer.unref?.();
			this.pending.set(uuid, { change: merged, timer });
			return;
		}
		if (uuid) {
			const p = this.pending.get(uuid);
			if (p) {
				clearTimeout(p.timer);
				this.pending.delete(uuid);
				if (change.type !== "delete") this.ready(p.change);
			}
		}
		this.ready(change);
	}

	/** Queues a change for the next dispatch: what is ready together is checked in one tree call per user. */
	private ready(change: TreeChange): void {
		this.outgoing.push(change);
		if (this.outgoing.length > MAX_PENDING) this.outgoing.splice(0, this.outgoing.length - MAX_PENDING);
		if (this.dispatching) return;
		this.dispatching = true;
		setImmediate(() => void this.dispatchAll());
	}

	private async dispatchAll(): Promise<void> {
		try {
			while (this.outgoing.length) {
				const changes = this.outgoing.splice(0, 200);
				await this.dispatch(changes);
			}
		} finally {
			this.dispatching = false;
		}
	}

	/** Sends changes to every session whose user can see them, one message per change and workspace it shows in. */
	private async dispatch(changes: TreeChange[]): Promise<void> {
		const groups = new Map<string, (Session & { user: Identity })[]>();
		for (const s of this.live()) {
			const key = `${s.user.Login}|${s.user.Roles.join(",")}|${(s.user.Scopes ?? []).join(",")}`;
			groups.set(key, [...(groups.get(key) ?? []), s]);
		}
		if (!groups.size) return;
		// Each change asks where its node is now (target) and where it was (source: a move's origin, a deleted node).
		const asks: { ds: string; path: string }[] = [];
		const slots = changes.map((c) => {
			const isDelete = c.type === "delete";
			const here = { ds: c.node.ds, path: c.node.path };
			const target = isDelete ? -1 : asks.push(here) - 1;
			const source = isDelete ? asks.push(here) - 1 : c.from ? asks.push(c.from) - 1 : -1;
			return { target, source };
		});
		for (const sessions of groups.values()) {
			let seen: VisibleNode[];
			try {
				seen = await this.deps.visible(sessions[0].user, asks);
			} catch (e) {
				this.deps.log(`websocket: cannot check what ${sessions[0].user.Login} sees: ${(e as Error).message}`);
				continue;
			}
			changes.forEach((change, i) => {
				const n = change.node;
				const target = slots[i].target >= 0 ? seen[slots[i].target] : undefined;
				const source = slots[i].source >= 0 ? seen[slots[i].source] : undefined;
				const workspaces = new Set([...(target?.In ?? []), ...(source?.In ?? [])].map((w) => w.UUID));
				for (const wsUuid of workspaces) {
					const t = target?.In.find((w) => w.UUID === wsUuid);
					const src = source?.In.find((w) => w.UUID === wsUuid);
					let type = NODE_EVENT[change.type];
					// A move seen from one end only is a creation or a deletion for this reader.
					if (change.type === "move") type = !src ? undefined : !t ? "DELETE" : "UPDATE_PATH";
					const msg: Record<string, unknown> = {};
					if (type) msg.Type = type;
					if (t) msg.Target = wireNode(change, t.Path, n.name ?? baseName(n.path), wsUuid);
					if (src) msg.Source = wireNode(change, src.Path, baseName(change.type === "delete" ? n.path : (change.from?.path ?? n.path)), wsUuid);
					const text = JSON.stringify(msg);
					for (const s of sessions) this.send(s, text);
				}
			});
		}
	}

	// ---- tasks, activities, identity ----

	taskChanged(ev: { job: Record<string, unknown>; task: Record<string, unknown> }): void {
		const owner = ev.task.TriggerOwner;
		if (typeof owner !== "string") return;
		const text = JSON.stringify({ TaskUpdated: ev.task, Job: ev.job });
		for (const s of owner === SYSTEM_USER ? this.live().filter((x) => isAdmin(x.user)) : this.live(owner)) this.send(s, text);
	}

	activityPosted(items: { ownerId: string; activity: ActivityObject }[]): void {
		for (const { ownerId, activity } of items) {
			if (activity.actor?.id === ownerId) continue;
			const sessions = this.live(ownerId);
			if (!sessions.length) continue;
			const a: ActivityObject = structuredClone(activity);
			for (const o of [a.object, a.origin, a.target]) if (o?.name) o.name = baseName(o.name);
			const text = JSON.stringify({ JsonType: "activity", OwnerType: "USER", OwnerId: ownerId, BoxName: "inbox", Activity: a });
			for (const s of sessions) this.send(s, text);
		}
	}

	/**
	 * Tells the sessions an identity change concerns to reload (Cells' IDM event), and resolves every session's
	 * token again (the gateway's cache was dropped): one that no longer resolves closes its session.
	 */
	identityChanged(change: IdentityChange): void {
		let body: Record<string, unknown>;
		let concerns: (u: Identity, s: Session) => boolean;
		switch (change.kind) {
			case "user":
				body = { User: { Uuid: change.uuid } };
				concerns = (u) => u.Uuid === change.uuid;
				break;
			case "group":
				body = { User: { GroupPath: change.path, IsGroup: true } };
				concerns = (u) => u.GroupPath === change.path || u.GroupPath.startsWith(`${change.path.replace(/\/$/, "")}/`);
				break;
			case "role":
				body = { Role: { Uuid: change.uuid } };
				concerns = (u) => u.Roles.includes(change.uuid);
				break;
			case "acl":
				body = { Acl: { ...(change.RoleID ? { RoleID: change.RoleID } : {}), ...(change.WorkspaceID ? { WorkspaceID: change.WorkspaceID } : {}) } };
				concerns = (u) => !change.RoleID || u.Roles.includes(change.RoleID);
				break;
			default: {
				body = { Workspace: change.uuid ? { UUID: change.uuid } : {} };
				const uuid = change.uuid;
				// Those who have it are told; who gets it newly is told by the ACL change that gives it.
				concerns = (_u, s) => !uuid || !s.workspaces || s.workspaces.has(uuid);
			}
		}
		const text = JSON.stringify({ JsonType: "idm", Type: "UPDATE", ...body });
		const concerned = new Set<Session>(this.live().filter((s) => concerns(s.user, s)));
		for (const s of concerned) this.send(s, text);
		this.recheck((s) => concerned.has(s));
	}

	/** A token revocation: the sessions of that user (or of those sessions), or every session when it names none. */
	revoked(r: { UserUuid?: string; SessionIds?: string[]; TokenIds?: string[] }): void {
		if (r.SessionIds?.length) this.recheck((s) => !!s.user?.SessionId && r.SessionIds!.includes(s.user.SessionId));
		else if (r.TokenIds?.length) this.recheck((s) => !!s.user?.TokenId && r.TokenIds!.includes(s.user.TokenId));
		else if (r.UserUuid) this.recheck((s) => s.user?.Uuid === r.UserUuid);
		else this.recheck();
	}

	private loadWorkspaces(s: Session): void {
		const user = s.user;
		if (!user || !this.deps.workspaces) return;
		this.deps.workspaces(user).then(
			(list) => {
				if (s.user === user) s.workspaces = new Set(list);
			},
			() => undefined,
		);
	}

	/**
	 * Resolves the tokens of the sessions `which` selects (all by default) again: their identity and workspaces
	 * are refreshed, and a session whose token no longer works is closed.
	 */
	recheck(which: (s: Session) => boolean = () => true): void {
		for (const s of this.sessions) {
			const token = s.token;
			if (!token || !s.user || !which(s)) continue;
			this.deps.identity(token, s.ip).then(
				(user) => {
					if (s.token !== token || !this.sessions.has(s)) return;
					this.setUser(s, user);
					this.loadWorkspaces(s);
				},
				(e: Error & { code?: number }) => {
					// Only a refused token ends the session; a service that does not answer now is not a verdict.
					if (s.token === token && (e.code === 401 || e.code === 403)) this.refuse(s, `invalid jwt: ${e.message}`);
				},
			);
		}
	}
}
