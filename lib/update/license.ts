// GET /license/stats as Cells' admin console reads it: no license to describe, so the License object says what
// Cellar is and what the store holds. The counts are aggregate queries over the whole store (every node, every
// version): kept a short while, so a console that polls does not scan the store each time; ForceRefresh counts
// again at once, as Cells' does.
import type { StoreStats } from "../db/stats";
import { TtlCache } from "../gateway/ttl-cache";
import { translate } from "../frontend/i18n";
import { BadRequestError } from "../errors";
import type { Running } from "./updates";

/** How long counted stats answer without ForceRefresh. */
export const STATS_TTL_MS = 30_000;

export class LicenseStats {
	private readonly kept: TtlCache<StoreStats>;

	constructor(
		private readonly running: Running,
		private readonly collect: () => Promise<StoreStats>,
		ttlMs = STATS_TTL_MS,
		private readonly now: () => number = Date.now,
	) {
		this.kept = new TtlCache<StoreStats>(ttlMs, 1);
	}

	/** The store's counts: kept ones unless `force` or they are older than the TTL. */
	async stats(force = false): Promise<StoreStats> {
		const kept = force ? undefined : this.kept.get("stats", this.now());
		if (kept) return kept;
		const s = await this.collect();
		this.kept.set("stats", s, Infinity, this.now());
		return s;
	}

	/** The answer, `peers` being the nodes live now (never kept), in the caller's language. */
	async answer(opts: { force?: boolean; peers: number; lang?: string }) {
		const s = await this.stats(opts.force);
		const license = this.running.license;
		return {
			ActiveUsers: String(s.users),
			ActivePeers: String(opts.peers),
			License: {
				Id: license,
				AccountName: translate(opts.lang, "license.agpl"),
				Features: {
					License: license,
					Version: this.running.version,
					Users: String(s.users),
					Groups: String(s.groups),
					Workspaces: String(s.workspaces),
					Cells: String(s.cells),
					Files: String(s.files),
					Folders: String(s.folders),
					StorageUsedBytes: String(s.filesBytes),
					VersionsStorageBytes: String(s.versionsBytes),
				},
			},
		};
	}
}

/** PUT /license/update: always refused, in the caller's language. */
export function refuseLicenseKey(lang?: string): never {
	throw new BadRequestError(translate(lang, "license.refused"));
}
