// What an S3 client stores with an object and reads back: Content-Type, Content-Disposition, Content-Encoding,
// Cache-Control, Content-Language, Expires and the x-amz-meta-* user metadata. Clients depend on it (rclone keeps
// a file's modification time in x-amz-meta-mtime and the md5 of multipart uploads in x-amz-meta-md5chksum; without
// them every sync copies everything again). They are kept as one map, response header name -> value, in the
// node's metadata under S3_HEADERS (JSON, as every MetaStore value), and follow the node's current content.
import type { Headers, PayloadInfo } from "./request";
import { headerValue } from "./request";
import { S3Error } from "./xml";

/** The system headers stored as sent, in the case they are answered with. */
export const STORED_HEADERS = ["Content-Type", "Content-Disposition", "Content-Encoding", "Cache-Control", "Content-Language", "Expires"] as const;

/** S3's limit on user metadata: the UTF-8 bytes of every name (without x-amz-meta-) and value, summed. */
export const MAX_USER_METADATA = 2048;
/**
 * The system headers together. S3 leaves them to its 8 KB request-header limit; here they also travel inside
 * multipart upload ids (which carry the upload's state), so they get a bound of their own.
 */
export const MAX_SYSTEM_HEADERS = 2048;

const USER_PREFIX = "x-amz-meta-";
/** RFC 9110 token characters: what a header name may be made of. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

export type ObjectHeaders = Record<string, string>;

function safeValue(name: string, v: string): string {
	// Node hands header bytes over as latin1: anything but tab, CR, LF and other controls can be answered as is.
	// eslint-disable-next-line no-control-regex
	if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(v) || /[^\u0000-\u00ff]/.test(v)) throw new S3Error("InvalidArgument", `Invalid value for ${name}`, { ArgumentName: name });
	return v;
}

/**
 * The headers an upload asks to store (PutObject, CreateMultipartUpload, CopyObject with REPLACE), checked:
 * MetadataTooLarge over the limits, InvalidArgument for a value that could not be answered as a header.
 * `payload` gives the Content-Encoding left once aws-chunked (the transfer framing, never stored) is removed.
 */
export function headersFromRequest(headers: Headers, payload: PayloadInfo | undefined): ObjectHeaders {
	const out: ObjectHeaders = {};
	let system = 0;
	for (const name of STORED_HEADERS) {
		const raw = name === "Content-Encoding" ? payloadEncoding(headers, payload) : headerValue(headers, name)?.trim();
		if (!raw) continue;
		// The AWS SDK sends application/octet-stream whenever its caller gave no type: storing it would serve a
		// report.pdf as bytes to browsers and previews. It says "unknown", so the type of the name is used instead.
		if (name === "Content-Type" && /^application\/octet-stream\s*(;|$)/i.test(raw)) continue;
		out[name] = safeValue(name, raw);
		system += name.length + raw.length;
	}
	if (system > MAX_SYSTEM_HEADERS) throw new S3Error("MetadataTooLarge", `Your metadata headers exceed the maximum allowed metadata size: the stored headers (Content-Type, Content-Disposition, …) take ${system} bytes, at most ${MAX_SYSTEM_HEADERS}`);
	let user = 0;
	const names = Object.keys(headers)
		.map((k) => k.toLowerCase())
		.filter((k) => k.startsWith(USER_PREFIX) && k.length > USER_PREFIX.length)
		.sort();
	for (const name of names) {
		const value = headerValue(headers, name) ?? "";
		if (!TOKEN.test(name)) throw new S3Error("InvalidArgument", `Invalid metadata name ${name.slice(0, 64)}`, { ArgumentName: name.slice(0, 64) });
		out[name] = safeValue(name, value.trim());
		// Header values arrive as latin1 text of the bytes sent: their length is the UTF-8 byte count S3 uses.
		user += name.length - USER_PREFIX.length + out[name].length;
	}
	if (user > MAX_USER_METADATA) throw new S3Error("MetadataTooLarge", `Your metadata headers exceed the maximum allowed metadata size: ${user} bytes of x-amz-meta-*, at most ${MAX_USER_METADATA}`, { Size: String(user), MaxSizeAllowed: String(MAX_USER_METADATA) });
	return out;
}

function payloadEncoding(headers: Headers, payload: PayloadInfo | undefined): string | undefined {
	if (payload) return payload.contentEncoding?.trim();
	const v = headerValue(headers, "content-encoding");
	const rest = (v ?? "")
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s && s.toLowerCase() !== "aws-chunked");
	return rest.length ? rest.join(", ") : undefined;
}

/** The stored form: JSON text (the MetaStore's encoding), or undefined when nothing is to be kept. */
export function encodeObjectHeaders(h: ObjectHeaders | undefined): string | undefined {
	return h && Object.keys(h).length ? JSON.stringify(h) : undefined;
}

/**
 * Stored headers back from a node's metadata. Only what could have been stored is returned, and only values that
 * are safe as headers: the metadata may have been written by another version, or a corrupted document.
 */
export function decodeObjectHeaders(stored: string | undefined): ObjectHeaders {
	if (!stored) return {};
	let parsed: unknown;
	try {
		parsed = JSON.parse(stored);
	} catch {
		return {};
	}
	if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return {};
	const out: ObjectHeaders = {};
	for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
		if (typeof v !== "string") continue;
		const known = (STORED_HEADERS as readonly string[]).includes(k) || (k.startsWith(USER_PREFIX) && TOKEN.test(k));
		if (!known) continue;
		try {
			out[k] = safeValue(k, v);
		} catch {
			continue;
		}
	}
	return out;
}

/** Checks headers given as a record (an internal call's parameter) as thoroughly as decoding stored ones. */
export function checkObjectHeaders(h: Record<string, string> | undefined): ObjectHeaders | undefined {
	if (!h) return undefined;
	const clean = decodeObjectHeaders(JSON.stringify(h));
	return Object.keys(clean).length ? clean : undefined;
}
