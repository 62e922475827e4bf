// What the token store holds: sessions, personal tokens (with their impersonation and document relatives) and
// reset keys, each told apart by `kind`. No record ever holds a usable secret: only sha256 (hex) of it.

export interface SessionDoc {
	_id: string;
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

export interface PersonalDoc {
	_id: string;
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

export interface ResetDoc {
	_id: string;
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

/** What a refresh writes when it rotates a session's secret. */
export interface SessionRotation {
	refreshHash: string;
	usedHashes: string[];
	refreshExpiresAt: number;
	updatedAt: number;
}

export interface PersonalFilter {
	UserLogin?: string;
	UserUuid?: string;
	Type?: PatType;
}

/**
 * The storage lib/tokens needs (implemented by lib/db's TokensRepo). Every "only if" below is one conditional
 * statement in the store, so that two requests (or two nodes) racing on the same record cannot both win.
 */
export interface TokenStore {
	insertSession(doc: SessionDoc): Promise<void>;
	session(id: string): Promise<SessionDoc | null>;
	/** Writes `next` only if the session's current hash is still `presentedHash`: whether this caller won. */
	rotateSession(id: string, presentedHash: string, next: SessionRotation): Promise<boolean>;
	/** Removes the session (only if its current hash is `refreshHash`, when given): whether it was removed. */
	deleteSession(id: string, refreshHash?: string): Promise<boolean>;
	deleteSessionsOf(userUuid: string): Promise<number>;
	/** Removes the sessions whose refresh expiry is at or before `now`. */
	purgeSessions(now: number): Promise<number>;

	insertPersonal(doc: PersonalDoc): Promise<void>;
	personal(id: string): Promise<PersonalDoc | null>;
	personalByHash(tokenHash: string): Promise<PersonalDoc | null>;
	/** Moves a sliding token's expiry. */
	slidePersonal(id: string, expiresAt: number, updatedAt: number): Promise<void>;
	/** Tokens matching every given field, oldest first. */
	listPersonal(filter: PersonalFilter): Promise<PersonalDoc[]>;
	deletePersonal(id: string): Promise<boolean>;
	deletePersonalOf(userUuid: string): Promise<number>;
	/** Removes the tokens that expired at or before `before`. */
	purgePersonal(before: number): Promise<number>;

	insertReset(doc: ResetDoc): Promise<void>;
	resetByHash(keyHash: string): Promise<ResetDoc | null>;
	resetsOf(userUuid: string): Promise<ResetDoc[]>;
	deleteReset(id: string): Promise<boolean>;
	deleteResetsOf(userUuid: string): Promise<number>;
	purgeResets(now: number): Promise<number>;
}

/** Unix seconds. */
export type Clock = () => number;
export const systemClock: Clock = () => Math.floor(Date.now() / 1000);
