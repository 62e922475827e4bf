// Broker configuration, from the environment. No TRANSPORTER: every service in one process. TRANSPORTER=redis://…
// (or any Moleculer transporter URL): a cluster where calls are balanced and reads are retried at the caller
// (lib/cluster/reads), and where a node killed on Redis is dropped at the first request it misses (lib/cluster/redis-transporter).
import type { BrokerOptions } from "moleculer";
import { loadConfig } from "./lib/config";
import { shipperFor } from "./lib/logs/shipper";
import { AdjustableConsoleLogger } from "./lib/config-tree/log-level";
import { replCommands } from "./lib/repl/custom-commands";
import { serveMetricsPort } from "./lib/metrics/port";
import { readRetry } from "./lib/cluster/reads";
import { useRedisTransporter } from "./lib/cluster/redis-transporter";

const cfg = loadConfig();
useRedisTransporter();
let stopMetricsPort: (() => Promise<void>) | undefined;

const config: BrokerOptions = {
	namespace: cfg.namespace,
	nodeID: cfg.nodeId || undefined,
	transporter: (cfg.transporter ?? null) as BrokerOptions["transporter"],
	// The console (LOG_LEVEL; adjustable: PUT /a/config/services/config {"logLevel"} changes the level of every
	// node without a restart), and the cluster's log (LOG_SHIP_LEVEL, read with POST /a/log/sys). Moleculer takes
	// logger instances in the array (LoggerFactory resolves each entry); its typings only list configurations.
	logger: [cfg.logLevel === "silent" ? null : new AdjustableConsoleLogger({ level: cfg.logLevel, formatter: "short" }), shipperFor(cfg)].filter((l) => l !== null) as unknown as BrokerOptions["logger"],
	logLevel: cfg.logLevel === "silent" ? undefined : (cfg.logLevel as BrokerOptions["logLevel"]),
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
		check: (err: Error) => ((err as unknown as { code?: number }).code ?? 500) >= 500,
	},
	// METRICS=true: collected here, served by the gateway at GET /metrics (lib/metrics/gateway-metrics) in
	// Prometheus' format; on METRICS_PORT too when given (lib/metrics/port: a node without a gateway).
	metrics: { enabled: cfg.metrics },
	started(broker) {
		if (cfg.metrics && cfg.metricsPort) stopMetricsPort = serveMetricsPort(broker, cfg.metricsPort, cfg.host);
	},
	async stopped() {
		await stopMetricsPort?.();
	},
	tracing: { enabled: false },
	validator: true,
	// `npm run dev` (--repl): Cellar's commands (lib/repl) inside the node; `npm run repl` joins a cluster instead.
	replOptions: { delimiter: "cellar $", customCommands: replCommands() },
	errorHandler(err, info) {
		// Client errors are answers, not failures: only the rest is logged by the gateway.
		throw err;
	},
};

export = config;
