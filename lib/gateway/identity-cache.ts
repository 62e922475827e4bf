// Resolved credentials, kept a few seconds so that a busy client costs one token check per few seconds rather
// than one per request. Any identity or token change anywhere in the cluster clears it (events), so a deleted
// or locked user, or a revoked token, stops working at once.
import type { Identity } from "../auth/identity";
import { TtlCache } from "./ttl-cache";

export class IdentityCache extends TtlCache<Identity> {
	constructor(ttlMs = 5000, max = 20_000) {
		super(ttlMs, max);
	}

	/** Never kept past the credential's own expiry. */
	remember(token: string, identity: Identity, now = Date.now(), generation = this.generation): void {
		this.set(token, identity, identity.ExpiresAt * 1000, now, generation);
	}
}
