// Scheduled synchronisation of the external directories (their `Schedule`, an ISO 8601 repeating interval as
// the scheduler reads it): each due directory's users are listed (paged, at most MAX_SYNC_USERS) and handed to
// the users service, which makes, refreshes or locks its local users by the same code as logins
// (UserAdmin.syncExternal). The service runs `tick` on every node under one lease, so one node synchronises.
import { MAX_SYNC_USERS, type ExternalAccount } from "../identity/external-auth";
import type { SyncReport } from "../identity/user-admin";
import { nextRun, parseSchedule } from "../scheduler/schedule";
import type { DirectoryStore } from "./admin";
import { DEFAULT_TIMEOUT_MS, describeError, listAccounts } from "./ldap";
import { checkConfig, type DirectoryConfig } from "./model";

/** Beyond, a directory is synchronised in part: its first users only, and none taken for gone. */

/** The users service's side (users.syncExternal). */
export type ApplySync = (source: string, accounts: ExternalAccount[], complete: boolean) => Promise<SyncReport>;

export type SyncOutcome = { ok: true; report: SyncReport; complete: boolean } | { ok: false; error: string };

export class DirectorySync {
	/** Unix ms of each directory's last run on this node (or of the first tick that saw it). */
	private readonly last = new Map<string, number>();

	constructor(
		private readonly store: DirectoryStore,
		private readonly apply: ApplySync,
		private readonly log: (message: string) => void,
		private readonly cap = MAX_SYNC_USERS,
		private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
	) {}

	/**
	 * Synchronises one directory now. A directory that cannot be read changes nothing: an error must not lock
	 * its users.
	 */
	async syncOne(raw: DirectoryConfig): Promise<SyncOutcome> {
		let listed: { accounts: ExternalAccount[]; complete: boolean };
		try {
			listed = await listAccounts(checkConfig(raw, raw.ConfigId ?? ""), this.cap, this.timeoutMs);
		} catch (e) {
			return { ok: false, error: describeError(e) };
		}
		const report = await this.apply(raw.ConfigId ?? "", listed.accounts, listed.complete);
		return { ok: true, report, complete: listed.complete };
	}

	/**
	 * Runs the directories whose schedule has an occurrence since their last run. A node that takes the lease
	 * over starts counting from its first tick: an occurrence missed meanwhile is not caught up, the next one runs.
	 */
	async tick(now = Date.now()): Promise<void> {
		const configs = (await this.store.all()).filter((c) => c.Schedule && c.ConfigId);
		for (const id of this.last.keys()) if (!configs.some((c) => c.ConfigId === id)) this.last.delete(id);
		for (const cfg of configs) {
			const id = cfg.ConfigId as string;
			const since = this.last.get(id);
			if (since === undefined) {
				this.last.set(id, now);
				continue;
			}
			let next: number | null;
			try {
				next = nextRun(parseSchedule(cfg.Schedule as string), since);
			} catch (e) {
				this.log(`Directory ${id} not synchronised: ${(e as Error).message}`);
				continue;
			}
			if (next === null || next > now) continue;
			this.last.set(id, now);
			const out = await this.syncOne(cfg).catch((e: unknown) => ({ ok: false as const, error: (e as Error).message }));
			if (!out.ok) this.log(`Directory ${id} not synchronised: ${out.error}`);
			else {
				const r = out.report;
				this.log(`Directory ${id} synchronised: ${r.created} created, ${r.updated} updated, ${r.locked} locked, ${r.unlocked} unlocked${r.skipped.length ? `, ${r.skipped.length} logins taken by other accounts (${r.skipped.slice(0, 5).join(", ")})` : ""}${r.failed.length ? `, ${r.failed.length} failed (${r.failed.slice(0, 5).join("; ")})` : ""}${out.complete ? "" : `, only its first ${this.cap} users`}`);
			}
		}
	}
}
