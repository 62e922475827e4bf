// user-meta — user metadata on nodes (services/user-meta.service.ts). Every action answers for the caller of the
// context (ctx.meta.user): only values whose policies let that caller read them.
//
// For search (lib/search): a query on a user-metadata namespace (`Meta.usermeta-x:foo`, or a free string) is
// answered by `user-meta.nodesMatching` with the searching user's context — node uuids whose value matches and
// that the user may read — then intersected with (or added to) the index's hits, which search re-checks for READ
// on the nodes as for any result. `usermeta.changed` says which nodes' values changed and whether a namespace is
// indexable: a persistent index that copies values reindexes those nodes on it.

/** `usermeta.changed`: values of these nodes changed (or a namespace was deleted with its values). */
export interface UserMetaChange {
	NodeUuids: string[];
	Namespaces: string[];
	/** Whether one of the namespaces is declared Indexable (search should reindex the nodes). */
	Indexable: boolean;
}

export interface UserMetaActions {
	/** The values the caller may read on these nodes, as MetaStore entries (namespace -> JSON text) by node uuid. */
	"user-meta.valuesFor": { params: { NodeUuids: string[] }; result: Record<string, Record<string, string>> };
	/**
	 * Nodes whose value in `Namespace` equals `Equals` (JSON text, e.g. `"\"blue\""`) or contains `Contains` (ASCII
	 * case-insensitive, in the JSON text), among the values the caller may read; newest values first.
	 */
	"user-meta.nodesMatching": { params: { Namespace: string; Equals?: string; Contains?: string; Limit?: number }; result: { NodeUuids: string[] } };
	/** The caller's bookmarked node uuids, newest first. */
	"user-meta.bookmarkedUuids": { params: { Limit?: number }; result: { NodeUuids: string[] } };
}

export interface UserMetaEvents {
	"usermeta.changed": UserMetaChange;
}
