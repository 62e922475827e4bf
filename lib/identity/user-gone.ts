// What a service keeps per user (a second factor, an avatar) goes with the user. `identity.changed` only says that
// a user changed; the user is gone when the users service no longer knows the uuid.
import { call, type Caller, type IdentityChange } from "../contracts";

export interface DebugLog {
	debug(message: string): void;
}

/**
 * On an `identity.changed` event: when it names a user who no longer exists, `forget(uuid)`; true when it did.
 * A failed check is logged at debug, not thrown: an event has no caller to answer, and the data stays until the
 * next change of that user (never deleted on a guess).
 */
export async function forgetGoneUser(caller: Caller, change: IdentityChange, forget: (uuid: string) => Promise<unknown>, log: DebugLog): Promise<boolean> {
	if (change.kind !== "user") return false;
	try {
		if (await call(caller, "users.authInfo", { uuid: change.uuid })) return false;
		await forget(change.uuid);
		return true;
	} catch (e) {
		log.debug(`Could not check whether user ${change.uuid} still exists: ${(e as Error).message}`);
		return false;
	}
}
