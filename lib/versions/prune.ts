// Which versions a policy lets go. Pure functions over version records, with `now` passed in (tests use fake
// clocks). A version's age is counted from the moment it was captured (`createdAt`: when that content was
// replaced), so that overwriting a file that had not changed for months still keeps its previous content for
// the policy's first window.
import { activeLimit, parseInterval, type NodeDeletedStrategy, type VersioningPolicy } from "./policy";

/** One kept version, as the versions service stores it. */
/** One kept version of a file, as `versions.list` returns them (newest first). */
export interface VersionEntry {
	Uuid: string;
	MTime: number;
	Size: number;
	Etag: string;
	OwnerUuid: string;
	Description: string;
}

export interface VersionRecord {
	/** The version id (a uuid). */
	_id: string;
	kind: "version";
	nodeUuid: string;
	/** Datasource and datasource-relative path of the node when last seen (to match folder deletes and moves). */
	ds: string;
	path: string;
	size: number;
	etag: string;
	/** Modification time of that content, unix seconds. */
	mtime: number;
	owner: string;
	/** When the version was captured, unix ms. */
	createdAt: number;
	/** Where the bytes are: datasource `vds`, object `key` (`<nodeUuid>/<versionId>`). */
	vds: string;
	key: string;
	/** The policy that governed the capture. */
	policy: string;
	/** Set once the node is deleted (versions kept by KeepAll / KeepLast). */
	deletedAt?: number;
	[key: string]: unknown;
}

/** Newest first; equal times are ordered by id so that the result never depends on the input order. */
export function newestFirst<T extends { createdAt: number; _id: string }>(list: T[]): T[] {
	return [...list].sort((a, b) => b.createdAt - a.createdAt || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0));
}

interface Window {
	start: number;
	end: number;
	max: number;
	records: VersionRecord[];
}

/**
 * Keep-period pruning for the versions of ONE node. Periods (sorted by start) split ages into windows
 * [start_i, start_i+1), the last one open-ended; versions younger than the first start are in no window and kept.
 * In a window, MaxNumber -1 keeps all, 0 removes all, N keeps N: the window's newest version always stays and the
 * others go by how close they are to the next newer one (the most crowded first, the older on ties), which
 * spreads what remains over the window (Cells' pruner does the same).
 */
export function prunePeriods(versions: VersionRecord[], policy: Pick<VersioningPolicy, "KeepPeriods">, now: number): VersionRecord[] {
	const starts = policy.KeepPeriods.map((p) => ({ ms: parseInterval(p.IntervalStart), max: p.MaxNumber })).sort((a, b) => a.ms - b.ms);
	if (!starts.length) return [];
	const windows: Window[] = starts.map((s, i) => ({ start: s.ms, end: i + 1 < starts.length ? starts[i + 1].ms : Infinity, max: s.max, records: [] }));
	for (const v of newestFirst(versions)) {
		const age = Math.max(0, now - v.createdAt);
		const w = windows.find((w) => age >= w.start && age < w.end);
		if (w) w.records.push(v);
	}
	const removed: VersionRecord[] = [];
	for (const w of windows) {
		if (w.max < 0 || w.records.length <= w.max) continue;
		if (w.max === 0) {
			removed.push(...w.records);
			continue;
		}
		// records are newest first: gap = distance to the next newer version in the window.
		const candidates = w.records.slice(1).map((r, i) => ({ r, gap: w.records[i].createdAt - r.createdAt, order: i }));
		candidates.sort((a, b) => a.gap - b.gap || b.order - a.order);
		removed.push(...candidates.slice(0, w.records.length - w.max).map((c) => c.r));
	}
	return removed;
}

/** Newest first, keeps versions while their cumulated size stays within `limit`; the rest (older) go. */
export function pruneBySize(versions: VersionRecord[], limit: number | undefined): VersionRecord[] {
	const max = activeLimit(limit);
	if (max === undefined) return [];
	const removed: VersionRecord[] = [];
	let total = 0;
	let over = false;
	for (const v of newestFirst(versions)) {
		if (!over && total + v.size <= max) total += v.size;
		else {
			over = true;
			removed.push(v);
		}
	}
	return removed;
}

/** Everything a policy removes from the versions of one node: periods first, then MaxSizePerFile. */
export function pruneNode(versions: VersionRecord[], policy: VersioningPolicy, now: number): VersionRecord[] {
	const gone = new Set(prunePeriods(versions, policy, now).map((v) => v._id));
	const rest = versions.filter((v) => !gone.has(v._id));
	for (const v of pruneBySize(rest, policy.MaxSizePerFile)) gone.add(v._id);
	return versions.filter((v) => gone.has(v._id));
}

/** Whether content of `size` bytes is versioned at all under this policy. */
export function shouldCapture(policy: VersioningPolicy, size: number): boolean {
	const ignore = activeLimit(policy.IgnoreFilesGreaterThan);
	if (ignore !== undefined && size > ignore) return false;
	const perFile = activeLimit(policy.MaxSizePerFile);
	if (perFile !== undefined && size > perFile) return false;
	return true;
}

/** The versions of a deleted node that its policy lets go. */
export function pruneOnDelete(versions: VersionRecord[], strategy: NodeDeletedStrategy): VersionRecord[] {
	switch (strategy) {
		case "KeepAll":
			return [];
		case "KeepNone":
			return [...versions];
		case "KeepLast":
			return newestFirst(versions).slice(1);
	}
}
