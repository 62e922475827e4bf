// The rules of roles as the REST API exposes them: who may read, create, edit and delete which role, what a
// PUT /role means (an update of the role with that id, else a creation), the search queries, the default
// roles. Storage and its cache (RoleDirectory) are injected. Two creates of one id meet the store's primary key
// (ConflictError): the loser is redone as an update of the winner's role, with the winner's permissions.
import { isAdmin, type Identity } from "../auth/identity";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";
import { defaultPolicies, hasPolicy, type ResourcePolicy } from "./resource-policy";
import type { RoleDirectory } from "./role-directory";
import type { Role } from "./roles";
import { checkIdentifier, wildcard } from "./validate";

/** One query of POST /role (idmRoleSingleQuery). */
export interface RoleQuery {
	Uuid?: string[];
	Label?: string;
	IsTeam?: boolean;
	IsGroupRole?: boolean;
	IsUserRole?: boolean;
	HasAutoApply?: boolean;
	not?: boolean;
}

export interface RoleSearch {
	Queries?: RoleQuery[];
	Offset?: number;
	Limit?: number;
	Operation?: "OR" | "AND";
}

/** The roles every installation has: the root group's, and the ones applied by profile. */
export const DEFAULT_ROLES: readonly Role[] = [
	{ Uuid: "ROOT_GROUP", Label: "Root Group", GroupRole: true },
	{ Uuid: "ADMINS", Label: "Administrators", AutoApplies: ["admin"] },
	{ Uuid: "EXTERNAL_USERS", Label: "External Users", AutoApplies: ["shared"] },
];

/** How many times a PUT that lost a create race is redone as an update. */
const PUT_ATTEMPTS = 3;

/** One query as a test of roles, its label's wildcard compiled once (a search tests every role against it). */
export function roleMatcher(q: RoleQuery): (r: Role) => boolean {
	const label = q.Label ? wildcard(q.Label.includes("*") ? q.Label : `*${q.Label}*`) : undefined;
	const uuids = q.Uuid?.length ? new Set(q.Uuid) : undefined;
	return (r) => {
		let ok = true;
		if (uuids) ok &&= uuids.has(r.Uuid);
		if (label) ok &&= label.test(r.Label ?? "");
		if (q.IsTeam) ok &&= !!r.IsTeam;
		if (q.IsGroupRole) ok &&= !!r.GroupRole;
		if (q.IsUserRole) ok &&= !!r.UserRole;
		if (q.HasAutoApply) ok &&= !!r.AutoApplies?.length;
		return q.not ? !ok : ok;
	};
}

export class RoleAdmin {
	constructor(readonly directory: RoleDirectory) {}

	/** The roles the caller may read that match the queries (OR by default), paged. */
	async search(user: Identity, p: RoleSearch): Promise<{ Roles: Role[]; Total: number }> {
		const all = (await this.directory.all()).filter((r) => hasPolicy(r.Policies, user, "READ"));
		const matchers = (p.Queries ?? []).map(roleMatcher);
		const hits = matchers.length ? all.filter((r) => (p.Operation === "AND" ? matchers.every((m) => m(r)) : matchers.some((m) => m(r)))) : all;
		const offset = p.Offset ?? 0;
		const page = p.Limit ? hits.slice(offset, offset + p.Limit) : hits.slice(offset);
		return { Roles: page.map((r) => this.present(r, user)), Total: hits.length };
	}

	/** A role the caller may read; NotFound otherwise (its existence is not disclosed). */
	async get(user: Identity, uuid: string): Promise<Role> {
		const role = await this.directory.find(uuid);
		if (!role || !hasPolicy(role.Policies, user, "READ")) throw new NotFoundError(`Role ${uuid} not found`, "role.notfound");
		return this.present(role, user);
	}

	/**
	 * PUT /role/{Uuid}: updates the role (WRITE on it needed) or creates it (administrators; anyone for a team).
	 * A user's or group's own role keeps being one; only administrators set AutoApplies or explicit policies.
	 */
	async put(user: Identity, p: Role): Promise<Role> {
		checkIdentifier("Uuid", p.Uuid);
		for (let attempt = 1; ; attempt++) {
			const existing = await this.directory.find(p.Uuid);
			if (existing) {
				if (!hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this role");
			} else if (!isAdmin(user) && !p.IsTeam) {
				throw new ForbiddenError("Only administrators can create roles other than teams");
			}
			if (!isAdmin(user) && p.AutoApplies?.length) throw new ForbiddenError("Only administrators can set AutoApplies");
			if (!existing && !p.Label) throw new BadRequestError("Label is required for a new role");
			const role: Role = {
				Uuid: p.Uuid,
				Label: p.Label ?? existing?.Label ?? p.Uuid,
				IsTeam: p.IsTeam ?? existing?.IsTeam,
				GroupRole: existing?.GroupRole,
				UserRole: existing?.UserRole,
				AutoApplies: p.AutoApplies ?? existing?.AutoApplies,
				ForceOverride: p.ForceOverride ?? existing?.ForceOverride,
				Policies: isAdmin(user) && p.Policies?.length ? p.Policies : existing?.Policies ?? this.policiesFor(user),
			};
			try {
				const saved = existing ? await this.directory.update(role) : await this.directory.create(role);
				if (!saved) throw new NotFoundError(`Role ${p.Uuid} not found`, "role.notfound");
				return this.present(saved, user);
			} catch (err) {
				// Created meanwhile (the id's primary key said so), maybe by another node whose broadcast has
				// not come yet: done again as an update of that role, with its permissions, as if second.
				if (!(err instanceof ConflictError) || attempt >= PUT_ATTEMPTS) throw err;
				this.directory.invalidate();
			}
		}
	}

	/** DELETE /role/{Uuid}: not a user's or group's own role (deleted with them), never a default role. */
	async remove(user: Identity, uuid: string): Promise<{ Uuid: string }> {
		const role = await this.directory.find(uuid);
		if (!role) throw new NotFoundError(`Role ${uuid} not found`, "role.notfound");
		if (!hasPolicy(role.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to delete this role");
		if (role.UserRole || role.GroupRole) throw new ForbiddenError("A user's or group's own role is deleted with the user or group");
		if (DEFAULT_ROLES.some((r) => r.Uuid === role.Uuid)) throw new ForbiddenError("Default roles cannot be deleted");
		await this.directory.delete([role.Uuid]);
		return { Uuid: role.Uuid };
	}

	/** The default roles, created if missing (idempotent: the first-run set-up may run twice, on two nodes). */
	async ensureDefaults(): Promise<{ created: number }> {
		let created = 0;
		for (const r of DEFAULT_ROLES) {
			const out = await this.directory.ensure({ ...r, Policies: defaultPolicies(r.Uuid, ["profile:standard", "profile:shared"], ["profile:admin"]) });
			if (out.created) created++;
		}
		return { created };
	}

	/** Policies of a role the caller creates: an administrator's is readable by everyone, a team only by its creator. */
	policiesFor(user: Identity): ResourcePolicy[] {
		return [
			...defaultPolicies("role", isAdmin(user) ? ["profile:standard", "profile:shared"] : [`user:${user.Login}`], ["profile:admin"]),
			...(isAdmin(user) ? [] : [{ Resource: "role", Action: "WRITE" as const, Subject: `user:${user.Login}`, Effect: "allow" as const }]),
		];
	}

	present(role: Role, user: Identity): Role {
		return { ...role, PoliciesContextEditable: hasPolicy(role.Policies, user, "WRITE") };
	}
}
