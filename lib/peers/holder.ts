// Which node holds the folder of a LOCAL datasource, and where other nodes reach it. In a cluster, a LOCAL
// datasource names its holder in PeerAddress (a node id, set to the node that created it when none is given);
// the holder opens the folder, every other node goes through the holder's gateway (PeerObjectStore). Without a
// transporter there is one node: it holds everything, whatever PeerAddress says (so a node id that changes with
// each restart of a single process changes nothing), and nothing is ever claimed.
//
// A LOCAL datasource of a cluster without PeerAddress (the install defaults, created by the datasources service
// at its start, wherever it runs; one created on a single node before it became a cluster; one of a store from
// before holders were recorded) is claimed by the first node running `api` that opens it or sweeps it (at its
// gateway's start, and on each change): one conditional UPDATE in the shared store, so of nodes claiming at once
// exactly one becomes the holder and the others read it back. A node claims only for itself, and only when it
// runs `api`: the holder must serve /_peer/store, and its folder must be on the holder's disk (files uploaded
// before an upgrade went through the /io gateway of an `api` node, into its DATA_DIR). Not "the node that ran the
// install": every node running `install` runs that set-up (idempotently, not once per cluster), and it does not
// create the datasources. A node without `api` answers 503 for the datasource until a holder is recorded, rather
// than writing into its own DATA_DIR bytes no other node would see.
import { ServiceUnavailableError } from "../errors";

export interface HeldDataSource {
	StorageType?: string;
	PeerAddress?: string;
}

/** The node that holds the datasource's folder when it is not `self`; undefined when `self` opens it. */
export function remoteHolder(ds: HeldDataSource, self: string, clustered: boolean): string | undefined {
	if (!clustered || (ds.StorageType ?? "LOCAL") !== "LOCAL" || !ds.PeerAddress || ds.PeerAddress === self) return undefined;
	return ds.PeerAddress;
}

/** Whether this node may serve the datasource's bytes to other nodes: in a cluster, only its recorded holder. */
export function holds(ds: HeldDataSource, self: string, clustered: boolean): boolean {
	return (ds.StorageType ?? "LOCAL") === "LOCAL" && (!clustered || ds.PeerAddress === self);
}

/** A LOCAL datasource of a cluster that no node holds yet. */
export function unheld(ds: HeldDataSource, clustered: boolean): boolean {
	return clustered && (ds.StorageType ?? "LOCAL") === "LOCAL" && !ds.PeerAddress;
}

export interface HolderClaim<T> {
	clustered: boolean;
	/** This node runs `api`: it serves /_peer/store, so it may hold folders. */
	canHold: boolean;
	/** Records this node as the holder unless another one was recorded first; the datasource as stored then. */
	claim(name: string): Promise<T>;
}

/** The datasource with its holder recorded, claimed by this node when it has none (see the top of this file). */
export async function withHolder<T extends HeldDataSource & { Name: string }>(ds: T, opts: HolderClaim<T>): Promise<T> {
	if (!unheld(ds, opts.clustered)) return ds;
	if (!opts.canHold) throw new ServiceUnavailableError(`Datasource ${ds.Name} has no holder yet: the first node running api to open it becomes its holder; retry in a moment`);
	return opts.claim(ds.Name);
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
