// Classifies an HTTP request on the /io S3 gateway into an S3 operation, path-style, as Cells clients send it:
// endpoint `http(s)://host`, bucket "io", so objects are `/io/<key…>` and bucket-level calls hit `/io` or `/io/`
// (`GET /io/?list-type=2`, `HEAD /io/`, `POST /io/?delete`); ListBuckets is `GET /` (the SDK adds `?x-id=ListBuckets`).
// Pass the URL exactly as the client sent it (path + query, not stripped of a mount prefix): it is also what
// SigV4 signed. Keys are URL-decoded and checked (no NUL/control characters, backslash, `.`/`..` or empty inner
// segments, at most 1024 bytes). Query parameters follow Go's url.ParseQuery (as Cells does): `+` is a space.
// The SDK's `x-id=<Operation>` parameter is accepted and ignored for routing. Checksum headers
// (x-amz-checksum-*, x-amz-sdk-checksum-algorithm) are ignored.
import { S3Error, checkTags, type S3Tag } from "./xml";

export const BUCKET = "io";
/** Cells serves its gateway under both names: `data` is the same bucket as `io`, answered alike. */
export const BUCKETS: readonly string[] = [BUCKET, "data"];

export type S3Operation =
	| "ListBuckets"
	| "HeadBucket"
	| "GetBucketLocation"
	| "ListObjectsV2"
	| "ListObjects"
	| "GetObject"
	| "HeadObject"
	| "PutObject"
	| "CopyObject"
	| "DeleteObject"
	| "DeleteObjects"
	| "CreateMultipartUpload"
	| "UploadPart"
	| "UploadPartCopy"
	| "CompleteMultipartUpload"
	| "AbortMultipartUpload"
	| "ListParts"
	| "ListMultipartUploads"
	// The bucket as S3 answers for one without ACLs, policy, CORS, lifecycle or tags configured.
	| "CreateBucket"
	| "GetBucketAcl"
	| "GetBucketPolicy"
	| "GetBucketCors"
	| "GetBucketLifecycle"
	| "GetBucketTagging"
	| "GetBucketRequestPayment"
	| "GetObjectAcl"
	| "GetObjectTagging"
	| "PutObjectTagging"
	| "DeleteObjectTagging";

export type Headers = Record<string, string | string[] | undefined>;

/** How the request body is encoded/signed, from x-amz-content-sha256 and Content-Encoding. */
export type PayloadMode =
	/** x-amz-content-sha256 is the hex sha256 of the body: verify it while streaming. */
	| "sha256"
	/** UNSIGNED-PAYLOAD (presigned URLs, or no header at all). */
	| "unsigned"
	/** aws-chunked with chunk signatures (STREAMING-AWS4-HMAC-SHA256-PAYLOAD). */
	| "streaming-signed"
	/** aws-chunked with chunk signatures and signed trailers (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER). */
	| "streaming-signed-trailer"
	/** aws-chunked, unsigned, checksum trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER, what current SDKs send for streams). */
	| "streaming-unsigned-trailer";

export interface PayloadInfo {
	mode: PayloadMode;
	/** Raw x-amz-content-sha256 header value (what SigV4 signs), if any. */
	contentSha256?: string;
	/** Content-Length on the wire (framing included for aws-chunked). */
	contentLength?: number;
	/** x-amz-decoded-content-length (aws-chunked only): the object's real size. */
	decodedContentLength?: number;
	/** The object's size when known: decoded length for aws-chunked, Content-Length otherwise. */
	objectSize?: number;
	/** Content-Encoding to store with the object ("aws-chunked" removed), if any is left. */
	contentEncoding?: string;
	/** Names announced in x-amz-trailer. */
	trailer: string[];
}

export interface ListParams {
	version: 1 | 2;
	prefix: string;
	delimiter?: string;
	/** 0..1000 (default 1000, larger values capped). */
	maxKeys: number;
	encodingType?: "url";
	/** v2 */
	continuationToken?: string;
	/** v2 */
	startAfter?: string;
	/** v2 (v1 always lists owners). */
	fetchOwner: boolean;
	/** v1 */
	marker?: string;
}

export interface ListUploadsParams {
	prefix: string;
	delimiter?: string;
	maxUploads: number;
	keyMarker?: string;
	uploadIdMarker?: string;
}

export interface ListPartsParams {
	maxParts: number;
	partNumberMarker: number;
}

export interface CopySource {
	bucket: string;
	/** Decoded key inside the bucket. */
	key: string;
	versionId?: string;
}

export interface S3Request {
	operation: S3Operation;
	method: string;
	/** "io" or "data" (the same bucket) for everything but ListBuckets. */
	bucket?: string;
	/** Decoded, validated object key (object-level operations). A trailing "/" is kept (folder markers). */
	key?: string;
	/** Decoded query parameters (first value wins; flags such as `uploads` have the value ""). */
	query: Record<string, string>;
	uploadId?: string;
	/** 1..10000 for UploadPart / UploadPartCopy. */
	partNumber?: number;
	copySource?: CopySource;
	/** x-amz-copy-source-range (UploadPartCopy), raw. */
	copySourceRange?: string;
	/** x-amz-metadata-directive for CopyObject: COPY (default) or REPLACE. */
	metadataDirective?: "COPY" | "REPLACE";
	/** x-amz-tagging (PutObject, CreateMultipartUpload, CopyObject), checked as S3 checks tags. */
	tagging?: S3Tag[];
	/** x-amz-tagging-directive for CopyObject: COPY (the source's tags, the default) or REPLACE (x-amz-tagging). */
	taggingDirective?: "COPY" | "REPLACE";
	/** Raw Range header (GetObject/HeadObject); resolve it with resolveRange() once the size is known. */
	range?: string;
	/** response-* query overrides for GetObject, as response header name -> value. */
	responseHeaders: Record<string, string>;
	/** Listing parameters (ListObjects / ListObjectsV2). */
	list?: ListParams;
	listUploads?: ListUploadsParams;
	listParts?: ListPartsParams;
	/** x-amz-meta-* headers (names lower-cased, prefix removed). */
	metadata: Record<string, string>;
	contentType?: string;
	versionId?: string;
	payload: PayloadInfo;
}

// ---------------------------------------------------------------------------------------------------------
// URL helpers (shared with sigv4.ts)

/** Splits a request target into the raw path and raw query (absolute-form URLs are reduced to their path). */
export function splitUrl(url: string): { path: string; query: string } {
	let u = url;
	const abs = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(u);
	if (abs) u = u.slice(abs[0].length);
	const hash = u.indexOf("#");
	if (hash >= 0) u = u.slice(0, hash);
	const q = u.indexOf("?");
	const path = q >= 0 ? u.slice(0, q) : u;
	return { path: path || "/", query: q >= 0 ? u.slice(q + 1) : "" };
}

/** Decodes one query component as Go's url.ParseQuery does ('+' is a space). Throws on bad escapes. */
export function decodeQueryComponent(s: string): string {
	return decodeURIComponent(s.replace(/\+/g, " "));
}

/** Raw query -> ordered decoded pairs. Throws S3Error InvalidArgument on bad percent-encoding. */
export function parseQueryPairs(rawQuery: string): Array<[string, string]> {
	const out: Array<[string, string]> = [];
	if (!rawQuery) return out;
	for (const part of rawQuery.split("&")) {
		if (!part) continue;
		const eq = part.indexOf("=");
		const n = eq >= 0 ? part.slice(0, eq) : part;
		const v = eq >= 0 ? part.slice(eq + 1) : "";
		try {
			out.push([decodeQueryComponent(n), decodeQueryComponent(v)]);
		} catch {
			throw new S3Error("InvalidArgument", "Invalid percent-encoding in the query string");
		}
	}
	return out;
}

export function headerValue(headers: Headers, name: string): string | undefined {
	const v = headers[name] ?? headers[name.toLowerCase()];
	if (v === undefined) {
		// Headers may come with any case from non-Node callers.
		const lower = name.toLowerCase();
		for (const [k, val] of Object.entries(headers)) if (k.toLowerCase() === lower) return Array.isArray(val) ? val.join(",") : val;
		return undefined;
	}
	return Array.isArray(v) ? v.join(",") : v;
}

// ---------------------------------------------------------------------------------------------------------
// Keys

export const MAX_KEY_BYTES = 1024;

/**
 * Decodes and validates an object key taken from the raw path (or a copy source). Throws S3Error
 * InvalidArgument (KeyTooLongError over 1024 bytes).
 */
export function decodeKey(raw: string): string {
	let key: string;
	try {
		key = decodeURIComponent(raw);
	} catch {
		throw new S3Error("InvalidArgument", "Invalid percent-encoding in the object key");
	}
	validateKey(key);
	return key;
}

export function validateKey(key: string): void {
	if (!key) throw new S3Error("InvalidArgument", "Empty object key");
	if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new S3Error("KeyTooLongError", "Your key is too long");
	// eslint-disable-next-line no-control-regex
	if (/[\u0000-\u001f\u007f]/.test(key)) throw new S3Error("InvalidArgument", "Object key contains control characters");
	if (key.includes("\\")) throw new S3Error("InvalidArgument", "Object key contains a backslash");
	const segs = key.split("/");
	// A single trailing "/" marks a folder; a leading "/" or "//" inside is an empty segment.
	if (segs[segs.length - 1] === "") segs.pop();
	for (const s of segs) {
		if (s === "" ) throw new S3Error("InvalidArgument", "Object key contains an empty path segment");
		if (s === "." || s === "..") throw new S3Error("InvalidArgument", "Object key contains a '.' or '..' segment");
	}
}

/**
 * `x-amz-copy-source`: `/io/<key>` or `io/<key>`, URL-encoded, optionally `?versionId=…`. The bucket must be
 * "io" (NoSuchBucket otherwise).
 */
export function parseCopySource(header: string): CopySource {
	let raw = header.trim();
	let versionId: string | undefined;
	const q = raw.indexOf("?");
	if (q >= 0) {
		for (const [n, v] of parseQueryPairs(raw.slice(q + 1))) if (n === "versionId") versionId = v;
		raw = raw.slice(0, q);
	}
	if (raw.startsWith("/")) raw = raw.slice(1);
	const slash = raw.indexOf("/");
	if (slash <= 0 || slash === raw.length - 1) throw new S3Error("InvalidArgument", "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
	let bucket: string;
	try {
		bucket = decodeURIComponent(raw.slice(0, slash));
	} catch {
		throw new S3Error("InvalidArgument", "Invalid percent-encoding in x-amz-copy-source");
	}
	if (!BUCKETS.includes(bucket)) throw new S3Error("NoSuchBucket", undefined, { BucketName: bucket });
	const key = decodeKey(raw.slice(slash + 1));
	return versionId ? { bucket, key, versionId } : { bucket, key };
}

// ---------------------------------------------------------------------------------------------------------
// Range

/**
 * Resolves a Range header against an object size into an inclusive byte range. Returns undefined when the
 * header is absent or must be ignored (not `bytes=`, several ranges, bad syntax: S3 then serves the whole
 * object), "unsatisfiable" for a 416 InvalidRange.
 */
export function resolveRange(header: string | undefined, size: number): { start: number; end: number } | "unsatisfiable" | undefined {
	if (header === undefined) return undefined;
	const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
	if (!m) return undefined;
	const [, a, b] = m;
	if (a === "" && b === "") return undefined;
	const num = (s: string) => (s.length > 15 ? Number.MAX_SAFE_INTEGER : Number(s));
	if (a === "") {
		const n = num(b);
		if (n === 0 || size === 0) return "unsatisfiable";
		return { start: Math.max(0, size - n), end: size - 1 };
	}
	const start = num(a);
	if (b !== "" && num(b) < start) return undefined;
	if (start >= size) return "unsatisfiable";
	const end = b === "" ? size - 1 : Math.min(num(b), size - 1);
	return { start, end };
}

/** Content-Range value for a resolved range (or `bytes * /size` for a 416). */
export function contentRange(range: { start: number; end: number } | "unsatisfiable", size: number): string {
	return range === "unsatisfiable" ? `bytes */${size}` : `bytes ${range.start}-${range.end}/${size}`;
}

// ---------------------------------------------------------------------------------------------------------
// Payload

export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
export const STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
export const STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
export const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

function nonNegInt(v: string | undefined, what: string): number | undefined {
	if (v === undefined) return undefined;
	if (!/^\s*\d{1,16}\s*$/.test(v)) throw new S3Error("InvalidArgument", `Invalid ${what}`);
	const n = Number(v);
	if (!Number.isSafeInteger(n)) throw new S3Error("InvalidArgument", `Invalid ${what}`);
	return n;
}

/** Body framing/signing from the headers. Throws InvalidArgument / NotImplemented for unknown payload modes. */
export function payloadInfo(headers: Headers): PayloadInfo {
	const sha = headerValue(headers, "x-amz-content-sha256")?.trim();
	const contentLength = nonNegInt(headerValue(headers, "content-length"), "Content-Length");
	const decoded = nonNegInt(headerValue(headers, "x-amz-decoded-content-length"), "x-amz-decoded-content-length");
	const encodings = (headerValue(headers, "content-encoding") ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
	const chunkedEncoding = encodings.some((e) => e.toLowerCase() === "aws-chunked");
	const rest = encodings.filter((e) => e.toLowerCase() !== "aws-chunked");
	const trailer = (headerValue(headers, "x-amz-trailer") ?? "")
		.split(",")
		.map((s) => s.trim().toLowerCase())
		.filter(Boolean);
	let mode: PayloadMode;
	if (sha === undefined || sha === "" || sha === UNSIGNED_PAYLOAD) mode = "unsigned";
	else if (/^[0-9a-fA-F]{64}$/.test(sha)) mode = "sha256";
	else if (sha === STREAMING_SIGNED) mode = "streaming-signed";
	else if (sha === STREAMING_SIGNED_TRAILER) mode = "streaming-signed-trailer";
	else if (sha === STREAMING_UNSIGNED_TRAILER) mode = "streaming-unsigned-trailer";
	else if (sha.startsWith("STREAMING-AWS4-ECDSA")) throw new S3Error("NotImplemented", "SigV4a streaming payloads are not supported");
	else throw new S3Error("InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-… or a valid sha256 value.");
	const streaming = mode.startsWith("streaming-");
	if (!streaming && chunkedEncoding) throw new S3Error("InvalidArgument", "Content-Encoding aws-chunked requires a STREAMING-… x-amz-content-sha256");
	const info: PayloadInfo = { mode, trailer };
	if (sha) info.contentSha256 = sha;
	if (contentLength !== undefined) info.contentLength = contentLength;
	if (streaming && decoded !== undefined) info.decodedContentLength = decoded;
	const size = streaming ? decoded : contentLength;
	if (size !== undefined) info.objectSize = size;
	if (rest.length) info.contentEncoding = rest.join(", ");
	return info;
}

// ---------------------------------------------------------------------------------------------------------
// Classification

const RESPONSE_OVERRIDES: Record<string, string> = {
	"response-content-type": "Content-Type",
	"response-content-disposition": "Content-Disposition",
	"response-content-language": "Content-Language",
	"response-content-encoding": "Content-Encoding",
	"response-cache-control": "Cache-Control",
	"response-expires": "Expires",
};

/** Sub-resources we know of but do not serve: NotImplemented rather than a wrong answer. */
const UNSUPPORTED_OBJECT_SUBRESOURCES = ["torrent", "retention", "legal-hold", "attributes", "restore", "select", "renameObject"];
const UNSUPPORTED_BUCKET_SUBRESOURCES = [
	"acl", "policy", "policyStatus", "cors", "lifecycle", "versioning", "versions", "tagging", "website", "logging", "notification",
	"replication", "encryption", "object-lock", "ownershipControls", "publicAccessBlock", "accelerate", "requestPayment",
	"analytics", "inventory", "metrics", "intelligent-tiering", "session",
];

/** Bucket configurations read as S3 answers for a bucket that has none set (GET only; setting them stays refused). */
const BUCKET_GETS: ReadonlyArray<[string, S3Operation]> = [
	["acl", "GetBucketAcl"],
	["policy", "GetBucketPolicy"],
	["cors", "GetBucketCors"],
	["lifecycle", "GetBucketLifecycle"],
	["tagging", "GetBucketTagging"],
	["requestPayment", "GetBucketRequestPayment"],
];

function intParam(q: Record<string, string>, name: string, def: number, min: number, cap: number): number {
	const v = q[name];
	if (v === undefined || v === "") return def;
	if (!/^-?\d{1,12}$/.test(v.trim())) throw new S3Error("InvalidArgument", `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: v });
	const n = Number(v.trim());
	if (n < min) throw new S3Error("InvalidArgument", `Argument ${name} must be an integer between ${min} and 2147483647`, { ArgumentName: name, ArgumentValue: v });
	return Math.min(n, cap);
}

function encodingType(q: Record<string, string>): "url" | undefined {
	const v = q["encoding-type"];
	if (v === undefined || v === "") return undefined;
	if (v.toLowerCase() !== "url") throw new S3Error("InvalidArgument", "Invalid Encoding Method specified in Request", { ArgumentName: "encoding-type", ArgumentValue: v });
	return "url";
}

function parseList(q: Record<string, string>, version: 1 | 2): ListParams {
	const p: ListParams = { version, prefix: q["prefix"] ?? "", maxKeys: intParam(q, "max-keys", 1000, 0, 1000), fetchOwner: false };
	if (q["delimiter"]) p.delimiter = q["delimiter"];
	const enc = encodingType(q);
	if (enc) p.encodingType = enc;
	if (version === 2) {
		if (q["continuation-token"] !== undefined) {
			if (q["continuation-token"] === "") throw new S3Error("InvalidArgument", "The continuation token provided is incorrect", { ArgumentName: "continuation-token" });
			p.continuationToken = q["continuation-token"];
		}
		if (q["start-after"]) p.startAfter = q["start-after"];
		p.fetchOwner = (q["fetch-owner"] ?? "").toLowerCase() === "true";
	} else {
		if (q["marker"]) p.marker = q["marker"];
		p.fetchOwner = true;
	}
	return p;
}

function partNumber(v: string | undefined): number {
	if (v === undefined || !/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > 10000)
		throw new S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive", { ArgumentName: "partNumber", ArgumentValue: v ?? "" });
	return Number(v);
}

/** Upload ids carry the upload's state, the headers to store with the object included (see IoGateway). */
export const MAX_UPLOAD_ID = 8192;

function uploadId(v: string | undefined): string {
	if (!v || v.length > MAX_UPLOAD_ID || /[\u0000-\u001f\u007f/\\]/.test(v)) throw new S3Error("NoSuchUpload");
	return v;
}

function headerSafe(name: string, v: string): string {
	if (/[\r\n\u0000]/.test(v)) throw new S3Error("InvalidArgument", `Invalid value for ${name}`);
	return v;
}

/**
 * Classifies a request. Throws S3Error: NoSuchBucket (bucket other than "io"), InvalidArgument (bad key, bad
 * parameters), MethodNotAllowed, NotImplemented (known but unsupported sub-resources, SigV4a streaming).
 */
/**
 * S3's service-level call, ListBuckets (`GET /` on the endpoint), signed as S3 signs: `aws s3 ls` and other
 * clients start with it. Everything else under `/` belongs to the REST API and the front end.
 */
export function isS3ServiceRequest(method: string | undefined, url: string, headers: Headers): boolean {
	if (method !== "GET" || !(url === "/" || url.startsWith("/?"))) return false;
	const auth = headers["authorization"];
	return (typeof auth === "string" && auth.startsWith("AWS4-HMAC-SHA256 ")) || /[?&]X-Amz-Credential=/i.test(url);
}

/**
 * Whether the /io gateway answers a request: the io and data buckets (any credentials: signed, X-Pydio-Bearer,
 * pydio_jwt), ListBuckets, and any other S3-signed request outside the REST API (/a), which names a bucket that
 * does not exist and gets S3's NoSuchBucket rather than a JSON 404.
 */
export function isS3Request(method: string | undefined, url: string, headers: Headers): boolean {
	const { path } = splitUrl(url);
	const first = path.split("/")[1] ?? "";
	if (first === "a") return false;
	if (BUCKETS.includes(first)) return true;
	if (path === "/") return isS3ServiceRequest(method, url, headers);
	const auth = headers["authorization"];
	return (typeof auth === "string" && (auth.startsWith("AWS4-HMAC-SHA256 ") || auth.startsWith("AWS "))) || /[?&]X-Amz-Credential=/i.test(url);
}

export function parseS3Request(method: string, url: string, headers: Headers): S3Request {
	const m = method.toUpperCase();
	const { path, query: rawQuery } = splitUrl(url);
	const query: Record<string, string> = {};
	for (const [n, v] of parseQueryPairs(rawQuery)) if (!(n in query)) query[n] = v;
	const has = (n: string) => n in query;

	const base = (operation: S3Operation): S3Request => ({ operation, method: m, query, responseHeaders: {}, metadata: {}, payload: { mode: "unsigned", trailer: [] } });

	// "/" -> service level
	const trimmed = path.replace(/^\/+/, "");
	if (trimmed === "") {
		if (m === "GET") return base("ListBuckets");
		throw new S3Error("MethodNotAllowed");
	}
	const slash = trimmed.indexOf("/");
	const rawBucket = slash >= 0 ? trimmed.slice(0, slash) : trimmed;
	const rawKey = slash >= 0 ? trimmed.slice(slash + 1) : "";
	let bucket: string;
	try {
		bucket = decodeURIComponent(rawBucket);
	} catch {
		throw new S3Error("InvalidArgument", "Invalid percent-encoding in the bucket name");
	}
	if (!BUCKETS.includes(bucket)) {
		// S3 refuses to make a bucket one may not make; every other call names a bucket that does not exist.
		if (m === "PUT" && rawKey === "" && !rawQuery) throw new S3Error("AccessDenied", `Buckets cannot be created here: the only one is ${BUCKET} (also reachable as data)`, { BucketName: bucket });
		throw new S3Error("NoSuchBucket", undefined, { BucketName: bucket });
	}

	if (rawKey === "") {
		// Bucket level
		const req = (op: S3Operation): S3Request => ({ ...base(op), bucket });
		if (m === "HEAD") return req("HeadBucket");
		if (m === "GET") {
			if (has("uploads")) {
				const r = req("ListMultipartUploads");
				const lu: ListUploadsParams = { prefix: query["prefix"] ?? "", maxUploads: intParam(query, "max-uploads", 1000, 0, 1000) };
				if (query["delimiter"]) lu.delimiter = query["delimiter"];
				if (query["key-marker"]) lu.keyMarker = query["key-marker"];
				if (query["upload-id-marker"]) lu.uploadIdMarker = query["upload-id-marker"];
				r.listUploads = lu;
				return r;
			}
			if (has("location")) return req("GetBucketLocation");
			for (const [s, op] of BUCKET_GETS) if (has(s)) return req(op);
			for (const s of UNSUPPORTED_BUCKET_SUBRESOURCES) if (has(s)) throw new S3Error("NotImplemented", `Bucket sub-resource '${s}' is not supported`);
			const lt = query["list-type"];
			if (lt !== undefined && lt !== "2" && lt !== "1") throw new S3Error("InvalidArgument", "Invalid list-type", { ArgumentName: "list-type", ArgumentValue: lt });
			const v: 1 | 2 = lt === "2" ? 2 : 1;
			const r = req(v === 2 ? "ListObjectsV2" : "ListObjects");
			r.list = parseList(query, v);
			return r;
		}
		if (m === "POST" && has("delete")) {
			const r = req("DeleteObjects");
			r.payload = payloadInfo(headers);
			return r;
		}
		if (m === "PUT" || m === "DELETE" || m === "POST") {
			for (const s of UNSUPPORTED_BUCKET_SUBRESOURCES) if (has(s)) throw new S3Error("NotImplemented", `Bucket sub-resource '${s}' is not supported`);
		}
		if (m === "PUT" && !Object.keys(query).some((n) => n !== "x-id")) return req("CreateBucket");
		throw new S3Error("MethodNotAllowed");
	}

	// Object level
	const key = decodeKey(rawKey);
	const req = (op: S3Operation): S3Request => {
		const r: S3Request = { ...base(op), bucket, key };
		if (query["versionId"]) r.versionId = query["versionId"];
		return r;
	};
	for (const s of UNSUPPORTED_OBJECT_SUBRESOURCES) if (has(s)) throw new S3Error("NotImplemented", `Object sub-resource '${s}' is not supported`);
	if (has("tagging")) {
		if (m === "GET") return req("GetObjectTagging");
		if (m === "DELETE") return req("DeleteObjectTagging");
		if (m === "PUT") return { ...req("PutObjectTagging"), payload: payloadInfo(headers) };
		throw new S3Error("MethodNotAllowed");
	}
	if (has("acl")) {
		if (m === "GET") return req("GetObjectAcl");
		throw new S3Error("NotImplemented", "Object ACLs cannot be changed: rights come from workspaces and their ACLs");
	}

	switch (m) {
		case "GET":
		case "HEAD": {
			if (m === "GET" && has("uploadId")) {
				const r = req("ListParts");
				r.uploadId = uploadId(query["uploadId"]);
				r.listParts = { maxParts: intParam(query, "max-parts", 1000, 0, 1000), partNumberMarker: intParam(query, "part-number-marker", 0, 0, 10000) };
				return r;
			}
			const r = req(m === "GET" ? "GetObject" : "HeadObject");
			const range = headerValue(headers, "range");
			if (range !== undefined) r.range = range;
			for (const [p, h] of Object.entries(RESPONSE_OVERRIDES)) if (query[p] !== undefined && query[p] !== "") r.responseHeaders[h] = headerSafe(p, query[p]);
			if (has("partNumber")) r.partNumber = partNumber(query["partNumber"]);
			return r;
		}
		case "PUT": {
			const copyHeader = headerValue(headers, "x-amz-copy-source");
			let r: S3Request;
			if (has("partNumber") || has("uploadId")) {
				r = req(copyHeader !== undefined ? "UploadPartCopy" : "UploadPart");
				r.partNumber = partNumber(query["partNumber"]);
				r.uploadId = uploadId(query["uploadId"]);
				const csr = headerValue(headers, "x-amz-copy-source-range");
				if (copyHeader !== undefined && csr !== undefined) r.copySourceRange = csr;
			} else r = req(copyHeader !== undefined ? "CopyObject" : "PutObject");
			if (copyHeader !== undefined) {
				r.copySource = parseCopySource(copyHeader);
				if (r.operation === "CopyObject") {
					const d = (headerValue(headers, "x-amz-metadata-directive") ?? "COPY").trim().toUpperCase();
					if (d !== "COPY" && d !== "REPLACE") throw new S3Error("InvalidArgument", "Unknown metadata directive.", { ArgumentName: "x-amz-metadata-directive", ArgumentValue: d });
					r.metadataDirective = d;
					const t = (headerValue(headers, "x-amz-tagging-directive") ?? "COPY").trim().toUpperCase();
					if (t !== "COPY" && t !== "REPLACE") throw new S3Error("InvalidArgument", "Unknown tagging directive.", { ArgumentName: "x-amz-tagging-directive", ArgumentValue: t });
					r.taggingDirective = t;
				}
			}
			fillUploadHeaders(r, headers);
			return r;
		}
		case "POST": {
			if (has("uploads")) {
				const r = req("CreateMultipartUpload");
				fillUploadHeaders(r, headers);
				return r;
			}
			if (has("uploadId")) {
				const r = req("CompleteMultipartUpload");
				r.uploadId = uploadId(query["uploadId"]);
				r.payload = payloadInfo(headers);
				return r;
			}
			throw new S3Error("MethodNotAllowed");
		}
		case "DELETE": {
			if (has("uploadId")) {
				const r = req("AbortMultipartUpload");
				r.uploadId = uploadId(query["uploadId"]);
				return r;
			}
			return req("DeleteObject");
		}
		default:
			throw new S3Error("MethodNotAllowed");
	}
}

function fillUploadHeaders(r: S3Request, headers: Headers): void {
	r.payload = payloadInfo(headers);
	const ct = headerValue(headers, "content-type");
	if (ct) r.contentType = ct;
	for (const [k, v] of Object.entries(headers)) {
		const lk = k.toLowerCase();
		if (lk.startsWith("x-amz-meta-") && v !== undefined) r.metadata[lk.slice(11)] = Array.isArray(v) ? v.join(",") : v;
	}
	// URL-encoded as a query string (`k1=v1&k2=v2`), as S3 takes it.
	const tagging = headerValue(headers, "x-amz-tagging");
	if (tagging !== undefined) r.tagging = checkTags(parseQueryPairs(tagging.trim()).map(([Key, Value]) => ({ Key, Value })));
}
