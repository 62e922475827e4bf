// activity — the feeds' service (services/activity.service.ts) tells the gateways about new inbox activities, so
// that their websocket sessions push them to their owners (Cells' PostActivityEvent on the websocket), and tells
// the tree what a user follows (the `user_subscriptions` meta of listings).
import type { ActivityObject } from "../activity/model";

/** `activity.posted` (broadcast): new activities in users' inboxes. */
export interface ActivityPosted {
	items: { ownerId: string; activity: ActivityObject }[];
}

export interface ActivityEvents {
	"activity.posted": ActivityPosted;
	/** A user's subscriptions changed: gateways drop cached listings (they show `user_subscriptions`). */
	"activity.subscribed": { UserId: string };
}

export interface ActivityActions {
	/** Internal (tree listings): the events a user follows on each of these nodes, by node uuid. */
	"activity.followed": { params: { UserId: string; ObjectIds: string[] }; result: Record<string, string[]> };
}
