// users — internal actions other services call (contracts: lib/contracts/index.ts).
import type { UserAdmin } from "../identity/user-admin";
import type { publicUser } from "../identity/users";

/** What `users.authInfo` and `users.checkPassword` answer: the identity a token or a login resolves to. */
export type AuthInfo = NonNullable<Awaited<ReturnType<UserAdmin["authInfo"]>>>;
/** A user as `users.byLogin` / `users.byEmail` answer it (no password hash, no private attributes). */
export type PublicUser = ReturnType<typeof publicUser>;

export interface UsersActions {
	"users.authInfo": { params: { uuid: string }; result: AuthInfo | null };
	"users.checkPassword": { params: { login: string; password: string; ip?: string }; result: Awaited<ReturnType<UserAdmin["checkPassword"]>> };
	"users.byLogin": { params: { login: string }; result: PublicUser };
	"users.byEmail": { params: { email: string }; result: PublicUser };
	"users.setPassword": { params: { login: string; password: string }; result: { Success: true } };
	"users.ensureAdmin": { params: { login?: string; password?: string }; result: Awaited<ReturnType<UserAdmin["ensureAdmin"]>> };
}
