// What every broker that joins a Cellar cluster must agree on (namespace, transporter, serializer, timeouts,
// heartbeats) and how its calls behave (retries, balancing, circuit breaker): the nodes (moleculer.config.ts)
// and `npm run repl` (bin/repl.ts) both start from these, so a REPL always speaks to the nodes as they speak
// to each other.
import type { BrokerOptions } from "moleculer";
import type { CellarConfig } from "../config";

export function clusterBrokerOptions(cfg: CellarConfig): BrokerOptions {
	return {
		namespace: cfg.namespace,
		transporter: (cfg.transporter ?? null) as BrokerOptions["transporter"],
		serializer: "JSON",
		requestTimeout: cfg.requestTimeout,
		// Retries are opt-in per action (`retryPolicy: { enabled: true }` on reads): a write is never replayed.
		retryPolicy: {
			enabled: false,
			retries: 3,
			delay: 100,
			maxDelay: 1000,
			factor: 2,
			check: (err: Error) => !!(err as { retryable?: boolean }).retryable,
		},
		registry: { strategy: "RoundRobin", preferLocal: true },
		heartbeatInterval: cfg.heartbeatInterval,
		heartbeatTimeout: cfg.heartbeatTimeout,
		circuitBreaker: {
			enabled: true,
			threshold: 0.5,
			minRequestCount: 20,
			windowTime: 60,
			halfOpenTime: 10_000,
			check: (err: Error) => ((err as unknown as { code?: number }).code ?? 500) >= 500,
		},
		validator: true,
	};
}
