// Reading the tree in user paths: stat one node, or list folders the way Cells clients do it
// (`/a/tree/stats`, `/a/meta/bulk/get` with `<folder>/*`), workspaces at the root.
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import type { AccessibleWorkspace } from "../workspaces/model";
import { SORT_FIELDS, type SortField, type TreeIndex } from "./index";
import type { Resolver, Location } from "./resolver";
import type { NodeDoc, TreeNode } from "./model";
import { pagination, presentNode, presentWorkspace, type Pagination } from "./present";

export interface BulkParams {
	NodePaths?: string[];
	Offset?: number;
	Limit?: number;
	AllMetaProviders?: boolean;
	Versions?: boolean;
	SortField?: string;
	SortDirDesc?: boolean;
	Filters?: Record<string, string>;
}

// ---- versions (owned by the versions work: Versions listing) ----
/** One kept version of a file, as `versions.list` returns them (newest first). */
export interface VersionEntry {
	Uuid: string;
	MTime: number;
	Size: number;
	Etag: string;
	OwnerUuid: string;
	Description: string;
}
/** treeChangeLog, the wire shape of one commit. */
export interface ChangeLog {
	Uuid: string;
	MTime: number;
	Size: number;
	OwnerUuid?: string;
	Description?: string;
}
export type VersionNode = TreeNode & { Commits?: ChangeLog[] };
// ---- end versions ----

/** The order asked for (SortField, SortDirDesc): Cells' field names, in any case; anything else is a 400. */
function sortOf(p: BulkParams): { field: SortField; desc: boolean } | undefined {
	if (!p.SortField) return p.SortDirDesc ? { field: "name", desc: true } : undefined;
	const field = p.SortField.toLowerCase();
	if (!(SORT_FIELDS as readonly string[]).includes(field)) throw new BadRequestError(`SortField must be one of ${SORT_FIELDS.join(", ")}`);
	return { field: field as SortField, desc: !!p.SortDirDesc };
}

export class TreeReader {
	constructor(
		private readonly index: TreeIndex,
		private readonly resolver: Resolver,
		/** The versions of a file (none when versioning is not running). */
		private readonly versions?: (uuid: string) => Promise<VersionEntry[]>,
	) {}

	async stat(path: string, user: Identity, extended = true): Promise<TreeNode | null> {
		const loc: Location | null = await this.resolver.resolve(path, user);
		if (!loc) return { Uuid: "ROOT", Path: "", Type: "COLLECTION", MetaStore: { name: '""' } };
		await this.resolver.check(loc, user, "read", path);
		const doc = await this.index.get(loc.ds, loc.path);
		if (!doc) return null;
		return presentNode(doc, loc, extended && doc.type === "COLLECTION" ? await this.countMeta(doc) : {});
	}

	async countMeta(doc: NodeDoc): Promise<Record<string, string>> {
		const c = await this.index.childCounts(doc.ds, doc.path);
		return { ChildrenCount: String(c.files + c.folders), ChildrenFiles: String(c.files), ChildrenFolders: String(c.folders) };
	}

	async bulk(user: Identity, p: BulkParams): Promise<{ Nodes: TreeNode[]; Pagination?: Pagination }> {
		if (!p.NodePaths?.length) throw new BadRequestError("NodePaths is required");
		if (p.Versions) return { Nodes: await this.versionNodes(user, p.NodePaths) };
		const nodes: TreeNode[] = [];
		let page: Pagination | undefined;
		for (const raw of p.NodePaths) {
			const listing = raw === "/*" || raw.endsWith("/*");
			const path = listing ? raw.slice(0, -2) : raw;
			if (!listing) {
				const n = await this.stat(path, user).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e)));
				if (n) nodes.push(n);
				continue;
			}
			const loc: Location | null = await this.resolver.resolve(path, user);
			if (!loc) {
				const list: AccessibleWorkspace[] = await this.resolver.workspacesOf(user);
				for (const ws of list) nodes.push(presentWorkspace(ws, Object.keys(ws.RootNodes ?? {})[0] ?? ws.UUID));
				continue;
			}
			await this.resolver.check(loc, user, "read", path);
			const folder = await this.index.get(loc.ds, loc.path);
			if (!folder || folder.type !== "COLLECTION") throw new NotFoundError(`Folder ${path} not found`, "node.notfound");
			const offset = p.Offset ?? 0;
			const type = p.Filters?.type === "LEAF" || p.Filters?.type === "COLLECTION" ? p.Filters.type : undefined;
			const { nodes: children, total } = await this.index.children(loc.ds, loc.path, { offset, limit: p.Limit || undefined, type, sort: sortOf(p) });
			for (const c of children) nodes.push(presentNode(c, loc));
			page = pagination(offset, p.Limit ?? 0, total);
		}
		return { Nodes: nodes, Pagination: page };
	}

	// ---- versions (owned by the versions work) ----
	/**
	 * `Versions: true`, as Cells v4 answers it: for each requested file (a trailing "/*" is ignored), one node per
	 * kept version, newest first: the file's node with the version's Etag, MTime and Size, MetaStore `versionId`
	 * and `versionDescription`, and `Commits` holding that version's treeChangeLog. A missing path is a 404;
	 * folders have no versions.
	 */
	async versionNodes(user: Identity, paths: string[]): Promise<VersionNode[]> {
		const out: VersionNode[] = [];
		for (const raw of paths) {
			const path = raw === "/*" ? "" : raw.endsWith("/*") ? raw.slice(0, -2) : raw;
			const node = await this.stat(path, user, false);
			if (!node) throw new NotFoundError(`${path} not found`, "node.notfound");
			if (node.Type !== "LEAF" || !this.versions) continue;
			for (const v of await this.versions(node.Uuid)) {
				out.push({
					...node,
					Etag: v.Etag,
					MTime: v.MTime,
					Size: v.Size,
					MetaStore: { ...node.MetaStore, versionId: JSON.stringify(v.Uuid), versionDescription: JSON.stringify(v.Description) },
					Commits: [{ Uuid: v.Uuid, MTime: v.MTime, Size: v.Size, OwnerUuid: v.OwnerUuid || undefined, Description: v.Description }],
				});
			}
		}
		return out;
	}
	// ---- end versions ----
}
