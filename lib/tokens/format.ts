// Token value formats. Nothing here touches storage: generation, parsing, hashing and input checks.
//  - personal / impersonation / document tokens: `pat_<32 random bytes, base64url = 43 chars>` (opaque, no dots,
//    so the auth service tells them from JWTs at a glance);
//  - refresh tokens: `<sessionId>.<32 random bytes base64url>` (the session id is the lookup key, the rest the secret);
//  - password-reset keys: a random UUID, as Cells does.
// Only sha256 (hex) of the secret part is ever stored.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { BadRequestError } from "../errors";

export const PERSONAL_PREFIX = "pat_";
const PERSONAL_RE = /^pat_[A-Za-z0-9_-]{43}$/;
const SESSION_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SECRET_RE = /^[A-Za-z0-9_-]{43}$/;

/** True for a value shaped like a personal access token (prefix + 43 base64url chars). */
export function isPersonalToken(s: unknown): s is string {
	return typeof s === "string" && PERSONAL_RE.test(s);
}

export function newPersonalToken(): string {
	return PERSONAL_PREFIX + randomBytes(32).toString("base64url");
}

export function newSecret(): string {
	return randomBytes(32).toString("base64url");
}

export function sha256(s: string): string {
	return createHash("sha256").update(s, "utf8").digest("hex");
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string | undefined, b: string | undefined): boolean {
	if (typeof a !== "string" || typeof b !== "string" || a.length !== b.length) return false;
	return timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

export function makeRefreshToken(sessionId: string, secret: string): string {
	return `${sessionId}.${secret}`;
}

/** `<sessionId>.<secret>` split, or null when the value cannot be a refresh token. */
export function parseRefreshToken(token: unknown): { sessionId: string; secret: string } | null {
	if (typeof token !== "string" || token.length > 200) return null;
	const dot = token.indexOf(".");
	if (dot < 0) return null;
	const sessionId = token.slice(0, dot);
	const secret = token.slice(dot + 1);
	if (!SESSION_ID_RE.test(sessionId) || !SECRET_RE.test(secret)) return null;
	return { sessionId, secret };
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** An id, login or label coming from a client: no path tricks, no control characters, at most 255 chars. */
export function checkName(value: string, what: string, opts: { allowSlash?: boolean } = {}): string {
	if (value.length === 0) throw new BadRequestError(`${what} must not be empty`);
	if (value.length > 255) throw new BadRequestError(`${what} is too long (255 characters at most)`);
	if (CONTROL.test(value)) throw new BadRequestError(`${what} contains control characters`);
	if (!opts.allowSlash && (value.includes("/") || value.includes(".."))) throw new BadRequestError(`${what} must not contain "/" or ".."`);
	return value;
}

/** Free text (labels): no control characters, at most 255 chars. */
export function checkText(value: string, what: string): string {
	if (value.length > 255) throw new BadRequestError(`${what} is too long (255 characters at most)`);
	if (CONTROL.test(value)) throw new BadRequestError(`${what} contains control characters`);
	return value;
}

const SCOPE_RE = /^node:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}:(r|w|rw)$/;

/** Cells' scope format `node:<NODE_UUID>:<r|w|rw>`; anything else is refused rather than silently ignored. */
export function checkScopes(scopes: unknown): string[] {
	if (scopes === undefined || scopes === null) return [];
	if (!Array.isArray(scopes)) throw new BadRequestError("Scopes must be an array of strings");
	if (scopes.length > 32) throw new BadRequestError("Too many scopes (32 at most)");
	const out: string[] = [];
	for (const s of scopes) {
		if (typeof s !== "string" || !SCOPE_RE.test(s)) throw new BadRequestError(`Unsupported scope "${String(s).slice(0, 80)}": expected node:<NODE_UUID>:<r|w|rw>`);
		if (!out.includes(s)) out.push(s);
	}
	return out;
}
