// Why a public link is refused, in the words its page shows: written into the HTML by the gateway
// (lib/web/public-page.ts) and shown again by the app (web/src/public/App.tsx), which also shows RESTRICTED when
// the login is refused for want of a target's key. Plain data: the browser build imports it too.
import type { PublicLinkStatus } from "../contracts/share";

export const REFUSALS: Record<Exclude<PublicLinkStatus, "ok">, { title: string; detail: string }> = {
	unknown: { title: "This link does not exist", detail: "The address may be mistyped, or the link was deleted by the person who shared it." },
	"not-started": { title: "This link is not active yet", detail: "The person who shared it made it usable from a later date: come back then." },
	expired: { title: "This link has expired", detail: "It was usable until a date that has passed. Ask the person who shared it for a new one." },
	exhausted: { title: "This link has reached its download limit", detail: "It allowed a fixed number of downloads and they have all been used." },
};

/** A link sent to chosen users (RestrictToTargetUsers), opened without one of their keys (`?u=`). */
export const RESTRICTED = { title: "This link is for the people it was sent to", detail: "Open it from the address you received by mail: this one does not carry it." };
