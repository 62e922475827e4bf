// Archive browsing, as Cells' listing does it: `<path>/x.zip/*` (or `.tar`, `.tar.gz`, `.tgz`) lists the entries at
// the top of the archive, `<path>/x.zip/docs/*` those of a folder inside it. Entries are read from the archive's
// own directory (zip) or by reading it through (tar: only archives small enough to read per request); nothing is
// extracted. Entry names are checked as extraction checks them: a name that climbs out is refused.
import { BadRequestError, NotFoundError } from "../errors";
import type { ArchiveFormat } from "../jobs/params";
import { MAX_ARCHIVE_ENTRIES, type ArchiveSource } from "../jobs/archive";
import { safeEntryPath } from "../jobs/zip";

/** Largest tar read through for a listing (zip archives have a directory and are listed at any size). */
export const MAX_TAR_LISTING_BYTES = 64 * 1024 * 1024;

export function archiveFormatOf(name: string): ArchiveFormat | null {
	const n = name.toLowerCase();
	if (n.endsWith(".zip")) return "zip";
	if (n.endsWith(".tar.gz") || n.endsWith(".tgz")) return "tar.gz";
	if (n.endsWith(".tar")) return "tar";
	return null;
}

export interface ArchiveChild {
	/** Path inside the archive ("docs/a.txt"). */
	path: string;
	type: "LEAF" | "COLLECTION";
	size: number;
}

/** The entries directly inside `inner` ("" = the top of the archive), folders first implied by deeper entries. */
export async function listArchive(open: () => Promise<ArchiveSource>, format: ArchiveFormat, archiveSize: number, inner: string): Promise<ArchiveChild[]> {
	if (format !== "zip" && archiveSize > MAX_TAR_LISTING_BYTES) throw new BadRequestError(`This ${format} archive is too large to be listed (over ${MAX_TAR_LISTING_BYTES / 1024 / 1024} MB): extract it instead`);
	const prefix = inner ? `${inner}/` : "";
	const children = new Map<string, ArchiveChild>();
	let seenInner = inner === "";
	let n = 0;
	for await (const e of (await open()).entries()) {
		if (++n > MAX_ARCHIVE_ENTRIES) throw new BadRequestError(`The archive has more than ${MAX_ARCHIVE_ENTRIES} entries`);
		if (e.kind === "link" || e.kind === "other") continue;
		const path = safeEntryPath(e.name);
		if (path === "" || (path !== inner && !path.startsWith(prefix))) continue;
		if (path === inner) {
			if (e.kind === "file") throw new BadRequestError(`${inner} is a file in the archive, not a folder`);
			seenInner = true;
			continue;
		}
		seenInner = true;
		const rest = path.slice(prefix.length);
		const slash = rest.indexOf("/");
		if (slash >= 0) {
			const dir = prefix + rest.slice(0, slash);
			if (!children.has(dir)) children.set(dir, { path: dir, type: "COLLECTION", size: 0 });
		} else if (e.kind === "dir") children.set(path, { path, type: "COLLECTION", size: 0 });
		else children.set(path, { path, type: "LEAF", size: e.size });
	}
	if (!seenInner) throw new NotFoundError(`${inner} is not in the archive`, "node.notfound");
	return [...children.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
