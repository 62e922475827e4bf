/**
 * users — owns users and groups (a group is a user record with IsGroup), their password hashes, profiles,
 * locks and explicitly assigned roles; creates each one's personal role in the roles service.
 * Emits `identity.changed` after any change. Consumes `identity.changed` (drops its cache).
 */
import type { Context, ServiceSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DatabaseMixin } from "../mixins/database.mixin";
import { UsersRepo, importNedbUsers } from "../lib/db/users";
import { importNedbOnce } from "../lib/db/nedb-import";
import { UserDirectory } from "../lib/identity/user-directory";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, TooManyRequestsError, UnauthorizedError } from "../lib/errors";
import { isAdmin, PROFILE_RANK, type Identity, type Meta } from "../lib/auth/identity";
import { hasPolicy, requireUser, defaultPolicies } from "../lib/identity/resource-policy";
import { checkIdentifier, normalizeGroupPath, ancestorGroupPaths } from "../lib/identity/validate";
import { hashPassword, verifyPassword, generatePassword } from "../lib/auth/password";
import { loadConfig } from "../lib/config";
import { isLocked, locksOf, matchesQuery, profileOf, publicUser, publicAttributes, fullPathOf, PRIVATE_ATTRIBUTE, type UserDoc, type UserQuery } from "../lib/identity/users";
import type { Role } from "../lib/identity/roles";
import { searchParams } from "../lib/cells/params";
import { admit, recordFailure, recordSuccess, unlock, type GuardSettings, type LoginGuard } from "../lib/auth/login-guard";

/** Logins that do not exist whose failures are remembered (beyond, the memory starts afresh). */
const MAX_GHOSTS = 10_000;
interface GhostGuard {
	failed: number;
	guard: LoginGuard | undefined;
}

const userBody = {
	Login: { type: "string", max: 255 },
	Uuid: { type: "string", optional: true, max: 128 },
	Password: { type: "string", optional: true, max: 1024 },
	OldPassword: { type: "string", optional: true, max: 1024 },
	GroupPath: { type: "string", optional: true, max: 1024 },
	IsGroup: { type: "boolean", optional: true },
	GroupLabel: { type: "string", optional: true, max: 255 },
	Attributes: { type: "record", optional: true, key: { type: "string", max: 255 }, value: { type: "string", max: 65536 } },
	Roles: { type: "array", optional: true, items: "object" },
	Policies: { type: "array", optional: true, items: "object" },
	PoliciesContextEditable: { type: "boolean", optional: true },
	LastConnected: { type: "number", optional: true },
} as const;

type UserBody = { Login: string; Uuid?: string; Password?: string; OldPassword?: string; GroupPath?: string; IsGroup?: boolean; GroupLabel?: string; Attributes?: Record<string, string>; Roles?: { Uuid?: string }[]; Policies?: UserDoc["Policies"] };

const UsersService: ServiceSchema = {
	name: "users",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		search: {
			rest: "POST /user",
			httpCache: true,
			retryPolicy: { enabled: true },
			params: searchParams,
			async handler(ctx: Context<{ Queries?: UserQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND"; CountOnly?: boolean }, Meta>) {
				const caller = requireUser(ctx);
				return this.search(caller, ctx.params);
			},
		},
		get: {
			rest: "GET /user/:Login",
			httpCache: true,
			retryPolicy: { enabled: true },
			params: { Login: { type: "string", min: 1, max: 255 } },
			async handler(ctx: Context<{ Login: string }, Meta>) {
				const caller = requireUser(ctx);
				const u = await this.byLogin(ctx.params.Login);
				if (!u || !hasPolicy(u.Policies, caller, "READ")) throw new NotFoundError(`User ${ctx.params.Login} not found`, "user.notfound");
				return this.present(u, caller);
			},
		},
		put: {
			rest: "PUT /user/:Login",
			params: userBody,
			async handler(ctx: Context<UserBody, Meta>) {
				const caller = requireUser(ctx);
				// A group created meanwhile by another request at the same path: done again, this PUT now updates
				// it, as it would have coming second. A taken login stays a 409: Cells refuses creating it.
				for (let attempt = 1; ; attempt++) {
					try {
						return this.present(await this.putUser(ctx, caller, ctx.params), caller);
					} catch (err) {
						if (!(err instanceof ConflictError) || !ctx.params.IsGroup || attempt >= 5) throw err;
						// The winner may be another node's, whose broadcast has not reached this cache yet.
						(this.directory as UserDirectory).invalidate();
					}
				}
			},
		},
		remove: {
			rest: "DELETE /user/:Login",
			params: { Login: { type: "string", min: 1, max: 1024 } },
			async handler(ctx: Context<{ Login: string }, Meta>) {
				return this.removeUserOrGroup(ctx, requireUser(ctx), ctx.params.Login);
			},
		},
		putRoles: {
			rest: "PUT /user/roles/:Login",
			params: userBody,
			async handler(ctx: Context<UserBody, Meta>) {
				const caller = requireUser(ctx);
				return this.present(await this.putRoles(ctx, caller, ctx.params), caller);
			},
		},

		// ---- internal ----
		authInfo: {
			retryPolicy: { enabled: true },
			params: { uuid: "string" },
			async handler(ctx: Context<{ uuid: string }>) {
				const u: UserDoc | undefined = await this.directory.byUuid(ctx.params.uuid);
				return u && !u.IsGroup ? this.authInfo(u) : null;
			},
		},
		checkPassword: {
			params: { login: { type: "string", max: 1024 }, password: { type: "string", max: 1024 }, ip: { type: "string", optional: true, max: 128 } },
			async handler(ctx: Context<{ login: string; password: string; ip?: string }>) {
				return this.checkPassword(ctx, ctx.params.login, ctx.params.password, ctx.params.ip);
			},
		},
		byLogin: {
			retryPolicy: { enabled: true },
			params: { login: "string" },
			async handler(ctx: Context<{ login: string }>) {
				const u = await this.byLogin(ctx.params.login);
				if (!u) throw new NotFoundError(`User ${ctx.params.login} not found`, "user.notfound");
				return publicUser(u);
			},
		},
		byEmail: {
			retryPolicy: { enabled: true },
			params: { email: "string" },
			async handler(ctx: Context<{ email: string }>) {
				const u: UserDoc | undefined = await this.directory.byEmail(ctx.params.email);
				if (!u) throw new NotFoundError("No user with this email", "user.notfound");
				return publicUser(u);
			},
		},
		setPassword: {
			params: { login: "string", password: { type: "string", min: 8, max: 1024 } },
			async handler(ctx: Context<{ login: string; password: string }>) {
				const u = await this.byLogin(ctx.params.login);
				if (!u) throw new NotFoundError(`User ${ctx.params.login} not found`, "user.notfound");
				const { failedConnections, ...attrs } = u.Attributes;
				attrs.locks = JSON.stringify(locksOf(u).filter((l) => l !== "logout"));
				// The reset proved the mailbox: the owner may log in from anywhere again (the guesses were at the old password).
				await this.save(ctx, { ...u, PasswordHash: await hashPassword(ctx.params.password), Attributes: attrs, LoginGuard: unlock(u.LoginGuard) });
				return { Success: true };
			},
		},
		ensureAdmin: {
			params: { login: { type: "string", optional: true }, password: { type: "string", optional: true } },
			async handler(ctx: Context<{ login?: string; password?: string }>) {
				const cfg = loadConfig();
				const login = ctx.params.login || cfg.adminLogin;
				if (await this.byLogin(login)) return { created: false };
				const password = ctx.params.password || cfg.adminPassword || generatePassword();
				const uuid = randomUUID();
				await ctx.call("roles.ensure", { Uuid: uuid, Label: `User ${login}`, UserRole: true, Policies: defaultPolicies("role", ["profile:standard"], ["profile:admin"]) });
				const created = await this.createWithRole(ctx, {
					Uuid: uuid,
					Login: login,
					GroupPath: "/",
					Attributes: { profile: "admin", displayName: "Administrator" },
					PasswordHash: await hashPassword(password),
					Roles: [],
					Policies: this.userPolicies(login, undefined),
					CreatedAt: Math.floor(Date.now() / 1000),
				}).then(
					() => true,
					// Another node made the administrator first.
					(err: unknown) => (err instanceof ConflictError ? false : Promise.reject(err)),
				);
				if (!created) return { created: false };
				return { created: true, login, password: ctx.params.password || cfg.adminPassword ? undefined : password };
			},
		},
	},
	events: {
		"identity.changed"() {
			(this.directory as UserDirectory | undefined)?.invalidate();
		},
	},
	methods: {
		all(): Promise<readonly UserDoc[]> {
			return (this.directory as UserDirectory).all();
		},
		async byLogin(login: string): Promise<UserDoc | undefined> {
			return (this.directory as UserDirectory).byLogin(login);
		},
		async groupByPath(path: string): Promise<UserDoc | undefined> {
			return (this.directory as UserDirectory).groupByPath(path);
		},
		async save(_ctx: Context, doc: UserDoc): Promise<UserDoc> {
			const saved = await (this.directory as UserDirectory).save(doc);
			if (!saved) throw new NotFoundError(`No user or group with Uuid ${doc.Uuid}`, "user.notfound");
			return saved;
		},
		async saveQuietly(doc: UserDoc): Promise<void> {
			await (this.directory as UserDirectory).saveQuietly(doc);
		},
		/**
		 * Inserts a new user or group whose personal role was just ensured; when the insert loses to another
		 * (ConflictError: the login or path is taken), that role, which nobody else holds, goes again.
		 */
		async createWithRole(ctx: Context, doc: UserDoc): Promise<UserDoc> {
			try {
				return await (this.directory as UserDirectory).create(doc);
			} catch (err) {
				if (err instanceof ConflictError) await ctx.call("roles.delete", { uuids: [doc.Uuid] });
				throw err;
			}
		},
		/** Role uuids in the order they apply: root, groups outermost first, profile roles, assigned, own. */
		async roleOrder(u: UserDoc): Promise<string[]> {
			const groups: string[] = [];
			for (const p of ancestorGroupPaths(u.GroupPath)) {
				const g = await this.groupByPath(p);
				if (g) groups.push(g.Uuid);
			}
			if (u.IsGroup) return ["ROOT_GROUP", ...groups, u.Uuid];
			const auto: string[] = await this.broker.call("roles.autoApplied", { profile: profileOf(u) });
			return [...new Set(["ROOT_GROUP", ...groups, ...auto, ...u.Roles, u.Uuid])];
		},
		async authInfo(u: UserDoc) {
			return { Uuid: u.Uuid, Login: u.Login, Profile: profileOf(u), GroupPath: u.GroupPath, Roles: await this.roleOrder(u), Locked: isLocked(u), Hidden: u.Attributes.hidden === "true" };
		},
		async present(u: UserDoc, caller: Identity) {
			const roles: Role[] = await this.broker.call("roles.getMany", { uuids: await this.roleOrder(u) });
			const editable = hasPolicy(u.Policies, caller, "WRITE");
			const view = publicUser(u);
			return { ...view, ...(editable ? {} : { Attributes: publicAttributes(view.Attributes as Record<string, string>) }), Roles: roles, PoliciesContextEditable: editable };
		},
		userPolicies(login: string, creator: Identity | undefined) {
			const writers = [`user:${login}`, "profile:admin"];
			if (creator && !isAdmin(creator)) writers.push(`user:${creator.Login}`);
			return defaultPolicies("user", ["profile:standard", "profile:shared", "profile:admin"], writers);
		},
		async search(caller: Identity, p: { Queries?: UserQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND"; CountOnly?: boolean }) {
			const qs = p.Queries ?? [];
			const hits: UserDoc[] = [];
			for (const u of (await this.all()) as UserDoc[]) {
				if (!hasPolicy(u.Policies, caller, "READ")) continue;
				if (!isAdmin(caller) && u.Attributes.hidden === "true") continue;
				if (qs.length) {
					const needsRoles = qs.some((q) => q.HasRole);
					const order = needsRoles ? await this.roleOrder(u) : [];
					const ok = p.Operation === "AND" ? qs.every((q) => matchesQuery(u, q, order)) : qs.some((q) => matchesQuery(u, q, order));
					if (!ok) continue;
				}
				hits.push(u);
			}
			if (p.CountOnly) return { Total: hits.length };
			hits.sort((a, b) => Number(!!b.IsGroup) - Number(!!a.IsGroup) || (a.Login ?? a.GroupLabel ?? "").localeCompare(b.Login ?? b.GroupLabel ?? ""));
			const offset = p.Offset ?? 0;
			const page = p.Limit ? hits.slice(offset, offset + p.Limit) : hits.slice(offset);
			const shown = await Promise.all(page.map((u) => this.present(u, caller)));
			return { Users: shown.filter((u) => !u.IsGroup), Groups: shown.filter((u) => u.IsGroup), Total: hits.length };
		},
		async putUser(ctx: Context<unknown, Meta>, caller: Identity, body: UserBody): Promise<UserDoc> {
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
			const all: readonly UserDoc[] = await this.all();
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
				return this.save(ctx, next);
			}

			// Creation
			if (body.Uuid) throw new NotFoundError(`No user or group with Uuid ${body.Uuid}`, "user.notfound");
			if (body.GroupPath !== undefined && groupPath !== "/" && !(await this.groupByPath(groupPath))) throw new BadRequestError(`Group ${groupPath} does not exist`);
			if (!isAdmin(caller) && groupPath !== caller.GroupPath && !groupPath.startsWith(`${caller.GroupPath === "/" ? "" : caller.GroupPath}/`)) throw new ForbiddenError("You can only create users in your own group");
			const uuid = randomUUID();
			if (body.IsGroup) {
				if (!isAdmin(caller)) throw new ForbiddenError("Only administrators can create groups");
				const label = checkIdentifier("GroupLabel", body.GroupLabel, 255);
				await ctx.call("roles.ensure", { Uuid: uuid, Label: `Group ${label}`, GroupRole: true, Policies: defaultPolicies("role", ["profile:standard", "profile:shared"], ["profile:admin"]) });
				return this.createWithRole(ctx, { Uuid: uuid, GroupPath: groupPath, IsGroup: true, GroupLabel: label, Attributes: attrs, Roles: [], Policies: defaultPolicies("group", ["profile:standard", "profile:shared", "profile:admin"], ["profile:admin"]), CreatedAt: Math.floor(Date.now() / 1000) });
			}
			const login = checkIdentifier("Login", body.Login, 255);
			if (!body.Password || body.Password.length < 8) throw new BadRequestError("Password is required and must have at least 8 characters");
			if (caller.Profile === "shared") throw new ForbiddenError("Shared users cannot create users");
			attrs.profile ||= "shared";
			delete attrs.failedConnections;
			await ctx.call("roles.ensure", { Uuid: uuid, Label: `User ${login}`, UserRole: true, Policies: defaultPolicies("role", ["profile:standard"], [`user:${login}`, "profile:admin"]) });
			return this.createWithRole(ctx, { Uuid: uuid, Login: login, GroupPath: groupPath, Attributes: attrs, PasswordHash: await hashPassword(body.Password), Roles: [], Policies: this.userPolicies(login, caller), CreatedAt: Math.floor(Date.now() / 1000) });
		},
		async putRoles(ctx: Context<unknown, Meta>, caller: Identity, body: UserBody): Promise<UserDoc> {
			if (!body.Uuid) throw new BadRequestError("Uuid is required");
			const found: UserDoc | undefined = await (this.directory as UserDirectory).byUuid(body.Uuid);
			const u = found && !found.IsGroup ? found : undefined;
			if (!u) throw new NotFoundError(`User ${body.Login} not found`, "user.notfound");
			if (!hasPolicy(u.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to edit this user");
			const wanted = [...new Set((body.Roles ?? []).map((r) => r.Uuid).filter((x): x is string => !!x))];
			const roles: Role[] = await ctx.call("roles.getMany", { uuids: wanted });
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
			const auto: string[] = await ctx.call("roles.autoApplied", { profile: profileOf(u) });
			const assigned = roles.filter((r: Role) => !r.UserRole && !r.GroupRole && r.Uuid !== "ROOT_GROUP" && !auto.includes(r.Uuid)).map((r) => r.Uuid);
			const changed = [...assigned.filter((r: string) => !u.Roles.includes(r)), ...u.Roles.filter((r: string) => !assigned.includes(r))];
			const changedRoles: Role[] = await ctx.call("roles.getMany", { uuids: changed });
			for (const r of changedRoles) if (!hasPolicy(r.Policies, caller, "WRITE")) throw new ForbiddenError(`You are not allowed to assign role ${r.Label}`, "role.not.assignable");
			return this.save(ctx, { ...u, Roles: [...new Set(assigned)] });
		},
		async removeUserOrGroup(ctx: Context<unknown, Meta>, caller: Identity, login: string) {
			const all: readonly UserDoc[] = await this.all();
			if (login.endsWith("/")) {
				const path = normalizeGroupPath(login);
				if (path === "/") throw new ForbiddenError("The root group cannot be deleted");
				const group = all.find((u) => u.IsGroup && fullPathOf(u) === path);
				if (!group) throw new NotFoundError(`Group ${path} not found`, "group.notfound");
				if (!hasPolicy(group.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to delete this group");
				if (caller.GroupPath === path || caller.GroupPath.startsWith(`${path}/`)) throw new ForbiddenError("You cannot delete your own group");
				const victims: UserDoc[] = await (this.directory as UserDirectory).deleteGroupTree(path);
				await ctx.call("roles.delete", { uuids: victims.map((v) => v.Uuid) });
				return { Success: true, NumRows: victims.length };
			}
			const u = all.find((x) => !x.IsGroup && x.Login === login);
			if (!u || !hasPolicy(u.Policies, caller, "READ")) throw new NotFoundError(`User ${login} not found`, "user.notfound");
			if (!hasPolicy(u.Policies, caller, "WRITE")) throw new ForbiddenError("You are not allowed to delete this user");
			if (u.Uuid === caller.Uuid) throw new ForbiddenError("You cannot delete yourself");
			await (this.directory as UserDirectory).delete(u);
			await ctx.call("roles.delete", { uuids: [u.Uuid] });
			return { Success: true, NumRows: 1 };
		},
		async checkPassword(ctx: Context, login: string, password: string, ip: string | undefined) {
			const cfg = loadConfig();
			const settings: GuardSettings = { maxFailed: cfg.maxFailedLogins, lockSeconds: cfg.loginLockDuration, delayMaxSeconds: cfg.loginDelayMax };
			const now = Date.now();
			const u: UserDoc | undefined = await this.byLogin(login);
			// Logins that do not exist are throttled alike (in memory), or the waits would tell which ones do.
			const ghost: GhostGuard | undefined = u ? undefined : this.ghostGuard(login);
			const admission = admit(u ? u.LoginGuard : ghost?.guard, ip, now, settings);
			if (!admission.ok && admission.reason === "wait")
				throw new TooManyRequestsError(`Too many failed logins for this account from your address: retry in ${admission.retryAfter} s`, admission.retryAfter);
			if (!admission.ok)
				throw new UnauthorizedError(`Too many failed logins: this account refuses logins from new addresses until ${new Date(admission.until).toISOString()}`, "user.locked");
			const ok = await verifyPassword(password, u?.PasswordHash);
			if (!u) {
				if (ghost) {
					ghost.failed++;
					ghost.guard = recordFailure(ghost.guard, ip, ghost.failed, now, settings).guard;
				}
				throw new UnauthorizedError("Login failed", "login.failed");
			}
			if (isLocked(u)) throw new UnauthorizedError("User is locked - Please contact your admin", "user.locked");
			if (!ok) {
				const failed = Number(u.Attributes.failedConnections ?? 0) + 1;
				const { guard, locked } = recordFailure(u.LoginGuard, ip, failed, now, settings);
				const next: UserDoc = { ...u, Attributes: { ...u.Attributes, failedConnections: String(failed) }, LoginGuard: guard };
				if (locked) {
					this.logger.warn(`Account ${u.Login} refuses logins from new addresses ${settings.lockSeconds > 0 ? `for ${settings.lockSeconds} s` : "until an administrator unlocks it"} after ${failed} failed logins (the last from ${ip ?? "?"})`);
					await this.save(ctx, next);
				} else await this.saveQuietly(next);
				throw new UnauthorizedError("Login failed", "login.failed");
			}
			const { failedConnections, ...attrs } = u.Attributes;
			await this.saveQuietly({ ...u, Attributes: attrs, LastConnected: Math.floor(now / 1000), LoginGuard: recordSuccess(u.LoginGuard, ip, now) });
			return this.authInfo(u);
		},
		/** The throttling state of a login that does not exist (kept in memory, bounded). */
		ghostGuard(login: string): GhostGuard {
			const ghosts: Map<string, GhostGuard> = (this.ghosts ??= new Map());
			let g = ghosts.get(login);
			if (!g) {
				if (ghosts.size >= MAX_GHOSTS) ghosts.clear();
				g = { failed: 0, guard: undefined };
				ghosts.set(login, g);
			}
			return g;
		},
	},
	async started() {
		const report = await importNedbOnce(this.db, loadConfig().dataDir, "users", (trx, docs) =>
			importNedbUsers(trx, docs, (doc, why) => this.logger.warn(`NeDB user document ${doc._id} not imported: ${why}`)),
		);
		if (report.imported) this.logger.info(`Imported ${report.documents} users and groups from the NeDB store (kept as ${report.backup})`);
		this.directory = new UserDirectory(new UsersRepo(this.db), (change) => this.broker.broadcast("identity.changed", change));
	},
};

export = UsersService;
