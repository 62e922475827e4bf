// Requests between nodes for a datasource's bytes are signed with a cluster secret (derived from JWT_SECRET, so
// every node of a cluster has it and nothing else to configure): an HMAC over method, path with query and an
// expiry a few seconds ahead. Only the start of a transfer is checked: a long upload outlives its signature.
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-cellar-peer-signature";
export const EXPIRES_HEADER = "x-cellar-peer-expires";
/** How long a signature is valid; the furthest expiry a request may claim (clocks of nodes differ a little). */
export const SIGNATURE_TTL_S = 30;
const MAX_AHEAD_S = 120;

function mac(secret: string, method: string, path: string, expires: number): Buffer {
	return createHmac("sha256", secret).update(`${method.toUpperCase()}\n${path}\n${expires}`).digest();
}

export function signPeerRequest(secret: string, method: string, path: string, now = Date.now()): Record<string, string> {
	const expires = Math.floor(now / 1000) + SIGNATURE_TTL_S;
	return { [EXPIRES_HEADER]: String(expires), [SIGNATURE_HEADER]: mac(secret, method, path, expires).toString("base64url") };
}

/** Why a request is refused, or null when its signature is good. */
export function checkPeerSignature(secret: string, method: string, path: string, headers: Record<string, string | string[] | undefined>, now = Date.now()): string | null {
	const sig = headers[SIGNATURE_HEADER];
	const exp = headers[EXPIRES_HEADER];
	if (typeof sig !== "string" || typeof exp !== "string" || !/^\d{1,12}$/.test(exp)) return "unsigned request";
	const expires = Number(exp);
	const t = Math.floor(now / 1000);
	if (expires < t) return "signature expired";
	if (expires > t + MAX_AHEAD_S) return "signature expiry too far ahead";
	const want = mac(secret, method, path, expires);
	const got = Buffer.from(sig, "base64url");
	if (got.length !== want.length || !timingSafeEqual(got, want)) return "bad signature";
	return null;
}
