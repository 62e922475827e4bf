// Resynchronisation of a STRUCTURED datasource's index from its storage (the `datasource-resync` job), as a
// pure function over injected callbacks so that it runs the same against the real tree and store or fakes.
//
// Two passes over the storage listing (key order), one read of the index:
//   1. the index's files whose object is gone are removed (before anything is added, so that a file that
//      became a folder in storage does not block the files below it);
//   2. objects missing from the index are added, objects whose size (or content, when their date says they may
//      have changed) differs are updated.
// Folders: storage listings do not show (empty) folders, so index folders are never removed; folders above
// new files are created by `apply`. An object where the index has a folder is reported and left alone.

export interface IndexEntry {
	path: string;
	type: "LEAF" | "COLLECTION";
	size: number;
	/** md5 hex */
	etag?: string;
	/** unix seconds */
	mtime: number;
}

export interface StorageEntry {
	key: string;
	size: number;
	/** unix ms */
	mtime: number;
	/** as S3 returns it (quoted), if the store gives one */
	etag?: string;
}

export interface ResyncAdd {
	path: string;
	size: number;
	/** unix seconds */
	mtime: number;
	/** md5 hex */
	etag: string;
}

export interface ResyncDeps {
	index(): AsyncIterable<IndexEntry>;
	storage(): AsyncIterable<StorageEntry>;
	/** md5 (hex) of an object's content. */
	md5(key: string): Promise<string>;
	apply(batch: { add: ResyncAdd[]; remove: string[] }): Promise<void>;
	/** A key the index cannot hold (bad name): null keeps it, a string says why it is skipped. */
	checkKey?(key: string): string | null;
	checkpoint?(): Promise<void>;
	log?(level: "info" | "warn" | "error", msg: string): void;
	progress?(done: number, total: number): void;
	batchSize?: number;
}

export interface ResyncResult {
	added: number;
	updated: number;
	removed: number;
	unchanged: number;
	skipped: number;
	scanned: number;
}

/** A plain single-part S3 ETag ("<md5>") as md5 hex, else undefined (multipart ETags are not content hashes). */
export function md5FromEtag(etag: string | undefined): string | undefined {
	const bare = etag?.replace(/^"|"$/g, "").toLowerCase();
	return bare && /^[0-9a-f]{32}$/.test(bare) ? bare : undefined;
}

export async function resync(deps: ResyncDeps): Promise<ResyncResult> {
	const batchSize = deps.batchSize ?? 500;
	const res: ResyncResult = { added: 0, updated: 0, removed: 0, unchanged: 0, skipped: 0, scanned: 0 };
	const files = new Map<string, IndexEntry>();
	const folders = new Set<string>();
	for await (const e of deps.index()) {
		if (e.path === "") continue;
		if (e.type === "COLLECTION") folders.add(e.path);
		else files.set(e.path, e);
	}
	await deps.checkpoint?.();

	// Pass 1: which indexed files still have an object.
	const seen = new Set<string>();
	let total = 0;
	for await (const o of deps.storage()) {
		total++;
		if (files.has(o.key)) seen.add(o.key);
		if (total % 1000 === 0) await deps.checkpoint?.();
	}
	const gone = [...files.keys()].filter((p) => !seen.has(p)).sort();
	seen.clear();
	for (let i = 0; i < gone.length; i += batchSize) {
		await deps.checkpoint?.();
		const remove = gone.slice(i, i + batchSize);
		await deps.apply({ add: [], remove });
		res.removed += remove.length;
		for (const p of remove) deps.log?.("info", `Removed from the index (no longer in storage): ${p}`);
	}
	for (const p of gone) files.delete(p);

	// Pass 2: new and changed objects.
	let add: ResyncAdd[] = [];
	const flush = async () => {
		if (!add.length) return;
		await deps.apply({ add, remove: [] });
		add = [];
	};
	for await (const o of deps.storage()) {
		res.scanned++;
		if (res.scanned % 100 === 0) {
			await deps.checkpoint?.();
			deps.progress?.(res.scanned, Math.max(total, res.scanned));
		}
		const why = deps.checkKey?.(o.key) ?? null;
		if (why) {
			res.skipped++;
			deps.log?.("warn", `Skipped ${o.key}: ${why}`);
			continue;
		}
		if (folders.has(o.key)) {
			res.skipped++;
			deps.log?.("warn", `Skipped ${o.key}: the index has a folder at this path`);
			continue;
		}
		const known = files.get(o.key);
		const mtime = Math.floor(o.mtime / 1000);
		if (known) {
			const listed = md5FromEtag(o.etag);
			let changed = known.size !== o.size || (listed !== undefined && known.etag !== undefined && listed !== known.etag);
			let etag = listed;
			if (!changed && listed === undefined && mtime > known.mtime + 1) {
				etag = await deps.md5(o.key);
				changed = etag !== known.etag;
			}
			if (!changed) {
				res.unchanged++;
				continue;
			}
			add.push({ path: o.key, size: o.size, mtime, etag: etag ?? (await deps.md5(o.key)) });
			res.updated++;
			deps.log?.("info", `Updated in the index (changed in storage): ${o.key}`);
		} else {
			add.push({ path: o.key, size: o.size, mtime, etag: md5FromEtag(o.etag) ?? (await deps.md5(o.key)) });
			res.added++;
			deps.log?.("info", `Added to the index (found in storage): ${o.key}`);
		}
		if (add.length >= batchSize) await flush();
	}
	await flush();
	deps.progress?.(1, 1);
	return res;
}
