// Packs a few small in-memory parts into one ZIP, the strict way office suites expect. lib/jobs/zip.ts is a
// streaming writer: it always writes an extra field and a data descriptor after each entry, which OpenDocument
// forbids for its first entry (`mimetype` must be stored, with no extra field, so that its content sits at
// byte 38 where type sniffers look for it). Here sizes and CRCs are known up front, so every local header is
// complete. Parts are stored, not deflated, and the date is fixed: a template has the same bytes (size, md5)
// on every node whatever its zlib, and a few kilobytes do not need compressing.
import { crc32 } from "node:zlib";
import { METHOD_STORE } from "../jobs/zip";

export interface Part {
	name: string;
	data: string | Buffer;
}

// 1980-01-01 00:00:00, the first DOS date.
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1;
const FLAG_UTF8 = 0x0800;
const VERSION = 20;
/** Regular file, rw-r--r--, in the upper half of the external attributes (made by Unix). */
const UNIX_FILE = (0o100644 << 16) >>> 0;

export function packZip(parts: Part[]): Buffer {
	const local: Buffer[] = [];
	const central: Buffer[] = [];
	let offset = 0;
	for (const p of parts) {
		const name = Buffer.from(p.name, "utf8");
		const data = Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data, "utf8");
		const crc = crc32(data) >>> 0;
		const h = Buffer.alloc(30);
		h.writeUInt32LE(0x04034b50, 0);
		h.writeUInt16LE(VERSION, 4);
		h.writeUInt16LE(FLAG_UTF8, 6);
		h.writeUInt16LE(METHOD_STORE, 8);
		h.writeUInt16LE(DOS_TIME, 10);
		h.writeUInt16LE(DOS_DATE, 12);
		h.writeUInt32LE(crc, 14);
		h.writeUInt32LE(data.length, 18); // compressed size: stored
		h.writeUInt32LE(data.length, 22);
		h.writeUInt16LE(name.length, 26);
		h.writeUInt16LE(0, 28); // no extra field
		const c = Buffer.alloc(46);
		c.writeUInt32LE(0x02014b50, 0);
		c.writeUInt16LE((3 << 8) | VERSION, 4);
		c.writeUInt16LE(VERSION, 6);
		c.writeUInt16LE(FLAG_UTF8, 8);
		c.writeUInt16LE(METHOD_STORE, 10);
		c.writeUInt16LE(DOS_TIME, 12);
		c.writeUInt16LE(DOS_DATE, 14);
		c.writeUInt32LE(crc, 16);
		c.writeUInt32LE(data.length, 20);
		c.writeUInt32LE(data.length, 24);
		c.writeUInt16LE(name.length, 28);
		c.writeUInt32LE(UNIX_FILE, 38);
		c.writeUInt32LE(offset, 42);
		local.push(h, name, data);
		central.push(c, name);
		offset += h.length + name.length + data.length;
	}
	const cd = Buffer.concat(central);
	const end = Buffer.alloc(22);
	end.writeUInt32LE(0x06054b50, 0);
	end.writeUInt16LE(parts.length, 8);
	end.writeUInt16LE(parts.length, 10);
	end.writeUInt32LE(cd.length, 12);
	end.writeUInt32LE(offset, 16);
	return Buffer.concat([...local, cd, end]);
}
