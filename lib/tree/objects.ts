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

/** Where a listing starts: after `key`, or at it when `inclusive`. */
interface Bound {
	key: string;
	inclusive: boolean;
}

interface Entry {
	key: string;
	doc: NodeDoc;
	/** A common prefix (`dir/` of a listing with delimiter), an empty folder's marker, or a file. */
	kind: "prefix" | "marker" | "object";
}

const PAGE = 1000;
const isHidden = (name: string) => name.startsWith(".");
const from = (key: string, b: Bound) => key > b.key || (b.inclusive && key === b.key);

/**
 * A workspace's keys in S3 order (code units, as keys compare), read from the index a page of children at a time
 * from `bound` on, so that a listing of a folder of 100,000 files, or of a whole large workspace, reads only what
 * its page holds. Within a folder the index orders names, and keys differ from names in one way only: a folder's
 * key is `name/`, which sorts after the names that extend `name` with a character below "/" (`a-b`, `a.txt` come
 * before `a/`): such a folder is held back until those are listed.
 */
function keyOrder(index: TreeIndex, loc: Location, bound: Bound, recursive: boolean): (top: NodeDoc) => AsyncGenerator<Entry> {
	const bin = joinPath(loc.rootPath, RECYCLE_BIN);
	const keyOf = (d: NodeDoc) => `${Resolver.userPath(loc, d.path)}/`;

	/** A folder's children by name from the bound's name at this level, and the shorter names whose folders follow it. */
	async function* children(folder: NodeDoc, seg: string | undefined): AsyncGenerator<NodeDoc> {
		let after: string | undefined;
		if (seg !== undefined) {
			const names = [seg];
			for (let i = 1; i < seg.length; i++) if (seg[i] < "/") names.push(seg.slice(0, i));
			yield* await index.childrenNamed(folder._id, names);
			after = seg;
		}
		for (;;) {
			const page = await index.childrenAfter(folder._id, after, PAGE);
			yield* page;
			if (page.length < PAGE) return;
			after = page[page.length - 1].name;
		}
	}

	async function* level(folder: NodeDoc): AsyncGenerator<Entry> {
		const base = keyOf(folder);
		const seg = bound.key.startsWith(base) ? bound.key.slice(base.length).split("/")[0] || undefined : undefined;
		const held: NodeDoc[] = [];
		const holdsBack = (f: NodeDoc, name: string) => name.length > f.name.length && name.startsWith(f.name) && name[f.name.length] < "/";
		for await (const d of children(folder, seg)) {
			while (held.length && !holdsBack(held[held.length - 1], d.name)) yield* folderEntries(held.pop() as NodeDoc);
			if (d.type === "COLLECTION") held.push(d);
			else if (!isHidden(d.name) && from(`${base}${d.name}`, bound)) yield { key: `${base}${d.name}`, doc: d, kind: "object" };
		}
		while (held.length) yield* folderEntries(held.pop() as NodeDoc);
	}

	async function* folderEntries(d: NodeDoc): AsyncGenerator<Entry> {
		const key = keyOf(d);
		const listed = from(key, bound);
		// Entirely before the bound: nothing of it is listed.
		if (!listed && !bound.key.startsWith(key)) return;
		if (!recursive) {
			if (listed && !isHidden(d.name)) yield { key, doc: d, kind: "prefix" };
			return;
		}
		// Folders something is in (hidden files count) are listed by their content; the others as markers.
		if (listed && !isHidden(d.name) && d.path !== loc.rootPath && d.path !== bin && !(await index.holdsAnything(d._id))) {
			yield { key, doc: d, kind: "marker" };
			return;
		}
		yield* level(d);
	}

	return (top) => (recursive ? folderEntries(top) : level(top));
}

/**
 * Lists one workspace's objects under `prefix` (`<slug>/...`), after `startAfter`, at most `maxKeys` entries
 * (objects and common prefixes together, as S3 counts them).
 */
export async function listWorkspaceObjects(index: TreeIndex, loc: Location, prefix: string, delimiter: string | undefined, startAfter: string | undefined, maxKeys: number): Promise<ObjectListing> {
	const out: ObjectListing = { Contents: [], CommonPrefixes: [], IsTruncated: false };
	if (maxKeys <= 0) return out;
	// The deepest folder fully named by the prefix is where the listing starts.
	const relPrefix = prefix.slice((loc.base ?? loc.ws.Slug).length + 1);
	const folderRel = relPrefix.includes("/") ? relPrefix.slice(0, relPrefix.lastIndexOf("/")) : "";
	const folder = await index.get(loc.ds, joinPath(loc.rootPath, folderRel));
	if (!folder || folder.type !== "COLLECTION") return out;
	const bound: Bound = startAfter !== undefined && startAfter >= prefix ? { key: startAfter, inclusive: false } : { key: prefix, inclusive: true };
	for await (const e of keyOrder(index, loc, bound, delimiter !== "/")(folder)) {
		// Keys in order from the prefix on: the first one outside it ends the listing.
		if (!e.key.startsWith(prefix)) break;
		if (out.Contents.length + out.CommonPrefixes.length >= maxKeys) {
			out.IsTruncated = true;
			break;
		}
		if (e.kind === "prefix") out.CommonPrefixes.push(e.key);
		else if (e.kind === "marker") out.Contents.push({ Key: e.key, Size: 0, MTime: e.doc.mtime, Etag: EMPTY_MD5 });
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
