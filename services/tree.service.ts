/**
 * tree — owns the node index (every file and folder of every datasource) and the file operations on it:
 * stat, listing (`/tree/stats`, `/meta/bulk/get`), create, delete to the recycle bin, restore, and the admin
 * views in datasource paths. User paths are resolved through lib/tree/resolver (workspace roots, virtual nodes,
 * the caller's rights). Emits `tree.read` {id, by, node} when a user lists a folder (activity: followers of
 * "read"). Broadcasts `tree.changed` {type, node, from?, id, by?} (every gateway drops its cached reads,
 * every search replica updates its index). Consumes `identity.changed` and
 * `datasources.changed` (drops its caches). Calls `user-meta.valuesFor` once per stat or listing page (the
 * user metadata the caller may read, shown in the nodes' MetaStore) when a user-meta service runs.
 * Emits `audit.log` (node.delete, one per path) after `POST /tree/delete`.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { LeasesRepo, NodesRepo, TemplatesRepo } from "../lib/db";
import { PeriodicLease } from "../lib/cluster/periodic";
import { importNedbNodes } from "../lib/db/nodes-import";
import { loadConfig } from "../lib/config";
import { BadRequestError, NotFoundError } from "../lib/errors";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { TreeIndex } from "../lib/tree/index";
import { TreeOperations, type DatasourceHandle } from "../lib/tree/operations";
import { Resolver, type Location } from "../lib/tree/resolver";
import { presentAdminNode, presentNode } from "../lib/tree/present";
import { splitPath } from "../lib/tree/paths";
import { checkUserWritable, type NodeDoc, type TreeNode } from "../lib/tree/model";
import type { AccessibleWorkspace } from "../lib/workspaces/model";
import { DataStoresMixin, type DataStoresMethods } from "../mixins/datastores.mixin";
import { deleteObject, listWorkspaceObjects } from "../lib/tree/objects";
import { TreeReader, type BulkParams } from "../lib/tree/listing";
import { convertToFlat } from "../lib/tree/convert";
import { deleteNodes, restoreNodes, type RecycleDeps } from "../lib/tree/recycle";
import { createNodes } from "../lib/tree/create";
import { adminList, adminStat, type AdminListParams } from "../lib/tree/admin";
import { MAX_ARCHIVE_ENTRIES, archiveSource } from "../lib/jobs/archive";
import { bulkParams, nodeList, type NodeIn } from "../lib/tree/params";
import { S3_HEADERS } from "../lib/tree/meta";
import { checkObjectHeaders, encodeObjectHeaders } from "../lib/io/object-meta";
import { broadcast, call, emit, type ShareNode, type TreeChange, type VisibleIn, type VisibleNode, serviceRuns } from "../lib/contracts";
import { randomUUID } from "node:crypto";
import { audit } from "../lib/logs/audit";

/** S3 headers as internal calls pass them (x-amz-meta-* included); checked again before they are stored. */
const s3Headers = { type: "record", optional: true, key: { type: "string", max: 256 }, value: { type: "string", max: 8192 } };

interface Methods extends DataStoresMethods {
	sweepAll(maxAgeMs: number, orphans?: boolean): Promise<number>;
	leasedSweep(): Promise<boolean>;
	recycleDeps(by?: string): RecycleDeps;
	pathsOf(nodes: NodeIn[]): string[];
	broadcastChange(type: TreeChange["type"], doc: NodeDoc, from?: TreeChange["from"], by?: string): void;
	withSubscriptions(user: Identity, nodes: TreeNode[]): Promise<void>;
	shareNode(doc: NodeDoc, user: Identity): Promise<ShareNode>;
	listRoots(user: Identity, loc: Location, prefix: string, delimiter: string | undefined, startAfter: string | undefined, maxKeys: number): ReturnType<typeof listWorkspaceObjects>;
	announceReads(user: Identity, paths: string[], opened: Map<string, NodeDoc>): void;
	datasource(name: string): Promise<DatasourceHandle>;
	hasVersions(): boolean;
	addUserMeta(nodes: TreeNode[], user: Identity): Promise<void>;
}
interface Vars extends DatabaseVars {
	ops: TreeOperations;
	/** Datasources whose root node this process has made sure of. */
	rootsMade: Set<string>;
	resolver: Resolver;
	reader: TreeReader;
	sweepRuns: number;
	sweepLease: PeriodicLease;
	sweeper: NodeJS.Timeout;
}
type This = Service & Methods & Vars;

const TreeService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "tree",
	// The index lives in the SQL store (DATA_DIR/cellar.db, or DATABASE_URL).
	mixins: [DatabaseMixin, DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		stat: {
			rest: "GET /tree/stat/*Node",
			httpCache: true,
			read: true,
			params: { Node: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Node: string }, Meta>) {
				const user = requireUser(ctx);
				const node = await this.reader.stat(ctx.params.Node, user);
				if (!node) throw new NotFoundError(`${ctx.params.Node} not found`, "node.notfound");
				await this.withSubscriptions(user, [node]);
				return { Node: node };
			},
		},
		stats: {
			// Cells serves both routes with the same handler: the listing of the web UI and of cells-client.
			rest: ["POST /tree/stats", "POST /meta/bulk/get"],
			httpCache: true,
			read: true,
			params: bulkParams,
			async handler(ctx: Context<BulkParams, Meta>) {
				const user = requireUser(ctx);
				const opened = new Map<string, NodeDoc>();
				const out = await this.reader.bulk(user, ctx.params, (raw, doc) => opened.set(raw, doc));
				this.announceReads(user, ctx.params.NodePaths ?? [], opened);
				await this.withSubscriptions(user, (out as { Nodes?: TreeNode[] }).Nodes ?? []);
				return out;
			},
		},
		create: {
			rest: "POST /tree/create",
			params: { Nodes: nodeList, Recursive: { type: "boolean", optional: true }, TemplateUUID: { type: "string", optional: true, max: 128 } },
			async handler(ctx: Context<{ Nodes: NodeIn[]; Recursive?: boolean; TemplateUUID?: string }, Meta>) {
				const user = requireUser(ctx);
				return { Children: await createNodes({ ...this.recycleDeps(user.Login), ops: this.ops.authoredBy(user.Login) }, user, ctx.params.Nodes, ctx.params.Recursive ?? false, ctx.params.TemplateUUID, new TemplatesRepo(this.db)) };
			},
		},
		remove: {
			rest: "POST /tree/delete",
			params: { Nodes: nodeList, Recursive: { type: "boolean", optional: true }, RemovePermanently: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ Nodes: NodeIn[]; Recursive?: boolean; RemovePermanently?: boolean }, Meta>) {
				const user = requireUser(ctx);
				const paths = this.pathsOf(ctx.params.Nodes);
				const out = { DeleteJobs: await deleteNodes(this.recycleDeps(user.Login), user, paths, !!ctx.params.RemovePermanently) };
				for (const path of paths) audit(ctx, "node.delete", { target: path, nodePath: path, detail: ctx.params.RemovePermanently ? "permanently" : undefined });
				return out;
			},
		},
		restore: {
			rest: "POST /tree/restore",
			params: { Nodes: nodeList },
			async handler(ctx: Context<{ Nodes: NodeIn[] }, Meta>) {
				const user = requireUser(ctx);
				return { RestoreJobs: await restoreNodes(this.recycleDeps(user.Login), user, this.pathsOf(ctx.params.Nodes)) };
			},
		},
		adminList: {
			read: true,
			rest: "POST /tree/admin/list",
			params: {
				Node: { type: "object", props: { Path: { type: "string", optional: true, max: 8192 } } },
				Recursive: { type: "boolean", optional: true },
				Limit: { type: "number", optional: true, integer: true, min: 0 },
				Offset: { type: "number", optional: true, integer: true, min: 0 },
				FilterType: { type: "enum", optional: true, values: ["UNKNOWN", "LEAF", "COLLECTION"] },
			},
			async handler(ctx: Context<AdminListParams, Meta>) {
				requireAdmin(ctx);
				return adminList(this.ops.index, () => call(ctx, "datasources.list", {}), ctx.params);
			},
		},
		adminStat: {
			read: true,
			rest: "POST /tree/admin/stat",
			params: { Node: { type: "object", props: { Path: { type: "string", optional: true, max: 8192 } } }, WithCommits: { type: "boolean", optional: true }, WithExtendedStats: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ Node: { Path?: string } }, Meta>) {
				requireAdmin(ctx);
				return adminStat(this.ops.index, ctx.params.Node.Path);
			},
		},

		// ---- internal: file operations for the jobs service, index views for search ----
		move: {
			params: { From: { type: "string", max: 8192 }, To: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ From: string; To: string }, Meta>) {
				const user = requireUser(ctx);
				const from = await this.resolver.require(ctx.params.From, user, "write");
				const to = await this.resolver.require(ctx.params.To, user, "write");
				// A workspace root never moves; moving out of the recycle bin is allowed, into it is not.
				if (from.rel === "") checkUserWritable(from.rel);
				checkUserWritable(to.rel);
				const moved: NodeDoc = await this.ops.move(from.ds, from.path, to.ds, to.path);
				this.broadcastChange("move", moved, { ds: from.ds, path: from.path }, user.Login);
				return presentNode(moved, to);
			},
		},
		copy: {
			params: { From: { type: "string", max: 8192 }, To: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ From: string; To: string }, Meta>) {
				const user = requireUser(ctx);
				const from = await this.resolver.require(ctx.params.From, user, "read");
				const to = await this.resolver.require(ctx.params.To, user, "write");
				checkUserWritable(to.rel);
				const created: NodeDoc[] = await this.ops.copyTree(from.ds, from.path, to.ds, to.path);
				for (const d of created) this.broadcastChange("create", d, undefined, user.Login);
				return presentNode(created[0], to);
			},
		},
		setMeta: {
			params: { Path: { type: "string", max: 8192 }, set: { type: "record", optional: true }, remove: { type: "array", optional: true, items: "string" } },
			async handler(ctx: Context<{ Path: string; set?: Record<string, string>; remove?: string[] }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				const doc: NodeDoc | null = await this.ops.index.get(loc.ds, loc.path);
				if (!doc) throw new NotFoundError(`${ctx.params.Path} not found`, "node.notfound");
				const changes: Record<string, string | undefined> = { ...(ctx.params.set ?? {}) };
				for (const k of ctx.params.remove ?? []) changes[k] = undefined;
				const updated: NodeDoc = await this.ops.index.setMeta(doc._id, changes);
				this.broadcastChange("meta", updated, undefined, ctx.meta.user?.Login);
				return presentNode(updated, loc);
			},
		},
		convertToFlat: {
			params: { ds: { type: "string", max: 64 } },
			async handler(ctx: Context<{ ds: string }, Meta>) {
				requireAdmin(ctx);
				// New writes must already go to uuid keys before existing files are moved: switch first, then convert.
				await call(ctx, "datasources.setFlat", { name: ctx.params.ds });
				this.forgetDataStore(ctx.params.ds);
				const handle: DatasourceHandle = await this.datasource(ctx.params.ds);
				const report = await convertToFlat(this.ops.index, ctx.params.ds, handle.store);
				this.logger.info(`Datasource ${ctx.params.ds} converted to flat: ${report.converted} moved, ${report.alreadyFlat} already flat, ${report.failed.length} failed`);
				return report;
			},
		},
		resyncApply: {
			params: {
				ds: { type: "string", max: 64 },
				add: { type: "array", max: 5000, items: { type: "object", props: { path: { type: "string", max: 8192 }, size: { type: "number", min: 0 }, mtime: "number", etag: { type: "string", max: 128 } } } },
				remove: { type: "array", max: 5000, items: { type: "string", max: 8192 } },
			},
			async handler(ctx: Context<{ ds: string; add: { path: string; size: number; mtime: number; etag: string }[]; remove: string[] }, Meta>) {
				requireAdmin(ctx);
				for (const f of ctx.params.add) splitPath(f.path);
				const r = await this.ops.resyncApply(ctx.params.ds, ctx.params.add, ctx.params.remove);
				for (const d of r.added) this.broadcastChange("create", d);
				for (const d of r.updated) this.broadcastChange("content", d);
				for (const d of r.removed) if (d.type === "LEAF") this.broadcastChange("delete", d);
				return { Added: r.added.length, Updated: r.updated.length, Removed: r.removed.length };
			},
		},
		// Internal: a flat datasource's index checked against its storage (the datasource-resync job of a flat one).
		checkFlat: {
			params: { ds: { type: "string", max: 64 } },
			async handler(ctx: Context<{ ds: string }, Meta>) {
				requireAdmin(ctx);
				return this.ops.checkFlat(ctx.params.ds);
			},
		},
		// Internal: object keys of a few files of a datasource (datasources checks a new storage place holds them).
		sampleKeys: {
			params: { ds: { type: "string", max: 64 }, limit: { type: "number", integer: true, min: 1, max: 100 } },
			async handler(ctx: Context<{ ds: string; limit: number }>) {
				return this.ops.index.sampleKeys(ctx.params.ds, ctx.params.limit);
			},
		},
		// Internal, before a datasource's configuration is deleted (datasources.deleteDataSource).
		dropDatasource: {
			params: { ds: { type: "string", max: 64 } },
			async handler(ctx: Context<{ ds: string }, Meta>) {
				requireAdmin(ctx);
				const { removed, root } = await this.ops.dropDatasource(ctx.params.ds);
				this.rootsMade.delete(ctx.params.ds);
				// A "delete" of the root takes the whole datasource out of every search index and cached listing.
				this.broadcastChange("delete", root);
				return { Removed: removed };
			},
		},
		sweep: {
			params: { maxAgeMs: { type: "number", min: 0 }, orphans: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ maxAgeMs: number; orphans?: boolean }, Meta>) {
				requireAdmin(ctx);
				return { Removed: await this.sweepAll(ctx.params.maxAgeMs, ctx.params.orphans ?? false) };
			},
		},
		// Internal: nodes by uuid as the caller sees them (user metadata, bookmarks, graph); unreadable ones left out.
		statUuids: {
			read: true,
			params: { Uuids: { type: "array", items: { type: "string", max: 255 }, max: 1000 } },
			async handler(ctx: Context<{ Uuids: string[] }, Meta>) {
				return { Nodes: await this.reader.statUuids(ctx.params.Uuids, requireUser(ctx)) };
			},
		},
		// Internal: the files most recently modified in the caller's workspaces (graph recommendations).
		recent: {
			read: true,
			params: { Limit: { type: "number", integer: true, min: 1, max: 1000 } },
			async handler(ctx: Context<{ Limit: number }, Meta>) {
				return { Nodes: await this.reader.recent(requireUser(ctx), ctx.params.Limit) };
			},
		},
		roots: {
			read: true,
			params: {},
			async handler(ctx: Context<unknown, Meta>) {
				const user = requireUser(ctx);
				const out = [];
				for (const ws of await this.resolver.workspacesOf(user)) {
					// Roots shown under the slug (a cell or link with several roots): each one, under its own path.
					const multi = await this.resolver.multipleRoots(ws, user).catch(() => null);
					if (multi) {
						for (const r of multi) {
							const doc: NodeDoc | null = await this.ops.index.get(r.ds, r.path);
							if (doc?.type === "COLLECTION") out.push({ Slug: `${ws.Slug}/${r.key}`, UUID: ws.UUID, Label: ws.Label, Scope: ws.Scope, ds: r.ds, rootPath: r.path, read: ws.Access.includes("r"), write: ws.Access.includes("w") });
						}
						continue;
					}
					const root = await this.resolver.rootOf(ws, user).catch(() => null);
					if (root) out.push({ Slug: ws.Slug, UUID: ws.UUID, Label: ws.Label, Scope: ws.Scope, ds: root.ds, rootPath: root.path, read: ws.Access.includes("r"), write: ws.Access.includes("w") });
				}
				return out;
			},
		},
		// Internal (activity feeds, websocket): where nodes show in the caller's workspaces, with the caller's rights
		// (node ACLs and token scopes included): only the workspaces where the caller may read the node are listed.
		visible: {
			read: true,
			params: {
				Nodes: {
					type: "array",
					max: 500,
					items: { type: "object", props: { Uuid: { type: "string", optional: true, max: 255 }, ds: { type: "string", optional: true, max: 255 }, path: { type: "string", optional: true, max: 8192 } } },
				},
			},
			async handler(ctx: Context<{ Nodes: { Uuid?: string; ds?: string; path?: string }[] }, Meta>): Promise<VisibleNode[]> {
				const user = requireUser(ctx);
				const roots: { ws: AccessibleWorkspace; ds: string; path: string }[] = [];
				for (const ws of await this.resolver.visibleWorkspaces(user)) {
					const root = await this.resolver.rootOf(ws, user).catch(() => null);
					if (root && ws.Access.includes("r")) roots.push({ ws, ...root });
				}
				const out: VisibleNode[] = [];
				for (const n of ctx.params.Nodes) {
					let node: VisibleNode["Node"];
					if (n.Uuid) {
						const doc: NodeDoc | null = await this.ops.index.byUuid(n.Uuid);
						if (doc) node = { Uuid: doc._id, ds: doc.ds, path: doc.path, type: doc.type };
					} else if (n.ds !== undefined && n.path !== undefined) node = { ds: n.ds, path: n.path };
					const In: VisibleIn[] = [];
					if (node) {
						for (const r of roots) {
							if (r.ds !== node.ds || !(r.path === "" || node.path === r.path || node.path.startsWith(`${r.path}/`))) continue;
							const userPath = Resolver.userPath({ ws: r.ws, rootPath: r.path }, node.path);
							const loc = await this.resolver.resolve(userPath, user).catch(() => null);
							if (!loc) continue;
							const ok = await this.resolver.check(loc, user, "read", userPath).then(
								() => true,
								() => false,
							);
							if (ok) In.push({ UUID: r.ws.UUID, Slug: r.ws.Slug, Label: r.ws.Label, ...(r.ws.Scope ? { Scope: r.ws.Scope } : {}), Path: userPath });
						}
					}
					out.push(node ? { Node: node, In } : { In });
				}
				return out;
			},
		},
		uuidsAt: {
			read: true,
			params: { ds: { type: "string", max: 255 }, paths: { type: "array", items: { type: "string", max: 8192 }, max: 256 } },
			async handler(ctx: Context<{ ds: string; paths: string[] }>): Promise<(string | null)[]> {
				return Promise.all(ctx.params.paths.map(async (p) => ((await this.ops.index.get(ctx.params.ds, p)) as NodeDoc | null)?._id ?? null));
			},
		},
		scan: {
			read: true,
			params: { after: { type: "string", optional: true }, limit: { type: "number", integer: true, min: 1, max: 10_000 } },
			async handler(ctx: Context<{ after?: string; limit: number }>) {
				const docs: NodeDoc[] = await this.ops.index.scan(ctx.params.after, ctx.params.limit);
				return docs.map((d) => ({ Uuid: d._id, ds: d.ds, path: d.path, name: d.name, type: d.type, size: d.size, mtime: d.mtime, etag: d.etag, key: d.key, meta: d.meta }));
			},
		},

		// ---- internal, for the share service ----
		shareNode: {
			read: true,
			params: { Uuid: { type: "string", optional: true, max: 255 }, Path: { type: "string", optional: true, max: 8192 }, Any: { type: "boolean", optional: true } },
			async handler(ctx: Context<{ Uuid?: string; Path?: string; Any?: boolean }, Meta>) {
				const user = requireUser(ctx);
				let doc: NodeDoc | null = null;
				if (ctx.params.Uuid) doc = await this.ops.index.byUuid(ctx.params.Uuid);
				else if (ctx.params.Path) {
					const loc = await this.resolver.require(ctx.params.Path, user, "read");
					doc = loc.virtualRoots ? null : await this.ops.index.get(loc.ds, loc.path);
				} else throw new BadRequestError("A root node needs a Uuid or a Path");
				if (!doc) throw new NotFoundError(`Node ${ctx.params.Uuid ?? ctx.params.Path} not found`, "node.notfound");
				try {
					return await this.shareNode(doc, user);
				} catch (err) {
					// An administrator's audit names nodes they do not reach through a workspace: in datasource paths.
					if (!ctx.params.Any || !isAdmin(user) || (err as { code?: number }).code !== 404) throw err;
					return { Uuid: doc._id, ds: doc.ds, path: doc.path, Type: doc.type, name: doc.name, readable: false, writable: false, Node: presentAdminNode(doc), AppearsIn: [] };
				}
			},
		},
		createCellRoot: {
			params: { Label: { type: "string", min: 1, max: 500 } },
			async handler(ctx: Context<{ Label: string }, Meta>) {
				const user = requireUser(ctx);
				const v = await call(ctx, "datasources.resolveVirtual", { uuid: "cells", user: { Login: user.Login, Uuid: user.Uuid, GroupPath: user.GroupPath } });
				await this.datasource(v.datasource);
				if (v.path) await this.ops.mkdir(v.datasource, v.path, true);
				const base = ctx.params.Label.replace(/[\\/\u0000-\u001f\u007f]/g, "-").trim().slice(0, 200) || "cell";
				for (let i = 0; ; i++) {
					const name = i ? `${base}-${i}` : base;
					const path = v.path ? `${v.path}/${name}` : name;
					if (await this.ops.index.get(v.datasource, path)) continue;
					const created: NodeDoc = await this.ops.mkdir(v.datasource, path, false);
					const doc: NodeDoc = await this.ops.index.setMeta(created._id, { CellNode: "true" });
					this.broadcastChange("create", doc);
					// Under the cells virtual node, which no workspace shows: the cell itself will.
					return { Uuid: doc._id, ds: doc.ds, path: doc.path, Type: doc.type, name: doc.name, readable: true, writable: true, Node: presentAdminNode(doc), AppearsIn: [] };
				}
			},
		},
		// A cell's own folder (CreateEmptyRoot), removed with the cell unless another share still roots on it.
		removeCellRoot: {
			params: { Uuid: { type: "string", max: 255 } },
			async handler(ctx: Context<{ Uuid: string }, Meta>) {
				const doc: NodeDoc | null = await this.ops.index.byUuid(ctx.params.Uuid);
				if (!doc || doc.meta.CellNode !== "true" || doc.path === "") return { Removed: 0 };
				const still = await ctx.call<unknown[], { NodeIDs: string[]; Actions: string[] }>("acl.find", { NodeIDs: [doc._id], Actions: ["workspace-path"] });
				if (still.length) return { Removed: 0 };
				const removed: number = await this.ops.removePermanently(doc.ds, doc.path, ctx.meta.user?.Uuid);
				this.broadcastChange("delete", doc);
				return { Removed: removed };
			},
		},
		setNodeMeta: {
			params: { Uuid: { type: "string", max: 255 }, Key: { type: "string", max: 255 }, Value: { type: "string", nullable: true, max: 1 << 20 } },
			async handler(ctx: Context<{ Uuid: string; Key: string; Value: string | null }, Meta>) {
				const doc: NodeDoc | null = await this.ops.index.byUuid(ctx.params.Uuid);
				if (!doc) return { Updated: false };
				const updated: NodeDoc = await this.ops.index.setMeta(doc._id, { [ctx.params.Key]: ctx.params.Value ?? undefined });
				this.broadcastChange("meta", updated);
				return { Updated: true };
			},
		},

		// ---- internal, for the /io gateway (which moves the bytes itself, never through the transporter) ----
		locate: {
			read: true,
			params: { Path: { type: "string", max: 8192 }, need: { type: "enum", values: ["read", "write"] } },
			async handler(ctx: Context<{ Path: string; need: "read" | "write" }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), ctx.params.need);
				const doc: NodeDoc | null = await this.ops.index.get(loc.ds, loc.path);
				// A path inside an archive file (archive browsing) names an entry that can be read from it.
				const at = !doc && ctx.params.need === "read" ? await this.reader.archiveAt(loc) : null;
				const archive = at && { Key: at.doc.key, Size: at.doc.size, MTime: at.doc.mtime, Format: at.format, Inner: at.inner };
				const node = doc && { Uuid: doc._id, Type: doc.type, Key: doc.key, Size: doc.size, MTime: doc.mtime, Etag: doc.etag, Headers: doc.meta[S3_HEADERS] };
				return { ds: loc.ds, path: loc.path, node, ...(archive ? { archive } : {}) };
			},
		},
		prepareWrite: {
			// Size: the upload's announced length, refused (413) when the datasource's storage cannot hold it.
			params: { Path: { type: "string", max: 8192 }, Size: { type: "number", integer: true, min: 0, optional: true } },
			async handler(ctx: Context<{ Path: string; Size?: number }, Meta>) {
				const loc = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				checkUserWritable(loc.rel);
				return { ds: loc.ds, path: loc.path, ...(await this.ops.prepareWrite(loc.ds, loc.path, ctx.params.Size)) };
			},
		},
		commitWrite: {
			params: { ds: "string", path: "string", uuid: "string", key: "string", size: { type: "number", min: 0 }, etag: "string", headers: s3Headers },
			async handler(ctx: Context<{ ds: string; path: string; uuid: string; key: string; size: number; etag: string; headers?: Record<string, string> }, Meta>) {
				const { ds, path, uuid, key, size, etag } = ctx.params;
				const headers = encodeObjectHeaders(checkObjectHeaders(ctx.params.headers));
				const { node: doc, previous } = await this.ops.authoredBy(ctx.meta.user?.Login ?? "").commitWriteOver(ds, path, { uuid, key, size, etag, headers }, ctx.meta.user?.Uuid);
				// A file that was not there is a creation for the feeds and the web clients, an overwrite a content change.
				this.broadcastChange(previous ? "content" : "create", doc, undefined, ctx.meta.user?.Login);
				return { Uuid: doc._id, Etag: doc.etag, MTime: doc.mtime, Size: doc.size };
			},
		},
		listObjects: {
			read: true,
			params: { Prefix: { type: "string", max: 8192 }, Delimiter: { type: "string", optional: true, max: 16 }, StartAfter: { type: "string", optional: true, max: 8192 }, MaxKeys: { type: "number", integer: true, min: 0, max: 1000 } },
			async handler(ctx: Context<{ Prefix: string; Delimiter?: string; StartAfter?: string; MaxKeys: number }, Meta>) {
				const user = requireUser(ctx);
				const { Prefix, Delimiter, StartAfter, MaxKeys } = ctx.params;
				const slug = Prefix.split("/")[0];
				if (!Prefix.includes("/")) {
					// Workspaces are the top-level "folders" of the bucket.
					const list: AccessibleWorkspace[] = await this.resolver.visibleWorkspaces(user);
					const names = list.map((w) => `${w.Slug}/`).filter((k) => k.startsWith(Prefix) && (!StartAfter || k > StartAfter)).sort();
					if (Delimiter === "/") return { Contents: [], CommonPrefixes: names.slice(0, MaxKeys), IsTruncated: names.length > MaxKeys, NextStartAfter: names.length > MaxKeys ? names[MaxKeys - 1] : undefined };
					if (names.length !== 1) return { Contents: [], CommonPrefixes: [], IsTruncated: false };
				}
				const loc: Location = await this.resolver.require(slug, user, "read");
				const prefix = Prefix.includes("/") ? Prefix : `${slug}/`;
				if (loc.virtualRoots) return this.listRoots(user, loc, prefix, Delimiter, StartAfter, MaxKeys);
				return listWorkspaceObjects(this.ops.index, loc, prefix, Delimiter, StartAfter, MaxKeys);
			},
		},
		// S3 PUT of `dir/`: the folder (with its missing parents); a file of that name is a conflict.
		folderMarker: {
			params: { Path: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Path: string }, Meta>) {
				const loc: Location = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				checkUserWritable(loc.rel);
				const doc: NodeDoc = await this.ops.authoredBy(ctx.meta.user?.Login ?? "").mkdir(loc.ds, loc.path, true);
				return { Uuid: doc._id, MTime: doc.mtime };
			},
		},
		// S3 DeleteObject: a file, or an empty folder named `dir/`; never a folder holding anything (lib/tree/objects).
		deleteObject: {
			params: { Path: { type: "string", max: 8192 } },
			async handler(ctx: Context<{ Path: string }, Meta>) {
				const loc: Location = await this.resolver.require(ctx.params.Path, requireUser(ctx), "write");
				// S3 deletes are idempotent: a missing key is not an error, nor one another delete just removed.
				// Any ACL on a folder (a workspace's root, a share, a restriction) keeps it; unknown (no acl service): kept.
				const kept = async (doc: NodeDoc) => (await call(ctx, "acl.find", { NodeIDs: [doc._id] }).catch(() => [doc])).length > 0;
				const removed: NodeDoc[] = await deleteObject(this.ops, loc, ctx.params.Path.endsWith("/"), kept, ctx.meta.user?.Uuid);
				for (const d of removed) this.broadcastChange("delete", d, undefined, ctx.meta.user?.Login);
				return { Deleted: removed.length > 0 };
			},
		},
		// S3 CopyObject: the source's stored headers travel with the copy, unless `Headers` replaces them (REPLACE).
		copyObject: {
			params: { From: { type: "string", max: 8192 }, To: { type: "string", max: 8192 }, Headers: s3Headers },
			async handler(ctx: Context<{ From: string; To: string; Headers?: Record<string, string> }, Meta>) {
				const user = requireUser(ctx);
				const from = await this.resolver.require(ctx.params.From, user, "read");
				const to = await this.resolver.require(ctx.params.To, user, "write");
				checkUserWritable(to.rel);
				const replace = ctx.params.Headers && (encodeObjectHeaders(checkObjectHeaders(ctx.params.Headers)) ?? "");
				if (from.ds === to.ds && from.path === to.path) {
					// Onto itself: only a change of headers, which S3 requires (anything else is refused before this).
					if (replace === undefined) throw new BadRequestError("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata");
					const doc: NodeDoc = await this.ops.replaceHeaders(to.ds, to.path, replace || undefined);
					this.broadcastChange("meta", doc, undefined, user.Login);
					return { Uuid: doc._id, Etag: doc.etag, MTime: doc.mtime, Size: doc.size };
				}
				const doc: NodeDoc = await this.ops.copyFile(from.ds, from.path, to.ds, to.path, replace);
				this.broadcastChange("create", doc, undefined, user.Login);
				return { Uuid: doc._id, Etag: doc.etag, MTime: doc.mtime, Size: doc.size };
			},
		},
	},
	events: {
		// Who sees what changed with a share: cached rights and roots are dropped.
		"share.changed"() {
			this.resolver.clear();
		},
		"identity.changed"() {
			this.resolver.clear();
		},
		"datasources.changed"() {
			this.resolver.clear();
			this.rootsMade.clear();
		},
		// A folder moved (into a recycle bin, say) may be some share's root: roots are looked up again.
		"tree.changed"(ctx: Context<TreeChange>) {
			if (ctx.params.type === "move" || ctx.params.type === "delete") this.resolver.forgetRoots();
		},
	},
	methods: {
		/** A node as the share service needs it: where the caller reaches it, and with which rights. */
		async shareNode(doc: NodeDoc, user: Identity) {
			const places: { loc: Location; userPath: string }[] = await this.resolver.locate(doc.ds, doc.path, user);
			// Write-only places count (an upload link's visitor finds its folder); `readable` says whether any reads.
			const reached = places.filter((p) => p.loc.read || p.loc.write);
			if (!reached.length) throw new NotFoundError(`Node ${doc._id} not found`, "node.notfound");
			const first = reached.find((p) => p.loc.read) ?? reached[0];
			const AppearsIn = reached.map((p) => ({ WsUuid: p.loc.ws.UUID, WsLabel: p.loc.ws.Label, WsSlug: p.loc.ws.Slug, WsScope: p.loc.ws.Scope, Path: p.userPath }));
			return { Uuid: doc._id, ds: doc.ds, path: doc.path, Type: doc.type, name: doc.name, readable: reached.some((p) => p.loc.read), writable: reached.some((p) => p.loc.write), Node: presentNode(doc, first.loc), AppearsIn };
		},
		/**
		 * S3 listing of a workspace whose roots show under its slug (several roots, or a file): the roots at its top
		 * level (folders as common prefixes with a delimiter), each root's keys below it, in key order.
		 */
		async listRoots(user: Identity, loc: Location, prefix: string, delimiter: string | undefined, startAfter: string | undefined, maxKeys: number) {
			const contents: { Key: string; Size: number; MTime: number; Etag?: string }[] = [];
			const prefixes: string[] = [];
			let truncated = false;
			const after = (k: string) => !startAfter || k > startAfter;
			for (const r of loc.virtualRoots ?? []) {
				const doc: NodeDoc | null = await this.ops.index.get(r.ds, r.path);
				if (!doc) continue;
				const base = `${loc.ws.Slug}/${r.key}`;
				if (doc.type === "LEAF") {
					if (base.startsWith(prefix) && after(base)) contents.push({ Key: base, Size: doc.size, MTime: doc.mtime, Etag: doc.etag });
				} else if (delimiter === "/" && !prefix.startsWith(`${base}/`)) {
					if (`${base}/`.startsWith(prefix) && after(`${base}/`)) prefixes.push(`${base}/`);
				} else if (`${base}/`.startsWith(prefix) || prefix.startsWith(`${base}/`)) {
					const rootLoc: Location = await this.resolver.require(base, user, "read");
					const part = await listWorkspaceObjects(this.ops.index, rootLoc, prefix.startsWith(`${base}/`) ? prefix : `${base}/`, delimiter, startAfter, maxKeys);
					contents.push(...part.Contents);
					prefixes.push(...part.CommonPrefixes);
					truncated ||= part.IsTruncated;
				}
			}
			// Each root gave at most a page: the merged keys in order, cut at the page's size.
			const keys = [...contents.map((c) => c.Key), ...prefixes].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
			const page = new Set(keys.slice(0, maxKeys));
			const IsTruncated = truncated || keys.length > maxKeys;
			return {
				Contents: contents.filter((c) => page.has(c.Key)).sort((x, y) => (x.Key < y.Key ? -1 : 1)),
				CommonPrefixes: prefixes.filter((p) => page.has(p)).sort(),
				IsTruncated,
				NextStartAfter: IsTruncated ? keys[Math.min(maxKeys, keys.length) - 1] : undefined,
			};
		},
		/** Staging leftovers of every datasource; with `orphans`, also unreferenced objects of the tree's flat ones. */
		async sweepAll(maxAgeMs: number, orphans = false): Promise<number> {
			const list = await call(this.broker, "datasources.list", {}).catch(() => []);
			return this.ops.sweepAll(list, maxAgeMs, orphans, (name: string, e: Error) => this.logger.warn(`Sweeping ${name}: ${e.message}`));
		},
		/** The timer's sweep, on one node of a cluster (the lease's holder); whether this one swept. */
		async leasedSweep(): Promise<boolean> {
			try {
				return (await this.sweepLease.run(() => this.sweepAll(24 * 3600_000, this.sweepRuns++ % 24 === 0))).ran;
			} catch (e) {
				this.logger.warn(`Tree sweep failed: ${(e as Error).message}`);
				return false;
			}
		},
		recycleDeps(by?: string): RecycleDeps {
			return { ops: this.ops, resolver: this.resolver, changed: (type, doc, from) => this.broadcastChange(type, doc, from, by) };
		},
		pathsOf(nodes: NodeIn[]): string[] {
			return nodes.map((n) => {
				if (!n.Path) throw new BadRequestError("Every node needs a Path");
				return n.Path;
			});
		},
		/** Cells' `user_subscriptions` meta: the events the caller follows on each node (activity service). */
		async withSubscriptions(user: Identity, nodes: TreeNode[]): Promise<void> {
			const uuids = nodes.map((n) => n.Uuid).filter((u): u is string => !!u);
			if (!uuids.length || !serviceRuns(this.broker, "activity")) return;
			const followed = await call(this.broker, "activity.followed", { UserId: user.Login, ObjectIds: uuids.slice(0, 1000) }).catch(() => ({}) as Record<string, string[]>);
			for (const n of nodes) {
				const events = n.Uuid ? followed[n.Uuid] : undefined;
				if (events?.length) n.MetaStore = { ...(n.MetaStore ?? {}), user_subscriptions: JSON.stringify(events.join(",")) };
			}
		},
		/** `tree.read` for the folders a listing opened (`<folder>/*`, as the listing found them): their followers may want to know (activity). */
		announceReads(user: Identity, paths: string[], opened: Map<string, NodeDoc>): void {
			if (!serviceRuns(this.broker, "activity")) return;
			for (const p of paths.filter((x) => x.endsWith("/*")).slice(0, 5)) {
				const doc = opened.get(p);
				if (!doc) continue;
				const node = { Uuid: doc._id, ds: doc.ds, path: doc.path, name: doc.name, type: doc.type, size: doc.size, mtime: doc.mtime };
				// After the answer, as before: nothing the listing owes waits on the feeds.
				void Promise.resolve()
					.then(() => emit(this.broker, "tree.read", { id: randomUUID(), by: user.Login, node }))
					.catch(() => undefined);
			}
		},
		/** `tree.changed`: {type: create|content|move|delete|meta, node, from?} — `from` is the old place of a move. */
		broadcastChange(type: TreeChange["type"], doc: NodeDoc, from?: TreeChange["from"], by?: string) {
			const node = { Uuid: doc._id, ds: doc.ds, path: doc.path, name: doc.name, type: doc.type, size: doc.size, mtime: doc.mtime, etag: doc.etag, key: doc.key, meta: doc.meta };
			const change: TreeChange = { type, node, id: randomUUID(), ...(from ? { from } : {}), ...(by ? { by } : {}) };
			void broadcast(this.broker, "tree.changed", change);
		},
		/** The user metadata the caller may read, into the nodes' MetaStore: one call for the whole answer. */
		async addUserMeta(nodes: TreeNode[], user: Identity): Promise<void> {
			if (!serviceRuns(this.broker, "user-meta")) return;
			try {
				// One call per answer; a huge answer (many large pages at once) in a few.
				for (let i = 0; i < nodes.length; i += 5000) {
					const page = nodes.slice(i, i + 5000);
					const values = await call(this.broker, "user-meta.valuesFor", { NodeUuids: page.map((n) => n.Uuid) }, { meta: { user } });
					for (const n of page) if (values[n.Uuid]) n.MetaStore = { ...n.MetaStore, ...values[n.Uuid] };
				}
			} catch (e) {
				// A listing without user metadata beats no listing.
				this.logger.warn(`User metadata not added: ${(e as Error).message}`);
			}
		},
		/** Versioning is optional: without a versions service, content is simply replaced or deleted. */
		hasVersions(this: This): boolean {
			return serviceRuns(this.broker, "versions");
		},
		async datasource(name: string): Promise<DatasourceHandle> {
			const h = await this.dataStore(name);
			// Once per datasource and process, not at each of the 3-4 calls an upload makes: a root removed since
			// (the datasource dropped) is made again by the index's mkdir, which every write goes through.
			if (!this.rootsMade.has(name)) {
				await this.ops.index.ensureRoot(name);
				this.rootsMade.add(name);
			}
			return h;
		},
	},

	async started() {
		this.rootsMade = new Set();
		// A DATA_DIR of the NeDB versions: its index is read once into the SQL store (nothing is loaded at later starts).
		await importNedbNodes(this.db, loadConfig().dataDir, (msg) => this.logger.info(msg));
		const index = new TreeIndex(new NodesRepo(this.db));
		this.ops = new TreeOperations(
			index,
			(name) => this.datasource(name),
			async (ds, previous, reason, owner) => {
				// TreeOperations asks only for files with content (a key): nothing else can be kept.
				if (!previous.key || !this.hasVersions()) return;
				// Capturing copies the whole file: give it the time a large file needs.
				await call(
					this.broker,
					"versions.capture",
					{ ds, uuid: previous._id, path: previous.path, key: previous.key, size: previous.size, etag: previous.etag ?? "", mtime: previous.mtime, owner: owner ?? "", reason },
					{ timeout: 30 * 60_000 },
				);
			},
			(created, by) => {
				for (const d of created) this.broadcastChange("create", d, undefined, by);
			},
		);
		this.resolver = new Resolver({
			accessible: (user) => call(this.broker, "workspaces.accessible", { roles: user.Roles }),
			resolveVirtual: (uuid, user) => call(this.broker, "datasources.resolveVirtual", { uuid, user: { Login: user.Login, Uuid: user.Uuid, GroupPath: user.GroupPath } }),
			nodeByUuid: (uuid) => index.byUuid(uuid),
			nodeAcls: async (roles) => {
				const acls = await call(this.broker, "acl.find", { RoleIDs: roles, Actions: ["read", "write", "deny"] });
				// Workspace rights are ACLs on the workspace roots; the others are set on nodes.
				return acls.filter((a) => a.NodeID && !a.WorkspaceID);
			},
			uuidAt: async (ds, path) => (await index.get(ds, path))?._id,
			ensureFolder: async (ds, path) => {
				await this.datasource(ds);
				if (path) await this.ops.mkdir(ds, path, true);
			},
		});
		this.reader = new TreeReader(
			index,
			this.resolver,
			async (uuid) => (this.hasVersions() ? call(this.broker, "versions.list", { uuid }) : []),
			async (doc, format) => archiveSource(format, (await this.dataStore(doc.ds)).store, doc.key ?? "", doc.size, { maxEntries: MAX_ARCHIVE_ENTRIES }),
			(nodes, user) => this.addUserMeta(nodes, user),
		);
		// Content of writes interrupted by a crash is never in the index; it is swept once a day old.
		// Unreferenced objects of flat datasources (a listing of all their storage) once a day.
		// Once per cluster: the lease's holder sweeps every hour; another node takes over within two if it stops.
		this.sweepRuns = 0;
		this.sweepLease = new PeriodicLease(new LeasesRepo(this.db), "tree.sweep", this.broker.nodeID, 2 * 3600_000, (e) => this.logger.warn(`Tree sweep lease renewal failed: ${(e as Error).message}`));
		// First sweep once the node has settled (the datasources service may start after this one).
		this.sweeper = setInterval(() => void this.leasedSweep(), 3600_000);
		this.sweeper.unref?.();
		setTimeout(() => void this.leasedSweep(), 60_000).unref?.();
	},
	async stopped() {
		clearInterval(this.sweeper);
		await this.sweepLease?.release().catch(() => undefined);
	},
};

export = TreeService;
