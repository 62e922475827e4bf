// Reads a whole ZIP archive in memory with the project's own reader (CRC and sizes of every entry checked).
import { bufferSource, openEntry, openZip, type ZipEntry } from "../../lib/jobs/zip";

export async function readZip(buf: Buffer): Promise<{ entries: ZipEntry[]; files: Map<string, Buffer> }> {
	const src = bufferSource(buf);
	const entries: ZipEntry[] = [];
	const files = new Map<string, Buffer>();
	for await (const e of (await openZip(src)).entries()) {
		entries.push(e);
		if (e.dir) continue;
		const chunks: Buffer[] = [];
		for await (const c of await openEntry(src, e)) chunks.push(c as Buffer);
		files.set(e.name, Buffer.concat(chunks));
	}
	return { entries, files };
}

/** The archive's files as text by name (folders left out). */
export async function zipTexts(buf: Buffer, encoding: BufferEncoding = "utf8"): Promise<Record<string, string>> {
	const out: Record<string, string> = {};
	for (const [name, bytes] of (await readZip(buf)).files) out[name] = bytes.toString(encoding);
	return out;
}
