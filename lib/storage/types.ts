// The storage contract of a datasource: where file bytes live (a local folder or an S3 bucket). The tree service
// and the /io S3 gateway talk to an ObjectStore only; `openStore()` (lib/storage/index.ts) builds one from a
// Cells-style DataSource. ETags are returned the way S3 returns them: wrapped in double quotes.
import { CellarError, PayloadTooLargeError } from "../errors";

export interface ObjectInfo {
	key: string;
	size: number;
	/** unix ms */
	mtime: number;
	etag?: string;
}

export interface MultipartPart {
	partNumber: number;
	etag: string;
	size: number;
}

export interface ObjectStore {
	readonly kind: "LOCAL" | "S3";
	/** Streams `body` to `key`; atomic: readers see the old object or the complete new one, never a partial one; a failed/aborted stream leaves nothing. Computes md5 (hex) and size while streaming. When `opts.size` is given, a body of another length is refused (BadRequestError) and nothing is stored. */
	put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }>;
	/** Range is inclusive like HTTP (start..end); `end` past the last byte is clamped; `start` past it throws RangeNotSatisfiableError. Throws NotFoundError if absent. */
	get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream>;
	head(key: string): Promise<ObjectInfo | null>;
	/** idempotent */
	delete(key: string): Promise<void>;
	/** server-side where possible, atomic on LOCAL */
	copy(from: string, to: string): Promise<{ size: number }>;
	/** Atomic move of one object where the store can (a rename on LOCAL); callers fall back to copy + delete. */
	rename?(from: string, to: string): Promise<void>;
	/** Lists objects under a prefix ("" = everything), recursively, in key order, without the internal staging area; for resync of structured datasources. Folders themselves are not listed. */
	list(prefix: string): AsyncIterable<ObjectInfo>;
	/** Structured datasources keep folders: LOCAL mkdir -p; S3: no-op (folders are implied) but must not fail. */
	mkdir(key: string): Promise<void>;
	/** recursive delete of a folder prefix (structured); idempotent */
	rmdir(key: string): Promise<void>;
	// Multipart uploads (S3 semantics). Parts may arrive in parallel and out of order; part numbers 1..10000.
	createMultipart(key: string): Promise<string /* uploadId */>;
	putPart(uploadId: string, partNumber: number, body: NodeJS.ReadableStream, size?: number): Promise<{ etag: string; size: number }>;
	listParts(uploadId: string): Promise<MultipartPart[]>;
	/** How the object is then kept is the store's business (a flat LOCAL store keeps the parts: a composite object); every other method sees one object. */
	completeMultipart(uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number; md5?: string; etag: string }>;
	abortMultipart(uploadId: string): Promise<void>;
	/** Free bytes where the store writes, when it can tell (a local filesystem; not S3). */
	freeSpace?(): Promise<number>;
}

/** Refuses (413) content of `size` bytes that the store says it has no room for (a store that cannot tell: no check). */
export async function checkRoom(store: ObjectStore, size: number | undefined): Promise<void> {
	if (size === undefined || !store.freeSpace) return;
	const free = await store.freeSpace();
	if (size > free) throw new PayloadTooLargeError(`${size} bytes do not fit: the datasource's storage has ${free} bytes left`);
}

/** HTTP 416: a Range whose start lies past the end of the object. */
export class RangeNotSatisfiableError extends CellarError {
	constructor(message = "The requested range is not satisfiable") {
		super(message, 416, "range.not.satisfiable");
	}
}

export const MAX_PART_NUMBER = 10000;
