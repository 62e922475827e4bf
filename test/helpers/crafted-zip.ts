// Zip archives written byte by byte, so that a test can make their headers lie (a size that is not the content's).
export interface CraftedEntry {
	name: string;
	/** 0 stored, 8 deflated. */
	method: 0 | 8;
	/** The bytes as they sit in the archive (already deflated for method 8). */
	data: Buffer;
	/** The uncompressed size the headers declare. */
	size: number;
	crc: number;
}

export function craftZip(entries: CraftedEntry[]): Buffer {
	const locals: Buffer[] = [];
	const centrals: Buffer[] = [];
	let offset = 0;
	for (const e of entries) {
		const name = Buffer.from(e.name, "utf8");
		const h = Buffer.alloc(30);
		h.writeUInt32LE(0x04034b50, 0);
		h.writeUInt16LE(20, 4);
		h.writeUInt16LE(0x0800, 6);
		h.writeUInt16LE(e.method, 8);
		h.writeUInt16LE(0, 10);
		h.writeUInt16LE((44 << 9) | (1 << 5) | 1, 12);
		h.writeUInt32LE(e.crc >>> 0, 14);
		h.writeUInt32LE(e.data.length, 18);
		h.writeUInt32LE(e.size, 22);
		h.writeUInt16LE(name.length, 26);
		h.writeUInt16LE(0, 28);
		locals.push(h, name, e.data);
		const c = Buffer.alloc(46);
		c.writeUInt32LE(0x02014b50, 0);
		c.writeUInt16LE((3 << 8) | 20, 4);
		c.writeUInt16LE(20, 6);
		c.writeUInt16LE(0x0800, 8);
		c.writeUInt16LE(e.method, 10);
		c.writeUInt16LE(0, 12);
		c.writeUInt16LE((44 << 9) | (1 << 5) | 1, 14);
		c.writeUInt32LE(e.crc >>> 0, 16);
		c.writeUInt32LE(e.data.length, 20);
		c.writeUInt32LE(e.size, 24);
		c.writeUInt16LE(name.length, 28);
		c.writeUInt32LE((0o100644 << 16) >>> 0, 38);
		c.writeUInt32LE(offset, 42);
		centrals.push(c, name);
		offset += 30 + name.length + e.data.length;
	}
	const cd = Buffer.concat(centrals);
	const end = Buffer.alloc(22);
	end.writeUInt32LE(0x06054b50, 0);
	end.writeUInt16LE(entries.length, 8);
	end.writeUInt16LE(entries.length, 10);
	end.writeUInt32LE(cd.length, 12);
	end.writeUInt32LE(offset, 16);
	return Buffer.concat([...locals, cd, end]);
}
