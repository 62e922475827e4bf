// Object key checks shared by both stores, and small stream helpers (md5 + size while streaming).
import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { BadRequestError } from "../errors";
import { MAX_PART_NUMBER } from "./types";

/** Staging areas inside a LOCAL root; never reachable through a key. */
export const TMP_DIR = ".cellar-tmp";
export const UPLOADS_DIR = ".cellar-uploads";
const RESERVED = new Set([TMP_DIR, UPLOADS_DIR]);

/**
 * A key is a relative path with "/" separators: not absolute, no "." / ".." / empty segment, no NUL or backslash,
 * segments of at most 255 bytes, and not inside the staging areas. Returns the segments.
 */
export function checkKey(key: unknown, what = "key"): string[] {
	if (typeof key !== "string" || key === "") throw new BadRequestError(`Invalid ${what}: empty`);
	if (key.includes("\0")) throw new BadRequestError(`Invalid ${what}: NUL character`);
	if (key.includes("\\")) throw new BadRequestError(`Invalid ${what}: backslash`);
	if (key.startsWith("/")) throw new BadRequestError(`Invalid ${what}: absolute path`);
	if (Buffer.byteLength(key) > 4096) throw new BadRequestError(`Invalid ${what}: too long`);
	const segments = key.split("/");
	for (const s of segments) {
		if (s === "") throw new BadRequestError(`Invalid ${what}: empty path segment`);
		if (s === "." || s === "..") throw new BadRequestError(`Invalid ${what}: "${s}" segment`);
		if (Buffer.byteLength(s) > 255) throw new BadRequestError(`Invalid ${what}: name longer than 255 bytes`);
	}
	if (RESERVED.has(segments[0])) throw new BadRequestError(`Invalid ${what}: reserved name ${segments[0]}`);
	return segments;
}

/** Folder keys may come with one trailing "/" ("a/b/"). */
export function checkFolderKey(key: unknown): string[] {
	if (typeof key === "string" && key.length > 1 && key.endsWith("/")) key = key.slice(0, -1);
	return checkKey(key, "folder");
}

/** A list prefix: "" or a string prefix of keys ("docs/", "docs/re"). Returns the folder part that contains all matches ("" for the root). */
export function checkPrefix(prefix: unknown): string {
	if (prefix === "" || prefix === undefined) return "";
	if (typeof prefix !== "string") throw new BadRequestError("Invalid prefix");
	const cut = prefix.lastIndexOf("/");
	const folder = cut < 0 ? "" : prefix.slice(0, cut);
	const last = prefix.slice(cut + 1);
	if (prefix.includes("\0") || prefix.includes("\\") || prefix.startsWith("/")) throw new BadRequestError("Invalid prefix");
	if (last === "..") throw new BadRequestError("Invalid prefix");
	if (folder !== "") checkKey(folder, "prefix");
	return folder;
}

export function checkPartNumber(n: unknown): number {
	if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_PART_NUMBER) {
		throw new BadRequestError(`Invalid part number ${String(n)}: must be an integer in 1..${MAX_PART_NUMBER}`);
	}
	return n;
}

export function checkRange(range: { start: number; end: number }): void {
	const { start, end } = range;
	if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
		throw new BadRequestError(`Invalid range ${String(start)}-${String(end)}`);
	}
}

/** `"abc"` / `abc` / `W/"abc"` -> `abc` (lower case). */
export function bareEtag(etag: string): string {
	return etag.replace(/^W\//, "").replace(/"/g, "").toLowerCase();
}
export function quoteEtag(etag: string): string {
	return `"${bareEtag(etag)}"`;
}

/** Checks that completion parts are numbered in strictly ascending order (S3 InvalidPartOrder otherwise). */
export function checkCompletionParts(parts: unknown): { partNumber: number; etag: string }[] {
	if (!Array.isArray(parts) || parts.length === 0) throw new BadRequestError("A multipart upload needs at least one part");
	let prev = 0;
	return parts.map((p: { partNumber?: unknown; etag?: unknown }) => {
		const n = checkPartNumber(p?.partNumber);
		if (n <= prev) throw new BadRequestError("InvalidPartOrder: parts must be listed in ascending order, without duplicates");
		if (typeof p.etag !== "string" || p.etag === "") throw new BadRequestError(`InvalidPart: part ${n} has no ETag`);
		prev = n;
		return { partNumber: n, etag: p.etag };
	});
}

/**
 * Pass-through that computes md5 and byte count. With `expected`, a longer or shorter body fails the stream
 * (BadRequestError), which makes the whole pipeline fail and the write be discarded.
 */
export class HashingStream extends Transform {
	readonly hash: Hash = createHash("md5");
	/** Not named `size`: lib-storage's Upload would take a `size` property for the total body length. */
	bytes = 0;
	private digestHex?: string;
	constructor(private readonly expected?: number) {
		super();
		if (expected !== undefined && (!Number.isSafeInteger(expected) || expected < 0)) throw new BadRequestError(`Invalid size ${expected}`);
	}
	override _transform(chunk: Buffer | string, encoding: BufferEncoding, cb: TransformCallback): void {
		const buf = typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk;
		this.bytes += buf.length;
		if (this.expected !== undefined && this.bytes > this.expected) {
			cb(new BadRequestError(`Body is longer than the announced ${this.expected} bytes`));
			return;
		}
		this.hash.update(buf);
		cb(null, buf);
	}
	override _flush(cb: TransformCallback): void {
		if (this.expected !== undefined && this.bytes !== this.expected) {
			cb(new BadRequestError(`Body is ${this.bytes} bytes, ${this.expected} were announced`));
			return;
		}
		cb();
	}
	get md5(): string {
		this.digestHex ??= this.hash.digest("hex");
		return this.digestHex;
	}
}
