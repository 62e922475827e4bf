// What the gateway knows about the caller, put in `ctx.meta.user` for every action.
export type Profile = "anon" | "shared" | "standard" | "admin";

export const PROFILE_RANK: Record<string, number> = { anon: 0, shared: 1, standard: 2, admin: 3 };

export interface Identity {
	Uuid: string;
	Login: string;
	Profile: Profile;
	GroupPath: string;
	/** Role uuids in the order they apply: root group, groups along the path, auto-applied, assigned, own. */
	Roles: string[];
	TokenKind: "session" | "personal" | "impersonation" | "document";
	SessionId?: string;
	TokenId?: string;
	Scopes?: string[];
	ImpersonatedBy?: string;
	/** Unix seconds after which the credential is no longer valid. */
	ExpiresAt: number;
	/** A public link's hidden user: it reaches only its link's workspace. */
	Hidden?: boolean;
}

export interface Meta {
	user?: Identity | null;
	ip?: string;
	requestId?: string;
	userAgent?: string;
	/** Raw Cookie header: only the session endpoint reads it (the refresh token lives in a cookie). */
	cookie?: string;
	/** Content-Type of a request whose body is streamed to the action (uploads: the multipart boundary). */
	contentType?: string;
	/** The language the request's Accept-Language prefers among the dictionaries (lib/frontend/i18n), if any. */
	language?: string;
	/** X-Pydio-Minisite: the public link hash whose page makes the request (its hidden user logs in only there). */
	minisite?: string;
	$statusCode?: number;
	$responseType?: string;
	$responseHeaders?: Record<string, string>;
}

/** The subjects Cells' policies are written against. */
export function subjectsOf(user: Identity | null | undefined): string[] {
	if (!user) return ["profile:anon"];
	return [`user:${user.Login}`, `user:${user.Uuid}`, `profile:${user.Profile}`, ...user.Roles.map((r) => `role:${r}`)];
}

export function isAdmin(user: Identity | null | undefined): boolean {
	return user?.Profile === "admin";
}
