// From what a user names (`<workspace-slug>/<path>`) to where it is (`<datasource>/<path>`), with the user's
// rights there. Every file operation, REST or /io, goes through this one resolver.
import { ForbiddenError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import type { AccessibleWorkspace } from "../workspaces/model";
import { joinPath, splitPath } from "./paths";
import { RECYCLE_BIN } from "./model";
import { TtlCache } from "../gateway/ttl-cache";
import { rightsFor } from "../acl/merge";
import type { ACL } from "../acl/model";

export interface Location {
	ws: AccessibleWorkspace;
	ds: string;
	/** Datasource path of the workspace root. */
	rootPath: string;
	/** Datasource path of the node. */
	path: string;
	/** Path inside the workspace ("" = the workspace root). */
	rel: string;
	read: boolean;
	write: boolean;
	/**
	 * User path of the root this location is under when it is not the workspace's slug: a workspace with several
	 * roots, or whose root is a file (a cell or link on files), shows each root as a child of its slug
	 * (`<slug>/<root key>`), as Cells' MultipleRootsHandler does.
	 */
	base?: string;
	/** The workspace slug of such a workspace itself: a virtual folder holding its roots. */
	virtualRoots?: RootEntry[];
}

/** One root of a workspace shown as a child of its slug. */
export interface RootEntry {
	key: string;
	uuid: string;
	ds: string;
	path: string;
}

export interface ResolverDeps {
	accessible(user: Identity): Promise<AccessibleWorkspace[]>;
	/** read / write / deny ACLs of these roles that are set on nodes (not on workspace roots). */
	nodeAcls(roles: string[]): Promise<ACL[]>;
	/** Uuid of the node at a datasource path, if indexed. */
	uuidAt(ds: string, path: string): Promise<string | undefined>;
	resolveVirtual(uuid: string, user: Identity): Promise<{ datasource: string; path: string }>;
	nodeByUuid(uuid: string): Promise<{ ds: string; path: string; name?: string; type?: string } | null>;
	/** Called once per workspace root when first resolved (personal folders are created on first access). */
	ensureFolder(ds: string, path: string): Promise<void>;
}

/** A token's node scopes (`node:<uuid>:r|w|rw`) as [whole, uuid, mode]; none for unscoped credentials. */
/**
 * A cell's or link's root moved to a recycle bin is deleted for its members and visitors (Cells: the share's root
 * is gone): the share no longer opens it. Admin workspaces are configured by path and are left alone.
 */
function binned(ws: AccessibleWorkspace, path: string): boolean {
	return (ws.Scope === "ROOM" || ws.Scope === "LINK") && splitPath(path).includes(RECYCLE_BIN);
}

function nodeScopes(user: Identity): RegExpExecArray[] {
	return (user.Scopes ?? []).map((s) => /^node:([^:]+):(r|w|rw)$/.exec(s)).filter((m): m is RegExpExecArray => !!m);
}

export class Resolver {
	private workspaces = new TtlCache<AccessibleWorkspace[]>(5000, 5000);
	private roots = new TtlCache<{ ds: string; path: string }>(60_000, 20_000);
	private acls = new TtlCache<ACL[]>(5000, 5000);
	/** Single roots known to be folders (the common case): no lookup per resolve to tell. */
	private folderRoots = new TtlCache<true>(60_000, 20_000);

	constructor(private readonly deps: ResolverDeps) {}

	/** Roots may have moved (a move or delete in the tree): looked up again. */
	forgetRoots(): void {
		this.roots.clear();
		this.folderRoots.clear();
	}

	clear(): void {
		this.workspaces.clear();
		this.roots.clear();
		this.acls.clear();
		this.folderRoots.clear();
	}

	private async nodeAclsOf(user: Identity): Promise<ACL[]> {
		const key = user.Roles.join(",");
		const hit = this.acls.get(key);
		if (hit) return hit;
		const generation = this.acls.generation;
		const list = await this.deps.nodeAcls(user.Roles);
		this.acls.set(key, list, Infinity, Date.now(), generation);
		return list;
	}

	/**
	 * Rights below a workspace root can be narrowed or widened by ACLs set on a folder or file: the deepest
	 * node carrying ACLs for the user's roles decides (roles merged in order, deny winning), for everything
	 * under it. Without such ACLs (the common case) this costs no lookup.
	 */
	private async nodeRights(user: Identity, ds: string, rootPath: string, path: string): Promise<{ read: boolean; write: boolean } | undefined> {
		const acls = await this.nodeAclsOf(user);
		if (!acls.length) return undefined;
		const byNode = new Map<string, ACL[]>();
		for (const a of acls) if (a.NodeID) byNode.set(a.NodeID, [...(byNode.get(a.NodeID) ?? []), a]);
		for (let p = path; ; p = p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "") {
			if (p.length < rootPath.length) break;
			const uuid = await this.deps.uuidAt(ds, p);
			const here = uuid ? byNode.get(uuid) : undefined;
			if (here) {
				const r = rightsFor(here, user.Roles);
				return { read: r.read && !r.deny, write: r.write && !r.deny };
			}
			if (p === "" || p === rootPath) break;
		}
		return undefined;
	}

	async workspacesOf(user: Identity): Promise<AccessibleWorkspace[]> {
		const key = (user.Hidden ? "hidden|" : "") + user.Roles.join(",");
		const hit = this.workspaces.get(key);
		if (hit) return hit;
		const generation = this.workspaces.generation;
		const all = await this.deps.accessible(user);
		// A public link's visitor reaches its link and nothing else (no personal folder, no common workspaces).
		const list = user.Hidden ? all.filter((w) => w.Scope === "LINK") : all;
		this.workspaces.set(key, list, Infinity, Date.now(), generation);
		return list;
	}

	/**
	 * The workspaces shown at the root of a listing: all those of the user, or for a node-scoped token only the
	 * ones holding one of its nodes (the others it could not open anyway, and their names are not its business).
	 */
	async visibleWorkspaces(user: Identity): Promise<AccessibleWorkspace[]> {
		const list = await this.workspacesOf(user);
		const scopes = nodeScopes(user);
		if (!scopes.length) return list;
		const nodes = (await Promise.all(scopes.map(([, uuid]) => this.deps.nodeByUuid(uuid)))).filter((n) => !!n);
		const out: AccessibleWorkspace[] = [];
		for (const ws of list) {
			const root = await this.rootOf(ws, user).catch(() => null);
			if (root && nodes.some((n) => n.ds === root.ds && (root.path === "" || n.path === root.path || n.path.startsWith(`${root.path}/`)))) out.push(ws);
		}
		return out;
	}

	async rootOf(ws: AccessibleWorkspace, user: Identity): Promise<{ ds: string; path: string }> {
		const [uuid, node] = Object.entries(ws.RootNodes ?? {})[0] ?? [];
		if (!uuid) throw new NotFoundError(`Workspace ${ws.Slug} has no root`, "workspace.noroot");
		const key = `${ws.UUID}|${uuid}|${user.Login}`;
		const hit = this.roots.get(key);
		if (hit) return hit;
		let root: { ds: string; path: string };
		if (uuid.startsWith("DATASOURCE:")) root = { ds: uuid.slice("DATASOURCE:".length), path: "" };
		else if (uuid === "my-files" || uuid === "cells" || (node as { Path?: string })?.Path === uuid) {
			const v = await this.deps.resolveVirtual(uuid, user);
			root = { ds: v.datasource, path: v.path };
		} else {
			const n = await this.deps.nodeByUuid(uuid);
			if (!n || binned(ws, n.path)) throw new NotFoundError(`The root of workspace ${ws.Slug} no longer exists`, "workspace.noroot");
			root = n;
		}
		await this.deps.ensureFolder(root.ds, root.path);
		this.roots.set(key, root);
		return root;
	}

	/**
	 * The roots of a workspace shown as children of its slug, or null when its one root is a folder (the common
	 * case: the slug is that folder). Keys are the roots' names, made unique with their uuid's start.
	 */
	async multipleRoots(ws: AccessibleWorkspace, user: Identity): Promise<RootEntry[] | null> {
		const ids = Object.keys(ws.RootNodes ?? {});
		if (ids.length <= 1) {
			const id = ids[0];
			if (!id || id.startsWith("DATASOURCE:") || id === "my-files" || id === "cells") return null;
			if (this.folderRoots.get(id)) return null;
			const n = await this.deps.nodeByUuid(id);
			if (n?.type === "COLLECTION" && !binned(ws, n.path)) this.folderRoots.set(id, true);
			if (!n || n.type !== "LEAF" || binned(ws, n.path)) return null;
		}
		const out: RootEntry[] = [];
		for (const id of ids) {
			const n = await this.deps.nodeByUuid(id);
			// A root deleted (or moved to a recycle bin) since: the others stay reachable.
			if (!n || binned(ws, n.path)) continue;
			const name = n.name || n.path.slice(n.path.lastIndexOf("/") + 1) || id;
			const key = out.some((r) => r.key === name) ? `${name}-${id.slice(0, 8)}` : name;
			out.push({ key, uuid: id, ds: n.ds, path: n.path });
		}
		return out;
	}

	/** Resolves a user path; `null` for the root of all workspaces (""). */
	async resolve(userPath: string, user: Identity): Promise<Location | null> {
		const segments = splitPath(userPath);
		if (!segments.length) return null;
		const ws = (await this.workspacesOf(user)).find((w) => w.Slug === segments[0]);
		if (!ws) throw new NotFoundError(`No workspace ${segments[0]}`, "workspace.notfound");
		const multi = await this.multipleRoots(ws, user);
		if (multi) {
			if (segments.length === 1) {
				// The slug itself: a folder of roots, read-only (nothing can be created beside the roots).
				return { ws, ds: "", rootPath: "", path: "", rel: "", read: ws.Access.includes("r"), write: false, virtualRoots: multi };
			}
			const root = multi.find((r) => r.key === segments[1] || r.uuid === segments[1]);
			if (!root) throw new NotFoundError(`No ${segments[1]} in ${ws.Slug}`, "node.notfound");
			const rel = segments.slice(2).join("/");
			const path = joinPath(root.path, rel);
			const narrowed = await this.nodeRights(user, root.ds, root.path, path);
			const read = narrowed?.read ?? ws.Access.includes("r");
			const write = narrowed?.write ?? ws.Access.includes("w");
			return { ws, ds: root.ds, rootPath: root.path, path, rel, read, write, base: joinPath(ws.Slug, root.key) };
		}
		const root = await this.rootOf(ws, user);
		const rel = segments.slice(1).join("/");
		const path = joinPath(root.path, rel);
		const narrowed = rel ? await this.nodeRights(user, root.ds, root.path, path) : undefined;
		const read = narrowed?.read ?? ws.Access.includes("r");
		const write = narrowed?.write ?? ws.Access.includes("w");
		return { ws, ds: root.ds, rootPath: root.path, path, rel, read, write };
	}

	/**
	 * Where a node (datasource path) appears for a user: the first workspace of theirs whose root holds it, and its
	 * user path there; null when none does. Cells' AppearsIn and "read the root with the caller's rights".
	 */
	async locate(ds: string, path: string, user: Identity): Promise<{ loc: Location; userPath: string }[]> {
		const out: { loc: Location; userPath: string }[] = [];
		for (const ws of await this.workspacesOf(user)) {
			const multi = await this.multipleRoots(ws, user).catch(() => null);
			const roots = multi ?? [await this.rootOf(ws, user).then((r) => ({ key: "", uuid: "", ...r }), () => null)].filter((r): r is RootEntry => !!r);
			for (const r of roots) {
				if (r.ds !== ds || !(r.path === "" || path === r.path || path.startsWith(`${r.path}/`))) continue;
				const rel = r.path === "" ? path : path === r.path ? "" : path.slice(r.path.length + 1);
				const userPath = joinPath(multi ? joinPath(ws.Slug, r.key) : ws.Slug, rel);
				const loc = await this.resolve(userPath, user).catch(() => null);
				if (loc) out.push({ loc, userPath });
			}
		}
		return out;
	}

	/**
	 * A token scoped to nodes (`node:<uuid>:r|w|rw`, personal or document tokens) reaches only those nodes and
	 * what is below them, with at most the rights it names.
	 */
	private async withinScopes(loc: Location, user: Identity, need: "read" | "write"): Promise<boolean> {
		const scopes = nodeScopes(user);
		if (!scopes.length) return true;
		for (const [, uuid, mode] of scopes) {
			if (!mode.includes(need === "read" ? "r" : "w")) continue;
			const node = await this.deps.nodeByUuid(uuid);
			if (node && node.ds === loc.ds && (node.path === "" || loc.path === node.path || loc.path.startsWith(`${node.path}/`))) return true;
		}
		return false;
	}

	/** Like resolve, but the caller must be allowed to `need` there. */
	async require(userPath: string, user: Identity, need: "read" | "write"): Promise<Location> {
		const loc = await this.resolve(userPath, user);
		if (!loc) throw new ForbiddenError("The root of all workspaces cannot be modified", "node.not.writeable");
		await this.check(loc, user, need, userPath);
		return loc;
	}

	/** Throws unless the user (and the token's scopes) may `need` at a resolved location. */
	async check(loc: Location, user: Identity, need: "read" | "write", userPath: string): Promise<void> {
		if (!(await this.withinScopes(loc, user, need))) throw new ForbiddenError(`This token does not give ${need} access to ${userPath}`, "token.scope");
		if (need === "read" && !loc.read) throw new ForbiddenError(`You cannot read in ${loc.ws.Slug}`, "node.not.readable");
		if (need === "write" && !loc.write) throw new ForbiddenError(`You cannot write in ${loc.ws.Slug}`, "node.not.writeable");
	}

	/** The user path of a datasource path inside a workspace root (for answers). */
	static userPath(loc: Pick<Location, "ws" | "rootPath" | "base">, dsPath: string): string {
		const rel = loc.rootPath === "" ? dsPath : dsPath === loc.rootPath ? "" : dsPath.slice(loc.rootPath.length + 1);
		return joinPath(loc.base ?? loc.ws.Slug, rel);
	}
}
