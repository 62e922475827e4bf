// Image checks by content, JPEG metadata removal, PNG thumbnails, the multipart reader and the dictionaries.
import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";
import { decodePng, encodePng, pngSize, pngThumbnail, sniffImage, stripJpegMetadata, looksLikeMarkup } from "../../lib/frontend/images";
import { boundaryOf, parseMultipart } from "../../lib/frontend/multipart";
import { imageFromUpload, ThumbnailCache, type StoredBinary } from "../../lib/frontend/binaries";
import { acceptedLanguage, DICTIONARIES, messagesFor, resolveLanguage } from "../../lib/frontend/i18n";
import { EN_US } from "../../lib/frontend/i18n/en-us";
import { PLUGINS, settingsMenuKeys } from "../../lib/frontend/catalog";

function rgba(width: number, height: number, fill: (x: number, y: number) => [number, number, number, number]) {
	const data = Buffer.alloc(width * height * 4);
	for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(fill(x, y), (y * width + x) * 4);
	return { width, height, data };
}

function form(boundary: string, parts: { name: string; filename?: string; data: Buffer }[]): Buffer {
	const chunks: Buffer[] = [];
	for (const p of parts) {
		chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ""}\r\nContent-Type: application/octet-stream\r\n\r\n`));
		chunks.push(p.data, Buffer.from("\r\n"));
	}
	chunks.push(Buffer.from(`--${boundary}--\r\n`));
	return Buffer.concat(chunks);
}

describe("frontend images", () => {
	it("recognises PNG, JPEG, GIF and WebP by their bytes only", () => {
		assert.equal(sniffImage(encodePng(rgba(1, 1, () => [0, 0, 0, 255]))), "png");
		assert.equal(sniffImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0])), "jpeg");
		assert.equal(sniffImage(Buffer.from("GIF89a....")), "gif");
		assert.equal(sniffImage(Buffer.from("RIFF\0\0\0\0WEBPVP8 ")), "webp");
		assert.equal(sniffImage(Buffer.from("<svg></svg>")), null);
		assert.ok(looksLikeMarkup(Buffer.from('<?xml version="1.0"?><svg/>')));
	});

	it("round-trips RGBA through its PNG encoder and decoder, and decodes grey and palette PNGs", () => {
		const img = rgba(7, 5, (x, y) => [x * 30, y * 40, 100, 200]);
		const back = decodePng(encodePng(img));
		assert.ok(back && back.data.equals(img.data));
		// A 2x1 palette PNG written by hand: filter byte 0, indexes 0 and 1.
		const chunk = (type: string, body: Buffer) => {
			const len = Buffer.alloc(4);
			len.writeUInt32BE(body.length);
			return Buffer.concat([len, Buffer.from(type), body, Buffer.alloc(4)]);
		};
		const ihdr = Buffer.from([0, 0, 0, 2, 0, 0, 0, 1, 8, 3, 0, 0, 0]);
		const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("PLTE", Buffer.from([255, 0, 0, 0, 0, 255])), chunk("IDAT", deflateSync(Buffer.from([0, 0, 1]))), chunk("IEND", Buffer.alloc(0))]);
		assert.deepEqual([...(decodePng(png)?.data ?? [])], [255, 0, 0, 255, 0, 0, 255, 255]);
		// A damaged header (an empty IHDR) decodes to nothing rather than throwing: the original is served.
		const damaged = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", Buffer.alloc(0)), chunk("IEND", Buffer.alloc(0))]);
		assert.equal(decodePng(damaged), null);
	});

	it("reverses every PNG row filter, for grey, RGB, grey+alpha and RGBA", () => {
		// A reference encoder: row y filtered with type y % 5 (none, sub, up, average, Paeth), as the spec defines them.
		const paeth = (a: number, b: number, c: number) => {
			const p = a + b - c;
			const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
			return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
		};
		const encode = (width: number, height: number, colour: number, channels: number, px: Buffer) => {
			const stride = width * channels;
			const raw = Buffer.alloc((stride + 1) * height);
			for (let y = 0; y < height; y++) {
				const f = y % 5;
				raw[y * (stride + 1)] = f;
				for (let x = 0; x < stride; x++) {
					const v = px[y * stride + x];
					const a = x >= channels ? px[y * stride + x - channels] : 0;
					const b = y > 0 ? px[(y - 1) * stride + x] : 0;
					const c = y > 0 && x >= channels ? px[(y - 1) * stride + x - channels] : 0;
					const pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][f];
					raw[y * (stride + 1) + 1 + x] = (v - pred) & 255;
				}
			}
			const chunk = (type: string, body: Buffer) => {
				const len = Buffer.alloc(4);
				len.writeUInt32BE(body.length);
				return Buffer.concat([len, Buffer.from(type), body, Buffer.alloc(4)]);
			};
			const ihdr = Buffer.alloc(13);
			ihdr.writeUInt32BE(width, 0);
			ihdr.writeUInt32BE(height, 4);
			ihdr.set([8, colour, 0, 0, 0], 8);
			return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
		};
		const [width, height] = [6, 7];
		for (const [colour, channels] of [[0, 1], [2, 3], [4, 2], [6, 4]]) {
			const px = Buffer.alloc(width * height * channels);
			for (let i = 0; i < px.length; i++) px[i] = (i * 37 + (i >> 3) * 91) & 255;
			const expected = Buffer.alloc(width * height * 4);
			for (let p = 0; p < width * height; p++) {
				const s = px.subarray(p * channels, (p + 1) * channels);
				const rgbaOf = [[s[0], s[0], s[0], 255], [], [s[0], s[1], s[2], 255], [], [s[0], s[0], s[0], s[1]], [], [s[0], s[1], s[2], s[3]]][colour];
				expected.set(rgbaOf, p * 4);
			}
			const back = decodePng(encode(width, height, colour, channels, px));
			assert.ok(back && back.data.equals(expected), `colour type ${colour}`);
		}
	});

	it("makes thumbnails that keep the aspect ratio and never enlarge", () => {
		const png = encodePng(rgba(100, 50, () => [255, 255, 255, 255]));
		assert.deepEqual(pngSize(pngThumbnail(png, 20) as Buffer), { width: 20, height: 10 });
		assert.equal(pngThumbnail(png, 200), png);
		assert.equal(pngThumbnail(Buffer.from([0xff, 0xd8, 0xff]), 20), null);
	});

	it("inflates a PNG no further than its header's size, and decodes nothing past 40 megapixels", () => {
		const chunk = (type: string, body: Buffer) => {
			const len = Buffer.alloc(4);
			len.writeUInt32BE(body.length);
			return Buffer.concat([len, Buffer.from(type), body, Buffer.alloc(4)]);
		};
		const pngOf = (width: number, height: number, raw: Buffer) => {
			const ihdr = Buffer.alloc(13);
			ihdr.writeUInt32BE(width, 0);
			ihdr.writeUInt32BE(height, 4);
			ihdr.set([8, 6, 0, 0, 0], 8);
			return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
		};
		// 2x2 RGBA: 2 rows of a filter byte and 8 bytes.
		assert.ok(decodePng(pngOf(2, 2, Buffer.alloc(18))));
		// The same header over 16 MiB of zeros (a 16 KiB file): refused, not inflated whole.
		const bomb = pngOf(2, 2, Buffer.alloc(16 * 1024 * 1024));
		assert.ok(bomb.length < 32 * 1024);
		assert.equal(decodePng(bomb), null);
		assert.equal(pngThumbnail(bomb, 1), null);
		// 8000x6000 = 48 megapixels: not decoded, whatever the data.
		assert.equal(decodePng(pngOf(8000, 6000, Buffer.alloc(10))), null);
		const upload = form("B0UND", [{ name: "userfile", data: pngOf(8000, 6000, Buffer.alloc(10)) }]);
		assert.throws(() => imageFromUpload("multipart/form-data; boundary=B0UND", upload, 1 << 20), (e: Error & { code?: number }) => e.code === 413 && /8000×6000 pixels: 40 megapixels/.test(e.message));
	});

	it("keeps thumbnails per binary and dim, least recently used out first, dropped per owner", async () => {
		const binary = (owner: string, id: string, width: number): StoredBinary => ({ kind: "USER", owner, id, mime: "image/png", data: encodePng(rgba(width, width, () => [9, 9, 9, 255])), createdAt: 0 });
		// The worker pool's stand-in: the same code, on this thread, counted.
		const made: string[] = [];
		const make = async (key: string, png: Buffer, dim: number) => (made.push(key), pngThumbnail(png, dim));
		const a = binary("u-a", "a1.png", 64);
		const cache = new ThumbnailCache(1 << 20, 3);
		const first = await cache.sized(a, 16, make);
		assert.deepEqual([first.resized, pngSize(first.data)], [true, { width: 16, height: 16 }]);
		assert.equal((await cache.sized(a, 16, make)).data, first.data, "the same buffer: made once");
		assert.equal(cache.kept(a, 16), first.data, "found from the binary's metadata alone");
		assert.equal(made.length, 1);
		// Already small enough (its header says so, nothing sent to be made), or not a PNG: the original, the
		// binary's own bytes (not copied into the cache).
		assert.equal((await cache.sized(a, 100, make)).data, a.data);
		assert.equal(cache.kept(a, 100), null, "kept as: serve the original");
		const jpeg: StoredBinary = { ...a, id: "j.jpg", mime: "image/jpeg", data: Buffer.from([0xff, 0xd8, 0xff]) };
		assert.equal((await cache.sized(jpeg, 16, make)).data, jpeg.data);
		assert.equal(cache.kept(jpeg, 16), undefined);
		assert.equal(made.length, 1);
		assert.equal(cache.heldBytes, first.data.length);
		// A new upload has a new id: its own thumbnail.
		const a2 = binary("u-a", "a2.png", 32);
		assert.deepEqual(pngSize((await cache.sized(a2, 16, make)).data), { width: 16, height: 16 });
		assert.notEqual((await cache.sized(a2, 16, make)).data, first.data);
		// 3 entries at most: a (16) was used before a (100), so a (100) went when b came in.
		await cache.sized(a, 16, make);
		const b = binary("u-b", "b.png", 64);
		await cache.sized(b, 8, make);
		assert.equal(cache.size, 3);
		assert.equal((await cache.sized(a, 16, make)).data, first.data, "recently used, kept");
		// The owner's binaries replaced or deleted: their thumbnails go, the others' stay; several owners at once.
		cache.forget("USER", "u-a");
		assert.equal(cache.size, 1);
		assert.notEqual((await cache.sized(a, 16, make)).data, first.data, "made again");
		cache.forget("USER", ["u-a", "u-b", "u-c"]);
		assert.deepEqual([cache.size, cache.heldBytes], [0, 0]);
		// A byte bound smaller than a thumbnail: served, not kept.
		const tiny = new ThumbnailCache(10);
		assert.equal((await tiny.sized(a, 16, make)).resized, true);
		assert.deepEqual([tiny.size, tiny.heldBytes], [0, 0]);
	});

	it("drops EXIF and comments from JPEGs, keeping JFIF and the image data", () => {
		const jfif = Buffer.from([0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46]);
		const exif = Buffer.concat([Buffer.from([0xff, 0xe1, 0x00, 0x08]), Buffer.from("Exif\0\0")]);
		const comment = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x05]), Buffer.from("GPS")]);
		const scan = Buffer.from([0xff, 0xda, 0x00, 0x02, 1, 2, 3, 0xff, 0xd9]);
		const out = stripJpegMetadata(Buffer.concat([Buffer.from([0xff, 0xd8]), jfif, exif, comment, scan]));
		assert.ok(out.equals(Buffer.concat([Buffer.from([0xff, 0xd8]), jfif, scan])));
	});

	it("reads multipart bodies and takes the image from the userfile field", () => {
		assert.equal(boundaryOf('multipart/form-data; boundary="abc def"'), "abc def");
		assert.equal(boundaryOf("multipart/form-data; charset=utf-8; boundary=----x1"), "----x1");
		assert.equal(boundaryOf("application/json"), null);
		const png = encodePng(rgba(2, 2, () => [1, 2, 3, 255]));
		const body = form("B0UND", [{ name: "note", data: Buffer.from("hello") }, { name: "userfile", filename: "a.png", data: png }]);
		const parts = parseMultipart(body, "B0UND");
		assert.deepEqual(parts.map((p) => [p.name, p.filename]), [["note", undefined], ["userfile", "a.png"]]);
		assert.ok(parts[1].data.equals(png));
		const img = imageFromUpload("multipart/form-data; boundary=B0UND", body, 1 << 20);
		assert.deepEqual([img.mime, img.ext], ["image/png", "png"]);
		assert.throws(() => imageFromUpload("multipart/form-data; boundary=B0UND", body, 10), (e: Error & { code?: number }) => e.code === 413);
		assert.throws(() => imageFromUpload("multipart/form-data; boundary=B0UND", form("B0UND", [{ name: "userfile", data: Buffer.from("<svg onload=x>") }]), 1 << 20), /SVG/);
	});
});

describe("frontend dictionaries", () => {
	it("has every English key in every language, and no other", () => {
		for (const [lang, dict] of Object.entries(DICTIONARIES)) assert.deepEqual(Object.keys(dict).sort(), Object.keys(EN_US).sort(), lang);
	});

	it("has the labels the plugins and the settings menu use", () => {
		for (const p of PLUGINS) assert.ok(EN_US[p.label] && EN_US[p.description], p.id);
		for (const k of settingsMenuKeys()) assert.ok(k in EN_US, k);
	});

	it("resolves regional and unknown codes", () => {
		assert.equal(resolveLanguage("fr-BE"), "fr");
		assert.equal(resolveLanguage("EN"), "en-us");
		assert.equal(resolveLanguage("en-GB"), "en-us");
		assert.equal(resolveLanguage("de"), "en-us");
		assert.equal(resolveLanguage(undefined), "en-us");
		assert.equal(messagesFor("zz")["ajax_gui.logout"], "Log out");
	});

	it("takes from Accept-Language the preferred language it has, or none", () => {
		assert.equal(acceptedLanguage("de, fr-CH;q=0.9, en;q=0.5"), "fr");
		assert.equal(acceptedLanguage("en-GB,fr;q=0.8"), "en-us");
		assert.equal(acceptedLanguage("fr;q=0.2, en;q=0.9"), "en-us");
		assert.equal(acceptedLanguage("fr;q=0, de"), undefined);
		assert.equal(acceptedLanguage("de, *;q=0.1"), undefined);
		assert.equal(acceptedLanguage(undefined), undefined);
	});
});
