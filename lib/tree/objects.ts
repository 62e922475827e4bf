// The tree as an S3 bucket sees it: keys are user paths (`<slug>/<path>`), listed in key order, with
// delimiter folding into common prefixes. Used by the /io gateway through the tree service.
import type { NodeDoc } from "./model";
import type { TreeIndex } from "./index";
import { Resolver, type Location } from "./resolver";
import { joinPath } from "./paths";

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
	const docs = delimiter === "/" ? (await index.children(loc.ds, folder.path, { includeHidden: false })).nodes : (await index.subtree(loc.ds, folder.path)).filter((d) => d.path !== folder.path && !d.name.startsWith("."));
	const entries: { key: string; doc: NodeDoc; prefix: boolean }[] = [];
	for (const d of docs) {
		const key = Resolver.userPath(loc, d.path);
		if (!key.startsWith(prefix)) continue;
		if (delimiter === "/") entries.push({ key: d.type === "COLLECTION" ? `${key}/` : key, doc: d, prefix: d.type === "COLLECTION" });
		else if (d.type === "LEAF") entries.push({ key, doc: d, prefix: false });
	}
	entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
	for (const e of entries) {
		if (startAfter !== undefined && e.key <= startAfter) continue;
		if (out.Contents.length + out.CommonPrefixes.length >= maxKeys) {
			out.IsTruncated = true;
			break;
		}
		if (e.prefix) out.CommonPrefixes.push(e.key);
		else out.Contents.push({ Key: e.key, Size: e.doc.size, MTime: e.doc.mtime, Etag: e.doc.etag });
		out.NextStartAfter = e.key;
	}
	if (!out.IsTruncated) delete out.NextStartAfter;
	return out;
}
