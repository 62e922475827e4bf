// Cells' graph API: what the caller and another user have in common (cells, groups and teams), the caller's
// workspace state, and node recommendations (bookmarked, recently modified, shared with them). Everything is
// computed from the workspaces, ACLs, roles, tree and user metadata; nothing is stored here.
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import { hasPolicy } from "../identity/resource-policy";
import type { PublicUser } from "../identity/users";
import type { AuthInfo } from "../identity/user-admin";
import type { Role } from "../identity/roles";
import { ROOT_GROUP, type AccessibleWorkspace, type Workspace } from "../workspaces/model";
import type { TreeNode } from "../tree/model";
import type { RecommendCategory } from "../contracts/graph";

export interface GraphDeps {
	/** Workspaces a role stack reaches, with its access (workspaces.accessible). */
	accessible(roles: string[]): Promise<AccessibleWorkspace[]>;
	/** A user (not a group) by uuid, with its role stack; null when unknown. */
	authInfo(uuid: string): Promise<AuthInfo | null>;
	/** A user or group by login; null when unknown. */
	byLogin(login: string): Promise<PublicUser | null>;
	roles(uuids: string[]): Promise<Role[]>;
	/** The caller's most recently modified readable files. */
	recent(user: Identity, limit: number): Promise<TreeNode[]>;
	/** The caller's bookmarked nodes they may still read, newest first (none without user metadata). */
	bookmarks(user: Identity, limit: number): Promise<TreeNode[]>;
	/** The nodes at these user paths (workspace roots here), as the caller sees them. */
	stat(user: Identity, paths: string[]): Promise<TreeNode[]>;
}

export const DEFAULT_RECOMMEND_LIMIT = 20;
export const MAX_RECOMMEND_LIMIT = 200;
const CATEGORIES: RecommendCategory[] = ["bookmark", "recent", "shared"];
/** Cells (ROOM) and public links (LINK) are what is "shared with" someone; ADMIN workspaces are everyone's. */
const SHARED_SCOPES = new Set(["ROOM", "LINK"]);

/** idmWorkspace of an accessible workspace. */
export function presentWorkspace(ws: AccessibleWorkspace): Workspace {
	const roots = ws.RootNodes ?? {};
	return { UUID: ws.UUID, Slug: ws.Slug, Label: ws.Label, Description: ws.Description, Scope: ws.Scope as Workspace["Scope"], RootUUIDs: Object.keys(roots), RootNodes: roots };
}

export class Graph {
	constructor(private readonly deps: GraphDeps) {}

	/** The user a path parameter names (uuid or login), if the caller may see them. */
	private async target(caller: Identity, id: string): Promise<AuthInfo> {
		let info = await this.deps.authInfo(id);
		const pub = await this.deps.byLogin(info ? info.Login : id);
		if (!pub || pub.IsGroup || !hasPolicy(pub.Policies, caller, "READ")) throw new NotFoundError(`User ${id} not found`, "user.notfound");
		info ??= await this.deps.authInfo(pub.Uuid);
		if (!info) throw new NotFoundError(`User ${id} not found`, "user.notfound");
		return info;
	}

	/**
	 * Cells (ROOM workspaces) both users can open, and the groups and teams linking them: group roles both stacks
	 * hold (but the root group everybody is in), and teams the other user is in that the caller is in or manages.
	 */
	async relation(caller: Identity, userId: string): Promise<{ SharedCells: Workspace[]; BelongsToTeams: Role[] }> {
		const other = await this.target(caller, userId);
		const [mine, theirs] = await Promise.all([this.deps.accessible(caller.Roles), this.deps.accessible(other.Roles)]);
		const theirIds = new Set(theirs.map((w) => w.UUID));
		const SharedCells = mine.filter((w) => w.Scope === "ROOM" && theirIds.has(w.UUID)).map(presentWorkspace);
		const candidates = other.Roles.filter((r) => r !== ROOT_GROUP && r !== other.Uuid);
		const roles = candidates.length ? await this.deps.roles(candidates) : [];
		const BelongsToTeams = roles.filter((r) => (r.GroupRole && caller.Roles.includes(r.Uuid)) || (r.IsTeam && (caller.Roles.includes(r.Uuid) || hasPolicy(r.Policies, caller, "WRITE"))));
		return { SharedCells, BelongsToTeams };
	}

	/** The workspaces the caller may open and their access (`r`, `w` or `rw`) by workspace uuid. */
	async state(caller: Identity, segment: string): Promise<{ Workspaces: Workspace[]; WorkspacesAccesses: Record<string, string> }> {
		if (!segment.trim()) throw new BadRequestError("Segment is required");
		const list = await this.deps.accessible(caller.Roles);
		return { Workspaces: list.map(presentWorkspace), WorkspacesAccesses: Object.fromEntries(list.map((w) => [w.UUID, w.Access])) };
	}

	/**
	 * Nodes for the caller: their bookmarks (newest first), then their most recently modified files, then the
	 * roots of the cells and links they belong to; each node once, at most `limit`. `category` keeps one kind.
	 */
	async recommend(caller: Identity, category: string | undefined, limit = DEFAULT_RECOMMEND_LIMIT): Promise<TreeNode[]> {
		const cat = category ? category.toLowerCase().replace(/s$/, "") : "";
		if (cat && !CATEGORIES.includes(cat as RecommendCategory)) throw new BadRequestError(`Unknown Category "${category}": one of ${CATEGORIES.join(", ")}, or none for all`);
		if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECOMMEND_LIMIT) throw new BadRequestError(`Limit must be between 1 and ${MAX_RECOMMEND_LIMIT}`);
		const wants = (c: RecommendCategory) => !cat || cat === c;
		const out: TreeNode[] = [];
		const seen = new Set<string>();
		const add = (nodes: TreeNode[]) => {
			for (const n of nodes) {
				if (out.length >= limit || seen.has(n.Uuid)) continue;
				seen.add(n.Uuid);
				out.push(n);
			}
		};
		if (wants("bookmark")) add(await this.deps.bookmarks(caller, limit));
		if (wants("recent") && out.length < limit) add(await this.deps.recent(caller, limit)); // not limit - out.length: bookmarks may be among them
		if (wants("shared") && out.length < limit) {
			const shared = (await this.deps.accessible(caller.Roles)).filter((w) => SHARED_SCOPES.has(w.Scope));
			if (shared.length) add(await this.deps.stat(caller, shared.slice(0, limit).map((w) => w.Slug)));
		}
		return out;
	}
}
