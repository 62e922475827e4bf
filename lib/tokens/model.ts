// What the tokens collection holds. One collection, three kinds of documents told apart by `kind`.
// No document ever holds a usable secret: only sha256 (hex) of it.
import type { Doc, Store } from "../../mixins/db.mixin";

export interface SessionDoc extends Doc {
	kind: "session";
	userUuid: string;
	login: string;
	ip?: string;
	userAgent?: string;
	/** sha256 of the current refresh secret. */
	refreshHash: string;
	/** sha256 of the last rotated-away secrets: presenting one of them again means the token was stolen. */
	usedHashes: string[];
	refreshExpiresAt: number;
	createdAt: number;
	updatedAt: number;
}

export type PersonalKind = "personal" | "impersonation" | "document";
export type PatType = "PERSONAL" | "DOCUMENT";

export interface PersonalDoc extends Doc {
	kind: "personal";
	tokenHash: string;
	Kind: PersonalKind;
	Type: PatType;
	Label: string;
	UserUuid: string;
	UserLogin: string;
	Scopes: string[];
	/** Seconds; 0 = hard expiry only. */
	AutoRefreshWindow: number;
	ExpiresAt: number;
	/** Hard ceiling of a sliding token created with both ExpiresAt and AutoRefreshWindow. */
	MaxExpiresAt?: number;
	CreatedAt: number;
	CreatedBy: string;
	UpdatedAt: number;
	ImpersonatedBy?: string;
}

export interface ResetDoc extends Doc {
	kind: "reset";
	keyHash: string;
	userUuid: string;
	login: string;
	email: string;
	expiresAt: number;
	createdAt: number;
	seq?: number;
}

export type TokenDoc = SessionDoc | PersonalDoc | ResetDoc;

/** The service's store plus a conditional update (compare-and-set), atomic on NeDB and MongoDB alike. */
export interface TokenStore extends Store<Doc> {
	/** `$set` fields on every document matching `query`; resolves to how many were changed. */
	updateWhere(query: Record<string, unknown>, set: Record<string, unknown>): Promise<number>;
}

/** Unix seconds. */
export type Clock = () => number;
export const systemClock: Clock = () => Math.floor(Date.now() / 1000);
