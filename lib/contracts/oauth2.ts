// oauth2 — what the front end asks of the OAuth2 settings (lib/oauth2).
import type { LoginConnector } from "../oauth2/model";

export interface OAuth2Actions {
	/** The login choices, Cellar's own password login first, then the configured connectors (no secrets). */
	"oauth2.loginConnectors": { params: Record<string, never>; result: LoginConnector[] };
}
