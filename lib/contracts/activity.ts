// activity — the feeds' service (services/activity.service.ts) tells the gateways about new inbox activities, so
// that their websocket sessions push them to their owners (Cells' PostActivityEvent on the websocket).
import type { ActivityObject } from "../activity/model";

/** `activity.posted` (broadcast): new activities in users' inboxes. */
export interface ActivityPosted {
	items: { ownerId: string; activity: ActivityObject }[];
}

export interface ActivityEvents {
	"activity.posted": ActivityPosted;
}
