// The TOTP second factor: enrolment (POST /frontend/enroll, EnrollType "totp") and the check a password login
// must pass once a user is enrolled. The store is injected (lib/db's TotpRepo on the service side, a map in
// unit tests); the secret only leaves sealed, and is shown once, at setup, to the user who enrols.
//
// Enrolment, all through POST /frontend/enroll {EnrollType:"totp", EnrollInfo:{…}}:
//   step "setup"   -> Info {Status:"pending", Secret, OtpAuthUri, Issuer, Account, Algorithm, Digits, Period}
//   step "verify"  + code -> Info {Status:"enrolled"}   (from now on login needs a code)
//   step "disable" + code -> Info {Status:"none"}       (an admin may disable another user's, without code)
//   step "status"         -> Info {Status:"none"|"pending"|"enrolled"}
// Login: POST /frontend/session with AuthInfo {type:"credentials", login, password, totp:"123456"}.
import { BadRequestError, ConflictError, ForbiddenError, TooManyRequestsError, UnauthorizedError } from "../errors";
import type { Identity } from "./identity";
import { newSecret, otpauthUri, seal, TOTP_ALGORITHM, TOTP_DIGITS, TOTP_PERIOD, unseal, verifyTotp } from "./totp";

export interface TotpState {
	secret: string;
	status: "pending" | "active";
	lastStep: number;
	/** Unix seconds until which codes are refused (too many wrong ones); 0: none. */
	blockedUntil: number;
}

export interface TotpStore {
	get(userUuid: string): Promise<TotpState | null>;
	startPending(userUuid: string, sealedSecret: string, now: number): Promise<boolean>;
	activate(userUuid: string, step: number, now: number): Promise<boolean>;
	useStep(userUuid: string, step: number): Promise<boolean>;
	recordFailure(userUuid: string, limit: number, blockUntil: number): Promise<boolean>;
	remove(userUuid: string): Promise<boolean>;
	/** How many of these users had a factor (a deleted group's users: one statement, not one per user). */
	removeMany(userUuids: string[]): Promise<number>;
}

export interface EnrollUser {
	Uuid: string;
	Login: string;
}

export type EnrollInfo = Record<string, string>;

export const ENROLL_TYPE = "totp";
const STEPS = ["setup", "verify", "disable", "status"];
/** The AuthInfo key that carries the code at login. */
export const LOGIN_CODE_KEY = "totp";
/**
 * Wrong codes in a row after which codes are refused for BLOCK_SECONDS: with three valid codes at any time, a
 * million possible ones and this pace, guessing takes years — whatever the addresses the guesses come from.
 */
export const MAX_CODE_FAILURES = 5;
export const BLOCK_SECONDS = 300;

export class SecondFactor {
	constructor(
		private readonly store: TotpStore,
		private readonly issuer: string,
		private readonly now: () => number = () => Date.now() / 1000,
	) {}

	/**
	 * POST /frontend/enroll for `caller`: the step EnrollInfo.step names (default: "verify" when a code is
	 * given, else "setup"). EnrollInfo.login lets an admin see or disable another user's factor (`findUser`
	 * resolves it), never set one up. Only login sessions change a factor: a token made for a document, for
	 * scripts or by an admin impersonating must not change how its owner logs in.
	 */
	async enroll(caller: Identity, type: string | undefined, info: EnrollInfo, findUser: (login: string) => Promise<EnrollUser>): Promise<EnrollInfo> {
		if ((type ?? "").toLowerCase() !== ENROLL_TYPE) throw new BadRequestError(`EnrollType must be "${ENROLL_TYPE}" (the only second factor Cellar offers)${type ? `, got "${type}"` : ""}`);
		const step = (info.step ?? (info.code ? "verify" : "setup")).toLowerCase();
		if (!STEPS.includes(step)) throw new BadRequestError(`EnrollInfo.step must be one of ${STEPS.join(", ")}, got "${info.step}"`);
		if (caller.TokenKind !== "session" && step !== "status") throw new ForbiddenError("Changing a second factor needs a login session, not a token", "totp.session");
		let target: EnrollUser = { Uuid: caller.Uuid, Login: caller.Login };
		if (info.login && info.login !== caller.Login) {
			if (caller.Profile !== "admin" || (step !== "disable" && step !== "status")) throw new ForbiddenError("Only an administrator may see or disable another user's second factor, and never set one up", "totp.forbidden");
			target = await findUser(info.login);
		}
		switch (step) {
			case "setup":
				return this.setup(target);
			case "verify":
				return this.verify(target, info.code);
			case "disable":
				return this.disable(target, info.code, target.Uuid !== caller.Uuid);
			default:
				return { Status: await this.status(target.Uuid) };
		}
	}

	async status(userUuid: string): Promise<"none" | "pending" | "enrolled"> {
		const s = await this.store.get(userUuid);
		return !s ? "none" : s.status === "active" ? "enrolled" : "pending";
	}

	async setup(user: EnrollUser): Promise<EnrollInfo> {
		const secret = newSecret();
		if (!(await this.store.startPending(user.Uuid, seal(secret), Math.floor(this.now()))))
			throw new ConflictError("A second factor is already enrolled for this account: disable it first (step \"disable\" with a current code)", "totp.enrolled");
		return {
			Status: "pending",
			Secret: secret,
			OtpAuthUri: otpauthUri(this.issuer, user.Login, secret),
			Issuer: this.issuer,
			Account: user.Login,
			Algorithm: TOTP_ALGORITHM,
			Digits: String(TOTP_DIGITS),
			Period: String(TOTP_PERIOD),
		};
	}

	async verify(user: EnrollUser, code: string | undefined): Promise<EnrollInfo> {
		const s = await this.store.get(user.Uuid);
		if (!s) throw new BadRequestError("No enrolment in progress: start with step \"setup\"");
		if (s.status === "active") throw new ConflictError("The second factor is already enrolled", "totp.enrolled");
		const step = this.check(s, code);
		if (step === null) throw new BadRequestError("The code does not match: check the authenticator app's clock and try the current code");
		if (!(await this.store.activate(user.Uuid, step, Math.floor(this.now())))) throw new ConflictError("The enrolment changed meanwhile: start again with step \"setup\"", "totp.changed");
		return { Status: "enrolled" };
	}

	/** Removes the factor: the owner proves it with a current code; an admin acting on another account needs none. */
	async disable(user: EnrollUser, code: string | undefined, byAdmin: boolean): Promise<EnrollInfo> {
		const s = await this.store.get(user.Uuid);
		if (!s) return { Status: "none" };
		if (!byAdmin && s.status === "active") {
			this.refuseIfBlocked(s);
			const step = this.check(s, code);
			if (step === null || !(await this.store.useStep(user.Uuid, step))) {
				await this.failed(user.Uuid);
				throw new ForbiddenError("A valid current code is needed to disable the second factor", "totp.invalid");
			}
		}
		await this.store.remove(user.Uuid);
		return { Status: "none" };
	}

	/**
	 * The check of a password login that succeeded: nothing for a user without an active factor; otherwise a
	 * current code, accepted once (a code seen on the wire cannot be replayed within its 90 seconds).
	 */
	async checkLogin(userUuid: string, code: string | undefined): Promise<{ required: boolean }> {
		const s = await this.store.get(userUuid);
		if (!s || s.status !== "active") return { required: false };
		if (!code) throw new UnauthorizedError(`This account has a second factor: send AuthInfo.${LOGIN_CODE_KEY} with the 6-digit code of its authenticator app`, "totp.required");
		this.refuseIfBlocked(s);
		const step = this.check(s, code);
		if (step === null || !(await this.store.useStep(userUuid, step))) {
			await this.failed(userUuid);
			throw new UnauthorizedError("Invalid or already used second-factor code", "totp.invalid");
		}
		return { required: true };
	}

	private refuseIfBlocked(s: TotpState): void {
		const wait = Math.ceil(s.blockedUntil - this.now());
		if (wait > 0) throw new TooManyRequestsError(`Too many wrong second-factor codes: codes are refused for ${wait} s more`, wait);
	}

	/** Counts a wrong code; the one that reaches the limit answers 429 instead of 401. */
	private async failed(userUuid: string): Promise<void> {
		if (await this.store.recordFailure(userUuid, MAX_CODE_FAILURES, Math.floor(this.now()) + BLOCK_SECONDS))
			throw new TooManyRequestsError(`Too many wrong second-factor codes: codes are refused for ${BLOCK_SECONDS} s`, BLOCK_SECONDS);
	}

	private check(s: TotpState, code: string | undefined): number | null {
		if (!code) return null;
		let secret: string;
		try {
			secret = unseal(s.secret);
		} catch {
			// Sealed under another JWT_SECRET: the factor cannot be checked, so nothing passes.
			return null;
		}
		const step = verifyTotp(secret, code, this.now());
		return step !== null && step > s.lastStep ? step : null;
	}

	/** Drops users' factors whatever their state (the accounts are gone). */
	async forget(userUuids: string[]): Promise<void> {
		await this.store.removeMany(userUuids);
	}
}
