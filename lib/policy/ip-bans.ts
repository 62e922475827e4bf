// Failed logins per address and the bans they start, over a store of per-address states (lib/db/policies). The
// read-modify-write of one address is one transaction of the store (nodes sharing it count every failure) and
// runs in a per-address queue on this node, so that attempts apply in the order they arrived; the whitelist is
// read on each attempt, so that a list just written takes effect at once.
import { inList, isBanned, KeyedSerializer, recordAttempt, type BanSettings, type IpState } from "./ipban";

export interface IpStateStore {
	ipList(name: string): Promise<string[] | null>;
	ipState(ip: string): Promise<IpState | null>;
	ipStates(): Promise<IpState[]>;
	updateIpState(ip: string, next: (previous: IpState | null) => IpState | null): Promise<void>;
	deleteIpState(ip: string): Promise<boolean>;
}

/** Entries of a list with this name can never be banned. */
export const WHITELIST = "whitelist";

export class IpBans {
	private readonly serializer = new KeyedSerializer();

	constructor(
		private readonly store: IpStateStore,
		readonly settings: BanSettings,
		private readonly now: () => number = Date.now,
	) {}

	/** Applies one login attempt of a (normalised) address; whether it started a ban. */
	record(ip: string, success: boolean, details?: Record<string, string>): Promise<boolean> {
		return this.serializer.run(ip, async () => {
			if (inList(ip, (await this.store.ipList(WHITELIST)) ?? undefined)) return false;
			const now = this.now();
			let banStarted = false;
			// In the store's transaction: two nodes counting failures of one address do not lose each other's.
			await this.store.updateIpState(ip, (previous) => {
				banStarted = false;
				if (success && !previous) return null; // nothing to reset; successes alone are not stored
				const out = recordAttempt(previous, ip, success, now, this.settings, details);
				banStarted = out.banStarted;
				return out.state;
			});
			return banStarted;
		});
	}

	/** Lifts a ban and forgets the address's failures; whether there was anything to forget. */
	unban(ip: string): Promise<boolean> {
		return this.serializer.run(ip, () => this.store.deleteIpState(ip));
	}

	/** Drops address states that hold neither a ban in force nor failures still inside the window; how many. */
	async cleanup(): Promise<number> {
		const since = () => this.now() - this.settings.window * 1000;
		const stale = (s: IpState | null) => !!s && !isBanned(s, this.now()) && !(s.Failures ?? []).some((t) => t > since());
		let removed = 0;
		for (const s of await this.store.ipStates()) {
			if (!stale(s)) continue;
			await this.serializer.run(s.IP, async () => {
				// Read again in the address's queue: an attempt may have come in since the list was read.
				if (stale(await this.store.ipState(s.IP)) && (await this.store.deleteIpState(s.IP))) removed++;
			});
		}
		return removed;
	}
}
