// mfa — the second factor a password login must pass (lib/auth/second-factor).
export interface MfaActions {
	/** Nothing for a user without an active factor; otherwise throws 401 unless `code` is a current, unused code. */
	"mfa.checkLogin": { params: { userUuid: string; code?: string }; result: { required: boolean } };
}
