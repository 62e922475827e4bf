/**
 * auth — stateless: logs users in (POST /frontend/session: credentials, refresh, logout; credentials also pass
 * `mfa.checkLogin`, AuthInfo.totp, for users with a second factor), revokes tokens, and
 * turns a Bearer credential into an Identity for the gateway (`auth.resolve`). Sessions and personal tokens are
 * stored by the tokens service, users by the users service, so this service can run on any number of nodes.
 * Emits `auth.login.failed` {ip, login} and `auth.login.succeeded` {ip, login} (the policy service bans
 * addresses that fail too often). A revoked token is announced by the tokens service (`token.revoked`).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { BadRequestError, UnauthorizedError } from "../lib/errors";
import { loadConfig } from "../lib/config";
import type { Identity, Meta } from "../lib/auth/identity";
import { decodeUnverified, looksLikeJwt, signAccess, signId, verifyAccess } from "../lib/auth/jwt";
import { call, emit, type AuthInfo, type NewSession } from "../lib/contracts";

const COOKIE = "pydio";

function cookieValue(header: string | undefined, name: string): string | undefined {
	for (const part of (header ?? "").split(";")) {
		const [k, ...v] = part.trim().split("=");
		if (k === name) return decodeURIComponent(v.join("="));
	}
	return undefined;
}

/**
 * The session cookie's name: `pydio`, or `pydio-<hash>` for a public link's page (X-Pydio-Minisite), as Cells names
 * it, so that visiting a link in a browser does not replace the session of the user logged in there.
 */
function cookieName(meta: Meta): string {
	const hash = meta.minisite?.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 128);
	return hash ? `${COOKIE}-${hash}` : COOKIE;
}

function sessionCookie(name: string, value: string, maxAge: number): string {
	return `${name}=${encodeURIComponent(value)}; Path=/a/frontend/session; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAge))}`;
}

/** What POST /frontend/session answers: Cells' RestFrontSessionResponse. */
interface SessionAnswer {
	JWT: string;
	ExpireTime: number;
	Token: { AccessToken: string; IDToken: string; ExpiresAt: string; RefreshToken: string };
}

interface AuthMethods {
	loginWithPassword(ctx: Context<unknown, Meta>, login: string | undefined, password: string | undefined, totp?: string, target?: string): Promise<SessionAnswer>;
	refresh(ctx: Context<unknown, Meta>, refreshToken: string | undefined): Promise<SessionAnswer>;
	logout(ctx: Context<unknown, Meta>): Promise<Record<string, never>>;
	grant(ctx: Context<unknown, Meta>, user: AuthInfo, session: NewSession): SessionAnswer;
	revoke(ctx: Context<unknown, Meta>, token: string): Promise<{ Success: boolean; Message: string }>;
	resolve(ctx: Context<unknown, Meta>, token: string): Promise<Identity>;
}
type AuthThis = Service & AuthMethods;

const AuthService: ServiceSchema<ServiceSettingSchema, AuthMethods, object> = {
	name: "auth",
	settings: { rest: "/" },
	actions: {
		session: {
			rest: "POST /frontend/session",
			params: {
				AuthInfo: { type: "record", optional: true, key: { type: "string", max: 64 }, value: { type: "string", max: 8192 } },
				ClientTime: { type: "number", optional: true },
				Logout: { type: "boolean", optional: true },
			},
			async handler(this: AuthThis, ctx: Context<{ AuthInfo?: Record<string, string>; Logout?: boolean }, Meta>) {
				const info = ctx.params.AuthInfo ?? {};
				const type = ctx.params.Logout ? "logout" : info.type;
				if (type === "credentials") return this.loginWithPassword(ctx, info.login, info.password, info.totp, info.u);
				if (type === "refresh") return this.refresh(ctx, info.refresh_token || cookieValue(ctx.meta.cookie, cookieName(ctx.meta)));
				if (type === "logout") return this.logout(ctx);
				throw new BadRequestError(`AuthInfo.type must be credentials, refresh or logout${type ? ` (got "${type}")` : ""}`);
			},
		},
		revoke: {
			rest: "POST /auth/token/revoke",
			params: { TokenId: { type: "string", min: 1, max: 4096 } },
			async handler(this: AuthThis, ctx: Context<{ TokenId: string }, Meta>) {
				return this.revoke(ctx, ctx.params.TokenId);
			},
		},
		resolve: {
			visibility: "public",
			read: true,
			params: { token: { type: "string", min: 1, max: 8192 } },
			async handler(this: AuthThis, ctx: Context<{ token: string }, Meta>): Promise<Identity> {
				return this.resolve(ctx, ctx.params.token);
			},
		},
	},
	methods: {
		async loginWithPassword(this: AuthThis, ctx: Context<unknown, Meta>, login: string | undefined, password: string | undefined, totp?: string, target?: string) {
			if (!login || !password) throw new BadRequestError("AuthInfo.login and AuthInfo.password are required");
			let user: AuthInfo;
			try {
				user = await call(ctx, "users.checkPassword", { login, password, ip: ctx.meta.ip });
			} catch (e) {
				if ((e as { code?: number }).code === 401) void emit(ctx, "auth.login.failed", { ip: ctx.meta.ip, login });
				throw e;
			}
			// A public link's hidden user logs in only from its own link's page, and only while the link is usable.
			// AuthInfo.u: the identification key of a link mailed to chosen users (RestrictToTargetUsers needs one).
			if (user.Hidden) await call(ctx, "share.minisiteLogin", { login: user.Login, hash: ctx.meta.minisite, ...(target ? { target } : {}) });
			// An enrolled second factor (mfa service): the password alone opens no session.
			try {
				await call(ctx, "mfa.checkLogin", { userUuid: user.Uuid, code: totp });
			} catch (e) {
				if ((e as { type?: string }).type === "totp.invalid") ctx.emit("auth.login.failed", { ip: ctx.meta.ip, login });
				throw e;
			}
			const grant = await call(ctx, "tokens.createSession", { userUuid: user.Uuid, login: user.Login, ip: ctx.meta.ip, userAgent: ctx.meta.userAgent });
			void emit(ctx, "auth.login.succeeded", { ip: ctx.meta.ip, login: user.Login });
			return this.grant(ctx, user, grant);
		},
		async refresh(this: AuthThis, ctx: Context<unknown, Meta>, refreshToken: string | undefined) {
			if (!refreshToken) throw new UnauthorizedError("No refresh token in this session", "token.missing");
			const grant = await call(ctx, "tokens.refreshSession", { refreshToken });
			const user = await call(ctx, "users.authInfo", { uuid: grant.userUuid });
			if (!user) throw new UnauthorizedError("User no longer exists", "user.notfound");
			if (user.Locked) throw new UnauthorizedError("User is locked - Please contact your admin", "user.locked");
			return this.grant(ctx, user, grant);
		},
		async logout(this: AuthThis, ctx: Context<unknown, Meta>) {
			const sessionId = ctx.meta.user?.SessionId;
			const refresh = cookieValue(ctx.meta.cookie, cookieName(ctx.meta));
			if (sessionId) await call(ctx, "tokens.deleteSession", { sessionId });
			// Without an access token the cookie must hold the session's current secret, not merely name it.
			else if (refresh) await call(ctx, "tokens.endSessionWithRefresh", { refreshToken: refresh });
			ctx.meta.$responseHeaders = { "Set-Cookie": sessionCookie(cookieName(ctx.meta), "", 0) };
			return {};
		},
		grant(this: AuthThis, ctx: Context<unknown, Meta>, user: AuthInfo, session: NewSession) {
			const cfg = loadConfig();
			const access = signAccess({ sub: user.Uuid, name: user.Login, sid: session.sessionId }, cfg.accessTokenTtl);
			const idToken = signId({ sub: user.Uuid, name: user.Login, profile: user.Profile }, cfg.accessTokenTtl);
			ctx.meta.$responseHeaders = { "Set-Cookie": sessionCookie(cookieName(ctx.meta), session.refreshToken, session.refreshExpiresAt - Date.now() / 1000) };
			return {
				JWT: access.token,
				ExpireTime: access.exp,
				Token: { AccessToken: access.token, IDToken: idToken, ExpiresAt: String(access.exp), RefreshToken: session.refreshToken },
			};
		},
		async revoke(this: AuthThis, ctx: Context<unknown, Meta>, token: string) {
			if (looksLikeJwt(token)) {
				const claims = decodeUnverified(token);
				if (!claims?.sid) throw new BadRequestError("TokenId is not a token issued by this server");
				// Only the token's owner or an admin may end its session.
				if (ctx.meta.user?.Profile !== "admin" && ctx.meta.user?.Uuid !== claims.sub) throw new UnauthorizedError("You may only revoke your own tokens", "token.forbidden");
				await call(ctx, "tokens.deleteSession", { sessionId: claims.sid });
			} else {
				await call(ctx, "tokens.revokeValue", { token });
			}
			return { Success: true, Message: "Token successfully invalidated" };
		},
		async resolve(this: AuthThis, ctx: Context<unknown, Meta>, token: string): Promise<Identity> {
			let base: Pick<Identity, "TokenKind" | "SessionId" | "TokenId" | "Scopes" | "ImpersonatedBy" | "ExpiresAt">;
			let uuid: string;
			if (looksLikeJwt(token)) {
				const claims = verifyAccess(token);
				const session = await call(ctx, "tokens.getSession", { sessionId: claims.sid });
				if (!session) throw new UnauthorizedError("Token has been revoked", "token.revoked");
				uuid = claims.sub;
				base = { TokenKind: "session", SessionId: claims.sid, ExpiresAt: claims.exp };
			} else {
				const pat = await call(ctx, "tokens.resolvePersonal", { token });
				uuid = pat.UserUuid;
				base = { TokenKind: pat.Kind, TokenId: pat.TokenId, Scopes: pat.Scopes, ImpersonatedBy: pat.ImpersonatedBy, ExpiresAt: pat.ExpiresAt };
			}
			const user = await call(ctx, "users.authInfo", { uuid });
			if (!user) throw new UnauthorizedError("User no longer exists", "user.notfound");
			if (user.Locked) throw new UnauthorizedError("User is locked - Please contact your admin", "user.context");
			// A link's visitor keeps access only while the link is usable (not expired, deleted or not yet started).
			if (user.Hidden) await call(ctx, "share.linkAccess", { login: user.Login, op: "visit" });
			return { Uuid: user.Uuid, Login: user.Login, Profile: user.Profile, GroupPath: user.GroupPath, Roles: user.Roles, ...(user.Hidden ? { Hidden: true } : {}), ...base };
		},
	},
};

export = AuthService;
