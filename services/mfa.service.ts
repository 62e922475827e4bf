/**
 * mfa — users' TOTP second factor (RFC 6238): `POST /frontend/enroll` (EnrollType "totp": setup, verify, disable,
 * status) and `mfa.checkLogin`, which the auth service calls after a password login succeeded. Owns the
 * user_totp table (secrets sealed with a key derived from JWT_SECRET). Emits nothing.
 * Calls `users.byLogin` when an admin acts on another user's factor. Consumes `identity.changed` (deleted users'
 * factors are removed, a deleted group's users' included).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { TotpRepo } from "../lib/db/frontend";
import { SecondFactor } from "../lib/auth/second-factor";
import { APPLICATION_TITLE } from "../lib/frontend/bootconf";
import { BadRequestError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { call, type IdentityChange } from "../lib/contracts";
import { forgetGoneUsers } from "../lib/identity/user-gone";

interface EnrollParams {
	EnrollType?: string;
	EnrollInfo?: Record<string, string>;
}
interface MfaVars {
	db: Db;
	factor: SecondFactor;
}
type MfaThis = Service & MfaVars;

const MfaService: ServiceSchema<ServiceSettingSchema, Record<string, never>, MfaVars> = {
	name: "mfa",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		enroll: {
			rest: "POST /frontend/enroll",
			params: {
				EnrollType: { type: "string", optional: true, max: 64 },
				EnrollInfo: { type: "record", optional: true, key: { type: "string", max: 64 }, value: { type: "string", max: 1024 } },
			},
			async handler(this: MfaThis, ctx: Context<EnrollParams, Meta>) {
				const me = requireUser(ctx);
				const info = await this.factor.enroll(me, ctx.params.EnrollType, ctx.params.EnrollInfo ?? {}, async (login) => {
					const u = await call(ctx, "users.byLogin", { login });
					if (!u.Login) throw new BadRequestError(`${login} is a group`);
					return { Uuid: u.Uuid, Login: u.Login };
				});
				return { Info: info };
			},
		},
		checkLogin: {
			visibility: "public",
			params: { userUuid: { type: "string", max: 128 }, code: { type: "string", optional: true, max: 64 } },
			async handler(this: MfaThis, ctx: Context<{ userUuid: string; code?: string }>) {
				return this.factor.checkLogin(ctx.params.userUuid, ctx.params.code);
			},
		},
	},
	events: {
		// Deleted users' second factors go with them, a group's users' too (a new account with the same login gets a
		// new uuid anyway).
		async "identity.changed"(this: MfaThis, ctx: Context<IdentityChange>) {
			await forgetGoneUsers(ctx, ctx.params, (uuids) => this.factor.forget(uuids), this.logger);
		},
	},
	started(this: MfaThis) {
		this.factor = new SecondFactor(new TotpRepo(this.db), APPLICATION_TITLE);
	},
};

export = MfaService;
