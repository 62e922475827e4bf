// Reading the tree in user paths: stat one node, or list folders the way Cells clients do it
// (`/a/tree/stats`, `/a/meta/bulk/get` with `<folder>/*`), workspaces at the root.
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import type { AccessibleWorkspace } from "../workspaces/model";
import { SORT_FIELDS, type SortField, type TreeIndex } from "./index";
import type { Resolver, Location, RootEntry } from "./resolver";
import type { NodeDoc, TreeNode } from "./model";
import { pagination, presentNode, presentWorkspace, workspaceMeta, type Pagination } from "./present";
import type { VersionEntry } from "../versions/prune";
import { lookup as mimeLookup } from "mime-types";
import type { ArchiveFormat } from "../jobs/params";
import type { ArchiveSource } from "../jobs/archive";
import { archiveFormatOf, listArchive } from "./archive-listing";

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
		/** Reads an archive file's entries (archive browsing); absent: archives are files only. */
		private readonly archive?: (doc: NodeDoc, format: ArchiveFormat) => Promise<ArchiveSource>,
	) {}

	/** The archive file a path goes into (`x.zip/docs` -> x.zip and "docs"), if the path is inside one. */
	async archiveAt(loc: Location): Promise<{ doc: NodeDoc; format: ArchiveFormat; inner: string } | null> {
		const segs = loc.path.split("/");
		for (let i = segs.length; i > 0; i--) {
			const p = segs.slice(0, i).join("/");
			if (p.length <= loc.rootPath.length) return null; // a workspace root is no archive
			const doc = await this.index.get(loc.ds, p);
			if (!doc) continue;
			const format = doc.type === "LEAF" ? archiveFormatOf(doc.name) : null;
			return format ? { doc, format, inner: segs.slice(i).join("/") } : null;
		}
		return null;
	}

	/** `<archive>/<inner>/*`: the entries of a folder inside an archive file, read-only nodes under its path. */
	private async archiveListing(loc: Location, path: string, offset: number, limit: number): Promise<{ nodes: TreeNode[]; total: number } | null> {
		const at = this.archive && (await this.archiveAt(loc));
		if (!at || !this.archive) return null;
		const open = this.archive;
		const children = await listArchive(() => open(at.doc, at.format), at.format, at.doc.size, at.inner);
		const base = path.slice(0, path.length - (at.inner ? at.inner.length + 1 : 0));
		const page = children.slice(offset, limit ? offset + limit : undefined);
		const nodes = page.map((c): TreeNode => {
			const name = c.path.slice(c.path.lastIndexOf("/") + 1);
			const meta: Record<string, string> = { name: JSON.stringify(name), node_readonly: "true", archive_entry: "true" };
			if (c.type === "LEAF") meta.mime = JSON.stringify(mimeLookup(name) || "application/octet-stream");
			return { Uuid: `${at.doc._id}:${c.path}`, Path: `${base}/${c.path}`, Type: c.type, Size: c.size, MTime: at.doc.mtime, MetaStore: meta };
		});
		return { nodes, total: children.length };
	}

	async stat(path: string, user: Identity, extended = true): Promise<TreeNode | null> {
		const loc: Location | null = await this.resolver.resolve(path, user);
		if (!loc) return { Uuid: "ROOT", Path: "", Type: "COLLECTION", MetaStore: { name: '""' } };
		await this.resolver.check(loc, user, "read", path);
		if (loc.virtualRoots) return this.virtualRoot(loc, loc.virtualRoots);
		const doc = await this.index.get(loc.ds, loc.path);
		if (!doc) return null;
		return presentNode(doc, loc, extended && doc.type === "COLLECTION" ? await this.countMeta(doc) : {});
	}

	/** The slug of a workspace with several roots: a read-only folder (writable for a link's visitors, as Cells). */
	private async virtualRoot(loc: Location, roots: RootEntry[]): Promise<TreeNode> {
		let size = 0;
		let mtime = 0;
		for (const r of roots) {
			const d = await this.index.get(r.ds, r.path);
			if (!d) continue;
			size += d.size;
			mtime = Math.max(mtime, d.mtime);
		}
		const meta: Record<string, string> = { name: JSON.stringify(loc.ws.Slug), virtual_root: "true", ...workspaceMeta(loc.ws), ChildrenCount: String(roots.length) };
		if (loc.ws.Scope !== "LINK") meta.node_readonly = "true";
		return { Uuid: roots[0]?.uuid ?? loc.ws.UUID, Path: loc.ws.Slug, Type: "COLLECTION", Size: size, MTime: mtime, MetaStore: meta };
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
				const list: AccessibleWorkspace[] = await this.resolver.visibleWorkspaces(user);
				for (const ws of list) nodes.push(presentWorkspace(ws, Object.keys(ws.RootNodes ?? {})[0] ?? ws.UUID));
				continue;
			}
			await this.resolver.check(loc, user, "read", path);
			if (loc.virtualRoots) {
				// The roots of a workspace shown as children of its slug, each as it is (a file or a folder).
				for (const r of loc.virtualRoots) {
					const doc = await this.index.get(r.ds, r.path);
					if (doc) nodes.push(presentNode(doc, { ws: loc.ws, write: loc.write, rootPath: r.path, base: `${loc.ws.Slug}/${r.key}` }));
				}
				continue;
			}
			const folder = await this.index.get(loc.ds, loc.path);
			const offset = p.Offset ?? 0;
			if (!folder || folder.type !== "COLLECTION") {
				const inArchive = await this.archiveListing(loc, path.replace(/\/+$/, ""), offset, p.Limit ?? 0);
				if (!inArchive && folder) {
					// Listing a file answers the file, as Cells does: its CLI lists `f.txt` by asking for both
					// "f.txt" and "f.txt/*", and expects one node back.
					if (!nodes.some((n) => n.Uuid === folder._id)) nodes.push(presentNode(folder, loc));
					continue;
				}
				if (!inArchive) throw new NotFoundError(`Folder ${path} not found`, "node.notfound");
				nodes.push(...inArchive.nodes);
				page = pagination(offset, p.Limit ?? 0, inArchive.total);
				continue;
			}
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
