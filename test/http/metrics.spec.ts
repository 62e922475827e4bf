// GET /healthz, /readyz (anonymous, reasons when not ready) and /metrics (METRICS=true: Prometheus text with the
// HTTP requests and latencies, the bytes through /io, the queue depths and Moleculer's own metrics).
import assert from "node:assert/strict";
import type { BrokerOptions } from "moleculer";
import { startNode, type TestNode } from "../helpers/node";
import { LogShipper } from "../../lib/logs/shipper";
import { call } from "../../lib/contracts";
import { serveMetricsPort } from "../../lib/metrics/port";
import { ServiceBroker } from "moleculer";
import { createServer } from "node:net";

/** The value of a sample (`name{labels} value`) whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
	for (const line of text.split("\n")) {
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
		if (!m || m[1] !== name) continue;
		const have = Object.fromEntries([...(m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
		if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
	}
	return undefined;
}

describe("health and metrics", function () {
	this.timeout(60_000);

	describe("a node with METRICS", () => {
		let node: TestNode;
		const shipper = new LogShipper({ level: "info", bufferSize: 100, batchSize: 10, flushMs: 1000 });
		before(async () => {
			node = await startNode({ env: { METRICS: "true" }, logger: [shipper] as unknown as BrokerOptions["logger"], broker: { metrics: { enabled: true } } });
		});
		after(() => node.stop());

		it("/healthz and /readyz answer anonymously when the node serves", async () => {
			const live = await node.api("GET", "/healthz");
			assert.equal(live.status, 200);
			assert.deepEqual(live.body, { Status: "UP" });
			const ready = await node.api("GET", "/readyz");
			assert.equal(ready.status, 200, ready.text);
			assert.deepEqual(ready.body, { Ready: true });
			assert.equal((await node.api("POST", "/readyz", {})).status, 405);
		});

		it("/metrics counts requests and latencies, bytes through /io and the queues, next to Moleculer's metrics", async () => {
			const admin = await node.login("admin", node.adminPassword);
			const body = Buffer.alloc(300_000, 7);
			const before = await node.api("GET", "/metrics");
			assert.equal(before.status, 200, before.text);
			assert.match(before.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
			const in0 = sample(before.text, "cellar_io_received_bytes") ?? 0;
			const out0 = sample(before.text, "cellar_io_sent_bytes") ?? 0;

			const put = await fetch(`${node.url}/io/common-files/metrics.bin`, { method: "PUT", headers: { "X-Pydio-Bearer": admin, "Content-Type": "application/octet-stream" }, body });
			assert.equal(put.status, 200, await put.text());
			const get = await fetch(`${node.url}/io/common-files/metrics.bin`, { headers: { "X-Pydio-Bearer": admin } });
			assert.equal(Buffer.from(await get.arrayBuffer()).length, body.length);
			// A job queued by a user, and a mail in the queue (an invitation-like message through the mailer).
			const job = await node.api("PUT", "/a/jobs/user/datasource-resync", { JsonParameters: JSON.stringify({ dsName: "pydiods1" }) }, admin);
			assert.equal(job.status, 200, job.text);
			await call(node.broker, "mailer.queue", { to: [{ address: "ops@example.com" }], subject: "metrics", text: "hello" });

			const text = (await node.api("GET", "/metrics")).text;
			assert.ok((sample(text, "cellar_io_received_bytes") ?? 0) - in0 >= body.length, "bytes in");
			assert.ok((sample(text, "cellar_io_sent_bytes") ?? 0) - out0 >= body.length, "bytes out");
			assert.ok((sample(text, "cellar_io_requests_total") ?? 0) >= 2);
			assert.ok((sample(text, "cellar_http_requests_total", { method: "POST", status: "200" }) ?? 0) >= 1, "the login counted");
			assert.ok((sample(text, "cellar_http_request_duration_count", { method: "GET" }) ?? 0) >= 1);
			assert.match(text, /^cellar_http_request_duration_bucket\{.*le="100".*\} \d+$/m);
			const tasks = [...text.matchAll(/^cellar_jobs_tasks\{[^}]*status="(\w+)"[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[2]), 0);
			assert.ok(tasks >= 1, "the job's task counted");
			assert.equal(sample(text, "cellar_metrics_source_failures", { source: "jobs" }), 0);
			assert.equal(sample(text, "cellar_metrics_source_failures", { source: "mail" }), 0);
			const mails = [...text.matchAll(/^cellar_mail_queue\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
			assert.ok(mails >= 1, "the mail counted");
			assert.notEqual(sample(text, "cellar_log_shipper_buffered"), undefined);
			// Moleculer's own: the actions this node ran, with its node id.
			assert.ok((sample(text, "moleculer_request_total", { action: "auth.login", nodeID: node.broker.nodeID }) ?? sample(text, "moleculer_request_total", { nodeID: node.broker.nodeID }) ?? 0) >= 1);
			assert.doesNotMatch(text, new RegExp(admin.slice(0, 20)), "no token in the metrics");
		});
	});

	it("METRICS_PORT: a node without a gateway serves its metrics on its own port", async () => {
		const port = await new Promise<number>((res) => {
			const srv = createServer().listen(0, "127.0.0.1", () => {
				const p = (srv.address() as { port: number }).port;
				srv.close(() => res(p));
			});
		});
		const broker = new ServiceBroker({ logger: false, metrics: { enabled: true }, nodeID: "worker-1" });
		await broker.start();
		const stop = serveMetricsPort(broker, port, "127.0.0.1");
		try {
			await broker.call("$node.health");
			let r: Response | null = null;
			for (let i = 0; i < 50 && !r; i++) r = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => (new Promise((res) => setTimeout(res, 50)).then(() => null)));
			assert.equal(r?.status, 200);
			assert.ok((sample(await r!.text(), "moleculer_request_total", { action: "$node.health", nodeID: "worker-1" }) ?? 0) >= 1);
		} finally {
			await stop();
			await broker.stop();
		}
	});

	it("without METRICS, /metrics says how to turn them on", async () => {
		const node = await startNode({ services: ["api"] });
		try {
			const r = await node.api("GET", "/metrics");
			assert.equal(r.status, 404);
			assert.match(r.body.Title ?? r.text, /METRICS=true/);
		} finally {
			await node.stop();
		}
	});

	it("/readyz says why a node is not ready: required services missing, the store unreachable (no secret in the reasons)", async () => {
		const node = await startNode({ services: ["api"], env: { DATABASE_URL: "postgres://cellar:S3cret-Pw@127.0.0.1:1/nowhere" } });
		try {
			assert.equal((await node.api("GET", "/healthz")).status, 200);
			const r = await node.api("GET", "/readyz");
			assert.equal(r.status, 503, r.text);
			assert.equal(r.body.Ready, false);
			assert.ok(r.body.Reasons.some((x: string) => /required services run on no node: auth, policy, tokens, users/.test(x)), r.text);
			assert.ok(r.body.Reasons.some((x: string) => /the store (is unreachable|did not answer)/.test(x)), r.text);
			assert.doesNotMatch(r.text, /S3cret|cellar:|127\.0\.0\.1:1/);
		} finally {
			await node.stop();
		}
	});
});
