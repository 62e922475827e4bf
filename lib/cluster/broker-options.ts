// What every broker that joins a Cellar cluster must agree on (namespace, transporter, serializer, timeouts,
// heartbeats) and how its calls behave (retries, balancing, circuit breaker): the nodes (moleculer.config.ts)
// and `npm run repl` (bin/repl.ts) both start from these, so a REPL always speaks to the nodes as they speak
// to each other.
import type { BrokerOptions } from "moleculer";
import type { CellarConfig } from "../config";
import { readRetry } from "./reads";
import { useRedisTransporter } from "./redis-transporter";
import { BUSY } from "../errors";

export function clusterBrokerOptions(cfg: CellarConfig): BrokerOptions {
	// Moleculer's runner resolves TRANSPORTER=redis://… by name: ours drops a node Redis says no longer listens.
	useRedisTransporter();
	return {
		namespace: cfg.namespace,
		transporter: (cfg.transporter ?? null) as BrokerOptions["transporter"],
		serializer: "JSON",
		requestTimeout: cfg.requestTimeout,
		// Actions that declare `read: true` are tried again on another replica when their node fails mid-call (the
		// caller's middleware); a write is never replayed. Moleculer's own retry policy stays off.
		middlewares: [readRetry()],
		registry: { strategy: "RoundRobin", preferLocal: true },
		heartbeatInterval: cfg.heartbeatInterval,
		heartbeatTimeout: cfg.heartbeatTimeout,
		circuitBreaker: {
			enabled: true,
			threshold: 0.5,
			minRequestCount: 20,
			windowTime: 60,
			halfOpenTime: 10_000,
			check: (err: Error) => ((err as unknown as { code?: number }).code ?? 500) >= 500 && (err as unknown as { type?: string }).type !== BUSY,
		},
		validator: true,
	};
}
