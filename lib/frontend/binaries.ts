// Avatars (USER) and global logos (GLOBAL) as Cells' `/frontend/binaries/{BinaryType}/{Uuid}` serves them: the
// rules of an upload (who may write what, which bytes are an image, how big) and of a read (which record a
// path names, thumbnails). The store is injected (lib/db BinariesRepo); users are resolved by the caller.
import { randomBytes } from "node:crypto";
import { BadRequestError, CellarError, ForbiddenError, NotFoundError, PayloadTooLargeError } from "../errors";
import type { Identity } from "../auth/identity";
import { boundaryOf, parseMultipart } from "./multipart";
import { extensionOf, IMAGE_MIME, looksLikeMarkup, MAX_PIXELS, pngSize, sniffImage, stripJpegMetadata } from "./images";

export type BinaryType = "USER" | "GLOBAL";

/** A binary without its bytes: the id names the version (every upload has a new one). */
export interface BinaryMeta {
	kind: BinaryType;
	owner: string;
	id: string;
	mime: string;
	createdAt: number;
}

export interface StoredBinary extends BinaryMeta {
	data: Buffer;
}

export interface BinaryStore {
	byOwner(kind: BinaryType, owner: string): Promise<StoredBinary | null>;
	byId(kind: BinaryType, id: string): Promise<StoredBinary | null>;
	metaByOwner(kind: BinaryType, owner: string): Promise<BinaryMeta | null>;
	metaById(kind: BinaryType, id: string): Promise<BinaryMeta | null>;
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

/** Which binary a path names: GLOBAL/{name} (the image posted to that name, or the binary with that id), or a user's avatar. */
export type BinaryTarget = { kind: "GLOBAL"; name: string } | { kind: "USER"; owner: string; login: string };

/** The target's record, read with `byOwner` and `byId` (with or without the bytes); NotFoundError when there is none. */
async function find<T>(target: BinaryTarget, byOwner: (kind: BinaryType, owner: string) => Promise<T | null>, byId: (kind: BinaryType, id: string) => Promise<T | null>): Promise<T> {
	if (target.kind === "USER") {
		const b = await byOwner("USER", target.owner);
		if (!b) throw new NotFoundError(`${target.login} has no avatar`, "binary.notfound");
		return b;
	}
	const b = (await byOwner("GLOBAL", target.name)) ?? (await byId("GLOBAL", target.name));
	if (!b) throw new NotFoundError(`No global image named ${target.name}`, "binary.notfound");
	return b;
}

/**
 * The sizes thumbnails are made at. A `dim` is rounded up to the next of them and the answer has that size on its
 * longer side (a client asking for 100 gets 128 pixels, and scales them down itself, as it does an original it
 * could not have resized): otherwise every distinct dim would cost a decode and a cache entry of its own, for
 * sizes no one tells apart (Cells' clients ask for a handful anyway). The last is the largest dim accepted.
 */
export const THUMBNAIL_SIZES: readonly number[] = [32, 64, 128, 256, 512, 1024, 2048, 4096];

export function thumbnailDim(dim: number): number {
	return THUMBNAIL_SIZES.find((s) => s >= dim) ?? THUMBNAIL_SIZES[THUMBNAIL_SIZES.length - 1];
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

/** Makes the thumbnail named `key` of a PNG (lib/frontend/thumbnail-pool); null: serve the original. */
export type MakeThumbnail = (key: string, png: Buffer, dim: number) => Promise<Buffer | null>;

/** Memory the kept thumbnails may take on a node. */
export const THUMBNAIL_CACHE_BYTES = 16 * 1024 * 1024;
const THUMBNAIL_CACHE_ENTRIES = 2048;

/**
 * Thumbnails made once per binary and dim while kept: each is a decode and a resize, and every avatar on a page
 * asks for one. Least recently used first out, within a byte and an entry bound. The key holds the binary's id,
 * which every upload renews: another node's upload can never get a stale thumbnail served (the record read first
 * names the new id); this node's own uploads and deletions drop the old ones (`forget`).
 */
export class ThumbnailCache {
	/** Key → thumbnail; null: the original is served (not a PNG this server decodes, or already small enough). */
	private readonly entries = new Map<string, Buffer | null>();
	private bytes = 0;

	constructor(
		private readonly maxBytes = THUMBNAIL_CACHE_BYTES,
		private readonly maxEntries = THUMBNAIL_CACHE_ENTRIES,
	) {}

	/** The kept thumbnail of `b` at `dim`: its bytes, null when the original is served, undefined when none is kept. */
	kept(b: BinaryMeta, dim: number): Buffer | null | undefined {
		return b.mime === "image/png" ? this.touch(keyOf(b, dim)) : undefined;
	}

	/** The bytes to serve for `b` at `dim`, the thumbnail made by `make` unless kept. */
	async sized(b: StoredBinary, dim: number | undefined, make: MakeThumbnail): Promise<Sized> {
		if (!dim || b.mime !== "image/png") return { mime: b.mime, data: b.data, resized: false };
		const key = keyOf(b, dim);
		let thumb = this.touch(key);
		if (thumb === undefined) {
			const size = pngSize(b.data);
			// No larger than asked, as its header says: the original, nothing decoded.
			thumb = size && Math.max(size.width, size.height) <= dim ? null : await make(key, b.data, dim);
			this.keep(key, thumb);
		}
		return thumb ? { mime: "image/png", data: thumb, resized: true } : { mime: b.mime, data: b.data, resized: false };
	}

	/** Drops the thumbnails of (kind, owner)'s binaries: replaced or deleted. */
	forget(kind: BinaryType, owners: string | string[]): void {
		const prefixes = new Set((typeof owners === "string" ? [owners] : owners).map((o) => ownerKey(kind, o)));
		for (const [key, thumb] of this.entries) {
			if (!prefixes.has(key.slice(0, key.indexOf("\u0000", kind.length + 1) + 1))) continue;
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

	private touch(key: string): Buffer | null | undefined {
		const thumb = this.entries.get(key);
		if (thumb !== undefined) {
			// Most recently used: last in the map's order.
			this.entries.delete(key);
			this.entries.set(key, thumb);
		}
		return thumb;
	}

	private keep(key: string, thumb: Buffer | null): void {
		const n = thumb?.length ?? 0;
		if (n > this.maxBytes) return;
		const old = this.entries.get(key);
		if (old !== undefined) this.bytes -= old?.length ?? 0;
		this.entries.delete(key);
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
const keyOf = (b: BinaryMeta, dim: number) => `${ownerKey(b.kind, b.owner)}${b.id}\u0000${dim}`;

/**
 * Reads what a `GET /frontend/binaries/…` serves. With a dim (rounded: thumbnailDim), the binary's metadata is read
 * first, without its bytes: a kept thumbnail answers from it, and only a miss (or an original to serve) reads the
 * image itself, which may be megabytes.
 */
export class BinaryReader {
	constructor(
		private readonly store: BinaryStore,
		private readonly cache: ThumbnailCache,
		private readonly make: MakeThumbnail,
	) {}

	async read(target: BinaryTarget, dim: number | undefined): Promise<Sized> {
		const size = dim ? thumbnailDim(dim) : undefined;
		if (size) {
			const thumb = this.cache.kept(await find(target, (k, o) => this.store.metaByOwner(k, o), (k, id) => this.store.metaById(k, id)), size);
			if (thumb) return { mime: "image/png", data: thumb, resized: true };
		}
		const b = await find(target, (k, o) => this.store.byOwner(k, o), (k, id) => this.store.byId(k, id));
		return this.cache.sized(b, size, this.make);
	}
}
