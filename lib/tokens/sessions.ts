// Login sessions and their rotating refresh tokens.
// A refresh rotates the secret with a compare-and-set on the stored hash, so of two concurrent refreshes with
// the same token exactly one wins. A secret that was already rotated away and shows up again means someone
// kept a copy: the whole session is revoked.
import { randomUUID } from "node:crypto";
import { UnauthorizedError } from "../errors";
import { makeRefreshToken, newSecret, parseRefreshToken, sameHash, sha256 } from "./format";
import type { Clock, SessionDoc, TokenStore } from "./model";

/** How many rotated-away secrets a session remembers for reuse detection. */
export const USED_HASHES_KEPT = 16;

export interface NewSession {
	sessionId: string;
	refreshToken: string;
	refreshExpiresAt: number;
}

export interface RefreshedSession extends NewSession {
	userUuid: string;
	login: string;
}

export type RefreshOutcome = { ok: true; session: RefreshedSession } | { ok: false; reused: boolean; sessionId?: string; userUuid?: string; error: UnauthorizedError };

export class Sessions {
	constructor(
		private readonly store: TokenStore,
		private readonly ttl: () => number,
		private readonly now: Clock,
	) {}

	async create(p: { userUuid: string; login: string; ip?: string; userAgent?: string }): Promise<NewSession> {
		const sessionId = randomUUID();
		const secret = newSecret();
		const now = this.now();
		const refreshExpiresAt = now + this.ttl();
		const doc: SessionDoc = {
			_id: sessionId,
			kind: "session",
			userUuid: p.userUuid,
			login: p.login,
			refreshHash: sha256(secret),
			usedHashes: [],
			refreshExpiresAt,
			createdAt: now,
			updatedAt: now,
		};
		if (p.ip) doc.ip = p.ip.slice(0, 64);
		if (p.userAgent) doc.userAgent = p.userAgent.slice(0, 256);
		await this.store.insertSession(doc);
		return { sessionId, refreshToken: makeRefreshToken(sessionId, secret), refreshExpiresAt };
	}

	/**
	 * Rotates a refresh token. Never throws for a bad token: the outcome says whether the session must be
	 * revoked (reuse) so that the caller can broadcast it before answering 401.
	 */
	async refresh(refreshToken: string): Promise<RefreshOutcome> {
		const parsed = parseRefreshToken(refreshToken);
		if (!parsed) return { ok: false, reused: false, error: new UnauthorizedError("Invalid refresh token", "token.invalid") };
		const doc = await this.load(parsed.sessionId);
		if (!doc) return { ok: false, reused: false, error: new UnauthorizedError("Invalid refresh token", "token.invalid") };
		const presented = sha256(parsed.secret);
		const now = this.now();

		if (!sameHash(doc.refreshHash, presented)) {
			if ((doc.usedHashes ?? []).some((h) => sameHash(h, presented))) {
				await this.store.deleteSession(doc._id);
				return {
					ok: false,
					reused: true,
					sessionId: doc._id,
					userUuid: doc.userUuid,
					error: new UnauthorizedError("Refresh token was already used: the session has been revoked", "token.invalid"),
				};
			}
			return { ok: false, reused: false, error: new UnauthorizedError("Invalid refresh token", "token.invalid") };
		}
		if (doc.refreshExpiresAt <= now) {
			await this.store.deleteSession(doc._id);
			return { ok: false, reused: false, sessionId: doc._id, error: new UnauthorizedError("Refresh token has expired", "token.expired") };
		}

		const secret = newSecret();
		const refreshExpiresAt = now + this.ttl();
		const usedHashes = [...(doc.usedHashes ?? []), presented].slice(-USED_HASHES_KEPT);
		// Compare-and-set: only the caller that still sees the presented hash as current wins.
		const won = await this.store.rotateSession(doc._id, presented, { refreshHash: sha256(secret), usedHashes, refreshExpiresAt, updatedAt: now });
		if (!won) {
			// Lost a race with a concurrent refresh of the same token: this one fails, the winner's session lives.
			return { ok: false, reused: false, error: new UnauthorizedError("Refresh token was already used", "token.invalid") };
		}
		return { ok: true, session: { sessionId: doc._id, userUuid: doc.userUuid, login: doc.login, refreshToken: makeRefreshToken(doc._id, secret), refreshExpiresAt } };
	}

	/** The live session, or null when unknown or expired. */
	async get(sessionId: string): Promise<{ sessionId: string; userUuid: string; refreshExpiresAt: number } | null> {
		const doc = await this.load(sessionId);
		if (!doc || doc.refreshExpiresAt <= this.now()) return null;
		return { sessionId: doc._id, userUuid: doc.userUuid, refreshExpiresAt: doc.refreshExpiresAt };
	}

	/**
	 * Ends the session a refresh token belongs to, only if the token is its current one: a logout that comes with
	 * no access token proves the session is the caller's with its secret, not with its id, which access tokens
	 * carry in clear. The session id when one was ended, else null.
	 */
	async endWithRefresh(refreshToken: string): Promise<string | null> {
		const parsed = parseRefreshToken(refreshToken);
		if (!parsed) return null;
		const doc = await this.load(parsed.sessionId);
		if (!doc || !sameHash(doc.refreshHash, sha256(parsed.secret))) return null;
		return (await this.store.deleteSession(doc._id, doc.refreshHash)) ? doc._id : null;
	}

	async delete(sessionId: string): Promise<boolean> {
		return this.store.deleteSession(sessionId);
	}

	async deleteForUser(userUuid: string): Promise<number> {
		return this.store.deleteSessionsOf(userUuid);
	}

	async purgeExpired(): Promise<number> {
		return this.store.purgeSessions(this.now());
	}

	private async load(sessionId: string): Promise<SessionDoc | null> {
		return this.store.session(sessionId);
	}
}
