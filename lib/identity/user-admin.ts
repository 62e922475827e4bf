// The rules of users and groups: who may create, edit, move, lock or delete whom, what a PUT /user means (an
// update of the user or group its Uuid or path names, else a creation), the role stack a user's identity
// carries, searches, and password checks with their throttling (lib/auth/login-guard). Storage and its cache
// (UserDirectory) and the roles service are injected. A taken login or group path is refused by the store's
// unique index (ConflictError, 409), never by a read before the write.
import { randomUUID } from "node:crypto";
import { isAdmin, PROFILE_RANK, type Identity, type Profile } from "../auth/identity";
import { admit, recordFailure, recordSuccess, unlock, type GuardSettings, type LoginGuard } from "../auth/login-guard";
import { generatePassword, hashPassword, verifyPassword } from "../auth/password";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, TooManyRequestsError, UnauthorizedError } from "../errors";
import { defaultPolicies, hasPolicy } from "./resource-policy";
import type { Role } from "./roles";
import type { UserDirectory } from "./user-directory";
import { fullPathOf, isLocked, locksOf, PRIVATE_ATTRIBUTE, profileOf, publicAttributes, publicUser, userMatcher, type UserDoc, type UserQuery } from "./users";
import { ancestorGroupPaths, checkIdentifier, joinGroupPath, normalizeGroupPath } from "./validate";
import { AUTH_DN_ATTRIBUTE, AUTH_GONE_ATTRIBUTE, AUTH_ROLES_ATTRIBUTE, AUTH_SOURCE_ATTRIBUTE, type ExternalAccount, type ExternalAuthenticator } from "./external-auth";

/** Logins that do not exist whose failures are remembered (beyond, the memory starts afresh). */
const MAX_GHOSTS = 10_000;
interface GhostGuard {
	failed: number;
	guard: LoginGuard | undefined;
}

/** A PUT /user body. */
export type UserBody = {
	Login: string;
	Uuid?: string;
	Password?: string;
	OldPassword?: string;
	GroupPath?: string;
	IsGroup?: boolean;
	GroupLabel?: string;
	Attributes?: Record<string, string>;
	Roles?: { Uuid?: string }[];
	Policies?: UserDoc["Policies"];
};

export type PresentedUser = Record<string, unknown> & { IsGroup?: boolean; Roles: Role[]; PoliciesContextEditable: boolean };

/** The roles service, as the users' rules use it. */
/** The identity a user's token or login resolves to (`users.authInfo`, `users.checkPassword`). */
export interface AuthInfo {
	Uuid: string;
	Login: string;
	Profile: Profile;
	GroupPath: string;
	Roles: string[];
	Locked: boolean;
	Hidden: boolean;
}

/** AUTH_GONE_ATTRIBUTE's values: the synchronisation locked the user, or found it locked already (by an admin). */
const GONE_LOCKED = "locked";
const GONE_MARKED = "marked";

/** What a synchronisation of one directory did to the local users. */
export interface SyncReport {
	created: number;
	updated: number;
	locked: number;
	unlocked: number;
	/** Logins taken here by a local account or another directory's user: left alone. */
	skipped: string[];
	/** Accounts that could not be made or refreshed, with why. */
	failed: string[];
}

export interface RoleClient {
	ensure(role: Role): Promise<unknown>;
	delete(uuids: string[]): Promise<unknown>;
	getMany(uuids: string[]): Promise<Role[]>;
	autoApplied(profile: string): Promise<string[]>;
}

export class UserAdmin {
	private readonly ghosts = new Map<string, GhostGuard>();

	constructor(
		readonly directory: UserDirectory,
		private readonly roles: RoleClient,
		/** Failed-login throttling, read on each check (the configuration is the node's). */
		private readonly guard: () => GuardSettings,
		private readonly warn: (message: string) => void,
		/** External directories: logins unknown here, and those of users that came from one, are checked there. */
		private readonly external?: ExternalAuthenticator,
	) {}

	private async save(doc: UserDoc): Promise<UserDoc> {
		const saved = await this.directory.save(doc);
		if (!saved) throw new NotFoundError(`No user or group with Uuid ${doc.Uuid}`, "user.notfound");
		return saved;
	}

	/**
	 * Inserts a new user or group whose personal role was just ensured; when the insert fails (the login or path
	 * is taken by another, its group was deleted meanwhile), that role, which nobody else holds, goes again.
	 */
	private async createWithRole(doc: UserDoc): Promise<UserDoc> {
		try {
			return await this.directory.create(doc);
		} catch (err) {
			// The insert's error is the answer, whatever becomes of this clean-up.
			await this.roles.delete([doc.Uuid]).catch(() => undefined);
			throw err;
		}
	}

	/**
	 * Creates or updates a user or group. A group created meanwhile by another request at the same path makes
	 * this PUT an update of it, as if it had come second; a taken login stays a 409: Cells refuses creating it.
	 */
	async put(caller: Identity, body: UserBody): Promise<UserDoc> {
		for (let attempt = 1; ; attempt++) {
			try {
				return await this.putUser(caller, body);
			} catch (err) {
				if (!(err instanceof ConflictError) || !body.IsGroup || attempt >= 5) throw err;
				// The winner may be another node's, whose broadcast has not reached this cache yet.
				this.directory.invalidate();
			}
		}
	}

	/** A password reset: the new password, the logout lock and the failed-login lock lifted. */
	async setPassword(login: string, password: string): Promise<void> {
		const u = await this.directory.byLogin(login);
		if (!u) throw new NotFoundError(`User ${login} not found`, "user.notfound");
		const { failedConnections, ...attrs } = u.Attributes;
		attrs.locks = JSON.stringify(locksOf(u).filter((l) => l !== "logout"));
		// The reset proved the mailbox: the owner may log in from anywhere again (the guesses were at the old password).
		await this.save({ ...u, PasswordHash: await hashPassword(password), Attributes: attrs, LoginGuard: unlock(u.LoginGuard) });
	}

	/** Sets (or with `value` null removes) one public attribute of a user, such as `avatar`. */
	async setAttribute(uuid: string, name: string, value: string | null): Promise<void> {
		const u = await this.directory.byUuid(uuid);
		if (!u || u.IsGroup) throw new NotFoundError(`No user with Uuid ${uuid}`, "user.notfound");
		const attrs = { ...u.Attributes };
		if (value === null) delete attrs[name];
		else attrs[name] = value;
		await this.save({ ...u, Attributes: attrs });
	}

	/** The administrator account, created unless it exists; the password when this call generated it. */
	async ensureAdmin(login: string, password: string | undefined): Promise<{ created: boolean; login?: string; password?: string }> {
		if (await this.directory.byLogin(login)) return { created: false };
		const chosen = password || generatePassword();
		const uuid = randomUUID();
		await this.roles.ensure({ Uuid: uuid, Label: `User ${login}`, UserRole: true, Policies: defaultPolicies("role", ["profile:standard"], ["profile:admin"]) });
		try {
			await this.createWithRole({
				Uuid: uuid,
				Login: login,
				GroupPath: "/",
				Attributes: { profile: "admin", displayName: "Administrator" },
				PasswordHash: await hashPassword(chosen),
				Roles: [],
				Policies: this.userPolicies(login, undefined),
				CreatedAt: Math.floor(Date.now() / 1000),
			});
		} catch (err) {
			// Another node made the administrator first.
			if (err instanceof ConflictError) return { created: false };
			throw err;
		}
		return { created: true, login, password: password ? undefined : chosen };
	}

	/**
	 * A public link's hidden user (attributes profile=shared, hidden=true) in its owner's group: only the owner
	 * and administrators may edit it, it reads itself. Created and deleted by the share service, never by clients.
	 */
	async createHidden(owner: { Login: string; GroupPath: string }, login: string, password: string): Promise<{ Uuid: string; Login: string }> {
		const uuid = randomUUID();
		await this.roles.ensure({ Uuid: uuid, Label: `User ${login}`, UserRole: true, Policies: defaultPolicies("role", [`user:${owner.Login}`], [`user:${owner.Login}`, "profile:admin"]) });
		const policies = [...defaultPolicies("user", [`user:${login}`, "profile:admin"], [`user:${owner.Login}`, "profile:admin"])];
		await this.createWithRole({
			Uuid: uuid,
			Login: login,
			GroupPath: owner.GroupPath || "/",
			Attributes: { profile: "shared", hidden: "true" },
			PasswordHash: await hashPassword(password),
			Roles: [],
			Policies: policies,
			CreatedAt: Math.floor(Date.now() / 1000),
		});
		return { Uuid: uuid, Login: login };
	}

	/** Deletes a hidden user and its role; false when it was not there (or is not a hidden user). */
	async deleteHidden(uuid: string): Promise<boolean> {
		const u: UserDoc | undefined = await this.directory.byUuid(uuid);
		if (!u || u.IsGroup || u.Attributes.hidden !== "true") return false;
		await this.directory.delete(u);
		await this.roles.delete([u.Uuid]);
		return true;
	}

	/** Role uuids in the order they apply: root, groups outermost first, profile roles, assigned, own. */
	async roleOrder(u: UserDoc): Promise<string[]> {
		return this.roleOrders()(u);
	}

	/**
	 * roleOrder for many users (a search's): each group path's groups and each profile's roles (a call to the
	 * roles service) are looked up once, not once per user.
	 */
	private roleOrders(): (u: UserDoc) => Promise<string[]> {
		const groupsOf = new Map<string, Promise<string[]>>();
		const autoOf = new Map<string, Promise<string[]>>();
		const groupRoles = async (path: string): Promise<string[]> => {
			const groups: string[] = [];
			for (const p of ancestorGroupPaths(path)) {
				const g = await this.directory.groupByPath(p);
				if (g) groups.push(g.Uuid);
			}
			return groups;
		};
		return async (u) => {
			let groups = groupsOf.get(u.GroupPath);
			if (!groups) groupsOf.set(u.GroupPath, (groups = groupRoles(u.GroupPath)));
			if (u.IsGroup) return ["ROOT_GROUP", ...(await groups), u.Uuid];
			const profile = profileOf(u);
			let auto = autoOf.get(profile);
			if (!auto) autoOf.set(profile, (auto = this.roles.autoApplied(profile)));
			return [...new Set(["ROOT_GROUP", ...(await groups), ...(await auto), ...u.Roles, u.Uuid])];
		};
	}

	async authInfo(u: UserDoc): Promise<AuthInfo> {
		return { Uuid: u.Uuid, Login: u.Login ?? "", Profile: profileOf(u) as Profile, GroupPath: u.GroupPath, Roles: await this.roleOrder(u), Locked: isLocked(u), Hidden: u.Attributes.hidden === "true" };
	}

	/** GET /user/{Login}: a user or group the caller may read; NotFound otherwise (its existence is not disclosed). */
	async get(caller: Identity, login: string): Promise<PresentedUser> {
		const u = await this.directory.byLogin(login);
		if (!u || !hasPolicy(u.Policies, caller, "READ")) throw new NotFoundError(`User ${login} not found`, "user.notfound");
		return this.present(u, caller);
	}

	/** A user or group as the caller may see it, with its role stack. */
	async present(u: UserDoc, caller: Identity): Promise<PresentedUser> {
		return this.view(u, caller, await this.roles.getMany(await this.roleOrder(u)));
	}

	/** Users and groups as present shows them, with one call to the roles service for all of their roles. */
	private async presentMany(users: readonly UserDoc[], caller: Identity, roleOrder: (u: UserDoc) => Promise<string[]>): Promise<PresentedUser[]> {
		const orders = await Promise.all(users.map(roleOrder));
		const found = new Map((await this.roles.getMany([...new Set(orders.flat())])).map((r: Role) => [r.Uuid, r]));
		return users.map((u, i) => this.view(u, caller, orders[i].flatMap((uuid) => found.get(uuid) ?? [])));
	}

	private view(u: UserDoc, caller: Identity, roles: Role[]): PresentedUser {
		const editable = hasPolicy(u.Policies, caller, "WRITE");
		const view = publicUser(u);
		return { ...view, ...(editable ? {} : { Attributes: publicAttributes(view.Attributes as Record<string, string>) }), IsGroup: u.IsGroup, Roles: roles, PoliciesContextEditable: editable };
	}

	private userPolicies(login: string, creator: Identity | undefined) {
		const writers = [`user:${login}`, "profile:admin"];
		if (creator && !isAdmin(creator)) writers.push(`user:${creator.Login}`);
		return defaultPolicies("user", ["profile:standard", "profile:shared", "profile:admin"], writers);
	}

	async search(caller: Identity, p: { Queries?: UserQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND"; CountOnly?: boolean }) {
		const qs = p.Queries ?? [];
		const matchers = qs.map((q) => userMatcher(q));
		const needsRoles = qs.some((q) => q.HasRole);
		const roleOrder = this.roleOrders();
		const hits: UserDoc[] = [];
		for (const u of (await this.directory.all()) as UserDoc[]) {
			if (!hasPolicy(u.Policies, caller, "READ")) continue;
			if (!isAdmin(caller) && u.Attributes.hidden === "true") continue;
			if (matchers.length) {
				const order = needsRoles ? await roleOrder(u) : [];
				const ok = p.Operation === "AND" ? matchers.every((m) => m(u, order)) : matchers.some((m) => m(u, order));
				if (!ok) continue;
			}
			hits.push(u);
		}
		if (p.CountOnly) return { Total: hits.length };
		hits.sort((a, b) => Number(!!b.IsGroup) - Number(!!a.IsGroup) || (a.Login ?? a.GroupLabel ?? "").localeCompare(b.Login ?? b.GroupLabel ?? ""));
		const offset = p.Offset ?? 0;
		const page = p.Limit ? hits.slice(offset, offset + p.Limit) : hits.slice(offset);
		const shown = await this.presentMany(page, caller, roleOrder);
		return { Users: shown.filter((u) => !u.IsGroup), Groups: shown.filter((u) => u.IsGroup), Total: hits.length };
	}

	private async putUser(caller: Identity, body: UserBody): Promise<UserDoc> {
		const attrs = { ...(body.Attributes ?? {}) };
		for (const k of Object.keys(attrs)) if (PRIVATE_ATTRIBUTE.test(k)) throw new BadRequestError(`Attribute ${k} is reserved`);
		if (attrs.profile && !(attrs.profile in PROFILE_RANK && attrs.profile !== "anon")) throw new BadRequestError("Attribute profile must be admin, standard or shared");
		if (attrs.profile && PROFILE_RANK[attrs.profile] > PROFILE_RANK[caller.Profile]) throw new ForbiddenError("You cannot give a profile higher than your own");
		if (attrs.locks !== undefined) {
			try {
				if (!Array.isArray(JSON.parse(attrs.locks))) throw new Error();
			} catch {
				throw new BadRequestError('Attribute locks must be a JSON array such as ["logout"]');
			}
		}
		const groupPath = normalizeGroupPath(body.GroupPath);
		const all: readonly UserDoc[] = await this.directory.all();
		const existing: UserDoc | undefined = body.IsGroup
			? all.find((u: UserDoc) => u.IsGroup && (u.Uuid === body.Uuid || fullPathOf(u) === `${groupPath === "/" ? "" : groupPath}/${body.GroupLabel}`))
			: body.Uuid
				? all.find((u: UserDoc) => !u.IsGroup && u.Uuid === body.Uuid)
				: undefined; // Cells: a PUT without Uuid is a creation, refused (409, the login's unique index) if the login exists

		if (existing) {
			if (!hasPolicy(existing.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to edit this user");
			if (!isAdmin(caller)) {
				for (const k of ["profile", "locks", "hidden"]) if (k in attrs && attrs[k] !== existing.Attributes[k]) throw new ForbiddenError(`Only administrators can change ${k}`);
				if (body.GroupPath !== undefined && groupPath !== existing.GroupPath) throw new ForbiddenError("Only administrators can move users between groups");
			}
			const next: UserDoc = { ...existing, Attributes: { ...existing.Attributes, ...attrs }, GroupPath: body.GroupPath !== undefined ? groupPath : existing.GroupPath };
			for (const k of Object.keys(existing.Attributes)) if (PRIVATE_ATTRIBUTE.test(k)) next.Attributes[k] = existing.Attributes[k];
			if (attrs.locks !== undefined && !JSON.parse(attrs.locks).includes("logout")) {
				delete next.Attributes.failedConnections;
				next.LoginGuard = unlock(existing.LoginGuard);
			}
			if (body.Password && !existing.IsGroup) {
				if (body.Password.length < 8) throw new BadRequestError("Password must have at least 8 characters");
				if (caller.Uuid === existing.Uuid && !(await verifyPassword(body.OldPassword ?? "", existing.PasswordHash))) throw new UnauthorizedError("Old password is not correct", "password.mismatch");
				next.PasswordHash = await hashPassword(body.Password);
			}
			return this.save(next);
		}

		// Creation
		if (body.Uuid) throw new NotFoundError(`No user or group with Uuid ${body.Uuid}`, "user.notfound");
		if (body.GroupPath !== undefined && groupPath !== "/" && !(await this.directory.groupByPath(groupPath))) throw new BadRequestError(`Group ${groupPath} does not exist`);
		if (!isAdmin(caller) && groupPath !== caller.GroupPath && !groupPath.startsWith(`${caller.GroupPath === "/" ? "" : caller.GroupPath}/`)) throw new ForbiddenError("You can only create users in your own group");
		if (body.IsGroup) {
			if (!isAdmin(caller)) throw new ForbiddenError("Only administrators can create groups");
			const label = checkIdentifier("GroupLabel", body.GroupLabel, 255);
			return this.createGroup(groupPath, label, attrs);
		}
		const login = checkIdentifier("Login", body.Login, 255);
		if (!body.Password || body.Password.length < 8) throw new BadRequestError("Password is required and must have at least 8 characters");
		if (caller.Profile === "shared") throw new ForbiddenError("Shared users cannot create users");
		attrs.profile ||= "shared";
		delete attrs.failedConnections;
		return this.createUser(login, groupPath, attrs, await hashPassword(body.Password), caller);
	}

	private async createGroup(parent: string, label: string, attrs: Record<string, string>): Promise<UserDoc> {
		const uuid = randomUUID();
		await this.roles.ensure({ Uuid: uuid, Label: `Group ${label}`, GroupRole: true, Policies: defaultPolicies("role", ["profile:standard", "profile:shared"], ["profile:admin"]) });
		return this.createWithRole({ Uuid: uuid, GroupPath: parent, IsGroup: true, GroupLabel: label, Attributes: attrs, Roles: [], Policies: defaultPolicies("group", ["profile:standard", "profile:shared", "profile:admin"], ["profile:admin"]), CreatedAt: Math.floor(Date.now() / 1000) });
	}

	/** A user without a password hash only logs in through the directory it came from. */
	private async createUser(login: string, groupPath: string, attrs: Record<string, string>, passwordHash: string | undefined, creator: Identity | undefined): Promise<UserDoc> {
		const uuid = randomUUID();
		await this.roles.ensure({ Uuid: uuid, Label: `User ${login}`, UserRole: true, Policies: defaultPolicies("role", ["profile:standard"], [`user:${login}`, "profile:admin"]) });
		return this.createWithRole({ Uuid: uuid, Login: login, GroupPath: groupPath, Attributes: attrs, ...(passwordHash ? { PasswordHash: passwordHash } : {}), Roles: [], Policies: this.userPolicies(login, creator), CreatedAt: Math.floor(Date.now() / 1000) });
	}

	async putRoles(caller: Identity, body: UserBody): Promise<UserDoc> {
		if (!body.Uuid) throw new BadRequestError("Uuid is required");
		const found: UserDoc | undefined = await this.directory.byUuid(body.Uuid);
		const u = found && !found.IsGroup ? found : undefined;
		if (!u) throw new NotFoundError(`User ${body.Login} not found`, "user.notfound");
		if (!hasPolicy(u.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to edit this user");
		const wanted = [...new Set((body.Roles ?? []).map((r) => r.Uuid).filter((x): x is string => !!x))];
		const roles: Role[] = await this.roles.getMany(wanted);
		if (roles.length !== wanted.length) throw new BadRequestError("Unknown role in Roles");
		// Clients send back the roles the user was shown: the root, group, profile and personal roles it already
		// has are no change. Anyone else's personal or group role is not assignable: 403, as Cells answers,
		// rather than an answer that looks like success and dropped it.
		const held = new Set(await this.roleOrder(u));
		for (const r of roles) {
			if (held.has(r.Uuid)) continue;
			if (r.UserRole) throw new ForbiddenError(`Role ${r.Label} is the personal role of another user: it cannot be assigned`, "role.not.assignable");
			if (r.GroupRole || r.Uuid === "ROOT_GROUP") throw new ForbiddenError(`Role ${r.Label} is the role of a group: users get it by being in that group`, "role.not.assignable");
		}
		const auto: string[] = await this.roles.autoApplied(profileOf(u));
		const assigned = roles.filter((r: Role) => !r.UserRole && !r.GroupRole && r.Uuid !== "ROOT_GROUP" && !auto.includes(r.Uuid)).map((r) => r.Uuid);
		const changed = [...assigned.filter((r: string) => !u.Roles.includes(r)), ...u.Roles.filter((r: string) => !assigned.includes(r))];
		const changedRoles: Role[] = await this.roles.getMany(changed);
		for (const r of changedRoles) if (!hasPolicy(r.Policies, caller, "WRITE")) throw new ForbiddenError(`You are not allowed to assign role ${r.Label}`, "role.not.assignable");
		return this.save({ ...u, Roles: [...new Set(assigned)] });
	}

	async removeUserOrGroup(caller: Identity, login: string) {
		const all: readonly UserDoc[] = await this.directory.all();
		if (login.endsWith("/")) {
			const path = normalizeGroupPath(login);
			if (path === "/") throw new ForbiddenError("The root group cannot be deleted");
			const group = all.find((u) => u.IsGroup && fullPathOf(u) === path);
			if (!group) throw new NotFoundError(`Group ${path} not found`, "group.notfound");
			if (!hasPolicy(group.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to delete this group");
			if (caller.GroupPath === path || caller.GroupPath.startsWith(`${path}/`)) throw new ForbiddenError("You cannot delete your own group");
			const victims: UserDoc[] = await this.directory.deleteGroupTree(path);
			await this.roles.delete(victims.map((v) => v.Uuid));
			return { Success: true, NumRows: victims.length };
		}
		const u = all.find((x) => !x.IsGroup && x.Login === login);
		if (!u || !hasPolicy(u.Policies, caller, "READ")) throw new NotFoundError(`User ${login} not found`, "user.notfound");
		if (!hasPolicy(u.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to delete this user");
		if (u.Uuid === caller.Uuid) throw new ForbiddenError("You cannot delete yourself");
		await this.directory.delete(u);
		await this.roles.delete([u.Uuid]);
		return { Success: true, NumRows: 1 };
	}

	async checkPassword(login: string, password: string, ip: string | undefined): Promise<AuthInfo> {
		const settings = this.guard();
		const now = Date.now();
		const u: UserDoc | undefined = await this.directory.byLogin(login);
		// Logins that do not exist are throttled alike (in memory), or the waits would tell which ones do.
		const ghost: GhostGuard | undefined = u ? undefined : this.ghostGuard(login);
		const admission = admit(u ? u.LoginGuard : ghost?.guard, ip, now, settings);
		if (!admission.ok && admission.reason === "wait")
			throw new TooManyRequestsError(`Too many failed logins for this account from your address: retry in ${admission.retryAfter} s`, admission.retryAfter);
		if (!admission.ok)
			throw new UnauthorizedError(`Too many failed logins: this account refuses logins from new addresses until ${new Date(admission.until).toISOString()}`, "user.locked");
		const source = u?.Attributes[AUTH_SOURCE_ATTRIBUTE];
		if (!u || source) {
			// Unknown here, or a directory's user: the directory decides (its password is never stored here).
			const outcome = this.external ? await this.external.authenticate(login, password, source) : ({ status: "unknown" } as const);
			if (outcome.status === "ok") {
				const known = u ?? (await this.directory.byLogin(outcome.account.login));
				if (!known) return this.loggedIn(await this.provision(outcome.account), ip, now);
				// A local account of the same login is not the directory's to open.
				if (known.Attributes[AUTH_SOURCE_ATTRIBUTE] !== outcome.account.source) throw new UnauthorizedError("Login failed", "login.failed");
				// A user the last synchronisation did not find, found again by its directory, is not locked out by that.
				if (isLocked(known) && known.Attributes[AUTH_GONE_ATTRIBUTE] !== GONE_LOCKED) throw new UnauthorizedError("User is locked - Please contact your admin", "user.locked");
				return this.loggedIn(await this.refreshExternal(known, outcome.account), ip, now);
			}
			if (u) {
				if (isLocked(u)) throw new UnauthorizedError("User is locked - Please contact your admin", "user.locked");
				// An outage is no guess at the password: it does not count toward the lock. (Unknown logins are not
				// warned about: anyone can send those, as many as they like.)
				if (outcome.status === "unavailable") {
					this.warn(`Login of ${login} not checked by its directory: ${outcome.reason}`);
					throw new UnauthorizedError("Login failed: the directory of this account cannot be reached", "login.failed");
				}
				return this.loginFailed(u, ip, now, settings);
			}
		}
		const ok = await verifyPassword(password, u?.PasswordHash);
		if (!u) {
			if (ghost) {
				ghost.failed++;
				ghost.guard = recordFailure(ghost.guard, ip, ghost.failed, now, settings).guard;
			}
			throw new UnauthorizedError("Login failed", "login.failed");
		}
		if (isLocked(u)) throw new UnauthorizedError("User is locked - Please contact your admin", "user.locked");
		if (!ok) return this.loginFailed(u, ip, now, settings);
		return this.loggedIn(u, ip, now);
	}

	private async loggedIn(u: UserDoc, ip: string | undefined, now: number): Promise<AuthInfo> {
		await this.directory.recordLogin(u.Uuid, (current) => ({ failedConnections: null, lastConnected: Math.floor(now / 1000), loginGuard: recordSuccess(current.LoginGuard, ip, now) }));
		return this.authInfo(u);
	}

	private async loginFailed(u: UserDoc, ip: string | undefined, now: number, settings: GuardSettings): Promise<never> {
		// Counted on the stored record, in the write's transaction: guesses in parallel, or spread over the
		// nodes, each count toward the lock.
		let failed = 0;
		let locked = false;
		await this.directory.recordLogin(
			u.Uuid,
			(current) => {
				failed = Number(current.Attributes.failedConnections ?? 0) + 1;
				const out = recordFailure(current.LoginGuard, ip, failed, now, settings);
				locked = out.locked;
				return { failedConnections: failed, loginGuard: out.guard };
			},
			// A lock starting is announced: gateways drop what they cached of the account.
			() => locked,
		);
		if (locked) this.warn(`Account ${u.Login} refuses logins from new addresses ${settings.lockSeconds > 0 ? `for ${settings.lockSeconds} s` : "until an administrator unlocks it"} after ${failed} failed logins (the last from ${ip ?? "?"})`);
		throw new UnauthorizedError("Login failed", "login.failed");
	}

	/** The directory's attributes of an account, as its local user keeps them. */
	private externalAttributes(a: ExternalAccount): Record<string, string> {
		return {
			[AUTH_SOURCE_ATTRIBUTE]: a.source,
			[AUTH_DN_ATTRIBUTE]: a.dn,
			...(a.displayName ? { displayName: a.displayName } : {}),
			...(a.email ? { email: a.email } : {}),
			...(a.roles ? { [AUTH_ROLES_ATTRIBUTE]: JSON.stringify(a.roles) } : {}),
		};
	}

	/**
	 * The local user of a directory account seen for the first time (its first login, or a synchronisation): a
	 * standard user in the directory's group (DomainName, made when missing) or the root group, without a
	 * password of its own, with the roles its directory maps it to.
	 */
	private async provision(a: ExternalAccount, ensured?: Set<string>): Promise<UserDoc> {
		let groupPath = "/";
		if (a.groupLabel) {
			groupPath = joinGroupPath("/", checkIdentifier("DomainName", a.groupLabel, 255));
			if (!(await this.directory.groupByPath(groupPath))) {
				try {
					await this.createGroup("/", a.groupLabel, {});
				} catch (err) {
					// Made meanwhile by another login of the same directory.
					if (!(err instanceof ConflictError)) throw err;
					this.directory.invalidate();
				}
			}
		}
		try {
			const made = await this.createUser(checkIdentifier("Login", a.login, 255), groupPath, { profile: "standard", ...this.externalAttributes(a) }, undefined, undefined);
			return a.roles?.length ? await this.save({ ...made, Roles: await this.directoryRoles(made, a.roles, ensured) }) : made;
		} catch (err) {
			if (!(err instanceof ConflictError)) throw err;
			// The same account's first login on another request or node: that one made it.
			this.directory.invalidate();
			const made = await this.directory.byLogin(a.login);
			if (!made || made.Attributes[AUTH_SOURCE_ATTRIBUTE] !== a.source) throw new UnauthorizedError("Login failed", "login.failed");
			return made;
		}
	}

	/**
	 * The user's explicit roles with those its directory gave it last replaced by `roles`, each made when
	 * missing (an admin's own roles, and its edits of these ones, are kept). `ensured`: the roles a
	 * synchronisation made sure of already, each asked of the roles service once a run, not once a user.
	 */
	private async directoryRoles(u: UserDoc, roles: string[], ensured?: Set<string>): Promise<string[]> {
		let previous: string[] = [];
		try {
			const v: unknown = JSON.parse(u.Attributes[AUTH_ROLES_ATTRIBUTE] ?? "[]");
			if (Array.isArray(v)) previous = v.filter((x): x is string => typeof x === "string");
		} catch {
			// Unreadable: nothing to take back.
		}
		for (const id of roles) {
			if (u.Roles.includes(id) || ensured?.has(id)) continue;
			await this.roles.ensure({ Uuid: id, Label: id, Policies: defaultPolicies("role", ["profile:standard"], ["profile:admin"]) });
			ensured?.add(id);
		}
		return [...u.Roles.filter((r) => !previous.includes(r) && !roles.includes(r)), ...roles];
	}

	/**
	 * A directory user seen again (a login, a synchronisation): its display name, mail, DN and roles as the
	 * directory has them now (the roles it gave before taken back when it maps none any more); the lock of a
	 * user the synchronisation had not found is lifted.
	 */
	private async refreshExternal(u: UserDoc, a: ExternalAccount, ensured?: Set<string>): Promise<UserDoc> {
		const attrs = this.externalAttributes(a);
		const gone = u.Attributes[AUTH_GONE_ATTRIBUTE];
		const hadRoles = AUTH_ROLES_ATTRIBUTE in u.Attributes;
		const roles = a.roles || hadRoles ? await this.directoryRoles(u, a.roles ?? [], ensured) : u.Roles;
		const same = Object.entries(attrs).every(([k, v]) => u.Attributes[k] === v) && (!!a.roles || !hadRoles);
		if (!gone && same && roles.join("\n") === u.Roles.join("\n")) return u;
		const { [AUTH_GONE_ATTRIBUTE]: _gone, [AUTH_ROLES_ATTRIBUTE]: _roles, ...kept } = { ...u.Attributes, ...attrs };
		if (a.roles) kept[AUTH_ROLES_ATTRIBUTE] = JSON.stringify(a.roles);
		if (gone === GONE_LOCKED) kept.locks = JSON.stringify(locksOf(u).filter((l) => l !== "logout"));
		return this.save({ ...u, Roles: roles, Attributes: kept });
	}

	/**
	 * Brings the local users of directory `source` in line with `accounts`, all its users when `complete`: the
	 * new ones made and the others refreshed as a login does. Users it no longer has are locked, not deleted:
	 * a directory loses entries for reasons that are undone (a filter or an OU edited, a server answering from
	 * a partial replica), and deleting would take their files, shares and roles for good; the lock keeps them
	 * out until the directory has them again (the next synchronisation, or a login, lifts it) or an admin
	 * deletes them. When the list is not complete nobody is taken for gone.
	 */
	async syncExternal(source: string, accounts: ExternalAccount[], complete: boolean): Promise<SyncReport> {
		const report: SyncReport = { created: 0, updated: 0, locked: 0, unlocked: 0, skipped: [], failed: [] };
		const seen = new Set<string>();
		const ensured = new Set<string>();
		// Read once for the run: each write clears the directory's cache, and reading it again per account would
		// load every user once per account. Users this run does not write stay as read here.
		const before = await this.directory.all();
		const byLogin = new Map(before.filter((u) => u.Login !== undefined).map((u) => [u.Login as string, u]));
		for (const a of accounts) {
			if (a.source !== source) throw new BadRequestError(`Account ${a.login} is not from directory ${source}`);
			seen.add(a.login);
			try {
				const known = byLogin.get(a.login);
				if (!known) {
					byLogin.set(a.login, await this.provision(a, ensured));
					report.created++;
				} else if (known.IsGroup || known.Attributes[AUTH_SOURCE_ATTRIBUTE] !== source) {
					report.skipped.push(a.login);
				} else {
					const saved = await this.refreshExternal(known, a, ensured);
					byLogin.set(a.login, saved);
					if (saved !== known) report.updated++;
					if (known.Attributes[AUTH_GONE_ATTRIBUTE]) report.unlocked++;
				}
			} catch (err) {
				// One entry this store cannot take (a login or role id it refuses) does not stop the others.
				report.failed.push(`${a.login}: ${(err as Error).message}`);
			}
		}
		if (!complete) return report;
		for (const u of before) {
			if (u.IsGroup || u.Attributes[AUTH_SOURCE_ATTRIBUTE] !== source || seen.has(u.Login ?? "") || u.Attributes[AUTH_GONE_ATTRIBUTE]) continue;
			const locks = locksOf(u);
			// A lock already there is an admin's: lifting it is theirs too, so the user is only marked gone.
			const mine = !locks.includes("logout");
			const attrs = { ...u.Attributes, [AUTH_GONE_ATTRIBUTE]: mine ? GONE_LOCKED : GONE_MARKED, ...(mine ? { locks: JSON.stringify([...locks, "logout"]) } : {}) };
			await this.save({ ...u, Attributes: attrs });
			report.locked++;
		}
		return report;
	}

	/** The throttling state of a login that does not exist (kept in memory, bounded). */
	private ghostGuard(login: string): GhostGuard {
		const ghosts = this.ghosts;
		let g = ghosts.get(login);
		if (!g) {
			if (ghosts.size >= MAX_GHOSTS) ghosts.clear();
			g = { failed: 0, guard: undefined };
			ghosts.set(login, g);
		}
		return g;
	}
}
