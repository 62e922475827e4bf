// Whole responses of read actions that declare `httpCache: true` (identity data, tree reads), kept per credential and request for a few
// seconds. A hit is answered straight from the HTTP listener, before any broker context exists, after the same
// IP-ban, credential and REST-policy checks as every other call. Any identity, token, policy or tree change in the
// cluster empties it, so a cached answer is never one that a fresh call would no longer give.
import type { IncomingMessage, ServerResponse } from "node:http";
import { TtlCache } from "./ttl-cache";

export interface CachedResponse {
	type: string;
	/** Encoded once: a hit writes the bytes as they are. */
	body: Buffer;
	user: string;
}

export const CACHE_TTL_MS = 5000;
/** Memory the cached answers may take: a client asking for many large listings cannot make the gateway grow. */
export const CACHE_MAX_BYTES = 32 * 1024 * 1024;
/** Answers larger than this are not kept (a listing of thousands of nodes is rarely asked twice in 5 s). */
export const CACHE_MAX_ENTRY_BYTES = 1024 * 1024;

/** Only plain API reads from a client that needs no CORS handling are candidates. */
export function cacheableRequest(req: IncomingMessage): boolean {
	if (req.method !== "GET" && req.method !== "POST") return false;
	if (!req.url?.startsWith("/a/") || req.headers.origin) return false;
	if (req.method === "POST" && !String(req.headers["content-type"] ?? "").startsWith("application/json")) return false;
	return true;
}

/** The raw body is part of the key: a hit never needs the body parsed. */
export function cacheKey(req: IncomingMessage, token: string | undefined, rawBody: string): string {
	return `${req.method} ${req.url} ${token ?? ""} ${rawBody}`;
}

export class ResponseCache extends TtlCache<CachedResponse> {
	constructor(maxBytes = CACHE_MAX_BYTES, maxEntryBytes = CACHE_MAX_ENTRY_BYTES) {
		super(CACHE_TTL_MS, 10_000, maxBytes, (key, r) => {
			const n = key.length + r.body.length;
			return n > maxEntryBytes ? Infinity : n;
		});
	}

	serve(res: ServerResponse, hit: CachedResponse, requestId: string): void {
		res.writeHead(200, { "Content-Type": hit.type, "X-Request-Id": requestId, "Content-Length": hit.body.length });
		res.end(hit.body);
	}
}

declare module "moleculer" {
	interface ActionSchema {
		/** The gateway may answer this read from its response cache (identity data only: see above). */
		httpCache?: boolean;
	}
}
