// Requests between nodes for a datasource's bytes are signed with a cluster secret (derived from JWT_SECRET, so
// every node of a cluster has it and nothing else to configure): an HMAC over method, path with query, an expiry
// a few seconds ahead, a random nonce and the body's sha256. The holder refuses a nonce it has seen (a captured
// request cannot be played again) and a body that is not the signed one.
// An upload is streamed, so its sha256 is known only once the last byte is sent: its head signs STREAMING_PAYLOAD
// and the digest comes in a trailer, with an HMAC chained on the head's signature (S3's signed trailers do the
// same). The holder hashes what it passes to the store and ends the store's input only once that trailer
// matches, so a body that was changed on the way never becomes an object. Only the start of a transfer is
// checked for expiry: a long upload outlives its signature.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-cellar-peer-signature";
export const EXPIRES_HEADER = "x-cellar-peer-expires";
export const NONCE_HEADER = "x-cellar-peer-nonce";
/** The body's sha256 (hex), or STREAMING_PAYLOAD; also the trailer that carries a streamed body's digest. */
export const CONTENT_SHA256_HEADER = "x-cellar-content-sha256";
export const CONTENT_LENGTH_TRAILER = "x-cellar-content-length";
export const TRAILER_SIGNATURE = "x-cellar-peer-trailer-signature";
export const STREAMING_PAYLOAD = "STREAMING-SHA256-TRAILER";
export const EMPTY_SHA256 = sha256(Buffer.alloc(0));
/** How long a signature is valid; the furthest expiry a request may claim (clocks of nodes differ a little). */
export const SIGNATURE_TTL_S = 30;
const MAX_AHEAD_S = 120;

export function sha256(body: Buffer): string {
	return createHash("sha256").update(body).digest("hex");
}

function mac(secret: string, text: string): Buffer {
	return createHmac("sha256", secret).update(text).digest();
}

function sameMac(got: string, want: Buffer): boolean {
	const g = Buffer.from(got, "base64url");
	return g.length === want.length && timingSafeEqual(g, want);
}

function sameHex(a: string, b: string): boolean {
	const x = Buffer.from(a, "utf8");
	const y = Buffer.from(b, "utf8");
	return x.length === y.length && timingSafeEqual(x, y);
}

function headText(method: string, path: string, expires: number, nonce: string, payload: string): string {
	return `${method.toUpperCase()}\n${path}\n${expires}\n${nonce}\n${payload}`;
}

/** The headers of a signed request; `payload` is the body's sha256 (EMPTY_SHA256 without one) or STREAMING_PAYLOAD. */
export function signPeerRequest(secret: string, method: string, path: string, payload = EMPTY_SHA256, now = Date.now()): Record<string, string> {
	const expires = Math.floor(now / 1000) + SIGNATURE_TTL_S;
	const nonce = randomBytes(16).toString("base64url");
	return {
		[EXPIRES_HEADER]: String(expires),
		[NONCE_HEADER]: nonce,
		[CONTENT_SHA256_HEADER]: payload,
		[SIGNATURE_HEADER]: mac(secret, headText(method, path, expires, nonce, payload)).toString("base64url"),
	};
}

function trailerText(headSignature: string, digest: string, length: number): string {
	return `TRAILER\n${headSignature}\n${digest}\n${length}`;
}

/** The trailers that end a streamed body: its sha256 and length, signed together with the request's head. */
export function signPeerTrailer(secret: string, headSignature: string, digest: string, length: number): Record<string, string> {
	return {
		[CONTENT_SHA256_HEADER]: digest,
		[CONTENT_LENGTH_TRAILER]: String(length),
		[TRAILER_SIGNATURE]: mac(secret, trailerText(headSignature, digest, length)).toString("base64url"),
	};
}

export interface PeerSignature {
	signature: string;
	expires: number;
	nonce: string;
	/** The signed body digest (hex) or STREAMING_PAYLOAD. */
	payload: string;
}

type Headers = Record<string, string | string[] | undefined>;

/** The request's signature when it is good, else why it is refused. */
export function checkPeerSignature(secret: string, method: string, path: string, headers: Headers, now = Date.now()): PeerSignature | { refused: string } {
	const sig = headers[SIGNATURE_HEADER];
	const exp = headers[EXPIRES_HEADER];
	const nonce = headers[NONCE_HEADER];
	const payload = headers[CONTENT_SHA256_HEADER];
	if (typeof sig !== "string" || typeof exp !== "string" || !/^\d{1,12}$/.test(exp)) return { refused: "unsigned request" };
	if (typeof nonce !== "string" || !/^[\w-]{16,64}$/.test(nonce)) return { refused: "no nonce" };
	if (typeof payload !== "string" || (payload !== STREAMING_PAYLOAD && !/^[0-9a-f]{64}$/.test(payload))) return { refused: "no body digest" };
	const expires = Number(exp);
	const t = Math.floor(now / 1000);
	if (expires < t) return { refused: "signature expired" };
	if (expires > t + MAX_AHEAD_S) return { refused: "signature expiry too far ahead" };
	if (!sameMac(sig, mac(secret, headText(method, path, expires, nonce, payload)))) return { refused: "bad signature" };
	return { signature: sig, expires, nonce, payload };
}

/** Why a body whose sha256 and length the holder measured is not the one the request signed, or null. */
export function checkPeerBody(secret: string, signed: PeerSignature, trailers: Headers, digest: string, length: number): string | null {
	if (signed.payload !== STREAMING_PAYLOAD) return sameHex(digest, signed.payload) ? null : "the body is not the signed one";
	const sent = trailers[CONTENT_SHA256_HEADER];
	const sentLength = trailers[CONTENT_LENGTH_TRAILER];
	const sig = trailers[TRAILER_SIGNATURE];
	if (typeof sent !== "string" || typeof sentLength !== "string" || typeof sig !== "string") return "the body's signed digest is missing";
	if (!sameMac(sig, mac(secret, trailerText(signed.signature, sent, Number(sentLength))))) return "bad signature of the body's digest";
	if (!sameHex(digest, sent) || Number(sentLength) !== length) return "the body is not the signed one";
	return null;
}

/**
 * The nonces of the signed requests a holder accepted, each kept until its signature expires (a repeat after that
 * is refused as expired anyway). Bounded: past `max` live nonces new requests are refused until some expire, so
 * a flood costs refusals, not memory.
 */
export class SeenNonces {
	private readonly seen = new Map<string, number>();
	private sweptAt = 0;

	constructor(private readonly max = 100_000) {}

	get size(): number {
		return this.seen.size;
	}

	/** Records the nonce; "replayed" when it was seen, "full" when no more can be kept now. */
	admit(nonce: string, expires: number, now = Date.now()): "ok" | "replayed" | "full" {
		if (this.seen.has(nonce)) return "replayed";
		if (this.seen.size >= this.max || now - this.sweptAt >= 1000) this.sweep(now);
		if (this.seen.size >= this.max) return "full";
		this.seen.set(nonce, expires);
		return "ok";
	}

	private sweep(now: number): void {
		this.sweptAt = now;
		const t = Math.floor(now / 1000);
		for (const [nonce, expires] of this.seen) if (expires < t) this.seen.delete(nonce);
	}
}
