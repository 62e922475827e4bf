// The tree as an S3 bucket sees it: keys are user paths (`<slug>/<path>`), listed in key order, with
// delimiter folding into common prefixes. Used by the /io gateway through the tree service.
// Folders are S3 prefixes: an S3 delete that empties one removes it, as a prefix goes with its last object (rclone
// before 1.62 sends nothing for rmdir, aws s3 rm --recursive deletes only the keys it lists). An empty folder has
// nothing to list it by: a recursive listing shows it as a marker object `dir/`, as S3 consoles make them, which
// aws s3 rm --recursive deletes and aws s3 cp and rclone skip. Deleting a key never removes a folder with anything
// in it (see deleteObject).
import { RECYCLE_BIN, type NodeDoc } from "./model";
import type { TreeIndex } from "./index";
import type { TreeOperations } from "./operations";
import { Resolver, type Location } from "./resolver";
import { joinPath, parentOf } from "./paths";

/** md5 of nothing: the ETag of a folder marker. */
const EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e";

export interface ObjectEntry {
	Key: string;
	Size: number;
	MTime: number;
	Etag?: string;
}

export interface ObjectListing {
	Contents: ObjectEntry[];
	CommonPrefixes: string[];
	IsTruncated: boolean;
	/** Resume after this key (S3 NextContinuationToken / NextMarker). */
	NextStartAfter?: string;
}

/**
 * Lists one workspace's objects under `prefix` (`<slug>/...`), after `startAfter`, at most `maxKeys` entries
 * (objects and common prefixes together, as S3 counts them).
 */
export async function listWorkspaceObjects(index: TreeIndex, loc: Location, prefix: string, delimiter: string | undefined, startAfter: string | undefined, maxKeys: number): Promise<ObjectListing> {
	const out: ObjectListing = { Contents: [], CommonPrefixes: [], IsTruncated: false };
	if (maxKeys <= 0) return out;
	// The deepest folder fully named by the prefix is where the listing starts.
	const relPrefix = prefix.slice(loc.ws.Slug.length + 1);
	const folderRel = relPrefix.includes("/") ? relPrefix.slice(0, relPrefix.lastIndexOf("/")) : "";
	const folder = await index.get(loc.ds, joinPath(loc.rootPath, folderRel));
	if (!folder || folder.type !== "COLLECTION") return out;
	const subtree = delimiter === "/" ? [] : await index.subtree(loc.ds, folder.path);
	// Folders something is in (hidden files count): the others are empty, and listed as markers.
	const holding = new Set(subtree.map((d) => d.parentKey));
	const docs = delimiter === "/" ? (await index.children(loc.ds, folder.path, { includeHidden: false })).nodes : subtree.filter((d) => !d.name.startsWith("."));
	const entries: { key: string; doc: NodeDoc; prefix: boolean }[] = [];
	for (const d of docs) {
		const key = Resolver.userPath(loc, d.path);
		if (delimiter === "/") {
			if (d.path !== folder.path && key.startsWith(prefix)) entries.push({ key: d.type === "COLLECTION" ? `${key}/` : key, doc: d, prefix: d.type === "COLLECTION" });
		} else if (d.type === "LEAF") {
			if (key.startsWith(prefix)) entries.push({ key, doc: d, prefix: false });
		} else if (`${key}/`.startsWith(prefix) && !holding.has(d.dsPath) && d.path !== loc.rootPath && d.path !== joinPath(loc.rootPath, RECYCLE_BIN)) entries.push({ key: `${key}/`, doc: d, prefix: false });
	}
	entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
	for (const e of entries) {
		if (startAfter !== undefined && e.key <= startAfter) continue;
		if (out.Contents.length + out.CommonPrefixes.length >= maxKeys) {
			out.IsTruncated = true;
			break;
		}
		if (e.prefix) out.CommonPrefixes.push(e.key);
		else if (e.doc.type === "COLLECTION") out.Contents.push({ Key: e.key, Size: 0, MTime: e.doc.mtime, Etag: EMPTY_MD5 });
		else out.Contents.push({ Key: e.key, Size: e.doc.size, MTime: e.doc.mtime, Etag: e.doc.etag });
		out.NextStartAfter = e.key;
	}
	if (!out.IsTruncated) delete out.NextStartAfter;
	return out;
}

/** Whether a folder must stay even empty: one an ACL points to (a workspace root, a shared or restricted folder). */
export type KeptFolder = (doc: NodeDoc) => Promise<boolean>;

/**
 * S3's DeleteObject of `loc` (`marker`: the key ended with "/"): a file goes; a key naming a folder names no
 * object and removes nothing; `folder/` removes the folder only when empty. The folders a deleted file or folder
 * leaves empty go too (TreeOperations.pruneEmptyFolders). Returns every node removed.
 */
export async function deleteObject(ops: TreeOperations, loc: Location, marker: boolean, kept: KeptFolder, owner?: string): Promise<NodeDoc[]> {
	// A workspace root and its recycle bin are the server's: not objects of the bucket.
	if (loc.rel === "" || (marker && loc.rel === RECYCLE_BIN)) return [];
	const gone = marker ? await ops.deleteFolderMarker(loc.ds, loc.path, kept) : await ops.deleteFile(loc.ds, loc.path, owner);
	if (!gone) return [];
	return [gone, ...(await ops.pruneEmptyFolders(loc.ds, parentOf(loc.path), loc.rootPath, kept))];
}
