// A node killed outright (SIGKILL, out of memory, a crash) sends no DISCONNECT: Moleculer would count it alive
// until its heartbeat timeout (HEARTBEAT_TIMEOUT, 15 s), and every request balanced to it meanwhile would hang
// that long. Redis knows at once: the dead process's connections are closed, and PUBLISH answers how many
// subscribers got the message. A request that reached nobody says that its node is gone: the node is taken out
// of the registry on the spot, which rejects every request pending on it (RequestRejectedError: reads are then
// retried on another replica, lib/cluster/reads; writes answer 503) and sends the next ones to the other replicas.
// A node that was only cut off from Redis for a moment joins again with its next heartbeat, as after a timeout.
// A request already delivered when its node died gets no such answer: while requests are pending on a node, Redis
// is asked every half second whether that node still listens (PUBSUB NUMSUB of its request topic), so the calls on a
// node killed mid-call are rejected (and reads retried elsewhere) within about that, not at their timeout.
import { Transporters } from "moleculer";

interface Publisher {
	publish(topic: string, data: Buffer): Promise<number>;
	pubsub(sub: "NUMSUB", ...topics: string[]): Promise<unknown[]>;
}

/** How often the nodes holding pending requests are checked, in ms. */
const PENDING_CHECK_MS = 500;

export class RedisTransporter extends Transporters.Redis {
	/** How often nodes with pending requests are checked, in ms (tests turn it off to see the other path alone). */
	pendingCheckMs = PENDING_CHECK_MS;
	private pendingCheck: NodeJS.Timeout | undefined;
	private checking = false;

	async connect(): Promise<void> {
		await super.connect();
		clearInterval(this.pendingCheck);
		this.pendingCheck = setInterval(() => {
			// One check at a time: a slow Redis would otherwise pile them up when they matter most.
			if (this.checking) return;
			this.checking = true;
			void this.checkPending()
				.catch(() => undefined)
				.finally(() => (this.checking = false));
		}, this.pendingCheckMs);
		this.pendingCheck.unref();
	}

	disconnect(): Promise<void> {
		clearInterval(this.pendingCheck);
		this.pendingCheck = undefined;
		return super.disconnect();
	}

	/** The nodes this one awaits answers from, each asked of Redis: one that no longer listens is gone. */
	private async checkPending(): Promise<void> {
		const pub = this.clientPub as Publisher | null;
		const pending = (this.transit as unknown as { pendingRequests?: Map<string, { nodeID?: string | null }> } | undefined)?.pendingRequests;
		if (!pub || !pending?.size || this.opts.cluster) return;
		const nodes = new Set<string>();
		for (const r of pending.values()) if (r.nodeID) nodes.add(r.nodeID);
		if (!nodes.size) return;
		// One round trip for all of them: the answer pairs each topic with its subscriber count.
		const ids = [...nodes];
		const counts = await pub.pubsub("NUMSUB", ...ids.map((id) => this.getTopicName("REQ", id)));
		ids.forEach((id, i) => Number(counts[2 * i + 1]) === 0 && this.nodeGone(id));
	}

	send(topic: string, data: Buffer, meta?: { packet?: { type?: string; target?: string | null } }): Promise<void> {
		const target = meta?.packet?.type === "REQ" ? meta.packet.target : undefined;
		// A Redis Cluster counts the subscribers of the shard that took the PUBLISH only: no conclusion there.
		const pub = this.clientPub as Publisher | null;
		if (!target || !pub || this.opts.cluster) return super.send(topic, data);
		// As Moleculer's own send: not awaited, and a failed PUBLISH is the client's error, which the transporter logs.
		pub.publish(topic, data).then(
			(receivers) => {
				if (receivers === 0) this.nodeGone(target);
			},
			() => undefined,
		);
		return Promise.resolve();
	}

	private nodeGone(nodeID: string): void {
		if (!this.broker.registry.nodes.get(nodeID)?.available) return;
		this.logger.warn(`Node '${nodeID}' no longer listens on Redis: taken out of the registry now, not at its heartbeat timeout.`);
		this.broker.registry.nodes.disconnected(nodeID, true);
	}
}

/**
 * Makes the class above the one Moleculer builds for `redis://` and `rediss://` transporters. Registered by name, not
 * given as an instance in the broker's options: moleculer-runner puts TRANSPORTER's text there, over the file's.
 */
export function useRedisTransporter(): void {
	// Moleculer's typings take an instance; its resolver takes the class it finds under the name.
	Transporters.register("Redis", RedisTransporter as unknown as Transporters.Base);
}
