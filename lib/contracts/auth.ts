// auth — the gateway turns a Bearer credential into an identity; logins are announced to the policy service,
// which counts failures per address and bans the ones that fail too often.
import type { Identity } from "../auth/identity";

export interface AuthActions {
	"auth.resolve": { params: { token: string }; result: Identity };
}

/** A login attempt with credentials: `ip` is the client address as the gateway saw it (absent off HTTP). */
export interface LoginAttempt {
	ip?: string;
	login: string;
}

export interface AuthEvents {
	"auth.login.failed": LoginAttempt;
	"auth.login.succeeded": LoginAttempt;
}
