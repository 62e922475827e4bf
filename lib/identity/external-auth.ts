// The port through which password logins reach accounts kept outside Cellar (LDAP directories, lib/directories):
// UserAdmin.checkPassword asks it for logins unknown here or recorded as coming from a directory, and keeps
// local users and the lock-out rules its own.

/** Most accounts one synchronisation of a directory hands to the users service (the LDAP side reads no more). */
export const MAX_SYNC_USERS = 20_000;

/** Where a directory account came from, recorded on the local user (private attributes: not forgeable by PUT /user). */
export const AUTH_SOURCE_ATTRIBUTE = "pydio:authSource";
export const AUTH_DN_ATTRIBUTE = "pydio:authDN";
/** The roles its directory gave the user last (a JSON list): replaced by the next ones, the others kept. */
export const AUTH_ROLES_ATTRIBUTE = "pydio:authRoles";
/** Set while a synchronisation no longer finds the user in its directory (the user is locked meanwhile). */
export const AUTH_GONE_ATTRIBUTE = "pydio:authGone";

/** A directory account whose password was just verified. */
export interface ExternalAccount {
	/** The directory's ConfigId. */
	source: string;
	dn: string;
	/** The login as the directory spells it (its IDAttribute). */
	login: string;
	displayName?: string;
	email?: string;
	/** The group its users go to (the directory's DomainName); none: the root group. */
	groupLabel?: string;
	/** Role ids its directory maps it to (MemberOfMapping, MappingRules); none: it maps none (those it gave go). */
	roles?: string[];
}

export type ExternalOutcome =
	| { status: "ok"; account: ExternalAccount }
	/** A directory knows the login and refused the password. */
	| { status: "rejected" }
	/** No reachable directory knows the login. */
	| { status: "unknown" }
	/** The directory asked could not answer (down, misconfigured). */
	| { status: "unavailable"; reason: string };

export interface ExternalAuthenticator {
	/** Tries `source` only when given (the directory a local user came from), else every directory in turn. */
	authenticate(login: string, password: string, source?: string): Promise<ExternalOutcome>;
}
