// One face for the archive formats of the compress / extract jobs: zip (lib/jobs/zip), tar and tar.gz
// (lib/jobs/tar). Writers stream to `output`; sources list entries and open their content as streams.
import { Readable, pipeline } from "node:stream";
import { createGunzip } from "node:zlib";
import type { ObjectStore } from "../storage/types";
import type { ArchiveFormat } from "./params";
import { ZipWriter, openEntry, openZip, safeEntryPath, type RandomAccess } from "./zip";
import { TarWriter, readTar } from "./tar";

export interface ArchiveSink {
	readonly output: Readable;
	addDirectory(name: string, mtimeMs?: number): Promise<void>;
	addFile(name: string, content: NodeJS.ReadableStream, size: number, mtimeMs?: number): Promise<void>;
	finish(): Promise<void>;
	abort(err: Error): void;
}

export function archiveSink(format: ArchiveFormat, signal?: AbortSignal): ArchiveSink {
	if (format === "zip") {
		const z = new ZipWriter({ signal });
		return {
			output: z.output,
			addDirectory: (name, mtime) => z.addDirectory(name, { mtime }),
			addFile: async (name, content, size, mtime) => void (await z.addFile(name, content, { size, mtime })),
			finish: async () => void (await z.finish()),
			abort: (err) => z.abort(err),
		};
	}
	const t = new TarWriter({ gzip: format === "tar.gz", signal });
	return {
		output: t.output,
		addDirectory: (name, mtime) => t.addDirectory(name, { mtime }),
		addFile: (name, content, size, mtime) => t.addFile(name, content, size, { mtime }),
		finish: () => t.finish(),
		abort: (err) => t.abort(err),
	};
}

/** Most entries an archive may have to be read (extracted, listed, read from). */
export const MAX_ARCHIVE_ENTRIES = 200_000;

export interface SourceEntry {
	name: string;
	kind: "file" | "dir" | "link" | "other";
	size: number;
	/** The content of a file entry; with tar, call it before moving to the next entry. */
	open(): Promise<NodeJS.ReadableStream>;
}

export interface ArchiveSource {
	entries(): AsyncGenerator<SourceEntry>;
}

/** A store object as random access (ranged reads), for the zip reader. */
export function storeSource(store: ObjectStore, key: string, size: number): RandomAccess {
	return {
		size,
		async read(start, length) {
			if (length === 0) return Buffer.alloc(0);
			const chunks: Buffer[] = [];
			for await (const c of (await store.get(key, { start, end: start + length - 1 })) as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
			return Buffer.concat(chunks);
		},
		async stream(start, length) {
			return length === 0 ? Readable.from([]) : store.get(key, { start, end: start + length - 1 });
		},
	};
}

/** An archive stored in a datasource. */
export async function archiveSource(format: ArchiveFormat, store: ObjectStore, key: string, size: number, limits: { maxEntries: number }): Promise<ArchiveSource> {
	if (format === "zip") {
		const ra = storeSource(store, key, size);
		const dir = await openZip(ra, limits);
		return {
			async *entries() {
				for await (const e of dir.entries()) {
					yield { name: e.name, kind: e.symlink ? "link" : e.dir ? "dir" : "file", size: e.size, open: () => openEntry(ra, e) };
				}
			},
		};
	}
	return {
		async *entries() {
			const raw = await store.get(key);
			const input: Readable = format === "tar.gz" ? pipeline(raw, createGunzip(), () => undefined) : (raw as Readable);
			try {
				let n = 0;
				for await (const e of readTar(input)) {
					if (++n > limits.maxEntries) throw new Error(`The archive has more than ${limits.maxEntries} entries`);
					const kind = e.type === "file" ? "file" : e.type === "dir" ? "dir" : e.type === "symlink" ? "link" : "other";
					yield { name: e.name, kind, size: e.size, open: async () => e.body };
				}
			} finally {
				input.destroy();
			}
		},
	};
}

/** Reads the whole directory of an archive: every name checked (zip-slip), files and bytes counted. */
export async function inspect(src: ArchiveSource): Promise<{ files: number; bytes: number }> {
	let files = 0;
	let bytes = 0;
	for await (const e of src.entries()) {
		safeEntryPath(e.name);
		if (e.kind === "file") {
			files++;
			bytes += e.size;
		}
	}
	return { files, bytes };
}
