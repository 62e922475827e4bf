// Versioning policies (tree.VersioningPolicy) as the versions service stores them: validation of what an
// administrator sends, the "7d"-style period parser, and Cells' default policies. Plain functions, unit-testable.
//
// Semantics (Cells' admin form texts): sizes are bytes, and -1 (or 0 / absent: the wire omits zero values) means
// "no limit". MaxSizePerFile caps the cumulated size of the versions of one file, MaxTotalSize the cumulated size
// of every version kept under the policy, IgnoreFilesGreaterThan skips versioning content larger than that.
// KeepPeriods split the past into windows starting at IntervalStart ago ("0" = now, "7d", "1h", "90m"); each
// window keeps at most MaxNumber versions (-1 = all, 0 = none). NodeDeletedStrategy says what happens to the
// versions of a deleted file: KeepAll, KeepLast (the newest only) or KeepNone.
import { BadRequestError } from "../errors";

export const NODE_DELETED_STRATEGIES = ["KeepAll", "KeepLast", "KeepNone"] as const;
export type NodeDeletedStrategy = (typeof NODE_DELETED_STRATEGIES)[number];

export interface KeepPeriod {
	IntervalStart: string;
	MaxNumber: number;
}

export interface VersioningPolicy {
	Uuid: string;
	Name: string;
	Description?: string;
	VersionsDataSourceName: string;
	VersionsDataSourceBucket?: string;
	MaxTotalSize?: number;
	MaxSizePerFile?: number;
	IgnoreFilesGreaterThan?: number;
	KeepPeriods: KeepPeriod[];
	NodeDeletedStrategy: NodeDeletedStrategy;
}

export const DEFAULT_POLICY_ID = "default-policy";
export const DEFAULT_VERSIONS_DATASOURCE = "versions";

/**
 * Cells' first-run policies (data/versions/grpc/plugins.go, v4): "default-policy" keeps every version for 15
 * days, then at most 10 between 15 and 30 days old, none after 30 days; "keep-all" keeps everything;
 * "regular-pruning" thins versions out at growing intervals and drops them after 30 days.
 */
export const DEFAULT_POLICIES: VersioningPolicy[] = [
	{
		Uuid: DEFAULT_POLICY_ID,
		Name: "30 days max",
		Description: "Remove versions after 30 days",
		VersionsDataSourceName: DEFAULT_VERSIONS_DATASOURCE,
		KeepPeriods: [
			{ IntervalStart: "0", MaxNumber: -1 },
			{ IntervalStart: "15d", MaxNumber: 10 },
			{ IntervalStart: "30d", MaxNumber: 0 },
		],
		NodeDeletedStrategy: "KeepLast",
	},
	{
		Uuid: "keep-all",
		Name: "Keep all",
		Description: "Keep all versions forever",
		VersionsDataSourceName: DEFAULT_VERSIONS_DATASOURCE,
		KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }],
		NodeDeletedStrategy: "KeepAll",
	},
	{
		Uuid: "regular-pruning",
		Name: "Regular Pruning",
		Description: "Prune versions regularly at various intervals and remove after 30 days",
		VersionsDataSourceName: DEFAULT_VERSIONS_DATASOURCE,
		KeepPeriods: [
			{ IntervalStart: "0", MaxNumber: 10 },
			{ IntervalStart: "10m", MaxNumber: 10 },
			{ IntervalStart: "3h", MaxNumber: 10 },
			{ IntervalStart: "1d", MaxNumber: 10 },
			{ IntervalStart: "10d", MaxNumber: 10 },
			{ IntervalStart: "30d", MaxNumber: 0 },
		],
		NodeDeletedStrategy: "KeepLast",
	},
];

const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_PERIODS = 64;
const INT32_MAX = 2_147_483_647;
/** 200 years: anything longer is a typo. */
const MAX_INTERVAL_MS = 200 * 365 * 86_400_000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** A policy id (the path parameter): no slashes, `..`, control characters; at most 255 characters. */
export function checkPolicyId(uuid: unknown): string {
	if (typeof uuid !== "string" || uuid === "") throw new BadRequestError("A versioning policy Uuid is required");
	if (uuid.length > 255) throw new BadRequestError("The versioning policy Uuid is too long (at most 255 characters)");
	if (CONTROL.test(uuid) || /[\\/]/.test(uuid) || uuid.includes("..") || uuid.trim() !== uuid) throw new BadRequestError("The versioning policy Uuid contains forbidden characters");
	return uuid;
}

/**
 * A period start, in ms: "0" (or "") is now; otherwise a sequence of <number><unit> with units ms, s, m, h, d, w
 * ("7d", "1h30m", "90s", "1.5h"), a superset of what Cells accepts (Go durations, or whole days with "d").
 */
export function parseInterval(value: string): number {
	const v = value.trim();
	if (v === "" || v === "0") return 0;
	if (!/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(v)) throw new BadRequestError(`Invalid IntervalStart "${value.slice(0, 40)}": use "0" or a duration such as "7d", "12h", "30m"`);
	let total = 0;
	for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) total += Number(m[1]) * UNIT_MS[m[2]];
	if (!Number.isFinite(total) || total > MAX_INTERVAL_MS) throw new BadRequestError(`IntervalStart "${value.slice(0, 40)}" is too long`);
	return Math.round(total);
}

function text(field: string, v: unknown, max: number): string | undefined {
	if (v === undefined || v === null) return undefined;
	if (typeof v !== "string") throw new BadRequestError(`${field} must be a string`);
	if (v.length > max) throw new BadRequestError(`${field} is too long (at most ${max} characters)`);
	if (CONTROL.test(v.replace(/[\n\t]/g, ""))) throw new BadRequestError(`${field} contains control characters`);
	return v;
}

/** A byte limit: an integer, -1 for "no limit"; 0 is the wire's "not set" and also means no limit. */
function sizeLimit(field: string, v: unknown): number | undefined {
	if (v === undefined || v === null) return undefined;
	if (typeof v !== "number" || !Number.isSafeInteger(v) || v < -1) throw new BadRequestError(`${field} must be a number of bytes, or -1 for no limit`);
	return v;
}

/** The limit to apply: a positive number of bytes, or undefined for none. */
export function activeLimit(v: number | undefined): number | undefined {
	return v !== undefined && v > 0 ? v : undefined;
}

export interface PolicyInput {
	Name?: unknown;
	Description?: unknown;
	VersionsDataSourceName?: unknown;
	VersionsDataSourceBucket?: unknown;
	MaxTotalSize?: unknown;
	MaxSizePerFile?: unknown;
	IgnoreFilesGreaterThan?: unknown;
	KeepPeriods?: unknown;
	NodeDeletedStrategy?: unknown;
}

/**
 * Checks a policy sent by an administrator and returns what is stored (the whole policy is replaced, as Cells'
 * PutVersioningPolicy does). Periods come back sorted by start, "" normalised to "0", MaxNumber defaulting to 0.
 * The versions datasource is checked by the service (it must exist).
 */
export function normalizePolicy(uuid: string, input: PolicyInput): VersioningPolicy {
	const id = checkPolicyId(uuid);
	const name = text("Name", input.Name, 255)?.trim();
	if (!name) throw new BadRequestError("Name is required");
	const dsName = text("VersionsDataSourceName", input.VersionsDataSourceName, 64) || DEFAULT_VERSIONS_DATASOURCE;
	if (!/^[0-9a-z]+$/.test(dsName)) throw new BadRequestError(`Invalid VersionsDataSourceName "${dsName.slice(0, 80)}"`);
	const strategy = input.NodeDeletedStrategy ?? "KeepAll";
	if (typeof strategy !== "string" || !(NODE_DELETED_STRATEGIES as readonly string[]).includes(strategy)) {
		throw new BadRequestError(`NodeDeletedStrategy must be one of ${NODE_DELETED_STRATEGIES.join(", ")}`);
	}
	const raw = input.KeepPeriods ?? [];
	if (!Array.isArray(raw)) throw new BadRequestError("KeepPeriods must be a list");
	if (raw.length > MAX_PERIODS) throw new BadRequestError(`At most ${MAX_PERIODS} KeepPeriods`);
	const periods: { p: KeepPeriod; ms: number }[] = [];
	for (const [i, item] of raw.entries()) {
		if (!item || typeof item !== "object" || Array.isArray(item)) throw new BadRequestError(`KeepPeriods[${i}] must be an object`);
		const { IntervalStart, MaxNumber, ...rest } = item as Record<string, unknown>;
		if (Object.keys(rest).length) throw new BadRequestError(`KeepPeriods[${i}]: unknown field ${Object.keys(rest)[0]}`);
		const start = IntervalStart ?? "0";
		if (typeof start !== "string" || start.length > 40) throw new BadRequestError(`KeepPeriods[${i}].IntervalStart must be a duration string such as "7d"`);
		const ms = parseInterval(start);
		const max = MaxNumber ?? 0;
		if (typeof max !== "number" || !Number.isInteger(max) || max < -1 || max > INT32_MAX) throw new BadRequestError(`KeepPeriods[${i}].MaxNumber must be an integer: -1 keeps all versions, 0 none`);
		if (periods.some((p) => p.ms === ms)) throw new BadRequestError(`KeepPeriods: two periods start at ${start || "0"}`);
		periods.push({ p: { IntervalStart: start.trim() || "0", MaxNumber: max }, ms });
	}
	periods.sort((a, b) => a.ms - b.ms);
	const policy: VersioningPolicy = {
		Uuid: id,
		Name: name,
		VersionsDataSourceName: dsName,
		KeepPeriods: periods.map((p) => p.p),
		NodeDeletedStrategy: strategy as NodeDeletedStrategy,
	};
	const description = text("Description", input.Description, 4096);
	if (description) policy.Description = description;
	const bucket = text("VersionsDataSourceBucket", input.VersionsDataSourceBucket, 255);
	if (bucket) policy.VersionsDataSourceBucket = bucket;
	for (const f of ["MaxTotalSize", "MaxSizePerFile", "IgnoreFilesGreaterThan"] as const) {
		const v = sizeLimit(f, input[f]);
		if (v !== undefined) policy[f] = v;
	}
	return policy;
}
