// Index documents and workspaces as Cells' treeNode, in user paths.
import { lookup as mimeLookup } from "mime-types";
import type { AccessibleWorkspace } from "../workspaces/model";
import type { NodeDoc, TreeNode } from "./model";
import { Resolver, type Location } from "./resolver";

const j = (v: unknown) => JSON.stringify(v);

/** Permission bits as the caller may use the node, as a file system would show them (rwx for folders). */
function modeOf(type: NodeDoc["type"], writable: boolean): number {
	if (type === "COLLECTION") return writable ? 0o755 : 0o555;
	return writable ? 0o644 : 0o444;
}

export function presentNode(doc: NodeDoc, loc: Pick<Location, "ws" | "rootPath" | "write" | "base">, extra: Record<string, string> = {}): TreeNode {
	const isRoot = doc.path === loc.rootPath;
	// A root shown under its workspace's slug (several roots, or a file) keeps its own name.
	const wsRoot = isRoot && !loc.base;
	const meta: Record<string, string> = { ...doc.meta, name: j(wsRoot ? loc.ws.Slug : loc.base && isRoot ? loc.base.slice(loc.base.lastIndexOf("/") + 1) : doc.name), ...extra };
	if (doc.type === "LEAF") meta.mime = j(mimeLookup(doc.name) || "application/octet-stream");
	if (!loc.write) meta.node_readonly = "true";
	if (wsRoot) Object.assign(meta, workspaceMeta(loc.ws));
	else if (isRoot) meta.ws_root = "true";
	return {
		Uuid: doc._id,
		Path: Resolver.userPath(loc, doc.path),
		Type: doc.type,
		Size: doc.size,
		MTime: doc.mtime,
		Etag: doc.etag,
		Mode: doc.mode ?? modeOf(doc.type, loc.write),
		MetaStore: meta,
	};
}

export function workspaceMeta(ws: AccessibleWorkspace): Record<string, string> {
	return {
		ws_scope: j(ws.Scope),
		ws_slug: j(ws.Slug),
		ws_uuid: j(ws.UUID),
		ws_label: j(ws.Label),
		ws_permissions: j(ws.Access),
		ws_syncable: "true",
		repository_id: j(ws.UUID),
	};
}

/** A node in datasource paths (`<datasource>/<path>`), as the admin tree shows it. */
export function presentAdminNode(d: NodeDoc): TreeNode {
	return { Uuid: d._id, Path: d.path === "" ? d.ds : `${d.ds}/${d.path}`, Type: d.type, Size: d.size, MTime: d.mtime, Etag: d.etag, Mode: d.mode ?? modeOf(d.type, true), MetaStore: { ...d.meta, name: j(d.name) } };
}

/** A workspace as a node of the root listing (`["", "/*"]`). */
export function presentWorkspace(ws: AccessibleWorkspace, rootUuid: string): TreeNode {
	return { Uuid: rootUuid, Path: ws.Slug, Type: "COLLECTION", MetaStore: { name: j(ws.Slug), ws_root: "true", ...workspaceMeta(ws) } };
}

export interface Pagination {
	Limit: number;
	CurrentOffset: number;
	Total: number;
	CurrentPage: number;
	TotalPages: number;
	NextOffset: number;
	PrevOffset: number;
}

/** Cells' pagination block: only when a limit was asked and not everything fits. */
export function pagination(offset: number, limit: number, total: number): Pagination | undefined {
	if (!limit || total <= limit) return undefined;
	return {
		Limit: limit,
		CurrentOffset: offset,
		Total: total,
		CurrentPage: Math.floor(offset / limit) + 1,
		TotalPages: Math.ceil(total / limit),
		NextOffset: offset + limit < total ? offset + limit : 0,
		PrevOffset: offset > 0 ? Math.max(0, offset - limit) : 0,
	};
}
