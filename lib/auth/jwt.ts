// Access and ID tokens: HS256 JWTs signed with JWT_SECRET (shared by every node of a cluster). Refresh tokens
// and personal tokens are opaque and live in the tokens service; a JWT only says who and which session.
import jwt from "jsonwebtoken";
import { createHmac, randomUUID } from "node:crypto";
import { loadConfig, secret } from "../config";
import { UnauthorizedError } from "../errors";

export interface AccessClaims {
	sub: string;
	name: string;
	sid: string;
	typ: "access";
	jti: string;
	iat: number;
	exp: number;
}

let cached: { dataDir: string; key: string } | undefined;
function key(): string {
	const dataDir = loadConfig().dataDir;
	if (cached?.dataDir !== dataDir || process.env.JWT_SECRET) cached = { dataDir, key: secret("JWT_SECRET", "jwt-secret", dataDir) };
	return cached.key;
}

export const ISSUER = "cellar";

/** A key for another purpose, derived from JWT_SECRET, so that every node of a cluster shares it too. */
export function derivedKey(label: string): string {
	return createHmac("sha256", key()).update(label).digest("base64url");
}

export function signAccess(claims: { sub: string; name: string; sid: string }, ttlSeconds: number): { token: string; exp: number; jti: string } {
	const now = Math.floor(Date.now() / 1000);
	const jti = randomUUID();
	const exp = now + ttlSeconds;
	const token = jwt.sign({ ...claims, typ: "access", jti, iat: now, exp }, key(), { algorithm: "HS256", issuer: ISSUER, noTimestamp: true });
	return { token, exp, jti };
}

export function signId(claims: { sub: string; name: string; email?: string; displayName?: string; profile?: string }, ttlSeconds: number): string {
	const now = Math.floor(Date.now() / 1000);
	return jwt.sign({ ...claims, typ: "id", aud: "cells-frontend", iat: now, exp: now + ttlSeconds }, key(), { algorithm: "HS256", issuer: ISSUER, noTimestamp: true });
}

export function looksLikeJwt(token: string): boolean {
	return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/** Verifies signature, issuer and expiry; 401 with a stable type otherwise. */
export function verifyAccess(token: string): AccessClaims {
	try {
		const c = jwt.verify(token, key(), { algorithms: ["HS256"], issuer: ISSUER }) as AccessClaims;
		if (c.typ !== "access" || !c.sub || !c.sid) throw new UnauthorizedError("Token is not an access token", "token.invalid");
		return c;
	} catch (e) {
		if (e instanceof UnauthorizedError) throw e;
		if ((e as Error).name === "TokenExpiredError") throw new UnauthorizedError("Token has expired", "token.expired");
		throw new UnauthorizedError("Invalid token", "token.invalid");
	}
}

/** Reads claims without checking them (revocation of an access token needs to know its session). */
export function decodeUnverified(token: string): Partial<AccessClaims> | null {
	const d = jwt.decode(token);
	return d && typeof d === "object" ? (d as Partial<AccessClaims>) : null;
}
