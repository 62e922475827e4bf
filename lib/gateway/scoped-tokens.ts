// A token scoped to nodes (a document token, a personal token with `node:<uuid>:r|w|rw` scopes) stands for its
// owner only on those nodes. The tree resolver keeps it inside them; the gateway keeps it off every route that
// is not about nodes, where the owner's full identity would otherwise answer (users, tokens, roles, search...).
import type { Identity } from "../auth/identity";

/**
 * Node routes (the resolver checks the scope on each path they touch), the caller's own session state, and the
 * public boot routes a client sends its token to anyway.
 */
const NODE_AND_SESSION_ROUTES = new Set([
	"tree.stat",
	"tree.stats", // POST /tree/stats and POST /meta/bulk/get
	"tree.create",
	"meta.get",
	"meta.set",
	"meta.remove",
	"frontend.authState",
	"frontend.bootconf",
	"frontend.loginConnectors",
]);

export function isScoped(user: Identity | null | undefined): boolean {
	return !!user && (user.TokenKind === "document" || (user.Scopes?.length ?? 0) > 0);
}

/** True when a scoped token may call `action`; `token` is the credential it came with. */
export function scopedRouteAllowed(action: string | undefined, params: Record<string, unknown> | undefined, token: string | undefined): boolean {
	if (!action) return false;
	if (NODE_AND_SESSION_ROUTES.has(action)) return true;
	// A token may end itself, and nothing else.
	if (action === "auth.revoke") return !!token && params?.TokenId === token;
	return false;
}
