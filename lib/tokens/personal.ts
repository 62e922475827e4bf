// Personal access tokens (PAT) and their two relatives: impersonation tokens (an admin acting as a user) and
// document tokens (one node, for office editors). All are opaque `pat_…` values stored as sha256 only.
// Expiry is either hard (`ExpiresAt`) or sliding (`AutoRefreshWindow`: each successful use pushes the expiry to
// now + window, persisted, to within a minute; if a hard `ExpiresAt` was also given it stays the ceiling).
import { randomUUID } from "node:crypto";
import { BadRequestError, CellarError, UnauthorizedError } from "../errors";
import { isPersonalToken, newPersonalToken, sha256 } from "./format";
import type { Clock, PatType, PersonalDoc, PersonalFilter, PersonalKind, TokenStore } from "./model";

/** Sliding windows are at most ten years; hard expiries at most a hundred. */
const MAX_WINDOW = 10 * 365 * 24 * 3600;
const MAX_HORIZON = 100 * 365 * 24 * 3600;
/** Expired tokens stay listed (and answer `token.expired`) this long before the purge removes them. */
export const EXPIRED_KEPT = 7 * 24 * 3600;
/** A sliding expiry is moved forward once it lags now + window by this many seconds (or a tenth of the window). */
const SLIDE_STEP = 60;

export interface NewPersonal {
	Kind: PersonalKind;
	UserUuid: string;
	UserLogin: string;
	Label: string;
	Scopes: string[];
	ExpiresAt?: number;
	AutoRefreshWindow?: number;
	CreatedBy: string;
	ImpersonatedBy?: string;
	/** Expiry (seconds from now) used when neither ExpiresAt nor AutoRefreshWindow is given; none => 400. */
	defaultTtl?: number;
}

export interface ResolvedPersonal {
	TokenId: string;
	Kind: PersonalKind;
	UserUuid: string;
	UserLogin: string;
	Scopes: string[];
	ExpiresAt: number;
	ImpersonatedBy?: string;
}

/** authPersonalAccessToken as the spec lists it; never the secret. */
export interface ApiPersonalToken {
	Uuid: string;
	Label: string;
	UserUuid: string;
	UserLogin: string;
	Type: PatType;
	Scopes: string[];
	ExpiresAt: number;
	CreatedAt: number;
	CreatedBy: string;
	UpdatedAt: number;
	AutoRefreshWindow: number;
}

export class PersonalTokens {
	constructor(
		private readonly store: TokenStore,
		private readonly now: Clock,
	) {}

	async create(p: NewPersonal): Promise<{ token: string; doc: PersonalDoc }> {
		const now = this.now();
		const window = p.AutoRefreshWindow ?? 0;
		const hard = p.ExpiresAt ?? 0;
		if (!Number.isInteger(window) || window < 0 || window > MAX_WINDOW) throw new BadRequestError(`AutoRefresh must be a number of seconds between 1 and ${MAX_WINDOW}`);
		if (!Number.isInteger(hard) || hard < 0) throw new BadRequestError("ExpiresAt must be a unix timestamp in seconds");
		if (hard > 0 && hard <= now) throw new BadRequestError("ExpiresAt is in the past");
		if (hard > now + MAX_HORIZON) throw new BadRequestError("ExpiresAt is too far in the future");
		let expiresAt: number;
		if (window > 0) expiresAt = hard > 0 ? Math.min(hard, now + window) : now + window;
		else if (hard > 0) expiresAt = hard;
		else if (p.defaultTtl && p.defaultTtl > 0) expiresAt = now + p.defaultTtl;
		else throw new CellarError('Say how long the token lives: ExpiresAt (a unix time in seconds) or AutoRefresh (seconds; every use extends it by that much), for example {"Label":"rclone","AutoRefresh":2592000}', 400, "missing.parameters");

		const token = newPersonalToken();
		const doc: PersonalDoc = {
			_id: randomUUID(),
			kind: "personal",
			tokenHash: sha256(token),
			Kind: p.Kind,
			Type: p.Kind === "document" ? "DOCUMENT" : "PERSONAL",
			Label: p.Label,
			UserUuid: p.UserUuid,
			UserLogin: p.UserLogin,
			Scopes: p.Scopes,
			AutoRefreshWindow: window,
			ExpiresAt: expiresAt,
			CreatedAt: now,
			CreatedBy: p.CreatedBy,
			UpdatedAt: now,
		};
		if (window > 0 && hard > 0) doc.MaxExpiresAt = hard;
		if (p.ImpersonatedBy) doc.ImpersonatedBy = p.ImpersonatedBy;
		await this.store.insertPersonal(doc);
		return { token, doc };
	}

	/** The identity a token stands for; slides a sliding token's expiry (persisted). 401 otherwise. */
	async resolve(token: string): Promise<ResolvedPersonal> {
		if (!isPersonalToken(token)) throw new UnauthorizedError("Invalid token", "token.invalid");
		const doc = await this.store.personalByHash(sha256(token));
		if (!doc) throw new UnauthorizedError("Token not found", "token.not.found");
		const now = this.now();
		if (doc.ExpiresAt <= now) throw new UnauthorizedError("Token has expired", "token.expired");
		let expiresAt = doc.ExpiresAt;
		if (doc.AutoRefreshWindow > 0) {
			const ceiling = typeof doc.MaxExpiresAt === "number" ? doc.MaxExpiresAt : Infinity;
			const next = Math.min(now + doc.AutoRefreshWindow, ceiling);
			// Written at most about once a minute per token (a busy client would otherwise append to the store
			// on every request); the expiry answered is always the one stored.
			const step = Math.min(SLIDE_STEP, Math.max(1, Math.floor(doc.AutoRefreshWindow / 10)));
			if (next - doc.ExpiresAt >= step || (next === ceiling && next > doc.ExpiresAt)) {
				await this.store.slidePersonal(doc._id, next, now);
				expiresAt = next;
			}
		}
		const out: ResolvedPersonal = {
			TokenId: doc._id,
			Kind: doc.Kind,
			UserUuid: doc.UserUuid,
			UserLogin: doc.UserLogin,
			Scopes: doc.Scopes ?? [],
			ExpiresAt: expiresAt,
		};
		if (doc.ImpersonatedBy) out.ImpersonatedBy = doc.ImpersonatedBy;
		return out;
	}

	async get(id: string): Promise<PersonalDoc | null> {
		return this.store.personal(id);
	}

	async list(filter: PersonalFilter): Promise<PersonalDoc[]> {
		return this.store.listPersonal(filter);
	}

	async remove(id: string): Promise<boolean> {
		return this.store.deletePersonal(id);
	}

	/** Revokes by value; the removed token's document, or null if the value matched nothing. */
	async removeByValue(token: string): Promise<PersonalDoc | null> {
		if (!isPersonalToken(token)) return null;
		const doc = await this.store.personalByHash(sha256(token));
		if (!doc) return null;
		return (await this.remove(doc._id)) ? doc : null;
	}

	async removeForUser(userUuid: string): Promise<number> {
		return this.store.deletePersonalOf(userUuid);
	}

	async purgeExpired(): Promise<number> {
		return this.store.purgePersonal(this.now() - EXPIRED_KEPT);
	}
}

export function toApiToken(doc: PersonalDoc): ApiPersonalToken {
	return {
		Uuid: doc._id,
		Label: doc.Label,
		UserUuid: doc.UserUuid,
		UserLogin: doc.UserLogin,
		Type: doc.Type,
		Scopes: doc.Scopes ?? [],
		ExpiresAt: doc.ExpiresAt,
		CreatedAt: doc.CreatedAt,
		CreatedBy: doc.CreatedBy,
		UpdatedAt: doc.UpdatedAt,
		AutoRefreshWindow: doc.AutoRefreshWindow,
	};
}
