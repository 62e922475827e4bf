// What the gateway's /healthz, /readyz and /metrics read, gathered for one node: its broker and registry, the
// store (a lazily acquired shared handle: lib/db/shared), the /io counters and the node's log shipper.
import { sql } from "kysely";
import type { ServiceBroker } from "moleculer";
import { lazyDatabase } from "../db/shared";
import { JobsRepo } from "../db/jobs";
import { MailQueueRepo } from "../db/mail-queue";
import { shipperOf } from "../logs/shipper";
import type { IoTransfers } from "../io/transfers";
import { GatewayMetrics } from "../metrics/gateway-metrics";
import type { HealthDeps } from "./health";

export interface NodeProbes {
	health: HealthDeps;
	metrics: GatewayMetrics;
	release(): Promise<void>;
}

export function nodeProbes(broker: ServiceBroker, io: IoTransfers, serving: () => boolean, store: { databaseUrl?: string; dataDir: string }): NodeProbes {
	const handle = lazyDatabase({ databaseUrl: store.databaseUrl, dataDir: store.dataDir });
	const health: HealthDeps = {
		started: () => broker.started,
		serving,
		services: () => (broker.registry.getServiceList({ onlyAvailable: true }) as { name: string }[]).map((s) => s.name),
		pingStore: async () => {
			await sql`select 1`.execute((await handle.db()).kysely);
		},
	};
	const metrics = new GatewayMetrics(broker, {
		mailQueue: async () => new MailQueueRepo(await handle.db()).countByStatus(),
		jobsQueue: async () => new JobsRepo(await handle.db()).countByStatus(),
		logShipper: () => shipperOf(broker)?.state ?? null,
		io,
	});
	return { health, metrics, release: () => handle.release() };
}
