/**
 * tokens — login sessions and their rotating refresh tokens (for the auth service), personal access tokens,
 * impersonation tokens, document tokens and password-reset keys. Secrets are stored as sha256 only.
 * Emits: `token.revoked` (broadcast, {Kind, SessionIds?|TokenIds?, UserUuid?, Reason?}) after any revocation;
 *        `audit.log` {action: "token.impersonate", actor, target, …}.
 * Calls: `users.byLogin` {login}, `users.byEmail` {email}, `users.setPassword` {login, password}, `tree.stat` {Node},
 *        `mailer.queue` {to, templateId: ResetPassword | ResetPasswordDone, templateData} (the reset mails).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { LeasesRepo, type Db } from "../lib/db";
import { importNedbOnce } from "../lib/db/nedb-import";
import { TokensRepo } from "../lib/db/tokens";
import { PeriodicLease } from "../lib/cluster/periodic";
import { isAdmin, type Identity, type Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { loadConfig } from "../lib/config";
import { BadRequestError, ForbiddenError, NotFoundError, ServiceUnavailableError } from "../lib/errors";
import { checkName, checkScopes, checkText, sha256 } from "../lib/tokens/format";
import { systemClock, type Clock, type PatType } from "../lib/tokens/model";
import { Sessions } from "../lib/tokens/sessions";
import { PersonalTokens, toApiToken } from "../lib/tokens/personal";
import { RESET_TTL, ResetKeys } from "../lib/tokens/reset";
import { randomUUID } from "node:crypto";
import { broadcast, call, emit, type MailTemplateId, type PublicUser, type TokenRevoked, serviceRuns } from "../lib/contracts";

/** Impersonation tokens without an explicit expiry live one hour. */
const IMPERSONATION_TTL = 3600;
/** Document tokens slide by 30 minutes (Cells' documentTokensRefresh default). */
const DOCUMENT_WINDOW = 30 * 60;
/** The reset-token request always takes at least this long, found or not. */
const RESET_MIN_MS = 250;
const RESET_ANSWER = { Success: true, Message: "If this account exists, an email has been sent with instructions to reset the password." };
const PURGE_EVERY_MS = 10 * 60 * 1000;

/** A user (not a group) the tokens are made for. */
type UserRecord = PublicUser & { Login: string };
interface TokenParams {
	UserLogin?: string;
	Label?: string;
	ExpiresAt?: number;
	AutoRefresh?: number;
	AutoRefreshWindow?: number;
	Scopes?: string[];
}

const id = { type: "string", min: 1, max: 255 } as const;
const tokenRequestParams = {
	UserLogin: { type: "string", optional: true, max: 255 },
	Label: { type: "string", optional: true, max: 255 },
	ExpiresAt: { type: "number", optional: true, integer: true, min: 0 },
	AutoRefresh: { type: "number", optional: true, integer: true, min: 0 },
	AutoRefreshWindow: { type: "number", optional: true, integer: true, min: 0 },
	Scopes: { type: "array", optional: true, items: "string", max: 32 },
} as const;

const TokensService: ServiceSchema<ServiceSettingSchema, TokensMethods, TokensVars> = {
	name: "tokens",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		// ---- internal: sessions (auth service) ----
		createSession: {
			params: { userUuid: id, login: id, ip: { type: "string", optional: true, max: 128 }, userAgent: { type: "string", optional: true, max: 1024 } },
			handler(this: TokensThis, ctx: Context<{ userUuid: string; login: string; ip?: string; userAgent?: string }, Meta>) {
				return this.sessions.create(ctx.params);
			},
		},
		refreshSession: {
			params: { refreshToken: { type: "string", min: 1, max: 512 } },
			async handler(this: TokensThis, ctx: Context<{ refreshToken: string }, Meta>) {
				const out = await this.sessions.refresh(ctx.params.refreshToken);
				if (out.ok) return out.session;
				if (out.reused) {
					this.logger.warn(`Refresh token reuse on session ${out.sessionId} (user ${out.userUuid}, ip ${ctx.meta.ip ?? "?"}): session revoked`);
					this.revoked({ Kind: "session", ...(out.sessionId ? { SessionIds: [out.sessionId] } : {}), UserUuid: out.userUuid, Reason: "refresh.reuse" });
				}
				throw out.error;
			},
		},
		getSession: {
			read: true,
			params: { sessionId: id },
			handler(this: TokensThis, ctx: Context<{ sessionId: string }, Meta>) {
				return this.sessions.get(ctx.params.sessionId);
			},
		},
		deleteSession: {
			params: { sessionId: id },
			async handler(this: TokensThis, ctx: Context<{ sessionId: string }, Meta>) {
				const deleted = await this.sessions.delete(ctx.params.sessionId);
				if (deleted) this.revoked({ Kind: "session", SessionIds: [ctx.params.sessionId] });
				return { deleted };
			},
		},
		// Internal: a logout carrying only the refresh cookie ends the session if the cookie's secret is current.
		endSessionWithRefresh: {
			params: { refreshToken: { type: "string", max: 512 } },
			async handler(this: TokensThis, ctx: Context<{ refreshToken: string }, Meta>) {
				const sessionId = await this.sessions.endWithRefresh(ctx.params.refreshToken);
				if (sessionId) this.revoked({ Kind: "session", SessionIds: [sessionId] });
				return { deleted: !!sessionId };
			},
		},
		deleteUserSessions: {
			params: { userUuid: id },
			handler(this: TokensThis, ctx: Context<{ userUuid: string }, Meta>) {
				return this.dropUserSessions(ctx.params.userUuid);
			},
		},

		// ---- internal: personal tokens (auth service) ----
		resolvePersonal: {
			params: { token: { type: "string", min: 1, max: 512 } },
			handler(this: TokensThis, ctx: Context<{ token: string }, Meta>) {
				return this.personal.resolve(ctx.params.token);
			},
		},
		revokeValue: {
			params: { token: { type: "string", min: 1, max: 512 } },
			async handler(this: TokensThis, ctx: Context<{ token: string }, Meta>) {
				const doc = await this.personal.removeByValue(ctx.params.token);
				if (!doc) return { Success: false, Message: "Token not found" };
				this.revoked({ Kind: "personal", TokenIds: [doc._id], UserUuid: doc.UserUuid });
				return { Success: true, Message: "Token successfully invalidated" };
			},
		},

		// ---- REST: personal access tokens ----
		generatePersonal: {
			rest: "POST /auth/token/personal",
			params: tokenRequestParams,
			async handler(this: TokensThis, ctx: Context<TokenParams, Meta>) {
				const caller = requireUser(ctx);
				this.checkCanMint(caller);
				const login = ctx.params.UserLogin ? checkName(ctx.params.UserLogin, "UserLogin") : caller.Login;
				let target: { Uuid: string; Login: string };
				if (login === caller.Login) target = { Uuid: caller.Uuid, Login: caller.Login };
				else if (!isAdmin(caller)) throw new ForbiddenError("You can only create personal access tokens for yourself");
				else target = await this.userByLogin(ctx, login);
				const { token, doc } = await this.personal.create({
					Kind: "personal",
					UserUuid: target.Uuid,
					UserLogin: target.Login,
					Label: checkText(ctx.params.Label || "Personal Access Token", "Label"),
					Scopes: checkScopes(ctx.params.Scopes),
					ExpiresAt: ctx.params.ExpiresAt || undefined,
					AutoRefreshWindow: ctx.params.AutoRefresh || ctx.params.AutoRefreshWindow || undefined,
					CreatedBy: caller.Login,
				});
				this.logger.info(`Personal token ${doc._id} created for ${target.Login} by ${caller.Login}`);
				return { AccessToken: token, TokenUuid: doc._id };
			},
		},
		impersonate: {
			rest: "POST /auth/token/impersonate",
			params: tokenRequestParams,
			async handler(this: TokensThis, ctx: Context<TokenParams, Meta>) {
				const caller = requireAdmin(ctx);
				this.checkCanMint(caller);
				if (!ctx.params.UserLogin) throw new BadRequestError("UserLogin is required: which user to impersonate");
				const target = await this.userByLogin(ctx, checkName(ctx.params.UserLogin, "UserLogin"));
				const { token, doc } = await this.personal.create({
					Kind: "impersonation",
					UserUuid: target.Uuid,
					UserLogin: target.Login,
					Label: checkText(ctx.params.Label || `Impersonation of ${target.Login} by ${caller.Login}`, "Label"),
					Scopes: checkScopes(ctx.params.Scopes),
					ExpiresAt: ctx.params.ExpiresAt || undefined,
					AutoRefreshWindow: ctx.params.AutoRefresh || ctx.params.AutoRefreshWindow || undefined,
					CreatedBy: caller.Login,
					ImpersonatedBy: caller.Login,
					defaultTtl: IMPERSONATION_TTL,
				});
				this.logger.warn(
					`AUDIT token.impersonate: ${caller.Login} (${caller.Uuid}) obtained token ${doc._id} acting as ${target.Login} (${target.Uuid}) ` +
						`until ${new Date(doc.ExpiresAt * 1000).toISOString()} from ${ctx.meta.ip ?? "?"}`,
				);
				void emit(ctx, "audit.log", {
					action: "token.impersonate",
					actor: caller.Login,
					target: target.Login,
					actorUuid: caller.Uuid,
					targetUuid: target.Uuid,
					tokenId: doc._id,
					expiresAt: doc.ExpiresAt,
					ip: ctx.meta.ip,
					time: Math.floor(Date.now() / 1000),
				});
				return { AccessToken: token, TokenUuid: doc._id };
			},
		},
		list: {
			read: true,
			rest: "POST /auth/tokens",
			params: { ByUser: { type: "string", optional: true, max: 255 }, ByType: { type: "enum", optional: true, values: ["ANY", "PERSONAL", "DOCUMENT"] } },
			async handler(this: TokensThis, ctx: Context<{ ByUser?: string; ByType?: "ANY" | PatType }, Meta>) {
				const caller = requireUser(ctx);
				const type = ctx.params.ByType && ctx.params.ByType !== "ANY" ? ctx.params.ByType : undefined;
				let filter: { UserLogin?: string; UserUuid?: string; Type?: PatType };
				if (isAdmin(caller)) filter = { UserLogin: ctx.params.ByUser || undefined, Type: type };
				else if (ctx.params.ByUser && ctx.params.ByUser !== caller.Login) throw new ForbiddenError("You can only list your own tokens");
				else filter = { UserUuid: caller.Uuid, Type: type };
				const docs = await this.personal.list(filter);
				return { Tokens: docs.map(toApiToken) };
			},
		},
		revoke: {
			rest: "DELETE /auth/tokens/:TokenId",
			params: { TokenId: id },
			async handler(this: TokensThis, ctx: Context<{ TokenId: string }, Meta>) {
				const caller = requireUser(ctx);
				const tokenId = checkName(ctx.params.TokenId, "TokenId");
				const doc = await this.personal.get(tokenId);
				if (!doc) throw new NotFoundError(`Token ${tokenId} not found`, "token.not.found");
				if (doc.UserUuid !== caller.Uuid && !isAdmin(caller)) throw new ForbiddenError("You can only revoke your own tokens");
				if (await this.personal.remove(doc._id)) this.revoked({ Kind: "personal", TokenIds: [doc._id], UserUuid: doc.UserUuid });
				this.logger.info(`Personal token ${doc._id} of ${doc.UserLogin} revoked by ${caller.Login}`);
				return { Success: true, Message: "Token successfully revoked" };
			},
		},

		// ---- REST: document token ----
		documentToken: {
			rest: "POST /auth/token/document",
			params: { Path: { type: "string", min: 1, max: 4096 }, ClientID: { type: "string", optional: true, max: 255 } },
			async handler(this: TokensThis, ctx: Context<{ Path: string; ClientID?: string }, Meta>) {
				const caller = requireUser(ctx);
				if (caller.TokenKind === "document" || (caller.Scopes?.length ?? 0) > 0) throw new ForbiddenError("A scoped token cannot create other tokens");
				// eslint-disable-next-line no-control-regex
				if (/[\u0000-\u001f\u007f]/.test(ctx.params.Path)) throw new BadRequestError("Path contains control characters");
				if (!serviceRuns(this.broker, "tree"))
					throw new ServiceUnavailableError("The tree service is not available: document tokens cannot be created");
				const { Node: node } = await call(ctx, "tree.stat", { Node: ctx.params.Path });
				if (!node?.Uuid) throw new NotFoundError(`Node ${ctx.params.Path} not found`);
				const ro = ["true", '"true"', true].includes(node.MetaStore?.node_readonly as string | boolean);
				const { token, doc } = await this.personal.create({
					Kind: "document",
					UserUuid: caller.Uuid,
					UserLogin: caller.Login,
					Label: `Temporary access token for document ${ctx.params.Path}`.slice(0, 255),
					Scopes: [`node:${node.Uuid}:${ro ? "r" : "rw"}`],
					AutoRefreshWindow: DOCUMENT_WINDOW,
					CreatedBy: caller.Login,
					ImpersonatedBy: caller.ImpersonatedBy,
				});
				return { AccessToken: token, TokenUuid: doc._id };
			},
		},

		// ---- REST: password reset (anonymous) ----
		resetPasswordToken: {
			rest: "PUT /auth/reset-password-token/:UserLogin",
			params: { UserLogin: id, Create: { type: "boolean", optional: true } },
			async handler(this: TokensThis, ctx: Context<{ UserLogin: string; Create?: boolean }, Meta>) {
				const started = Date.now();
				const login = checkName(ctx.params.UserLogin, "UserLogin");
				try {
					await this.startReset(ctx, login);
				} finally {
					const wait = RESET_MIN_MS - (Date.now() - started);
					if (wait > 0) await new Promise((r) => setTimeout(r, wait));
				}
				return RESET_ANSWER;
			},
		},
		resetPassword: {
			rest: "POST /auth/reset-password",
			params: { ResetPasswordToken: { type: "string", min: 1, max: 255 }, UserLogin: { type: "string", min: 1, max: 255 }, NewPassword: { type: "string", max: 1024 } },
			async handler(this: TokensThis, ctx: Context<{ ResetPasswordToken: string; UserLogin: string; NewPassword: string }, Meta>) {
				const { ResetPasswordToken, UserLogin, NewPassword } = ctx.params;
				// Checked before the key is consumed, so a too-short password does not burn the mailed link.
				if (NewPassword.length < 8) throw new BadRequestError("The new password must be at least 8 characters long");
				const used = await this.resets.consume(ResetPasswordToken);
				if (used.status === "unknown") throw new ForbiddenError("Invalid or already used reset token", "reset.token.invalid");
				if (used.status === "expired") throw new ForbiddenError("This reset token has expired, please ask for a new one", "reset.token.expired");
				const doc = used.doc;
				if (UserLogin !== doc.login && UserLogin.toLowerCase() !== doc.email.toLowerCase())
					throw new ForbiddenError("This reset token does not correspond to this user", "reset.token.mismatch");
				try {
					await call(ctx, "users.setPassword", { login: doc.login, password: NewPassword });
				} catch (e) {
					// A password the users service refuses: the user may try again with the same link.
					const code = (e as { code?: number }).code ?? 500;
					if (code === 400 || code === 422) await this.resets.restore(doc);
					throw e;
				}
				await this.dropUserSessions(doc.userUuid);
				await this.resets.removeForUser(doc.userUuid);
				this.logger.info(`Password of ${doc.login} reset through a mailed key`);
				await this.mail(ctx, { address: doc.email, name: doc.login }, "ResetPasswordDone", { Login: doc.login });
				return { Success: true, Message: "Password was reset" };
			},
		},
	},

	methods: {
		revoked(this: TokensThis, payload: TokenRevoked) {
			void broadcast(this.broker, "token.revoked", payload);
		},
		async dropUserSessions(this: TokensThis, userUuid: string) {
			const deleted = await this.sessions.deleteForUser(userUuid);
			if (deleted > 0) this.revoked({ Kind: "session", UserUuid: userUuid });
			return { deleted };
		},
		checkCanMint(this: TokensThis, caller: Identity) {
			if (caller.TokenKind === "document" || caller.TokenKind === "impersonation" || (caller.Scopes?.length ?? 0) > 0)
				throw new ForbiddenError("This credential cannot be used to create access tokens");
		},
		async userByLogin(this: TokensThis, ctx: Context<unknown, Meta>, login: string): Promise<UserRecord> {
			const u = await call(ctx, "users.byLogin", { login });
			if (!u?.Uuid || !u.Login) throw new NotFoundError(`User ${login} not found`, "user.not.found");
			return { ...u, Login: u.Login };
		},
		/** Looks the account up by login and by email (both, always), then creates and mails a key if it has an email. */
		async startReset(this: TokensThis, ctx: Context<unknown, Meta>, loginOrEmail: string) {
			const [byLogin, byEmail] = await Promise.allSettled([
				call(ctx, "users.byLogin", { login: loginOrEmail }),
				call(ctx, "users.byEmail", { email: loginOrEmail }),
			]);
			for (const r of [byLogin, byEmail]) if (r.status === "rejected" && !isClientError(r.reason)) throw r.reason;
			const user = byLogin.status === "fulfilled" && byLogin.value?.Uuid ? byLogin.value : byEmail.status === "fulfilled" && byEmail.value?.Uuid ? byEmail.value : null;
			const email = user?.Attributes?.email?.trim();
			if (!user?.Login || !email || user.Attributes?.hidden === "true") {
				sha256(randomUUID()); // the key a real account would get, for comparable work
				this.logger.debug("Reset-password requested for an unknown account or one without email");
				return;
			}
			const { key } = await this.resets.create({ userUuid: user.Uuid, login: user.Login, email });
			await this.mail(ctx, { address: email, name: user.Login }, "ResetPassword", {
				Login: user.Login,
				LinkPath: `/user/reset-password/${key}`,
				Code: key,
				Minutes: String(RESET_TTL / 60),
			});
			this.logger.info(`Reset-password key mailed to the address of ${user.Login}`);
		},
		/**
		 * Queues a mail through the mailer (persisted before the caller is answered); a failure (a bad address, no
		 * mailer) is logged, not answered: the reset answer must not depend on it.
		 */
		async mail(this: TokensThis, ctx: Context<unknown, Meta>, to: { address: string; name: string }, templateId: MailTemplateId, templateData: Record<string, string>) {
			try {
				await call(ctx, "mailer.queue", { to: [to], templateId, templateData });
			} catch (e) {
				this.logger.warn(`Mail ${templateId} could not be queued: ${(e as Error).message}`);
			}
		},
		/** One node of the cluster purges (the lease's holder); whether this one did. */
		async purge(this: TokensThis): Promise<boolean> {
			try {
				const out = await this.purgeLease.run(async () => (await this.sessions.purgeExpired()) + (await this.personal.purgeExpired()) + (await this.resets.purgeExpired()));
				if (out.ran && out.value > 0) this.logger.debug(`Purged ${out.value} expired sessions, tokens and reset keys`);
				return out.ran;
			} catch (e) {
				this.logger.warn(`Token purge failed: ${(e as Error).message}`);
				return false;
			}
		},
	},

	async started(this: TokensThis) {
		const clock: Clock = systemClock;
		// Read once, when the service starts: the environment of a test or a second node may change afterwards.
		const cfg = loadConfig();
		this.tokens = new TokensRepo(this.db);
		const imported = await importNedbOnce(this.db, cfg.dataDir, "tokens", (trx, docs) => TokensRepo.importNedb(trx, docs).then(() => undefined));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} sessions, tokens and reset keys from ${imported.backup}`);
		this.sessions = new Sessions(this.tokens, () => cfg.refreshTokenTtl, clock);
		this.personal = new PersonalTokens(this.tokens, clock);
		this.resets = new ResetKeys(this.tokens, clock);
		// Twice the period: the holder takes it again at each tick; a dead holder's nodes take over within 20 minutes.
		this.purgeLease = new PeriodicLease(new LeasesRepo(this.db), "tokens.purge", this.broker.nodeID, 2 * PURGE_EVERY_MS, (e) =>
			this.logger.warn(`Token purge lease renewal failed: ${(e as Error).message}`),
		);
		this.purgeTimer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
		this.purgeTimer.unref();
	},
	async stopped(this: TokensThis) {
		if (this.purgeTimer) clearInterval(this.purgeTimer);
		// Before the mixin closes the database (mixins stop after the service).
		await this.purgeLease?.release().catch(() => undefined);
	},
};

/** A 4xx answer from the users service ("no such user", "not an email"), not an outage. */
function isClientError(e: unknown): boolean {
	const name = (e as { name?: unknown })?.name;
	if (name === "ServiceNotFoundError" || name === "ServiceNotAvailableError" || name === "RequestTimeoutError") return false;
	const code = (e as { code?: unknown })?.code;
	return typeof code === "number" && code >= 400 && code < 500;
}

interface TokensVars {
	db: Db;
	tokens: TokensRepo;
	purgeLease: PeriodicLease;
	sessions: Sessions;
	personal: PersonalTokens;
	resets: ResetKeys;
	purgeTimer?: NodeJS.Timeout;
}
interface TokensMethods {
	revoked(payload: TokenRevoked): void;
	dropUserSessions(userUuid: string): Promise<{ deleted: number }>;
	checkCanMint(caller: Identity): void;
	userByLogin(ctx: Context<unknown, Meta>, login: string): Promise<UserRecord>;
	startReset(ctx: Context<unknown, Meta>, loginOrEmail: string): Promise<void>;
	mail(ctx: Context<unknown, Meta>, to: { address: string; name: string }, templateId: MailTemplateId, templateData: Record<string, string>): Promise<void>;
	purge(): Promise<boolean>;
}
type TokensThis = Service & TokensVars & TokensMethods;

export = TokensService;
