// A node as the tree's code reads it (lib/tree/index makes it from the index's record). Paths are
// datasource-relative ("" is the datasource root).
import { ForbiddenError } from "../errors";

export type NodeType = "LEAF" | "COLLECTION";

export interface NodeDoc {
	_id: string;
	ds: string;
	path: string;
	name: string;
	type: NodeType;
	size: number;
	mtime: number;
	etag?: string;
	mode?: number;
	/** Where the content lives in the datasource's store: the uuid (flat) or the path (structured). */
	key?: string;
	/** Metadata namespaces, each value JSON-encoded as Cells' MetaStore wants it. */
	meta: Record<string, string>;
}

export const rootUuid = (ds: string): string => `DATASOURCE:${ds}`;
export const RECYCLE_BIN = "recycle_bin";

/**
 * Users write anywhere in a workspace but at its root and in its recycle bin, which the server manages (deleting
 * moves nodes there, restoring takes them out). `rel` is the path inside the workspace root.
 */
export function checkUserWritable(rel: string): void {
	if (rel === "") throw new ForbiddenError("Please do not modify directly the root of a workspace", "node.not.writeable");
	if (rel === RECYCLE_BIN || rel.startsWith(`${RECYCLE_BIN}/`)) throw new ForbiddenError("The recycle bin is managed by the server: delete and restore files instead", "node.not.writeable");
}

/** The wire shape of a node (treeNode), before Cells encoding. */
export interface TreeNode {
	Uuid: string;
	Path: string;
	Type: NodeType;
	Size?: number;
	MTime?: number;
	Etag?: string;
	Mode?: number;
	MetaStore?: Record<string, string>;
}
