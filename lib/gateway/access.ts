// The gateway's view of the security policies: REST policy groups, named IP lists and current IP bans, kept
// in memory and reloaded when the policy service says they changed, so the per-request check costs no call.
import { isAllowed, ipInCidr, type Policy } from "../policy/engine";

/** The named IP list (policy service) whose addresses the gateway refuses without end. */
const BLACKLIST = "blacklist";

export interface AccessSnapshot {
	policies: Policy[];
	ipLists: Record<string, string[]>;
	bans: { IP: string; BanExpire: number }[];
}

export class AccessControl {
	private snapshot: AccessSnapshot | undefined;
	private loading: Promise<AccessSnapshot> | undefined;
	private decisions = new Map<string, boolean>();

	constructor(private readonly load: () => Promise<AccessSnapshot>) {}

	invalidate(): void {
		this.snapshot = undefined;
		this.loading = undefined;
		this.decisions.clear();
	}

	/** The snapshot if loaded, without waiting: the cached-response path never waits on the policy service. */
	peek(): AccessSnapshot | undefined {
		return this.snapshot;
	}

	/** Whether `ip` is blocked by the snapshot already loaded (nothing loaded yet: not blocked, never waits). */
	blockedNow(ip: string | undefined): boolean {
		return !!this.snapshot && this.isBlocked(this.snapshot, ip);
	}

	async current(): Promise<AccessSnapshot> {
		if (this.snapshot) return this.snapshot;
		this.loading ??= this.load().then(
			(s) => {
				this.snapshot = s;
				this.decisions.clear();
				return s;
			},
			(err) => {
				this.loading = undefined;
				throw err;
			},
		);
		return this.loading;
	}

	/**
	 * Banned after failed logins: such an address may no longer try credentials (logins, password resets). The
	 * rest stays open to it, so a ban does not lock out the people sharing the address who hold a valid token.
	 */
	isBanned(snapshot: AccessSnapshot, ip: string | undefined, now = Date.now() / 1000): boolean {
		if (!ip || !snapshot.bans.length) return false;
		return snapshot.bans.some((b) => b.BanExpire > now && (b.IP === ip || ipInCidr(ip, b.IP)));
	}

	/** On the administrators' blacklist: refused everything, whatever credential it brings. */
	isBlocked(snapshot: AccessSnapshot, ip: string | undefined): boolean {
		const list = snapshot.ipLists[BLACKLIST];
		if (!ip || !list?.length) return false;
		return list.some((e) => e === ip || ipInCidr(ip, e));
	}

	/** Policies with conditions depend on the request context; the others can be memoised per subject set. */
	allowed(snapshot: AccessSnapshot, subjects: string[], resource: string, action: string, ip: string | undefined): boolean {
		const conditional = (snapshot as AccessSnapshot & { $conditional?: boolean }).$conditional ??= snapshot.policies.some((p) => p.conditions && Object.keys(p.conditions).length);
		const key = conditional ? "" : `${subjects.join(",")}|${action}|${resource}`;
		if (key) {
			const hit = this.decisions.get(key);
			if (hit !== undefined) return hit;
		}
		const ok = isAllowed(snapshot.policies, { subjects, resource, action, context: { remoteAddress: ip, time: new Date(), ipLists: snapshot.ipLists } });
		if (key) {
			if (this.decisions.size > 50_000) this.decisions.clear();
			this.decisions.set(key, ok);
		}
		return ok;
	}
}
