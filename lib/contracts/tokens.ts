// tokens — internal actions (sessions and personal tokens, called by auth) and the `token.revoked` event.
import type { NewSession, RefreshedSession, Sessions } from "../tokens/sessions";
import type { ResolvedPersonal } from "../tokens/personal";

export type { NewSession, RefreshedSession, ResolvedPersonal };

export interface TokensActions {
	"tokens.createSession": { params: { userUuid: string; login: string; ip?: string; userAgent?: string }; result: NewSession };
	"tokens.refreshSession": { params: { refreshToken: string }; result: RefreshedSession };
	"tokens.getSession": { params: { sessionId: string }; result: Awaited<ReturnType<Sessions["get"]>> };
	"tokens.deleteSession": { params: { sessionId: string }; result: { deleted: boolean } };
	"tokens.endSessionWithRefresh": { params: { refreshToken: string }; result: { deleted: boolean } };
	"tokens.deleteUserSessions": { params: { userUuid: string }; result: { deleted: number } };
	"tokens.resolvePersonal": { params: { token: string }; result: ResolvedPersonal };
	"tokens.revokeValue": { params: { token: string }; result: { Success: boolean; Message: string } };
}

/** `token.revoked`: sessions or personal tokens that no longer authenticate (gateways drop cached identities). */
export type TokenRevoked =
	| { Kind: "session"; SessionIds?: string[]; UserUuid?: string; Reason?: string }
	| { Kind: "personal"; TokenIds: string[]; UserUuid?: string };

export interface TokensEvents {
	"token.revoked": TokenRevoked;
}
