// Resolved credentials, kept a few seconds so that a busy client costs one token check per few seconds rather
// than one per request. Any identity or token change anywhere in the cluster clears it (events), so a deleted
// or locked user, or a revoked token, stops working at once.
import type { Identity } from "../auth/identity";

export class IdentityCache {
	private entries = new Map<string, { identity: Identity; until: number }>();
	constructor(private readonly ttlMs = 5000, private readonly max = 20_000) {}

	get(token: string, now = Date.now()): Identity | undefined {
		const e = this.entries.get(token);
		if (!e) return undefined;
		if (e.until <= now) {
			this.entries.delete(token);
			return undefined;
		}
		return e.identity;
	}

	set(token: string, identity: Identity, now = Date.now()): void {
		if (this.entries.size >= this.max) this.entries.clear();
		const until = Math.min(now + this.ttlMs, identity.ExpiresAt * 1000);
		if (until > now) this.entries.set(token, { identity, until });
	}

	clear(): void {
		this.entries.clear();
	}
}
