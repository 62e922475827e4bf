// Which node holds the folder of a LOCAL datasource, and where other nodes reach it. In a cluster, a LOCAL
// datasource names its holder in PeerAddress (a node id, set to the node that created it when none is given);
// the holder opens the folder, every other node goes through the holder's gateway (PeerObjectStore). Without a
// transporter there is one node: it holds everything, whatever PeerAddress says (so a node id that changes with
// each restart of a single process changes nothing). A LOCAL datasource without PeerAddress (created before
// PeerAddress was recorded, or the install defaults) is opened by every node from its own DATA_DIR, as before.

export interface HeldDataSource {
	StorageType?: string;
	PeerAddress?: string;
}

/** The node that holds the datasource's folder when it is not `self`; undefined when `self` opens it. */
export function remoteHolder(ds: HeldDataSource, self: string, clustered: boolean): string | undefined {
	if (!clustered || (ds.StorageType ?? "LOCAL") !== "LOCAL" || !ds.PeerAddress || ds.PeerAddress === self) return undefined;
	return ds.PeerAddress;
}

/** Whether this node may serve the datasource's bytes to other nodes. */
export function holds(ds: HeldDataSource, self: string, clustered: boolean): boolean {
	return (ds.StorageType ?? "LOCAL") === "LOCAL" && remoteHolder(ds, self, clustered) === undefined;
}

/**
 * The address this node announces for its gateway: PEER_URL when set, else the bound host (or, bound to every
 * interface, the first address the broker found on the machine) and the port it listens on.
 */
export function advertisedPeerUrl(opts: { peerUrl?: string; host: string; port: number; ips: string[] }): string {
	if (opts.peerUrl) return opts.peerUrl;
	const wildcard = !opts.host || opts.host === "0.0.0.0" || opts.host === "::";
	let host = wildcard ? (opts.ips[0] ?? "127.0.0.1") : opts.host;
	if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
	return `http://${host}:${opts.port}`;
}

/** The cluster secret of peer requests, derived from JWT_SECRET with its own label. */
export const PEER_SECRET_LABEL = "peer-store-requests";
