// Broker configuration, from the environment. No TRANSPORTER: every service in one process. TRANSPORTER=redis://…
// (or any Moleculer transporter URL): a cluster where calls are balanced and reads are retried at the caller
// (lib/cluster/reads), and where a node killed on Redis is dropped at the first request it misses (lib/cluster/redis-transporter).
import type { BrokerOptions } from "moleculer";
import { loadConfig } from "./lib/config";
import { shipperFor } from "./lib/logs/shipper";
import { isLogLevel } from "./lib/logs/model";
import { AdjustableConsoleLogger } from "./lib/config-tree/log-level";
import { replCommands } from "./lib/repl/custom-commands";
import { serveMetricsPort } from "./lib/metrics/port";
import { clusterBrokerOptions } from "./lib/cluster/broker-options";

const cfg = loadConfig();
let stopMetricsPort: (() => Promise<void>) | undefined;

const config: BrokerOptions = {
	...clusterBrokerOptions(cfg),
	nodeID: cfg.nodeId || undefined,
	// The console (LOG_LEVEL) and the cluster's log (LOG_SHIP_LEVEL, read with POST /a/log/sys); PUT
	// /a/config/services/config {"logLevel"} sets the level of both, on every node, without a restart. Moleculer takes
	// logger instances in the array (LoggerFactory resolves each entry); its typings only list configurations.
	logger: [isLogLevel(cfg.logLevel) ? new AdjustableConsoleLogger({ level: cfg.logLevel, formatter: "short" }) : null, shipperFor(cfg)].filter((l) => l !== null) as unknown as BrokerOptions["logger"],
	logLevel: cfg.logLevel === "silent" ? undefined : (cfg.logLevel as BrokerOptions["logLevel"]),
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
	// `npm run dev` (--repl): Cellar's commands (lib/repl) inside the node; `npm run repl` joins a cluster instead.
	replOptions: { delimiter: "cellar $", customCommands: replCommands() },
	errorHandler(err, info) {
		// Client errors are answers, not failures: only the rest is logged by the gateway.
		throw err;
	},
};

export = config;
