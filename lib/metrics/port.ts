// METRICS_PORT: Moleculer's Prometheus reporter on its own port, for nodes that run no gateway (the gateway serves
// GET /metrics itself). Started from the broker's `started` hook rather than declared in the broker's `metrics`
// option: moleculer-runner replaces that option with `true` when a METRICS variable is in the environment.
import { MetricReporters, type ServiceBroker } from "moleculer";

interface Reporter {
	init(registry: ServiceBroker["metrics"]): void;
	stop(): Promise<void>;
}

/** Serves the broker's metrics at http://<host>:<port>/metrics; the function returned stops it. */
export function serveMetricsPort(broker: ServiceBroker, port: number, host: string): () => Promise<void> {
	const reporter = new MetricReporters.Prometheus({ port, host, path: "/metrics" }) as unknown as Reporter;
	reporter.init(broker.metrics);
	return () => reporter.stop();
}
