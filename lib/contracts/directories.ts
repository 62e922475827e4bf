// directories — the users service hands it the password logins that external directories may know
// (lib/identity/external-auth).
import type { ExternalOutcome } from "../identity/external-auth";

export interface DirectoriesActions {
	/** Tries the directory `source` (or every one) for this login and password. */
	"directories.authenticate": { params: { login: string; password: string; source?: string }; result: ExternalOutcome };
}
