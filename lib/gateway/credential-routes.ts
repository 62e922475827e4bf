// What an address banned after failed logins may no longer call: the routes where a caller tries a secret
// (a password, a reset key) or makes the server mail one. Everything else stays open to that address, so that
// the people behind it (an office, a proxy) keep working with the tokens they already hold.
export function triesCredentials(action: string | undefined, params: Record<string, unknown> | undefined): boolean {
	switch (action) {
		case "auth.session": {
			// A refresh presents a 256-bit token nobody can guess (and failed refreshes are not counted); a logout
			// ends a session. Only password logins are what the failures were aimed at.
			const info = params?.AuthInfo as Record<string, unknown> | undefined;
			return !params?.Logout && info?.type === "credentials";
		}
		case "tokens.resetPasswordToken":
		case "tokens.resetPassword":
			return true;
		default:
			return false;
	}
}
