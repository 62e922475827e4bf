// What a public link's page and the share service agree on about the minisite login. No Node import: the
// browser build (web/src/public) imports it too, and lib/share/model re-exports it for the server.

/** The password of a link without one: the page logs in with it (Cells' minisite does the same). */
export function presetPassword(login: string): string {
	return `${login}#$!Az1`;
}

/**
 * `restError.Code` of a minisite login refused because the link opens only for the users it was sent to
 * (RestrictToTargetUsers) and the page has no key of theirs (`?u=`): no password can open it.
 */
export const LINK_RESTRICTED_CODE = "link.target.forbidden";
