// Software updates as Cells' admin console asks for them (POST /update): the running version, and the newer
// versions an update source offers. The source speaks Cells' update-server protocol: it is POSTed an
// UpdateRequest and answers {"Channel", "AvailableBinaries": [Package…]} (a bare array of packages is accepted too).
// Cellar never downloads or runs what a source offers: applying an update (PATCH /update/{version}) is refused,
// since a Node application's code is replaced by its package manager or container image, not by itself.
import { BadRequestError, ConflictError } from "../errors";
import { translate } from "../frontend/i18n";

export type PackageStatus = "Draft" | "Pending" | "Released";

/** update.Package, the fields a source may send (all optional but Version). */
export interface UpdatePackage {
	PackageName?: string;
	Version: string;
	ReleaseDate?: number;
	Label?: string;
	Description?: string;
	ChangeLog?: string;
	License?: string;
	BinaryURL?: string;
	BinaryChecksum?: string;
	BinarySignature?: string;
	BinaryHashType?: string;
	BinarySize?: string;
	BinaryOS?: string;
	BinaryArch?: string;
	Status?: PackageStatus;
}

export interface UpdateQuery {
	Channel?: string;
	PackageName?: string;
	CurrentVersion?: string;
	GOOS?: string;
	GOARCH?: string;
}

export interface UpdateAnswer {
	Channel: string;
	AvailableBinaries: UpdatePackage[];
}

export interface Running {
	name: string;
	version: string;
	license: string;
}

export type Fetcher = (url: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<{ ok: boolean; status: number; text(): Promise<string> }>;

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

/** Semantic-version order (pre-releases before their release); throws on what is not a version. */
export function compareVersions(a: string, b: string): number {
	const pa = VERSION.exec(a);
	const pb = VERSION.exec(b);
	if (!pa || !pb) throw new BadRequestError(`"${pa ? b : a}" is not a version such as 1.2.3`);
	for (let i = 1; i <= 3; i++) if (Number(pa[i]) !== Number(pb[i])) return Number(pa[i]) - Number(pb[i]);
	if (pa[4] === pb[4]) return 0;
	if (pa[4] === undefined) return 1;
	if (pb[4] === undefined) return -1;
	return pa[4] < pb[4] ? -1 : 1;
}

export function isVersion(v: string): boolean {
	return VERSION.test(v);
}

const STR_FIELDS = ["PackageName", "Label", "Description", "ChangeLog", "License", "BinaryURL", "BinaryChecksum", "BinarySignature", "BinaryHashType", "BinaryOS", "BinaryArch"] as const;

/** A package from the source, keeping only well-typed known fields; null when it has no usable Version. */
export function cleanPackage(raw: unknown): UpdatePackage | null {
	if (!raw || typeof raw !== "object") return null;
	const r = raw as Record<string, unknown>;
	if (typeof r.Version !== "string" || !isVersion(r.Version)) return null;
	const p: UpdatePackage = { Version: r.Version.replace(/^v/, "") };
	for (const k of STR_FIELDS) if (typeof r[k] === "string" && (r[k] as string).length <= 8192) p[k] = r[k] as string;
	if (typeof r.ReleaseDate === "number" && Number.isInteger(r.ReleaseDate)) p.ReleaseDate = r.ReleaseDate;
	if ((typeof r.BinarySize === "number" || typeof r.BinarySize === "string") && /^\d+$/.test(String(r.BinarySize))) p.BinarySize = String(r.BinarySize);
	if (r.Status === "Draft" || r.Status === "Pending" || r.Status === "Released") p.Status = r.Status;
	return p;
}

export class Updates {
	constructor(
		private readonly running: Running,
		private readonly source: string | undefined,
		private readonly fetcher: Fetcher = fetch as unknown as Fetcher,
		private readonly timeoutMs = 5000,
	) {}

	/** The running version as a package, with why nothing else is listed. */
	private current(description: string): UpdatePackage {
		return {
			PackageName: this.running.name,
			Version: this.running.version,
			Label: `${this.running.name} ${this.running.version} (running)`,
			Description: description,
			License: this.running.license,
			BinaryOS: process.platform,
			BinaryArch: process.arch,
			Status: "Released",
		};
	}

	/**
	 * Newer versions than the running one on the channel (newest first); none when up to date. Without a source,
	 * or when it cannot be reached or answers nonsense, the running version alone, its Description saying why.
	 */
	async available(q: UpdateQuery, lang?: string): Promise<UpdateAnswer> {
		const channel = q.Channel || "stable";
		if (!this.source) return { Channel: channel, AvailableBinaries: [this.current(translate(lang, "update.none_configured", this.running.version))] };
		const request = { Channel: channel, PackageName: this.running.name, CurrentVersion: this.running.version, GOOS: process.platform, GOARCH: process.arch };
		let list: unknown;
		try {
			const res = await this.fetcher(this.source, {
				method: "POST",
				headers: { "Content-Type": "application/json", Accept: "application/json" },
				body: JSON.stringify(request),
				signal: AbortSignal.timeout(this.timeoutMs),
			});
			if (!res.ok) throw new Error(`it answered HTTP ${res.status}`);
			const body = JSON.parse(await res.text()) as unknown;
			list = Array.isArray(body) ? body : (body as { AvailableBinaries?: unknown } | null)?.AvailableBinaries ?? [];
			if (!Array.isArray(list)) throw new Error("its answer has no AvailableBinaries list");
		} catch (e) {
			const why = (e as Error).name === "TimeoutError" ? `no answer within ${this.timeoutMs / 1000} s` : (e as Error).message;
			return { Channel: channel, AvailableBinaries: [this.current(`${translate(lang, "update.unreachable", this.running.version)} (${this.source}: ${why})`)] };
		}
		const newer = (list as unknown[])
			.map(cleanPackage)
			.filter((p): p is UpdatePackage => !!p && (!p.PackageName || p.PackageName === this.running.name) && compareVersions(p.Version, this.running.version) > 0)
			.sort((a, b) => compareVersions(b.Version, a.Version));
		return { Channel: channel, AvailableBinaries: newer };
	}

	/** Always a refusal: says why, and what to do instead. */
	refuseApply(target: string, lang?: string): never {
		if (!isVersion(target)) throw new BadRequestError(`"${target}" is not a version such as 1.2.3`);
		if (compareVersions(target, this.running.version) === 0) throw new ConflictError(`${this.running.name} ${this.running.version} is already running`, "update.current");
		throw new ConflictError(`${translate(lang, "update.cannot_apply")} (${this.running.name} ${target}; running ${this.running.version}). Nothing was changed.`, "update.unsupported");
	}
}
