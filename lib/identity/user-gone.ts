// What a service keeps per user (a second factor, an avatar) goes with the user. A deletion's `identity.changed`
// names the uuids it deleted (one user, or every user of a deleted group's tree); any other user change only says
// that a user changed, and the user is gone when the users service no longer knows the uuid.
import { call, type Caller, type IdentityChange } from "../contracts";

export interface GoneLog {
	debug(message: string): void;
	warn(message: string): void;
}

/**
 * On an `identity.changed` event: `forget(uuids)` for the users it deleted, or, for a user change that names none
 * (an update, or an event from a node that does not name them yet), for that user when it no longer exists. The
 * uuids forgotten. A failed check is logged at debug, not thrown: an event has no caller to answer, and the data
 * stays until the next change of that user (never deleted on a guess); a failed `forget` is logged as a warning.
 */
export async function forgetGoneUsers(caller: Caller, change: IdentityChange, forget: (uuids: string[]) => Promise<unknown>, log: GoneLog): Promise<string[]> {
	if (change.kind !== "user" && change.kind !== "group") return [];
	let gone = change.deletedUuids ?? [];
	if (!gone.length && change.kind === "user") {
		try {
			if (!(await call(caller, "users.authInfo", { uuid: change.uuid }))) gone = [change.uuid];
		} catch (e) {
			log.debug(`Could not check whether user ${change.uuid} still exists: ${(e as Error).message}`);
		}
	}
	if (!gone.length) return [];
	try {
		await forget(gone);
		return gone;
	} catch (e) {
		log.warn(`Could not forget the data of ${gone.length} deleted user(s) (${gone.slice(0, 3).join(", ")}${gone.length > 3 ? ", …" : ""}): ${(e as Error).message}`);
		return [];
	}
}
