/**
 * tree — owns the node index (every file and folder of every datasource) and the file operations on it:
 * stat, listing (`/tree/stats`, `/meta/bulk/get`), create, delete to the recycle bin, restore, and the admin
 * views in datasource paths. User paths are resolved through lib/tree/resolver (workspace roots, virtual nodes,
 * the caller's rights). Emits `tree.changed` {type, uuid, path}. Consumes `identity.changed` and
 * `datasources.changed` (drops its caches).
 */
import type { Context, ServiceSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DbMixin, type Store } from "../mixins/db.mixin";
import { BadRequestError, ForbiddenError, NotFoundError } from "../lib/errors";
import type { Identity, Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { loadConfig } from "../lib/config";
import { TreeIndex } from "../lib/tree/index";
import { TreeOperations, type DatasourceHandle } from "../lib/tree/operations";
import { Resolver, type Location } from "../lib/tree/resolver";
import { pagination, presentNode, presentWorkspace } from "../lib/tree/present";
import { joinPath, parentOf, splitPath } from "../lib/tree/paths";
import { RECYCLE_BIN, rootUuid, type NodeDoc, type TreeNode } from "../lib/tree/model";
import type { AccessibleWorkspace } from "../lib/workspaces/model";
import { openStore } from "../lib/storage";
import { listWorkspaceObjects } from "../lib/tree/objects";

interface BulkParams {
	NodePaths?: string[];
	Offset?: number;
	Limit?: number;
	AllMetaProviders?: boolean;
	Versions?: boolean;
	SortField?: string;
	SortDirDesc?: boolean;
	Filters?: Record<string, string>;
}
interface NodeIn {
	Path?: string;
	Type?: "UNKNOWN" | "LEAF" | "COLLECTION";
	Uuid?: string;
}

const nodeList = { type: "array", items: "object", min: 1, max: 1000 } as const;
const bulkParams = {
	NodePaths: { type: "array", optional: true, items: "string", max: 1000 },
	Offset: { type: "number", optional: true, integer: true, min: 0 },
	Limit: { type: "number", optional: true, integer: true, min: 0, max: 10_000 },
	AllMetaProviders: { type: "boolean", optional: true },
	Versions: { type: "boolean", optional: true },
	SortField: { type: "string", optional: true, max: 64 },
	SortDirDesc: { type: "boolean", optional: true },
	Filters: { type: "record", optional: true },
} as const;

const TreeService: ServiceSchema = {
	name: "tree",
	mixins: [DbMixin("nodes", { indexes: [{ field: "dsPath", unique: true }, { field: "parentKey" }] })],
	settings: { rest: "/" },
	actions: {
		stat: {
			rest: "GET /tree/stat/:Node",
			retryPolicy: { enabled: true },
			params: { Node: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Node: string }, Meta>) {
				const user = requireUser(ctx);
				const node = await this.statUserPath(ctx.params.Node, user);
				if (!node) throw new NotFoundError(`${ctx.params.Node} not found`, "node.notfound");
				return { Node: node };
			},
		},
		stats: {
			rest: "POST /tree/stats",
			retryPolicy: { enabled: true },
			params: bulkParams,
			async handler(ctx: Context<BulkParams, Meta>) {
				return this.bulk(requireUser(ctx), ctx.params);
			},
		},
		bulkMeta: {
			rest: "POST /meta/bulk/get",
			retryPolicy: { enabled: true },
			params: bulkParams,
			async handler(ctx: Context<BulkParams, Meta>) {
				return this.bulk(requireUser(ctx), ctx.params);
			},
		},
		create: {
			rest: "POST /tree/create",
			params: { Nodes: nodeList, Recursive: { type: "boolean", optional: true }, TemplateUUID: { type: "string", optional: true, max: 128 } },
			async handler(ctx: Context<{ Nodes: NodeIn[]; Recursive?: boolean; TemplateUUID?: string }, Meta>) {
				const user = requireUser(ctx);
				if (ctx.params.TemplateUUID) throw new BadRequestError("Creating from a template is not supported yet (no node templates exist)");
				const seen = new Set<string>();
				const out: TreeNode[] = [];
				for (const n of ctx.params.Nodes) {
					if (!n.Path) throw new BadRequestError("Every node needs a Path");
					const path = n.Path.replace(/\/$/, "");
					if (seen.has(path)) continue;
					seen.add(path);
					const loc = await this.resolver.require(path, user, "write");
					if (loc.rel === "") throw new ForbiddenError("A workspace root cannot be created", "node.not.writeable");
					if (loc.rel.split("/")[0] === RECYCLE_BIN) throw new ForbiddenError("The recycle bin is managed by the server", "node.not.writeable");
					const doc =
						n.Type === "LEAF" ? await this.ops.createEmptyFile(loc.ds, loc.path) : await this.ops.mkdir(loc.ds, loc.path, ctx.params.Recursive ?? false);
					this.changed(ctx, "create", doc);
					out.push(presentNode(doc, loc));
				}
				return { Children: out };
			},
		},
		remove: {
			rest: "POST /tree/delete",
			params: { Nodes: nodeList, Recursive: { type: "boolean", optional: true }, RemovePermanently: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ Nodes: NodeIn[]; Recursive?: boolean; RemovePermanently?: boolean }, Meta>) {
				const user = requireUser(ctx);
				const jobs = [];
				for (const n of ctx.params.Nodes) {
					if (!n.Path) throw new BadRequestError("Every node needs a Path");
					const loc = await this.resolver.require(n.Path, user, "write");
					if (loc.rel === "") throw new ForbiddenError("Please do not modify directly the root of a workspace", "node.not.writeable");
					const doc = await this.ops.index.get(loc.ds, loc.path);
					if (!doc) throw new NotFoundError(`${n.Path} not found`, "node.notfound");
					const inBin = loc.rel === RECYCLE_BIN || loc.rel.startsWith(`${RECYCLE_BIN}/`);
					if (ctx.params.RemovePermanently || inBin) {
						await this.ops.removePermanently(loc.ds, loc.path);
						this.changed(ctx, "delete", doc);
						jobs.push({ Uuid: randomUUID(), Label: `Deleted ${n.Path}`, NodeUuid: doc._id });
					} else {
						const moved = await this.ops.recycle(loc.ds, loc.rootPath, loc.path, joinPath(loc.ws.Slug, loc.rel));
						this.changed(ctx, "move", moved);
						jobs.push({ Uuid: randomUUID(), Label: `Moved ${n.Path} to the recycle bin`, NodeUuid: doc._id });
					}
				}
				return { DeleteJobs: jobs };
			},
		},
		restore: {
			rest: "POST /tree/restore",
			params: { Nodes: nodeList },
			async handler(ctx: Context<{ Nodes: NodeIn[] }, Meta>) {
				const user = requireUser(ctx);
				const jobs = [];
				const targets = new Set<string>();
				for (const n of ctx.params.Nodes) {
					if (!n.Path) throw new BadRequestError("Every node needs a Path");
					const loc = await this.resolver.require(n.Path, user, "write");
					const doc = await this.ops.index.get(loc.ds, loc.path);
					if (!doc) throw new NotFoundError(`${n.Path} not found`, "node.notfound");
					const raw = doc.meta.recycle_restore;
					if (!raw) throw new BadRequestError(`${n.Path} is not in a recycle bin`);
					const original = JSON.parse(raw) as string;
					if (targets.has(original)) throw new BadRequestError(`Two nodes would be restored to ${original}`);
					targets.add(original);
					const dest = await this.resolver.require(original, user, "write");
					await this.ops.mkdir(dest.ds, parentOf(dest.path), true);
					const target = await this.ops.freeName(dest.ds, dest.path);
					const moved = await this.ops.move(loc.ds, loc.path, dest.ds, target);
					await this.ops.index.setMeta(moved._id, { recycle_restore: undefined });
					this.changed(ctx, "move", moved);
					jobs.push({ Uuid: randomUUID(), Label: `Restored ${original}`, NodeUuid: doc._id });
				}
				return { RestoreJobs: jobs };
			},
		},
		adminList: {
			rest: "POST /tree/admin/list",
			params: {
				Node: { type: "object", props: { Path: { type: "string", optional: true, max: 8192 } } },
				Recursive: { type: "boolean", optional: true },
				Limit: { type: "number", optional: true, integer: true, min: 0 },
				Offset: { type: "number", optional: true, integer: true, min: 0 },
				FilterType: { type: "enum", optional: true, values: ["UNKNOWN", "LEAF", "COLLECTION"] },
			},
			async handler(ctx: Context<{ Node: { Path?: string }; Limit?: number; Offset?: number; FilterType?: string }, Meta>) {
				requireAdmin(ctx);
				const segs = splitPath(ctx.params.Node.Path ?? "");
				if (!segs.length) {
					const list: { Name: string }[] = await ctx.call("datasources.list", {});
					return { Parent: { Uuid: "ROOT", Path: "/", Type: "COLLECTION" }, Children: list.map((d) => ({ Uuid: rootUuid(d.Name), Path: d.Name, Type: "COLLECTION" })) };
				}
				const [ds, ...rest] = segs;
				const parent = await this.ops.index.get(ds, rest.join("/"));
				if (!parent) throw new NotFoundError(`${segs.join("/")} not found`, "node.notfound");
				const type = ctx.params.FilterType === "LEAF" || ctx.params.FilterType === "COLLECTION" ? ctx.params.FilterType : undefined;
				const { nodes } = await this.ops.index.children(ds, parent.path, { offset: ctx.params.Offset, limit: ctx.params.Limit, type, includeHidden: true });
				return { Parent: this.adminNode(parent), Children: nodes.map((d: NodeDoc) => this.adminNode(d)) };
			},
		},
		adminStat: {
			rest: "POST /tree/admin/stat",
			params: { Node: { type: "object", props: { Path: { type: "string", optional: true, max: 8192 } } }, WithCommits: { type: "boolean", optional: true }, WithExtendedStats: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ Node: { Path?: string } }, Meta>) {
				requireAdmin(ctx);
				const [ds, ...rest] = splitPath(ctx.params.Node.Path ?? "");
				if (!ds) throw new BadRequestError("Node.Path must start with a datasource name");
				const doc = await this.ops.index.get(ds, rest.join("/"));
				if (!doc) throw new NotFoundError(`${ctx.params.Node.Path} not found`, "node.notfound");
				return { Success: true, Node: this.adminNode(doc) };
			},
		},

		// ---- internal, for the /io gateway (which moves the bytes itself, never through the transporter) ----
		locate: {
			retryPolicy: { enabled: true },
			params: { Path: { type: "string", max: 8192 }, need: { type: "enum", values: ["read", "write"] } },
			async handler(ctx: Context<{ Path: string; need: "read" | "write" }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), ctx.params.need);
				const doc: NodeDoc | null = await this.ops.index.get(loc.ds, loc.path);
				return { ds: loc.ds, path: loc.path, node: doc && { Uuid: doc._id, Type: doc.type, Key: doc.key, Size: doc.size, MTime: doc.mtime, Etag: doc.etag } };
			},
		},
		prepareWrite: {
			params: { Path: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Path: string }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				if (loc.rel === "" || loc.rel === RECYCLE_BIN) throw new ForbiddenError("This folder is managed by the server", "node.not.writeable");
				return { ds: loc.ds, path: loc.path, ...(await this.ops.prepareWrite(loc.ds, loc.path)) };
			},
		},
		commitWrite: {
			params: { ds: "string", path: "string", uuid: "string", key: "string", size: { type: "number", min: 0 }, etag: "string" },
			async handler(ctx: Context<{ ds: string; path: string; uuid: string; key: string; size: number; etag: string }>) {
				const doc: NodeDoc = await this.ops.commitWrite(ctx.params.ds, ctx.params.path, ctx.params);
				this.changed(ctx, "content", doc);
				return { Uuid: doc._id, Etag: doc.etag, MTime: doc.mtime, Size: doc.size };
			},
		},
		listObjects: {
			retryPolicy: { enabled: true },
			params: { Prefix: { type: "string", max: 8192 }, Delimiter: { type: "string", optional: true, max: 16 }, StartAfter: { type: "string", optional: true, max: 8192 }, MaxKeys: { type: "number", integer: true, min: 0, max: 1000 } },
			async handler(ctx: Context<{ Prefix: string; Delimiter?: string; StartAfter?: string; MaxKeys: number }, Meta>) {
				const user = requireUser(ctx);
				const { Prefix, Delimiter, StartAfter, MaxKeys } = ctx.params;
				const slug = Prefix.split("/")[0];
				if (!Prefix.includes("/")) {
					// Workspaces are the top-level "folders" of the bucket.
					const list: AccessibleWorkspace[] = await this.resolver.workspacesOf(user);
					const names = list.map((w) => `${w.Slug}/`).filter((k) => k.startsWith(Prefix) && (!StartAfter || k > StartAfter)).sort();
					if (Delimiter === "/") return { Contents: [], CommonPrefixes: names.slice(0, MaxKeys), IsTruncated: names.length > MaxKeys, NextStartAfter: names.length > MaxKeys ? names[MaxKeys - 1] : undefined };
					if (names.length !== 1) return { Contents: [], CommonPrefixes: [], IsTruncated: false };
				}
				const loc: Location = await this.resolver.require(slug, user, "read");
				return listWorkspaceObjects(this.ops.index, loc, Prefix.includes("/") ? Prefix : `${slug}/`, Delimiter, StartAfter, MaxKeys);
			},
		},
		deleteObject: {
			params: { Path: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Path: string }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				if (loc.rel === "") throw new ForbiddenError("Please do not modify directly the root of a workspace", "node.not.writeable");
				const doc: NodeDoc | null = await this.ops.index.get(loc.ds, loc.path);
				// S3 deletes are idempotent: a missing key is not an error.
				if (!doc) return { Deleted: false };
				await this.ops.removePermanently(loc.ds, loc.path);
				this.changed(ctx, "delete", doc);
				return { Deleted: true };
			},
		},
		copyObject: {
			params: { From: { type: "string", max: 8192 }, To: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ From: string; To: string }, Meta>) {
				const user = requireUser(ctx);
				const from = await this.resolver.require(ctx.params.From, user, "read");
				const to = await this.resolver.require(ctx.params.To, user, "write");
				if (to.rel === "") throw new ForbiddenError("Please do not modify directly the root of a workspace", "node.not.writeable");
				const doc: NodeDoc = await this.ops.copyFile(from.ds, from.path, to.ds, to.path);
				this.changed(ctx, "create", doc);
				return { Uuid: doc._id, Etag: doc.etag, MTime: doc.mtime, Size: doc.size };
			},
		},
	},
	events: {
		"identity.changed"() {
			this.resolver.clear();
		},
		"datasources.changed"() {
			this.handles.clear();
			this.resolver.clear();
		},
	},
	methods: {
		changed(ctx: Context, type: string, doc: NodeDoc) {
			ctx.emit("tree.changed", { type, uuid: doc._id, ds: doc.ds, path: doc.path });
		},
		adminNode(d: NodeDoc): TreeNode {
			return { Uuid: d._id, Path: d.path === "" ? d.ds : `${d.ds}/${d.path}`, Type: d.type, Size: d.size, MTime: d.mtime, Etag: d.etag, MetaStore: { ...d.meta, name: JSON.stringify(d.name) } };
		},
		async datasource(name: string): Promise<DatasourceHandle> {
			let h = this.handles.get(name);
			if (!h) {
				h = (async () => {
					const ds: { Name: string; FlatStorage?: boolean; StorageType: "LOCAL" | "S3" } = await this.broker.call("datasources.get", { name });
					await this.ops.index.ensureRoot(name);
					return { name, flat: ds.FlatStorage !== false, store: openStore(ds, loadConfig().dataDir) };
				})();
				h.catch(() => this.handles.delete(name));
				this.handles.set(name, h);
			}
			return h;
		},
		async statUserPath(path: string, user: Identity, extended = true): Promise<TreeNode | null> {
			const loc: Location | null = await this.resolver.resolve(path, user);
			if (!loc) return { Uuid: "ROOT", Path: "", Type: "COLLECTION", MetaStore: { name: '""' } };
			if (!loc.read) throw new ForbiddenError(`You cannot read in ${loc.ws.Slug}`, "node.not.readable");
			const doc = await this.ops.index.get(loc.ds, loc.path);
			if (!doc) return null;
			return presentNode(doc, loc, extended && doc.type === "COLLECTION" ? await this.countMeta(doc) : {});
		},
		async countMeta(doc: NodeDoc): Promise<Record<string, string>> {
			const c = await this.ops.index.childCounts(doc.ds, doc.path);
			return { ChildrenCount: String(c.files + c.folders), ChildrenFiles: String(c.files), ChildrenFolders: String(c.folders) };
		},
		async bulk(user: Identity, p: BulkParams) {
			if (!p.NodePaths?.length) throw new BadRequestError("NodePaths is required");
			if (p.Versions) throw new BadRequestError("Listing versions is not supported yet");
			const nodes: TreeNode[] = [];
			let page;
			for (const raw of p.NodePaths) {
				const listing = raw === "/*" || raw.endsWith("/*");
				const path = listing ? raw.slice(0, -2) : raw;
				if (!listing) {
					const n = await this.statUserPath(path, user).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e)));
					if (n) nodes.push(n);
					continue;
				}
				const loc: Location | null = await this.resolver.resolve(path, user);
				if (!loc) {
					const list: AccessibleWorkspace[] = await this.resolver.workspacesOf(user);
					for (const ws of list) nodes.push(presentWorkspace(ws, Object.keys(ws.RootNodes ?? {})[0] ?? ws.UUID));
					continue;
				}
				if (!loc.read) throw new ForbiddenError(`You cannot read in ${loc.ws.Slug}`, "node.not.readable");
				const folder = await this.ops.index.get(loc.ds, loc.path);
				if (!folder || folder.type !== "COLLECTION") throw new NotFoundError(`Folder ${path} not found`, "node.notfound");
				const offset = p.Offset ?? 0;
				const type = p.Filters?.type === "LEAF" || p.Filters?.type === "COLLECTION" ? p.Filters.type : undefined;
				const { nodes: children, total } = await this.ops.index.children(loc.ds, loc.path, { offset, limit: p.Limit || undefined, type });
				for (const c of children) nodes.push(presentNode(c, loc));
				page = pagination(offset, p.Limit ?? 0, total);
			}
			return { Nodes: nodes, Pagination: page };
		},
	},
	created() {
		this.handles = new Map<string, Promise<DatasourceHandle>>();
	},
	async started() {
		const index = new TreeIndex(this.store as Store<NodeDoc>);
		this.ops = new TreeOperations(index, (name) => this.datasource(name));
		this.resolver = new Resolver({
			accessible: (user) => this.broker.call("workspaces.accessible", { roles: user.Roles }),
			resolveVirtual: (uuid, user) => this.broker.call("datasources.resolveVirtual", { uuid, user: { Login: user.Login, Uuid: user.Uuid, GroupPath: user.GroupPath } }),
			nodeByUuid: (uuid) => index.byUuid(uuid),
			ensureFolder: async (ds, path) => {
				await this.datasource(ds);
				if (path) await this.ops.mkdir(ds, path, true);
			},
		});
		// Writes interrupted by a crash: their reservations are rolled back (the content, if any, is unreferenced).
		for (const d of await index.pendingOlderThan(0)) await index.abandon(d._id);
	},
};

export = TreeService;
