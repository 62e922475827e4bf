// What each user job does. Runners talk to the tree through `env.call` (internal tree actions, run with the
// owner's identity, so every right is checked by the tree) and open datasource stores themselves for content
// (`env.store`): bytes never go through the transporter. `env.control.checkpoint()` between items is where
// Stop and Pause take effect. A runner returns the task's final message, or throws (JobFailure: the task ends
// in Error with that message).
import { createHash } from "node:crypto";
import type { ObjectStore } from "../storage/types";
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import { baseName, joinPath, parentOf, splitPath } from "../tree/paths";
import { RECYCLE_BIN } from "../tree/model";
import { STAGING } from "../tree/operations";
import { TaskInterrupted, type TaskControl } from "./queue";
import { ZipClosedError, ZipFormatError, safeEntryPath } from "./zip";
import { TarFormatError } from "./tar";
import { MAX_ARCHIVE_ENTRIES, archiveSink, archiveSource, inspect } from "./archive";
import { resync, type IndexEntry } from "./resync";
import type { CompressParams, CopyMoveParams, DeleteParams, ExtractParams, JobName, JobParams, ResyncParams } from "./params";
import type { ActionName, Located, ParamsOf, ResultOf } from "../contracts";

export class JobFailure extends Error {}


export interface JobEnv {
	user: Identity;
	/** An internal action, called with the owner's identity and no timeout. */
	call<A extends ActionName>(action: A, params: ParamsOf<A>): Promise<ResultOf<A>>;
	hasAction(action: ActionName): boolean;
	store(ds: string): Promise<ObjectStore>;
	log(level: "info" | "warn" | "error", msg: string): Promise<void>;
	progress(done: number, total: number): void;
	control: TaskControl;
}


const formatBytes = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${n} bytes`);
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e));
const isConflict = (e: unknown) => (e as { code?: number }).code === 409;

/** "a.txt" -> "a-1.txt", "dir" -> "dir-1" (the extension is kept for files). */
export function numbered(path: string, i: number, isFile: boolean): string {
	const name = baseName(path);
	const dot = isFile ? name.lastIndexOf(".") : -1;
	const stem = dot > 0 ? name.slice(0, dot) : name;
	const ext = dot > 0 ? name.slice(dot) : "";
	return joinPath(parentOf(path), `${stem}-${i}${ext}`);
}

export async function locate(env: JobEnv, path: string, need: "read" | "write"): Promise<Located> {
	return env.call("tree.locate", { Path: path, need });
}

/** `path` if free, else the first free "name-N". */
export async function freePath(env: JobEnv, path: string, isFile: boolean, from = 0): Promise<string> {
	for (let i = from; i < 10_000; i++) {
		const candidate = i === 0 ? path : numbered(path, i, isFile);
		if (!(await locate(env, candidate, "write")).node) return candidate;
	}
	throw new JobFailure(`No free name for ${path}`);
}

async function md5Of(stream: NodeJS.ReadableStream): Promise<string> {
	const h = createHash("md5");
	for await (const c of stream as AsyncIterable<Buffer>) h.update(c);
	return h.digest("hex");
}

/** Runs `fn` for each item; failures are logged and counted, Stop goes through. */
async function eachItem<T>(env: JobEnv, items: T[], fn: (item: T) => Promise<void>): Promise<{ failed: number; first?: string }> {
	let failed = 0;
	let first: string | undefined;
	for (let i = 0; i < items.length; i++) {
		await env.control.checkpoint();
		try {
			await fn(items[i]);
		} catch (e) {
			if (e instanceof TaskInterrupted) throw e;
			failed++;
			first ??= errMsg(e);
		}
		env.progress(i + 1, items.length);
	}
	return { failed, first };
}

function summary(done: string, total: number, r: { failed: number; first?: string }): string {
	if (!r.failed) return done;
	throw new JobFailure(`${r.failed} of ${total} item(s) failed${r.first ? `: ${r.first}` : ""}`);
}

const inRecycleBin = (p: string) => splitPath(p)[1] === RECYCLE_BIN;

async function copyMove(env: JobEnv, p: CopyMoveParams): Promise<string> {
	const verb = p.type === "copy" ? "Copied" : "Moved";
	// The receiving folder is made when missing, as Cells' user jobs do (their copy-move runs with `create`).
	if (p.targetParent && !inRecycleBin(p.target) && !(await locate(env, p.target, "write")).node) {
		await env.call("tree.create", { Nodes: [{ Path: p.target, Type: "COLLECTION" }], Recursive: true }).catch((e) => (isConflict(e) ? undefined : Promise.reject(e)));
	}
	const r = await eachItem(env, p.nodes, async (src) => {
		try {
			const from = await locate(env, src, p.type === "copy" ? "read" : "write");
			if (!from.node) throw new JobFailure(`${src} does not exist`);
			if (p.type === "move" && inRecycleBin(p.target) && p.targetParent && splitPath(p.target).length === 2) {
				await env.call("tree.remove", { Nodes: [{ Path: src }] });
				await env.log("info", `Moved ${src} to the recycle bin`);
				return;
			}
			const wanted = p.targetParent ? joinPath(p.target, baseName(src)) : p.target;
			if (p.type === "move" && wanted === src) {
				await env.log("info", `${src} is already in ${p.target}: nothing to do`);
				return;
			}
			const isFile = from.node.Type === "LEAF";
			let dest = await freePath(env, wanted, isFile);
			for (let attempt = 1; ; attempt++) {
				try {
					await env.call(p.type === "copy" ? "tree.copy" : "tree.move", { From: src, To: dest });
					break;
				} catch (e) {
					// Someone took the name meanwhile: the next free one.
					if (!isConflict(e) || attempt >= 5 || !(await locate(env, dest, "write")).node) throw e;
					dest = await freePath(env, wanted, isFile, 1);
				}
			}
			await env.log("info", dest === wanted ? `${verb} ${src} to ${dest}` : `${verb} ${src} to ${dest} (${wanted} already exists)`);
		} catch (e) {
			if (!(e instanceof TaskInterrupted)) await env.log("error", `Could not ${p.type} ${src}: ${errMsg(e)}`);
			throw e;
		}
	});
	return summary(`${verb} ${p.nodes.length - r.failed} item(s) to ${p.target}`, p.nodes.length, r);
}

async function remove(env: JobEnv, p: DeleteParams): Promise<string> {
	const r = await eachItem(env, p.nodes, async (path) => {
		try {
			const res = await env.call("tree.remove", { Nodes: [{ Path: path }] });
			await env.log("info", res.DeleteJobs?.[0]?.Label ?? `Deleted ${path}`);
		} catch (e) {
			await env.log("error", `Could not delete ${path}: ${errMsg(e)}`);
			throw e;
		}
	});
	return summary(`Deleted ${p.nodes.length - r.failed} item(s)`, p.nodes.length, r);
}

interface ArchiveItem {
	path: string;
	name: string;
	type: "LEAF" | "COLLECTION";
	size: number;
	mtime: number;
}

/** Everything to archive: each node under its own name, folders recursively (hidden files are not listed). */
async function collect(env: JobEnv, nodes: string[]): Promise<ArchiveItem[]> {
	const out: ArchiveItem[] = [];
	const names = new Set<string>();
	for (const src of nodes) {
		await env.control.checkpoint();
		const loc = await locate(env, src, "read");
		if (!loc.node) throw new JobFailure(`${src} does not exist`);
		let top = baseName(src);
		for (let i = 1; names.has(top); i++) top = baseName(numbered(src, i, loc.node.Type === "LEAF"));
		names.add(top);
		out.push({ path: src, name: top, type: loc.node.Type, size: loc.node.Size, mtime: loc.node.MTime });
		if (loc.node.Type !== "COLLECTION") continue;
		const folders = [{ path: src, name: top }];
		while (folders.length) {
			const f = folders.shift() as { path: string; name: string };
			for (let offset = 0; ; ) {
				await env.control.checkpoint();
				const page = await env.call("tree.stats", { NodePaths: [`${f.path}/*`], Offset: offset, Limit: 1000 });
				const list = page.Nodes ?? [];
				for (const n of list) {
					const item = { path: n.Path, name: `${f.name}/${baseName(n.Path)}`, type: n.Type, size: Number(n.Size ?? 0), mtime: Number(n.MTime ?? 0) };
					out.push(item);
					if (n.Type === "COLLECTION") folders.push(item);
					if (out.length > MAX_ARCHIVE_ENTRIES) throw new JobFailure(`Too many files to archive (more than ${MAX_ARCHIVE_ENTRIES})`);
				}
				if (list.length < 1000) break;
				offset += list.length;
			}
		}
	}
	return out;
}

async function compress(env: JobEnv, p: CompressParams): Promise<string> {
	const items = await collect(env, p.nodes);
	const total = items.reduce((n, i) => n + (i.type === "LEAF" ? i.size : 0), 0) || 1;
	const archive = await freePath(env, p.archiveName, true);
	if (archive !== p.archiveName) await env.log("info", `${p.archiveName} already exists: writing ${archive}`);
	const target = await env.call("tree.prepareWrite", { Path: archive });
	const store = await env.store(target.ds);
	const sink = archiveSink(p.format, env.control.signal);
	const upload = store.put(target.key, sink.output);
	upload.catch(() => undefined);
	let done = 0;
	let files = 0;
	try {
		for (const item of items) {
			await env.control.checkpoint();
			if (item.type === "COLLECTION") {
				await sink.addDirectory(item.name, item.mtime ? item.mtime * 1000 : undefined);
				continue;
			}
			const loc = await locate(env, item.path, "read");
			if (!loc.node?.Key) {
				await env.log("warn", `${item.path} disappeared before it was archived: skipped`);
				continue;
			}
			const src = await env.store(loc.ds);
			await sink.addFile(item.name, await src.get(loc.node.Key), loc.node.Size, loc.node.MTime * 1000);
			files++;
			done += item.size;
			env.progress(done, total);
		}
		await sink.finish();
	} catch (e) {
		sink.abort(e instanceof Error ? e : new Error(String(e)));
		const uploadErr = await upload.then(
			() => null,
			(x: unknown) => x,
		);
		throw e instanceof ZipClosedError && uploadErr ? uploadErr : e;
	}
	const written = await upload;
	await env.call("tree.commitWrite", { ds: target.ds, path: target.path, uuid: target.uuid, key: target.key, size: written.size, etag: written.md5 });
	await env.log("info", `Wrote ${archive}: ${files} file(s), ${items.length - files} folder(s), ${written.size} bytes`);
	return `Created ${archive}`;
}

/** Tar archives up to this size are checked entry by entry when the job is created (zip ones always are). */
export const PRECHECK_TAR_MAX = 64 * 1024 * 1024;

/** The archive of an extract job; `inspectIt` reads all its names (zip-slip check) and sizes first. */
export async function openArchive(env: Pick<JobEnv, "call" | "store">, p: ExtractParams, inspectIt: boolean) {
	const loc = await env.call("tree.locate", { Path: p.node, need: "read" });
	if (!loc.node) throw new NotFoundError(`${p.node} not found`, "node.notfound");
	if (loc.node.Type !== "LEAF" || !loc.node.Key) throw new JobFailure(`${p.node} is not a file`);
	const src = await archiveSource(p.format, await env.store(loc.ds), loc.node.Key, loc.node.Size, { maxEntries: MAX_ARCHIVE_ENTRIES });
	return { src, size: loc.node.Size, ...(inspectIt ? await inspect(src) : { files: 0, bytes: 0 }) };
}

/**
 * What an archive announces (checked again as it is extracted) must fit where it goes: an archive that expands
 * past the room left (a "zip bomb") would only fill the disk that every other write needs.
 */
async function checkRoom(env: Pick<JobEnv, "call" | "store">, dest: string, bytes: number): Promise<void> {
	const where = await env.call("tree.locate", { Path: dest, need: "write" });
	const free = await (await env.store(where.ds)).freeSpace?.();
	if (free !== undefined && bytes > free) throw new JobFailure(`The archive expands to ${formatBytes(bytes)}, more than the ${formatBytes(free)} left on the destination's storage`);
}

async function extract(env: JobEnv, p: ExtractParams): Promise<string> {
	// Every name is checked before anything is written: a malicious archive leaves nothing behind.
	const { src, files, bytes } = await openArchive(env, p, true).catch((e: unknown) => {
		throw e instanceof ZipFormatError || e instanceof TarFormatError ? new JobFailure(e.message) : e;
	});
	let dest: string;
	if (p.target === "") {
		const name = baseName(p.node);
		const stem = name.replace(/(\.tar\.gz|\.tgz|\.[^.]+)$/i, "") || name;
		dest = await freePath(env, joinPath(parentOf(p.node), stem === name ? `${stem}-extracted` : stem), false);
	} else dest = p.target;
	await checkRoom(env, dest, bytes);
	await env.call("tree.create", { Nodes: [{ Path: dest, Type: "COLLECTION" }], Recursive: true });
	const made = new Set<string>([dest]);
	const mkdir = async (path: string) => {
		if (made.has(path)) return;
		await env.call("tree.create", { Nodes: [{ Path: path, Type: "COLLECTION" }], Recursive: true });
		made.add(path);
	};
	let done = 0;
	let count = 0;
	let folders = 0;
	let failed = 0;
	let first: string | undefined;
	try {
		for await (const e of src.entries()) {
			await env.control.checkpoint();
			const rel = safeEntryPath(e.name);
			if (rel === "") continue;
			const path = joinPath(dest, rel);
			try {
				if (e.kind === "link" || e.kind === "other") {
					await env.log("warn", `Skipped ${e.kind === "link" ? "link" : "special entry"} ${e.name}`);
					continue;
				}
				if (e.kind === "dir") {
					await mkdir(path);
					folders++;
					continue;
				}
				const target = await env.call("tree.prepareWrite", { Path: path });
				const store = await env.store(target.ds);
				const written = await store.put(target.key, await e.open(), { size: e.size });
				await env.call("tree.commitWrite", { ds: target.ds, path: target.path, uuid: target.uuid, key: target.key, size: written.size, etag: written.md5 });
				count++;
				done += e.size;
				env.progress(bytes ? done : count, bytes || files);
			} catch (err) {
				if (err instanceof TaskInterrupted || err instanceof ZipFormatError || err instanceof TarFormatError) throw err;
				failed++;
				first ??= `${e.name}: ${errMsg(err)}`;
				await env.log("error", `Could not extract ${e.name}: ${errMsg(err)}`);
			}
		}
	} catch (err) {
		// A corrupt archive (CRC, truncation) stops the extraction.
		if (err instanceof ZipFormatError || err instanceof TarFormatError) throw new JobFailure(err.message);
		throw err;
	}
	if (failed) throw new JobFailure(`${failed} entr${failed > 1 ? "ies" : "y"} could not be extracted: ${first}`);
	await env.log("info", `Extracted ${count} file(s) and ${folders} folder(s) to ${dest}`);
	return `Extracted ${p.node} to ${dest}`;
}

/** A flat datasource's tree lives in its index only (objects are named by uuid): it is checked, not rebuilt. */
async function checkFlatDatasource(env: JobEnv, p: ResyncParams): Promise<string> {
	const r = await env.call("tree.checkFlat", { ds: p.dsName });
	await env.log("info", `${p.dsName} stores each file under its uuid (flat): its index is checked against its storage, nothing is changed`);
	for (const path of r.missingPaths) await env.log("error", `Missing in storage (content lost): ${path}`);
	if (r.missing > r.missingPaths.length) await env.log("error", `... and ${r.missing - r.missingPaths.length} more files missing in storage`);
	for (const key of r.orphanKeys) await env.log("warn", `Object no file points to: ${key}`);
	if (r.orphans > r.orphanKeys.length) await env.log("warn", `... and ${r.orphans - r.orphanKeys.length} more objects no file points to`);
	if (r.orphans) await env.log("info", "Objects no file points to are removed by the daily sweep once a day old (uploads cut by a crash, deletes interrupted)");
	if (r.foreign) await env.log("info", `${r.foreign} object(s) with keys Cellar does not write were left alone`);
	env.progress(1, 1);
	const msg = `Checked ${p.dsName}: ${r.files} files, ${r.objects} objects in storage, ${r.missing} missing, ${r.orphans} unreferenced`;
	await env.log(r.missing ? "warn" : "info", msg);
	return msg;
}

async function resyncDatasource(env: JobEnv, p: ResyncParams): Promise<string> {
	const ds = await env.call("datasources.get", { name: p.dsName });
	if (ds.FlatStorage !== false) return checkFlatDatasource(env, p);
	if (!env.hasAction("tree.resyncApply")) throw new JobFailure("The tree service cannot apply a resync yet (no tree.resyncApply action)");
	const store = await env.store(p.dsName);
	const res = await resync({
		async *index(): AsyncGenerator<IndexEntry> {
			let after: string | undefined;
			for (;;) {
				const page = await env.call("tree.scan", after ? { after, limit: 1000 } : { limit: 1000 });
				for (const n of page) if (n.ds === p.dsName) yield { path: n.path, type: n.type, size: n.size, etag: n.etag, mtime: n.mtime };
				if (page.length < 1000) return;
				after = page[page.length - 1].Uuid;
			}
		},
		// Uploads in flight sit in the staging area until they are renamed onto their path: not files of the tree.
		async *storage() {
			for await (const o of store.list("")) if (!o.key.startsWith(`${STAGING}/`)) yield o;
		},
		md5: async (key) => md5Of(await store.get(key)),
		apply: async (batch) => {
			await env.call("tree.resyncApply", { ds: p.dsName, add: batch.add, remove: batch.remove });
		},
		checkKey: (key) => {
			try {
				splitPath(key);
				return null;
			} catch (e) {
				return errMsg(e);
			}
		},
		checkpoint: () => env.control.checkpoint(),
		log: (level, msg) => void env.log(level, msg),
		progress: (done, total) => env.progress(done, total),
	});
	const msg = `Resynced ${p.dsName}: ${res.added} added, ${res.updated} updated, ${res.removed} removed, ${res.unchanged} unchanged${res.skipped ? `, ${res.skipped} skipped` : ""}`;
	await env.log("info", msg);
	return msg;
}

export const RUNNERS: Record<JobName, (env: JobEnv, p: JobParams) => Promise<string>> = {
	copy: (env, p) => copyMove(env, p as CopyMoveParams),
	move: (env, p) => copyMove(env, p as CopyMoveParams),
	delete: (env, p) => remove(env, p as DeleteParams),
	compress: (env, p) => compress(env, p as CompressParams),
	extract: (env, p) => extract(env, p as ExtractParams),
	"datasource-resync": (env, p) => resyncDatasource(env, p as ResyncParams),
};

/** Checks made when the job is created, so that obvious mistakes are a 4xx rather than a failed task. */
export async function precheck(env: Pick<JobEnv, "call" | "store">, name: JobName, p: JobParams): Promise<void> {
	const exists = async (path: string, need: "read" | "write") => {
		const loc = await env.call("tree.locate", { Path: path, need });
		if (!loc.node) throw new NotFoundError(`${path} not found`, "node.notfound");
		return loc;
	};
	switch (name) {
		case "copy":
		case "move": {
			const c = p as CopyMoveParams;
			for (const n of c.nodes) await exists(n, name === "copy" ? "read" : "write");
			await env.call("tree.locate", { Path: c.targetParent ? c.target : parentOf(c.target) || c.target, need: "write" });
			return;
		}
		case "delete":
			for (const n of (p as DeleteParams).nodes) await exists(n, "write");
			return;
		case "compress": {
			const c = p as CompressParams;
			for (const n of c.nodes) await exists(n, "read");
			await env.call("tree.locate", { Path: c.archiveName, need: "write" });
			return;
		}
		case "extract": {
			const x = p as ExtractParams;
			await env.call("tree.locate", { Path: x.target || parentOf(x.node), need: "write" });
			try {
				const loc = await exists(x.node, "read");
				// Zip directories are cheap to read; tar ones need the whole archive, so only small ones are read now.
				const opened = await openArchive(env, x, x.format === "zip" || loc.node!.Size <= PRECHECK_TAR_MAX);
				await checkRoom(env, x.target || parentOf(x.node), opened.bytes);
			} catch (e) {
				throw e instanceof JobFailure ? new BadRequestError(e.message) : e;
			}
			return;
		}
		case "datasource-resync":
			return;
	}
}
