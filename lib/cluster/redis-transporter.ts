// A node killed outright (SIGKILL, out of memory, a crash) sends no DISCONNECT: Moleculer would count it alive
// until its heartbeat timeout (HEARTBEAT_TIMEOUT, 15 s), and every request balanced to it meanwhile would hang
// that long. Redis knows at once: the dead process's connections are closed, and PUBLISH answers how many
// subscribers got the message. A request that reached nobody says that its node is gone: the node is taken out
// of the registry on the spot, which rejects every request pending on it (RequestRejectedError: reads are then
// retried on another replica, lib/cluster/reads; writes answer 503) and sends the next ones to the other replicas.
// A node that was only cut off from Redis for a moment joins again with its next heartbeat, as after a timeout.
import { Transporters } from "moleculer";

interface Publisher {
	publish(topic: string, data: Buffer): Promise<number>;
}

export class RedisTransporter extends Transporters.Redis {
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
