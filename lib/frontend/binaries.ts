// Avatars (USER) and global logos (GLOBAL) as Cells' `/frontend/binaries/{BinaryType}/{Uuid}` serves them: the
// rules of an upload (who may write what, which bytes are an image, how big) and of a read (which record a
// path names, thumbnails). The store is injected (lib/db BinariesRepo); users are resolved by the caller.
import { randomBytes } from "node:crypto";
import { BadRequestError, CellarError, ForbiddenError, NotFoundError, PayloadTooLargeError } from "../errors";
import type { Identity } from "../auth/identity";
import { boundaryOf, parseMultipart } from "./multipart";
import { extensionOf, IMAGE_MIME, looksLikeMarkup, MAX_PIXELS, pngSize, pngThumbnail, sniffImage, stripJpegMetadata } from "./images";

export type BinaryType = "USER" | "GLOBAL";

export interface StoredBinary {
	kind: BinaryType;
	owner: string;
	id: string;
	mime: string;
	data: Buffer;
	createdAt: number;
}

export interface BinaryStore {
	put(b: StoredBinary): Promise<void>;
	byOwner(kind: BinaryType, owner: string): Promise<StoredBinary | null>;
	byId(kind: BinaryType, id: string): Promise<StoredBinary | null>;
}

/** The field Cells' web client posts the file in. */
export const UPLOAD_FIELD = "userfile";
const GLOBAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function binaryType(value: string): BinaryType {
	const t = value.toUpperCase();
	if (t !== "USER" && t !== "GLOBAL") throw new BadRequestError(`BinaryType must be USER or GLOBAL, got "${value}"`);
	return t;
}

export function checkGlobalName(name: string): string {
	if (!GLOBAL_NAME.test(name)) throw new BadRequestError(`"${name}" is not a valid binary name (letters, digits, dot, dash, underscore; 128 at most)`);
	return name;
}

/** USER: the user themself or an admin; GLOBAL: admins only. */
export function checkCanWrite(kind: BinaryType, caller: Identity, targetUuid: string): void {
	if (kind === "GLOBAL") {
		if (caller.Profile !== "admin") throw new ForbiddenError("Only administrators may change the global images (logos)", "binary.forbidden");
	} else if (caller.Uuid !== targetUuid && caller.Profile !== "admin") {
		throw new ForbiddenError("You may only change your own avatar", "binary.forbidden");
	}
}

/**
 * The image of an upload's `userfile` part, checked by content: PNG, JPEG, GIF or WebP. SVG is refused, not
 * sanitised (a drawing can carry scripts and external references, and an avatar served from this origin must
 * not). JPEG metadata (EXIF: camera, date, GPS position) is removed. A PNG of more than MAX_PIXELS is refused (413):
 * its thumbnails would take that many pixels' memory to make, however small the file.
 */
export function imageFromUpload(contentType: string | undefined, body: Buffer, maxSize: number): { mime: string; ext: string; data: Buffer } {
	const boundary = boundaryOf(contentType);
	if (!boundary) throw new BadRequestError(`Send the image as multipart/form-data, in a field named "${UPLOAD_FIELD}"`);
	const part = parseMultipart(body, boundary).find((p) => p.name === UPLOAD_FIELD);
	if (!part) throw new BadRequestError(`The form has no "${UPLOAD_FIELD}" field`);
	if (!part.data.length) throw new BadRequestError(`The "${UPLOAD_FIELD}" field is empty`);
	if (part.data.length > maxSize) throw new PayloadTooLargeError(`The image is ${part.data.length} bytes: ${maxSize} at most (BINARY_MAX_SIZE)`);
	const type = sniffImage(part.data);
	if (!type) {
		const why = looksLikeMarkup(part.data) ? "SVG and other markup are refused (they can carry scripts)" : "its content is not a PNG, JPEG, GIF or WebP image";
		throw new CellarError(`Not an accepted image: ${why}`, 415, "binary.type");
	}
	const size = type === "png" ? pngSize(part.data) : null;
	if (size && size.width * size.height > MAX_PIXELS) {
		throw new PayloadTooLargeError(`The image is ${size.width}×${size.height} pixels: ${MAX_PIXELS / 1_000_000} megapixels at most`);
	}
	const data = type === "jpeg" ? stripJpegMetadata(part.data) : part.data;
	return { mime: IMAGE_MIME[type], ext: extensionOf(type), data };
}

/** Cells' binary id: 12 hex characters and the extension of its type. */
export function newBinaryId(ext: string): string {
	return `${randomBytes(6).toString("hex")}.${ext}`;
}

/** GLOBAL/{name}: the image posted to that name, or the binary with that id. */
export async function findGlobal(store: BinaryStore, name: string): Promise<StoredBinary> {
	const b = (await store.byOwner("GLOBAL", name)) ?? (await store.byId("GLOBAL", name));
	if (!b) throw new NotFoundError(`No global image named ${name}`, "binary.notfound");
	return b;
}

/**
 * The bytes to serve for `dim`: a PNG thumbnail when the image is a PNG this server can decode, otherwise the
 * original (no codec for JPEG, GIF or WebP here); `resized` says which.
 */
export interface Sized {
	mime: string;
	data: Buffer;
	resized: boolean;
}

export function sized(b: StoredBinary, dim: number | undefined): Sized {
	if (!dim || b.mime !== "image/png") return { mime: b.mime, data: b.data, resized: false };
	const thumb = pngThumbnail(b.data, dim);
	if (!thumb || thumb === b.data) return { mime: b.mime, data: b.data, resized: false };
	return { mime: "image/png", data: thumb, resized: true };
}

/** Memory the kept thumbnails may take on a node. */
export const THUMBNAIL_CACHE_BYTES = 16 * 1024 * 1024;
const THUMBNAIL_CACHE_ENTRIES = 2048;

/**
 * `sized`, made once per binary and dim while kept: a thumbnail is a decode and a resize on the event loop, and
 * every avatar on a page asks for one. Least recently used first out, within a byte and an entry bound. The key
 * holds the binary's id, which every upload renews: another node's upload can never get a stale thumbnail served
 * (the record read first names the new id); this node's own uploads and deletions drop the old ones (`forget`).
 */
export class ThumbnailCache {
	/** Key → thumbnail; null: the original is served (not a PNG this server decodes, or already small enough). */
	private readonly entries = new Map<string, Buffer | null>();
	private bytes = 0;

	constructor(
		private readonly maxBytes = THUMBNAIL_CACHE_BYTES,
		private readonly maxEntries = THUMBNAIL_CACHE_ENTRIES,
	) {}

	sized(b: StoredBinary, dim: number | undefined): Sized {
		if (!dim || b.mime !== "image/png") return sized(b, dim);
		const key = `${ownerKey(b.kind, b.owner)}${b.id}\u0000${dim}`;
		let thumb = this.entries.get(key);
		if (thumb !== undefined) {
			// Most recently used: last in the map's order.
			this.entries.delete(key);
			this.entries.set(key, thumb);
		} else {
			const out = sized(b, dim);
			thumb = out.resized ? out.data : null;
			this.keep(key, thumb);
		}
		return thumb ? { mime: "image/png", data: thumb, resized: true } : { mime: b.mime, data: b.data, resized: false };
	}

	/** Drops the thumbnails of (kind, owner)'s binaries: replaced or deleted. */
	forget(kind: BinaryType, owner: string): void {
		const prefix = ownerKey(kind, owner);
		for (const [key, thumb] of this.entries) {
			if (!key.startsWith(prefix)) continue;
			this.entries.delete(key);
			this.bytes -= thumb?.length ?? 0;
		}
	}

	get size(): number {
		return this.entries.size;
	}

	get heldBytes(): number {
		return this.bytes;
	}

	private keep(key: string, thumb: Buffer | null): void {
		const n = thumb?.length ?? 0;
		if (n > this.maxBytes) return;
		this.entries.set(key, thumb);
		this.bytes += n;
		for (const [oldest, t] of this.entries) {
			if (this.bytes <= this.maxBytes && this.entries.size <= this.maxEntries) break;
			this.entries.delete(oldest);
			this.bytes -= t?.length ?? 0;
		}
	}
}

const ownerKey = (kind: BinaryType, owner: string) => `${kind}\u0000${owner}\u0000`;
