// Reading the tree in user paths: stat one node, or list folders the way Cells clients do it
// (`/a/tree/stats`, `/a/meta/bulk/get` with `<folder>/*`), workspaces at the root.
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import type { AccessibleWorkspace } from "../workspaces/model";
import { SORT_FIELDS, toDoc, type SortField, type TreeIndex } from "./index";
import { Resolver, type Location, type RootEntry } from "./resolver";
import { RECYCLE_BIN, type NodeDoc, type TreeNode } from "./model";
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
		/**
		 * Adds what other services keep about nodes (user metadata) to the MetaStore of the nodes of one answer:
		 * called once per answer (a listing page, a stat), never per node.
		 */
		private readonly decorate?: (nodes: TreeNode[], user: Identity) => Promise<void>,
	) {}

	private async decorated<T extends TreeNode[]>(nodes: T, user: Identity): Promise<T> {
		const real = nodes.filter((n) => n.Uuid !== "ROOT" && !n.MetaStore?.archive_entry);
		if (this.decorate && real.length) await this.decorate(real, user);
		return nodes;
	}

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
		const node = await this.statPlain(path, user, extended);
		return node && (await this.decorated([node], user))[0];
	}

	/** The node at a path (without what `decorate` adds); null when absent. */
	private async statPlain(path: string, user: Identity, extended = true): Promise<TreeNode | null> {
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

	/**
	 * `opened` is told, for each `<path>/*` of the request, of the node found at `<path>` below a workspace root
	 * (the folder listed, or the file or archive answered instead): who lists a folder reads it.
	 */
	async bulk(user: Identity, p: BulkParams, opened?: (raw: string, doc: NodeDoc) => void): Promise<{ Nodes: TreeNode[]; Pagination?: Pagination }> {
		if (!p.NodePaths?.length) throw new BadRequestError("NodePaths is required");
		if (p.Versions) return { Nodes: await this.versionNodes(user, p.NodePaths) };
		const nodes: TreeNode[] = [];
		let page: Pagination | undefined;
		for (const raw of p.NodePaths) {
			const listing = raw === "/*" || raw.endsWith("/*");
			const path = listing ? raw.slice(0, -2) : raw;
			if (!listing) {
				const n = await this.statPlain(path, user).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e)));
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
			const at = await this.index.folderAt(loc.ds, loc.path);
			const folder = at && toDoc(at.node);
			if (folder && loc.rel !== "") opened?.(raw, folder);
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
			const { nodes: children, total } = await this.index.children(loc.ds, loc.path, { offset, limit: p.Limit || undefined, type, sort: sortOf(p) }, at);
			for (const c of children) nodes.push(presentNode(c, loc));
			page = pagination(offset, p.Limit ?? 0, total);
		}
		return { Nodes: await this.decorated(nodes, user), Pagination: page };
	}

	/**
	 * Where a node shows for the user: the first of their workspaces whose root holds it and where they may read
	 * it; null when there is none.
	 */
	async locate(doc: NodeDoc, user: Identity): Promise<Location | null> {
		for (const ws of await this.resolver.workspacesOf(user)) {
			const root = await this.resolver.rootOf(ws, user).catch(() => null);
			if (!root || root.ds !== doc.ds) continue;
			if (!(root.path === "" || doc.path === root.path || doc.path.startsWith(`${root.path}/`))) continue;
			const userPath = Resolver.userPath({ ws, rootPath: root.path }, doc.path);
			const loc = await this.resolver.resolve(userPath, user).catch(() => null);
			if (!loc) continue;
			const readable = await this.resolver.check(loc, user, "read", userPath).then(() => true, () => false);
			if (readable) return loc;
		}
		return null;
	}

	/**
	 * The nodes of these uuids the user may read, in user paths (the first workspace showing each), in the order
	 * asked; unknown and unreadable ones are left out. Nodes the user may not write carry `node_readonly`.
	 */
	async statUuids(uuids: string[], user: Identity): Promise<TreeNode[]> {
		const out: TreeNode[] = [];
		for (const uuid of [...new Set(uuids)]) {
			const doc = await this.index.byUuid(uuid);
			const loc = doc && (await this.locate(doc, user));
			if (doc && loc) out.push(presentNode(doc, loc, doc.type === "COLLECTION" ? await this.countMeta(doc) : {}));
		}
		return this.decorated(out, user);
	}

	/**
	 * The files most recently modified in the user's workspaces, newest first: readable, outside recycle bins,
	 * not hidden, each once.
	 */
	async recent(user: Identity, limit: number): Promise<TreeNode[]> {
		const found: { doc: NodeDoc; loc: Location }[] = [];
		const seen = new Set<string>();
		for (const ws of await this.resolver.workspacesOf(user)) {
			const root = await this.resolver.rootOf(ws, user).catch(() => null);
			if (!root) continue;
			// Some candidates may be unreadable (node ACLs) or in the bin: ask for more than needed.
			for (const doc of await this.index.recent(root.ds, root.path, limit * 2)) {
				if (seen.has(doc._id)) continue;
				const userPath = Resolver.userPath({ ws, rootPath: root.path }, doc.path);
				const loc = await this.resolver.resolve(userPath, user).catch(() => null);
				if (!loc || loc.rel === RECYCLE_BIN || loc.rel.startsWith(`${RECYCLE_BIN}/`) || loc.rel.split("/").some((s) => s.startsWith("."))) continue;
				if (!(await this.resolver.check(loc, user, "read", userPath).then(() => true, () => false))) continue;
				seen.add(doc._id);
				found.push({ doc, loc });
			}
		}
		found.sort((a, b) => b.doc.mtime - a.doc.mtime || (a.doc._id < b.doc._id ? -1 : 1));
		return this.decorated(
			found.slice(0, limit).map((f) => presentNode(f.doc, f.loc)),
			user,
		);
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
