// Users and groups as stored, and the pure parts of their handling: search matching, public views, locks.
import type { ResourcePolicy } from "./resource-policy";
import type { LoginGuard } from "../auth/login-guard";
import { joinGroupPath, wildcard } from "./validate";

/** A user or group as stored (lib/db/users) and handled by the users service. */
export interface UserDoc {
	Uuid: string;
	Login?: string;
	GroupPath: string;
	IsGroup?: boolean;
	GroupLabel?: string;
	Attributes: Record<string, string>;
	PasswordHash?: string;
	/** Roles given explicitly (teams, admin-assigned): not the root, group, profile or personal roles. */
	Roles: string[];
	Policies: ResourcePolicy[];
	LastConnected?: number;
	CreatedAt?: number;
	/** Failed-login throttling and the failure lock (lib/auth/login-guard); never shown to clients. */
	LoginGuard?: LoginGuard;
}

export interface UserQuery {
	Uuid?: string;
	Login?: string;
	GroupPath?: string;
	Recursive?: boolean;
	FullPath?: string;
	AttributeName?: string;
	AttributeValue?: string;
	AttributeAnyValue?: boolean;
	NodeType?: "UNKNOWN" | "USER" | "GROUP";
	HasRole?: string;
	HasProfile?: string;
	ConnectedSince?: string;
	not?: boolean;
}

/** Attributes only the server writes: never accepted from a client, never shown. */
export const PRIVATE_ATTRIBUTE = /^pydio:/;

export function profileOf(u: UserDoc): string {
	return u.Attributes.profile || "standard";
}

export function locksOf(u: UserDoc): string[] {
	try {
		const v = JSON.parse(u.Attributes.locks ?? "[]");
		return Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
	} catch {
		return [];
	}
}

export function isLocked(u: UserDoc): boolean {
	return locksOf(u).includes("logout");
}

export function fullPathOf(u: UserDoc): string {
	return u.IsGroup ? joinGroupPath(u.GroupPath, u.GroupLabel ?? "") : joinGroupPath(u.GroupPath, u.Login ?? "");
}

function durationSeconds(spec: string): number | undefined {
	const m = /^(\d+)([smhd])$/.exec(spec);
	if (!m) return undefined;
	return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "s" | "m" | "h" | "d"];
}

/**
 * One query as a test of users and groups, its wildcards compiled once (a search tests every user against it);
 * `roleOrder` is the user's role stack, needed by HasRole only.
 */
export function userMatcher(q: UserQuery, now = Date.now() / 1000): (u: UserDoc, roleOrder: readonly string[]) => boolean {
	const login = q.Login ? wildcard(q.Login) : undefined;
	// Cells: a login ending in "*" also matches the display name.
	const loginOrName = !!q.Login?.endsWith("*");
	const value = q.AttributeName && !q.AttributeAnyValue && q.AttributeValue !== undefined ? wildcard(q.AttributeValue) : undefined;
	const base = q.GroupPath ? (q.GroupPath.length > 1 ? q.GroupPath.replace(/\/+$/, "") : "/") : undefined;
	const fullPath = q.FullPath ? q.FullPath.replace(/\/+$/, "") : undefined;
	const connected = q.ConnectedSince ? /^([<>])(.+)$/.exec(q.ConnectedSince) : null;
	const connectedSecs = connected ? durationSeconds(connected[2]) : undefined;
	return (u, roleOrder) => {
		let ok = true;
		if (q.Uuid) ok &&= u.Uuid === q.Uuid;
		if (login) ok &&= login.test(u.Login ?? u.GroupLabel ?? "") || (loginOrName && login.test(u.Attributes.displayName ?? ""));
		if (base !== undefined) ok &&= q.Recursive ? u.GroupPath === base || u.GroupPath.startsWith(base === "/" ? "/" : `${base}/`) : u.GroupPath === base;
		if (fullPath !== undefined) ok &&= fullPathOf(u) === fullPath;
		if (q.AttributeName) {
			const v = u.Attributes[q.AttributeName];
			ok &&= q.AttributeAnyValue ? v !== undefined : value !== undefined && v !== undefined && value.test(v);
		}
		if (q.NodeType === "USER") ok &&= !u.IsGroup;
		if (q.NodeType === "GROUP") ok &&= !!u.IsGroup;
		if (q.HasRole) ok &&= roleOrder.includes(q.HasRole);
		if (q.HasProfile) ok &&= !u.IsGroup && profileOf(u) === q.HasProfile;
		if (connected && connectedSecs !== undefined) {
			const since = now - connectedSecs;
			ok &&= connected[1] === "<" ? (u.LastConnected ?? 0) >= since : (u.LastConnected ?? 0) < since;
		}
		return q.not ? !ok : ok;
	};
}

/** A user or group as a client may see it (`users.byLogin`, `users.byEmail`). */
export type PublicUser = {
	Uuid: string;
	/** Absent on groups. */
	Login?: string;
	GroupPath: string;
	IsGroup?: boolean;
	GroupLabel?: string;
	Attributes: Record<string, string>;
	Policies: ResourcePolicy[];
	LastConnected?: number;
};

/** What a client may see of a user: no hash, no private attributes. */
export function publicUser(u: UserDoc): PublicUser {
	const attributes: Record<string, string> = {};
	for (const [k, v] of Object.entries(u.Attributes)) if (!PRIVATE_ATTRIBUTE.test(k)) attributes[k] = v;
	return {
		Uuid: u.Uuid,
		Login: u.IsGroup ? undefined : u.Login,
		GroupPath: u.GroupPath,
		IsGroup: u.IsGroup,
		GroupLabel: u.GroupLabel,
		Attributes: attributes,
		Policies: u.Policies,
		LastConnected: u.LastConnected,
	};
}

/** The attributes anyone who may read a user sees; the rest only those who may edit it (Cells' WithPublicData). */
const PUBLIC_ATTRIBUTES = new Set(["displayName", "avatar", "profile", "hasEmail"]);

/**
 * A user's attributes as a caller who cannot edit that user may see them: no lock state, failed logins or
 * preferences; an e-mail address becomes `hasEmail: "true"`.
 */
export function publicAttributes(attributes: Record<string, string>): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [k, v] of Object.entries(attributes)) {
		if (k === "email") {
			if (v) out.hasEmail = "true";
		} else if (PUBLIC_ATTRIBUTES.has(k)) out[k] = v;
	}
	return out;
}
