// LOCAL datasource folders: where they may live (under DATA_DIR, or under a folder listed in
// ALLOWED_LOCAL_FOLDERS), how a configured `folder` maps to a real directory, and the writability probe.
import { mkdirSync, realpathSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { randomBytes } from "node:crypto";
import { BadRequestError } from "../errors";
import { loadConfig } from "../config";

/** Top-level entries of DATA_DIR that belong to Cellar itself. */
export const RESERVED_TOP_LEVEL = ["db", "outbox"];
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Extra roots for absolute LOCAL folders: ALLOWED_LOCAL_FOLDERS, separated by commas or the path delimiter. */
export function allowedLocalRoots(raw: string = loadConfig().allowedLocalFolders.join(",")): string[] {
	return raw
		.split(new RegExp(`[,${delimiter === ";" ? ";" : ":"}]`))
		.map((s) => s.trim())
		.filter((s) => s && isAbsolute(s))
		.map((s) => resolve(s));
}

export function isInside(child: string, parent: string, allowEqual = false): boolean {
	const rel = relative(parent, child);
	if (rel === "") return allowEqual;
	return !rel.startsWith("..") && !isAbsolute(rel);
}

export function foldersOverlap(a: string, b: string): boolean {
	return a === b || isInside(a, b) || isInside(b, a);
}

/**
 * The absolute directory of a LOCAL datasource folder. A relative folder lies under DATA_DIR; an absolute one
 * must be under DATA_DIR or under one of `allowed`. Cellar's own files (DATA_DIR/db, DATA_DIR/outbox...) are
 * never a datasource folder.
 */
export function resolveLocalFolder(folder: string, dataDir: string, allowed: string[] = allowedLocalRoots()): string {
	if (typeof folder !== "string" || !folder.trim()) throw new BadRequestError("StorageConfiguration.folder is required for a LOCAL datasource");
	if (CONTROL.test(folder)) throw new BadRequestError("StorageConfiguration.folder contains control characters");
	if (folder.length > 4096) throw new BadRequestError("StorageConfiguration.folder is too long");
	const root = resolve(dataDir);
	const norm = folder.replace(/\\/g, "/");
	if (norm.split("/").some((s) => s === "..")) throw new BadRequestError('StorageConfiguration.folder must not contain ".." segments');
	let abs: string;
	if (isAbsolute(norm)) {
		abs = resolve(norm);
		const ok = isInside(abs, root) || allowed.some((a) => isInside(abs, a, true));
		if (!ok) {
			throw new BadRequestError(
				`Folder ${norm.slice(0, 200)} is not allowed: LOCAL datasources live under DATA_DIR${allowed.length ? ` or under ${allowed.join(", ")}` : " (set ALLOWED_LOCAL_FOLDERS to allow other places)"}`,
			);
		}
	} else {
		abs = resolve(root, norm);
		if (!isInside(abs, root)) throw new BadRequestError("StorageConfiguration.folder must name a folder inside DATA_DIR");
	}
	if (isInside(root, abs, true)) throw new BadRequestError("A datasource folder cannot be DATA_DIR itself or contain it");
	if (isInside(abs, root)) {
		const first = relative(root, abs).split(sep)[0];
		if (RESERVED_TOP_LEVEL.includes(first) || first.startsWith(".")) throw new BadRequestError(`DATA_DIR/${first} is reserved for Cellar itself and cannot hold a datasource`);
	}
	return abs;
}

/** The real path of `p` when the part of it that exists goes through symbolic links (the rest is appended as is). */
export function realpathNearest(p: string): string {
	let cur = resolve(p);
	const rest: string[] = [];
	for (;;) {
		try {
			return join(realpathSync(cur), ...rest);
		} catch {
			const parent = dirname(cur);
			if (parent === cur) return resolve(p);
			rest.unshift(basename(cur));
			cur = parent;
		}
	}
}

function checkRealPlace(abs: string, dataDir: string, allowed: string[]): string {
	const real = realpathNearest(abs);
	const realData = realpathNearest(dataDir);
	const ok = isInside(real, realData) || allowed.some((r) => isInside(real, realpathNearest(r), true));
	if (!ok) throw new BadRequestError(`Folder ${abs} resolves to ${real}, outside the allowed places`);
	return real;
}

/** Checks that the folder does not escape its root through a symbolic link, creates it if needed, and checks it is writable. */
export function prepareLocalFolder(abs: string, dataDir: string, allowed: string[] = allowedLocalRoots()): string {
	// Before creating anything, then again once it exists.
	checkRealPlace(abs, dataDir, allowed);
	try {
		mkdirSync(abs, { recursive: true });
	} catch (err) {
		throw new BadRequestError(`Cannot create folder ${abs}: ${(err as Error).message}`);
	}
	const real = checkRealPlace(abs, dataDir, allowed);
	const probe = join(abs, `.cellar-write-test-${randomBytes(4).toString("hex")}`);
	try {
		writeFileSync(probe, "");
		unlinkSync(probe);
	} catch (err) {
		throw new BadRequestError(`Folder ${abs} is not writable: ${(err as Error).message}`);
	}
	return real;
}

/** A LOCAL datasource's folder: allowed, not overlapping another datasource's, created and writable. */
export function checkLocalDataSource(
	ds: { StorageConfiguration?: Record<string, string>; PeerAddress?: string },
	others: { Name: string; StorageType?: string; StorageConfiguration?: Record<string, string>; PeerAddress?: string }[],
	dataDir: string,
	/** The folder is on another node (PeerAddress): checked by its rules here, created by the holder on first write. */
	remote = false,
): void {
	const allowed = allowedLocalRoots();
	const abs = resolveLocalFolder(ds.StorageConfiguration?.folder ?? "", dataDir, allowed);
	for (const o of others) {
		if ((o.StorageType ?? "LOCAL") !== "LOCAL" || !o.StorageConfiguration?.folder) continue;
		// Folders of different nodes never overlap (a datasource without a holder is on every node).
		if (o.PeerAddress && ds.PeerAddress && o.PeerAddress !== ds.PeerAddress) continue;
		let theirs: string;
		try {
			theirs = resolveLocalFolder(o.StorageConfiguration.folder, dataDir, allowed);
		} catch {
			continue; // a broken datasource cannot hold this folder
		}
		if (foldersOverlap(abs, theirs)) throw new BadRequestError(`Folder ${ds.StorageConfiguration?.folder} overlaps the folder of datasource ${o.Name}`);
	}
	if (!remote) prepareLocalFolder(abs, dataDir, allowed);
}
