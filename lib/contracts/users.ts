// users — internal actions other services call (contracts: lib/contracts/index.ts).
import type { ExternalAccount } from "../identity/external-auth";
import type { AuthInfo, SyncReport, UserAdmin } from "../identity/user-admin";
import type { PublicUser, UserQuery } from "../identity/users";

export type { AuthInfo, PublicUser };

export interface UsersActions {
	"users.authInfo": { params: { uuid: string }; result: AuthInfo | null };
	"users.checkPassword": { params: { login: string; password: string; ip?: string }; result: AuthInfo };
	"users.byLogin": { params: { login: string }; result: PublicUser };
	/** A user or a group by uuid; 404 when there is none. */
	"users.byEmail": { params: { email: string }; result: PublicUser };
	"users.setPassword": { params: { login: string; password: string }; result: { Success: true } };
	/** One public attribute of a user (the avatar's binary id…); `value` null removes it. */
	"users.setAttribute": { params: { uuid: string; name: string; value: string | null }; result: { Success: true } };
	"users.byUuid": { params: { uuid: string }; result: PublicUser | null };
	"users.createHidden": { params: { owner: { Login: string; GroupPath: string }; login: string; password: string }; result: { Uuid: string; Login: string } };
	"users.deleteHidden": { params: { uuid: string }; result: { Deleted: boolean } };
	/** POST /user: users and groups the caller may read (an administrator: every one), filtered by the queries. */
	"users.search": { params: { Queries?: UserQuery[]; Offset?: number; Limit?: number; Operation?: "OR" | "AND"; CountOnly?: boolean }; result: Awaited<ReturnType<UserAdmin["search"]>> };
	/** A directory's synchronisation (lib/directories/sync): its users made, refreshed, or locked when gone. */
	"users.syncExternal": { params: { source: string; accounts: ExternalAccount[]; complete: boolean }; result: SyncReport };
	"users.ensureAdmin": { params: { login?: string; password?: string }; result: Awaited<ReturnType<UserAdmin["ensureAdmin"]>> };
}
