// GET /metrics on the gateway (METRICS=true): the node's Moleculer metrics (actions called, their latencies and
// errors, transporter packets, process and OS) in Prometheus' text format, with Cellar's own: HTTP requests and
// their latencies, bytes through /io, and the depth of the queues (mails and job tasks in the store, the log
// shipper's buffer), read when scraped — two grouped COUNTs and a field read, cheap at any scrape interval.
import { MetricReporters, type ServiceBroker } from "moleculer";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { IoTransfers } from "../io/transfers";

export interface MetricsSources {
	/** Mails in the store's queue by status (queued, sending, sent, failed). */
	mailQueue(): Promise<Record<string, number>>;
	/** Job tasks in the store by status (Queued, Running, Paused…). */
	jobsQueue(): Promise<Record<string, number>>;
	/** This node's log shipper (null: none): entries waiting to be shipped, entries dropped. */
	logShipper(): { buffered: number; dropped: number } | null;
	io: IoTransfers;
}

/** Histogram buckets of request latencies, in milliseconds. */
const LATENCY_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];
/** A queue count that does not answer within this is left out of the scrape (and said so). */
const SOURCE_TIMEOUT_MS = 2000;

type Registry = ServiceBroker["metrics"];
interface PrometheusText {
	registry: Registry;
	defaultLabels: Record<string, string>;
	generatePrometheusResponse(): string;
}

/** `p`, or a rejection with Error("timeout") when it takes longer than `ms`. */
export function within<T>(p: Promise<T>, ms: number): Promise<T> {
	return new Promise((resolve, reject) => {
		const t = setTimeout(() => reject(new Error("timeout")), ms);
		p.then(
			(v) => (clearTimeout(t), resolve(v)),
			(e) => (clearTimeout(t), reject(e)),
		);
	});
}

export class GatewayMetrics {
	private readonly text?: PrometheusText;

	constructor(
		private readonly broker: ServiceBroker,
		private readonly sources: MetricsSources,
	) {
		const m = broker.metrics;
		if (!m.isEnabled()) return;
		m.register({ type: "counter", name: "cellar.http.requests.total", labelNames: ["method", "status"], description: "HTTP requests answered by the gateway (/a, /io, /ws, pages)" });
		m.register({ type: "histogram", name: "cellar.http.request.duration", labelNames: ["method"], unit: "millisecond", buckets: LATENCY_BUCKETS, quantiles: [0.5, 0.9, 0.99], description: "Time to answer an HTTP request, in milliseconds" });
		m.register({ type: "gauge", name: "cellar.io.requests.total", description: "S3 requests through /io since the node started" });
		m.register({ type: "gauge", name: "cellar.io.received.bytes", unit: "byte", description: "Bytes received through /io since the node started (uploads)" });
		m.register({ type: "gauge", name: "cellar.io.sent.bytes", unit: "byte", description: "Bytes sent through /io since the node started (downloads)" });
		m.register({ type: "gauge", name: "cellar.mail.queue", labelNames: ["status"], description: "Mails in the queue by status (the store: every node's)" });
		m.register({ type: "gauge", name: "cellar.jobs.tasks", labelNames: ["status"], description: "Job tasks by status (the store: every node's); Queued is the queue's depth" });
		m.register({ type: "gauge", name: "cellar.log.shipper.buffered", description: "Log entries of this node waiting to be shipped to the log service" });
		m.register({ type: "gauge", name: "cellar.log.shipper.dropped", description: "Log entries this node dropped since its last batch (buffer full)" });
		m.register({ type: "gauge", name: "cellar.metrics.source.failures", labelNames: ["source"], description: "1 when a source could not be read at the last scrape" });
		// Moleculer's Prometheus reporter renders the registry; its own HTTP server is not started (init is not called).
		const reporter = new MetricReporters.Prometheus({}) as unknown as PrometheusText;
		reporter.registry = m;
		reporter.defaultLabels = { namespace: broker.namespace, nodeID: broker.nodeID };
		this.text = reporter;
	}

	get enabled(): boolean {
		return !!this.text;
	}

	/** Counts the request and its latency when it is answered. */
	track(req: IncomingMessage, res: ServerResponse): void {
		if (!this.text) return;
		const started = process.hrtime.bigint();
		res.once("finish", () => {
			const m = this.broker.metrics;
			const method = req.method ?? "GET";
			m.increment("cellar.http.requests.total", { method, status: String(res.statusCode) });
			m.observe("cellar.http.request.duration", Number(process.hrtime.bigint() - started) / 1e6, { method });
		});
	}

	/** The Prometheus text of this node, its gauges read now. */
	async render(): Promise<string> {
		if (!this.text) throw new Error("metrics are disabled");
		const m = this.broker.metrics;
		const io = this.sources.io;
		m.set("cellar.io.requests.total", io.requests);
		m.set("cellar.io.received.bytes", io.bytesIn);
		m.set("cellar.io.sent.bytes", io.bytesOut);
		const shipper = this.sources.logShipper();
		if (shipper) {
			m.set("cellar.log.shipper.buffered", shipper.buffered);
			m.set("cellar.log.shipper.dropped", shipper.dropped);
		}
		const queues: [string, string, () => Promise<Record<string, number>>][] = [
			["mail", "cellar.mail.queue", () => this.sources.mailQueue()],
			["jobs", "cellar.jobs.tasks", () => this.sources.jobsQueue()],
		];
		await Promise.all(
			queues.map(async ([source, name, read]) => {
				try {
					const counts = await within(read(), SOURCE_TIMEOUT_MS);
					// Statuses gone since the last scrape read 0, not their old count.
					for (const v of (m.getMetric(name)?.snapshot() ?? []) as { labels: { status?: string } }[]) if (v.labels.status && !(v.labels.status in counts)) m.set(name, 0, { status: v.labels.status });
					for (const [status, n] of Object.entries(counts)) m.set(name, n, { status });
					m.set("cellar.metrics.source.failures", 0, { source });
				} catch {
					m.set("cellar.metrics.source.failures", 1, { source });
				}
			}),
		);
		return this.text.generatePrometheusResponse();
	}
}
