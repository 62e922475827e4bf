// Images for avatars and logos, without an image library: the type is read from the bytes (magic numbers, never
// the name or the client's Content-Type), JPEG metadata segments (EXIF with GPS positions, XMP, comments) are
// dropped before storing, and PNG thumbnails are made here (decode, box-filter down, encode). JPEG, GIF and WebP
// thumbnails would need their codecs: those are served at their original size.
import { crc32, deflateSync, inflateSync } from "node:zlib";

export type ImageType = "png" | "jpeg" | "gif" | "webp";

export const IMAGE_MIME: Record<ImageType, string> = { png: "image/png", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };
const EXT: Record<ImageType, string> = { png: "png", jpeg: "jpg", gif: "gif", webp: "webp" };

export function extensionOf(type: ImageType): string {
	return EXT[type];
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The image type of `buf` from its first bytes; null for anything else (SVG included: it is a document). */
export function sniffImage(buf: Buffer): ImageType | null {
	if (buf.length >= 8 && buf.subarray(0, 8).equals(PNG_SIGNATURE)) return "png";
	if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return "jpeg";
	if (buf.length >= 6 && (buf.toString("latin1", 0, 6) === "GIF87a" || buf.toString("latin1", 0, 6) === "GIF89a")) return "gif";
	if (buf.length >= 12 && buf.toString("latin1", 0, 4) === "RIFF" && buf.toString("latin1", 8, 12) === "WEBP") return "webp";
	return null;
}

/** Whether the bytes look like SVG (or other XML/HTML): worth a specific refusal message. */
export function looksLikeMarkup(buf: Buffer): boolean {
	const head = buf.subarray(0, 512).toString("utf8").replace(/^\uFEFF/, "").trimStart().toLowerCase();
	return head.startsWith("<?xml") || head.startsWith("<svg") || head.startsWith("<!doctype") || head.startsWith("<html") || head.includes("<svg");
}

/**
 * A JPEG without its APPn metadata segments other than APP0 (JFIF) and APP2 (ICC colour profile), and without
 * comments: EXIF (APP1) carries the camera, the date and often the GPS position of a photo. Anything that does not
 * parse as a JPEG stream is returned unchanged.
 */
export function stripJpegMetadata(buf: Buffer): Buffer {
	if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return buf;
	const out: Buffer[] = [buf.subarray(0, 2)];
	let i = 2;
	while (i + 4 <= buf.length) {
		if (buf[i] !== 0xff) return buf;
		const marker = buf[i + 1];
		// Start of scan: the entropy-coded data follows, copied as is to the end.
		if (marker === 0xda) {
			out.push(buf.subarray(i));
			return Buffer.concat(out);
		}
		if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01 || marker === 0xff) {
			out.push(buf.subarray(i, i + 2));
			i += 2;
			continue;
		}
		const len = buf.readUInt16BE(i + 2);
		if (len < 2 || i + 2 + len > buf.length) return buf;
		const drop = (marker >= 0xe1 && marker <= 0xef && marker !== 0xe2) || marker === 0xfe;
		if (!drop) out.push(buf.subarray(i, i + 2 + len));
		i += 2 + len;
	}
	return buf;
}

/**
 * The most pixels of a PNG this server decodes (and accepts as an avatar or logo): the decoded image takes about
 * 4 + channels bytes a pixel, whatever its compressed size.
 */
export const MAX_PIXELS = 40_000_000;

interface Rgba {
	width: number;
	height: number;
	data: Buffer;
}

/** Decodes an 8-bit, non-interlaced PNG (grey, RGB, palette, grey+alpha, RGBA) to RGBA; null for other PNGs. */
export function decodePng(buf: Buffer): Rgba | null {
	if (sniffImage(buf) !== "png") return null;
	let i = 8;
	let width = 0;
	let height = 0;
	let depth = 0;
	let colour = 0;
	let interlace = 0;
	let palette: Buffer | null = null;
	let transparency: Buffer | null = null;
	const idat: Buffer[] = [];
	while (i + 8 <= buf.length) {
		const len = buf.readUInt32BE(i);
		const type = buf.toString("latin1", i + 4, i + 8);
		const body = buf.subarray(i + 8, i + 8 + len);
		if (body.length !== len) return null;
		if (type === "IHDR") {
			// A truncated header is a damaged file, not a server error: no thumbnail, the original is served.
			if (len < 13) return null;
			width = body.readUInt32BE(0);
			height = body.readUInt32BE(4);
			depth = body[8];
			colour = body[9];
			interlace = body[12];
		} else if (type === "PLTE") palette = body;
		else if (type === "tRNS") transparency = body;
		else if (type === "IDAT") idat.push(body);
		else if (type === "IEND") break;
		i += 12 + len;
	}
	const channels = ({ 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as Record<number, number>)[colour];
	if (!channels || depth !== 8 || interlace !== 0 || !width || !height || width * height > MAX_PIXELS || (colour === 3 && !palette)) return null;
	const stride = width * channels;
	// Each row and its filter byte, no more: a few KB of IDAT can inflate to gigabytes, which the header's size
	// bounds (inflateSync throws, rather than allocate, past maxOutputLength).
	const expected = (stride + 1) * height;
	let raw: Buffer;
	try {
		raw = inflateSync(Buffer.concat(idat), { maxOutputLength: expected });
	} catch {
		return null;
	}
	if (raw.length < expected) return null;
	const px = Buffer.alloc(stride * height);
	for (let y = 0; y < height; y++) {
		const filter = raw[y * (stride + 1)];
		if (filter > 4) return null;
		const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
		const out = px.subarray(y * stride, (y + 1) * stride);
		const prev = y > 0 ? px.subarray((y - 1) * stride, y * stride) : null;
		unfilter(filter, line, out, prev, channels);
	}
	// One loop per colour type, outside the pixel loop: this runs for every pixel of the image.
	const pixels = width * height;
	if (colour === 6) return { width, height, data: px };
	const rgba = Buffer.alloc(pixels * 4);
	if (colour === 0) {
		for (let p = 0, o = 0; p < pixels; p++, o += 4) rgba[o] = rgba[o + 1] = rgba[o + 2] = px[p], rgba[o + 3] = 255;
	} else if (colour === 2) {
		for (let p = 0, s = 0, o = 0; p < pixels; p++, s += 3, o += 4) rgba[o] = px[s], rgba[o + 1] = px[s + 1], rgba[o + 2] = px[s + 2], rgba[o + 3] = 255;
	} else if (colour === 4) {
		for (let p = 0, s = 0, o = 0; p < pixels; p++, s += 2, o += 4) rgba[o] = rgba[o + 1] = rgba[o + 2] = px[s], rgba[o + 3] = px[s + 1];
	} else {
		// Palette: every index's RGBA once (missing entries black, opaque unless tRNS says otherwise).
		const pal = palette as Buffer;
		const lut = Buffer.alloc(256 * 4);
		for (let k = 0; k < 256; k++) {
			lut[k * 4] = pal[k * 3] ?? 0;
			lut[k * 4 + 1] = pal[k * 3 + 1] ?? 0;
			lut[k * 4 + 2] = pal[k * 3 + 2] ?? 0;
			lut[k * 4 + 3] = transparency && k < transparency.length ? transparency[k] : 255;
		}
		for (let p = 0; p < pixels; p++) lut.copy(rgba, p * 4, px[p] * 4, px[p] * 4 + 4);
	}
	return { width, height, data: rgba };
}

/** Reverses one row's PNG filter (0 none, 1 sub, 2 up, 3 average, 4 Paeth) into `out`; `prev`: the row above. */
function unfilter(filter: number, line: Buffer, out: Buffer, prev: Buffer | null, bpp: number): void {
	const n = line.length;
	if (filter === 0 || (filter === 2 && !prev)) {
		line.copy(out);
		return;
	}
	if (filter === 1) {
		for (let x = 0; x < n; x++) out[x] = (line[x] + (x >= bpp ? out[x - bpp] : 0)) & 255;
	} else if (filter === 2) {
		const up = prev as Buffer;
		for (let x = 0; x < n; x++) out[x] = (line[x] + up[x]) & 255;
	} else if (filter === 3) {
		for (let x = 0; x < n; x++) out[x] = (line[x] + (((x >= bpp ? out[x - bpp] : 0) + (prev ? prev[x] : 0)) >> 1)) & 255;
	} else {
		for (let x = 0; x < n; x++) {
			const a = x >= bpp ? out[x - bpp] : 0;
			const b = prev ? prev[x] : 0;
			const c = prev && x >= bpp ? prev[x - bpp] : 0;
			const p = a + b - c;
			const pa = Math.abs(p - a);
			const pb = Math.abs(p - b);
			const pc = Math.abs(p - c);
			out[x] = (line[x] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 255;
		}
	}
}

function chunk(type: string, body: Buffer): Buffer {
	const head = Buffer.alloc(8);
	head.writeUInt32BE(body.length, 0);
	head.write(type, 4, "latin1");
	const crc = Buffer.alloc(4);
	crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])) >>> 0, 0);
	return Buffer.concat([head, body, crc]);
}

export function encodePng(img: Rgba): Buffer {
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(img.width, 0);
	ihdr.writeUInt32BE(img.height, 4);
	ihdr[8] = 8;
	ihdr[9] = 6;
	const stride = img.width * 4;
	const raw = Buffer.alloc((stride + 1) * img.height);
	for (let y = 0; y < img.height; y++) img.data.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
	return Buffer.concat([PNG_SIGNATURE, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

/** Box-filter downscale so that the larger side is `dim` (aspect kept); never enlarges. */
export function downscale(img: Rgba, dim: number): Rgba {
	const scale = dim / Math.max(img.width, img.height);
	if (scale >= 1) return img;
	const w = Math.max(1, Math.round(img.width * scale));
	const h = Math.max(1, Math.round(img.height * scale));
	const out = Buffer.alloc(w * h * 4);
	for (let y = 0; y < h; y++) {
		const y0 = Math.floor((y * img.height) / h);
		const y1 = Math.max(y0 + 1, Math.floor(((y + 1) * img.height) / h));
		for (let x = 0; x < w; x++) {
			const x0 = Math.floor((x * img.width) / w);
			const x1 = Math.max(x0 + 1, Math.floor(((x + 1) * img.width) / w));
			let r = 0, g = 0, b = 0, a = 0, n = 0;
			for (let sy = y0; sy < y1; sy++) {
				for (let sx = x0; sx < x1; sx++) {
					const s = (sy * img.width + sx) * 4;
					const al = img.data[s + 3];
					// Colours weighted by alpha: transparent pixels do not darken the edges.
					r += img.data[s] * al;
					g += img.data[s + 1] * al;
					b += img.data[s + 2] * al;
					a += al;
					n++;
				}
			}
			const o = (y * w + x) * 4;
			out[o] = a ? Math.round(r / a) : 0;
			out[o + 1] = a ? Math.round(g / a) : 0;
			out[o + 2] = a ? Math.round(b / a) : 0;
			out[o + 3] = Math.round(a / n);
		}
	}
	return { width: w, height: h, data: out };
}

/**
 * A PNG of at most dim×dim: `buf` itself when its header says it is no larger (nothing decoded), null when it is a
 * larger image this module does not decode (serve the original).
 */
export function pngThumbnail(buf: Buffer, dim: number): Buffer | null {
	const size = pngSize(buf);
	if (size && Math.max(size.width, size.height) <= dim) return buf;
	const img = decodePng(buf);
	if (!img) return null;
	return encodePng(downscale(img, dim));
}

/** Width and height of a PNG from its header (tests and logs). */
export function pngSize(buf: Buffer): { width: number; height: number } | null {
	if (sniffImage(buf) !== "png" || buf.length < 24) return null;
	return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}
