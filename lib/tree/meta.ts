// Which node metadata clients may write through /a/meta/set and /a/meta/delete: everything but what the server
// computes or manages itself.
import { BadRequestError, ForbiddenError } from "../errors";

/**
 * The headers an S3 client stored with a file's content (Content-Type, x-amz-meta-*…), answered on GET and HEAD
 * through /io: written by uploads only, as headers they must not be set from anywhere else.
 */
export const S3_HEADERS = "s3_headers";

/**
 * A file's S3 tags (PutObjectTagging), a JSON object of key to value: the node's, like Cells metadata (kept when
 * new content is written), set and checked through /io only.
 */
export const S3_TAGS = "s3_tags";

const RESERVED = new Set(["name", "recycle_restore", "node_readonly", "level_readonly", "ChildrenCount", "ChildrenFiles", "ChildrenFolders", "RecursiveCount", "repository_id", "repository_display", "content_lock", "mime", S3_HEADERS, S3_TAGS]);
const MAX_VALUE_BYTES = 64 * 1024;

export function checkNamespace(ns: string): string {
	if (typeof ns !== "string" || ns === "" || ns.length > 128 || !/^[A-Za-z0-9_.:-]+$/.test(ns)) throw new BadRequestError(`Invalid metadata namespace "${String(ns).slice(0, 64)}"`);
	if (RESERVED.has(ns) || ns.startsWith("ws_") || ns.startsWith("pydio:") || ns.startsWith("datasource_")) throw new ForbiddenError(`Metadata ${ns} is managed by the server`, "meta.reserved");
	return ns;
}

/** A MetaStore value is JSON text; it is stored as given once it parses. */
export function checkJsonMeta(ns: string, json: unknown): string {
	if (typeof json !== "string") throw new BadRequestError(`JsonMeta of ${ns} must be a string of JSON`);
	if (Buffer.byteLength(json) > MAX_VALUE_BYTES) throw new BadRequestError(`JsonMeta of ${ns} is larger than ${MAX_VALUE_BYTES} bytes`);
	try {
		JSON.parse(json);
	} catch {
		throw new BadRequestError(`JsonMeta of ${ns} is not valid JSON`);
	}
	return json;
}
