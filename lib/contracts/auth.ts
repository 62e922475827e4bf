// auth — the gateway turns a Bearer credential into an identity.
import type { Identity } from "../auth/identity";

export interface AuthActions {
	"auth.resolve": { params: { token: string }; result: Identity };
}
