// Resource policies (READ / WRITE / OWNER …) carried by users, roles and workspaces, as Cells stores them.
// A deny that matches wins; otherwise one matching allow is enough.
import type { Context } from "moleculer";
import { ForbiddenError, UnauthorizedError } from "../errors";
import { compilePattern } from "../policy/engine";
import { isAdmin, subjectsOf, type Identity, type Meta } from "../auth/identity";

export interface ResourcePolicy {
	id?: number;
	Resource?: string;
	Action?: "ANY" | "OWNER" | "READ" | "WRITE" | "EDIT_RULES";
	Subject?: string;
	Effect?: "deny" | "allow";
	JsonConditions?: string;
}

export function subjectMatches(subject: string | undefined, subjects: string[]): boolean {
	if (!subject) return false;
	if (subject === "*") return true;
	if (subject.includes("<")) {
		const re = compilePattern(subject);
		return subjects.some((s) => re.test(s));
	}
	return subjects.includes(subject);
}

/** True when `user` holds `action` on a resource with these policies. */
export function hasPolicy(policies: ResourcePolicy[] | undefined, user: Identity | null | undefined, action: "READ" | "WRITE" | "OWNER"): boolean {
	const subjects = subjectsOf(user);
	let allowed = false;
	for (const p of policies ?? []) {
		const pAction = p.Action ?? "ANY";
		// OWNER implies READ and WRITE; whoever may write a resource may also read it.
		const relevant = pAction === action || pAction === "ANY" || (pAction === "OWNER" && action !== "OWNER") || (pAction === "WRITE" && action === "READ");
		if (!relevant || !subjectMatches(p.Subject, subjects)) continue;
		if ((p.Effect ?? "allow") === "deny") return false;
		allowed = true;
	}
	return allowed;
}

export function canEdit(policies: ResourcePolicy[] | undefined, user: Identity | null | undefined): boolean {
	return hasPolicy(policies, user, "WRITE");
}

/** The logged-in caller, or a 401. */
export function requireUser(ctx: Context<unknown, Meta>): Identity {
	const u = ctx.meta.user;
	if (!u) throw new UnauthorizedError("You must be logged in");
	return u;
}

/** The logged-in caller if an admin, a 403 otherwise. */
export function requireAdmin(ctx: Context<unknown, Meta>): Identity {
	const u = requireUser(ctx);
	if (!isAdmin(u)) throw new ForbiddenError("This operation is reserved to administrators");
	return u;
}

/** Default policies of a new resource: readable by `readers`, writable by admins and by `owner` if given. */
export function defaultPolicies(resource: string, readers: string[], writers: string[]): ResourcePolicy[] {
	return [
		...readers.map((s) => ({ Resource: resource, Action: "READ" as const, Subject: s, Effect: "allow" as const })),
		...writers.map((s) => ({ Resource: resource, Action: "WRITE" as const, Subject: s, Effect: "allow" as const })),
	];
}
