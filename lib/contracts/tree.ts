// tree — the actions other services and the /io gateway call (REST-only actions are not listed), and the
// `tree.changed` event.
import type { TreeNode, NodeType } from "../tree/model";
import type { FlatCheck } from "../tree/operations";
import type { ArchiveFormat } from "../jobs/params";
import type { IndexNode } from "../search/index";
import type { RootInfo } from "../search/query";
import type { AdminListParams, adminList, adminStat } from "../tree/admin";

/** `tree.locate`: where a user path lives, its node (null when absent) and, inside an archive file, that file. */
export interface Located {
	ds: string;
	path: string;
	/** `Headers`: what the client stored with the content (Content-Type, x-amz-meta-*…), as JSON. */
	node: { Uuid: string; Type: NodeType; Key?: string; Size: number; MTime: number; Etag?: string; Headers?: string } | null;
	/** When the path goes inside an archive file: that file, and the entry's path in it. */
	archive?: { Key?: string; Size: number; MTime: number; Format: ArchiveFormat; Inner: string };
}
/** `tree.prepareWrite`: the place and the object key a new content goes to. */
export interface Prepared {
	ds: string;
	path: string;
	uuid: string;
	key: string;
}
/** Written object, as `tree.commitWrite` and `tree.copyObject` answer. */
export interface WrittenObject {
	Uuid: string;
	Etag?: string;
	MTime: number;
	Size: number;
}
export interface ObjectListing {
	Contents: { Key: string; Size: number; MTime: number; Etag?: string }[];
	CommonPrefixes: string[];
	IsTruncated: boolean;
	NextStartAfter?: string;
}
export type NodeRef = { Path?: string; Uuid?: string };
/** A node as `tree.scan` pages them (every indexed node has a size and a modification time). */
export type ScannedNode = IndexNode & { size: number; mtime: number };

/** A node a share is rooted on, as the caller reaches it (`tree.shareNode`). */
export interface ShareNode {
	Uuid: string;
	ds: string;
	path: string;
	Type: NodeType;
	name: string;
	/** Whether the caller may read it (some places are write-only: an upload link's folder). */
	readable: boolean;
	/** False when the caller may not write there (node_readonly). */
	writable: boolean;
	/** The node as the caller sees it (user path), and where it appears: every workspace of theirs holding it. */
	Node: TreeNode;
	AppearsIn: { WsUuid: string; WsLabel: string; WsSlug: string; WsScope: string; Path: string }[];
}

export interface TreeActions {
	"tree.stat": { params: { Node: string }; result: { Node: TreeNode } };
	"tree.stats": { params: { NodePaths: string[]; Offset?: number; Limit?: number }; result: { Nodes?: TreeNode[] } };
	"tree.create": { params: { Nodes: (NodeRef & { Type?: NodeType })[]; Recursive?: boolean; TemplateUUID?: string }; result: { Children: TreeNode[] } };
	"tree.remove": { params: { Nodes: NodeRef[]; Recursive?: boolean; RemovePermanently?: boolean }; result: { DeleteJobs?: { Label?: string }[] } };
	"tree.copy": { params: { From: string; To: string }; result: TreeNode };
	"tree.move": { params: { From: string; To: string }; result: TreeNode };
	"tree.setMeta": { params: { Path: string; set?: Record<string, string>; remove?: string[] }; result: TreeNode };
	"tree.checkFlat": { params: { ds: string }; result: FlatCheck };
	"tree.resyncApply": { params: { ds: string; add: { path: string; size: number; mtime: number; etag: string }[]; remove: string[] }; result: { Added: number; Updated: number; Removed: number } };
	"tree.sampleKeys": { params: { ds: string; limit: number }; result: string[] };
	"tree.dropDatasource": { params: { ds: string }; result: { Removed: number } };
	"tree.roots": { params: Record<string, never>; result: RootInfo[] };
	"tree.scan": { params: { after?: string; limit: number }; result: ScannedNode[] };
	"tree.locate": { params: { Path: string; need: "read" | "write" }; result: Located };
	/** Size: the content's announced length, refused (413) when the datasource's storage cannot hold it. */
	"tree.prepareWrite": { params: { Path: string; Size?: number }; result: Prepared };
	"tree.commitWrite": { params: Prepared & { size: number; etag: string; headers?: Record<string, string> }; result: WrittenObject };
	"tree.listObjects": { params: { Prefix: string; Delimiter?: string; StartAfter?: string; MaxKeys: number }; result: ObjectListing };
	"tree.folderMarker": { params: { Path: string }; result: { Uuid: string; MTime: number } };
	"tree.deleteObject": { params: { Path: string }; result: { Deleted: boolean } };
	/** Nodes by uuid in user paths (the first workspace showing each), unreadable and unknown ones left out. */
	"tree.statUuids": { params: { Uuids: string[] }; result: { Nodes: TreeNode[] } };
	/** The files most recently modified in the caller's workspaces, newest first. */
	"tree.recent": { params: { Limit: number }; result: { Nodes: TreeNode[] } };
	"tree.copyObject": { params: { From: string; To: string; Headers?: Record<string, string> }; result: WrittenObject };
	/** Internal: where each node (by uuid, or by datasource path) shows in the caller's readable workspaces. */
	"tree.visible": { params: { Nodes: ({ Uuid: string } | { ds: string; path: string })[] }; result: VisibleNode[] };
	/** Internal: the uuids of datasource paths (null where nothing is indexed). */
	"tree.uuidsAt": { params: { ds: string; paths: string[] }; result: (string | null)[] };
	/** A node by uuid or user path, read with the caller's rights (404 when they cannot read it). */
	"tree.shareNode": { params: NodeRef & { Any?: boolean }; result: ShareNode };
	/** A new folder `<label>` (or `<label>-1`…) under the caller's `cells` virtual node, flagged CellNode. */
	"tree.createCellRoot": { params: { Label: string }; result: ShareNode };
	/** Deletes a cell's own folder (flagged CellNode) once no share roots on it any more. */
	"tree.removeCellRoot": { params: { Uuid: string }; result: { Removed: number } };
	/** Sets (or removes, when null) a metadata key of a node by uuid: the share service's `workspaces_shares`. */
	/** POST /tree/admin/list and /stat (administrators): datasource paths `<datasource>/<path>`, hidden files included. */
	"tree.adminList": { params: AdminListParams; result: Awaited<ReturnType<typeof adminList>> };
	"tree.adminStat": { params: { Node: { Path?: string } }; result: Awaited<ReturnType<typeof adminStat>> };
	"tree.setNodeMeta": { params: { Uuid: string; Key: string; Value: string | null }; result: { Updated: boolean } };
}

/** `tree.changed`: a node was created, rewritten, moved (`from`: its old place), deleted or had its metadata changed. */
export interface TreeChange {
	type: "create" | "content" | "move" | "delete" | "meta";
	node: IndexNode;
	from?: { ds: string; path: string };
	/** Unique per change: consumers that must act once per change (the activity feeds) key their writes on it. */
	id?: string;
	/** Login of the user who made the change; absent for the server's own changes (resync, templates, drops). */
	by?: string;
}

/** Where a datasource node shows in the caller's workspaces (`tree.visible`), one entry per workspace that can read it. */
export interface VisibleIn {
	UUID: string;
	Slug: string;
	Label: string;
	Scope?: string;
	/** The node's user path in that workspace (starts with the slug). */
	Path: string;
}
export interface VisibleNode {
	/** The node, when found (always for `{ds, path}` queries, even when no longer indexed). */
	Node?: { Uuid?: string; ds: string; path: string; type?: NodeType };
	In: VisibleIn[];
}

/** `tree.read` (emitted: one activity replica gets it): a user listed a folder (Cells' READ node event). */
export interface TreeRead {
	id: string;
	by: string;
	node: IndexNode;
}

export interface TreeEvents {
	"tree.changed": TreeChange;
	"tree.read": TreeRead;
}
