// LogShipper: a node's log lines at or above the level reach the log service in batches; while no log service
// listens they wait in a bounded buffer, and what does not fit is counted and reported, not kept; the log
// service's own lines are never shipped (a log service that logs about every batch does not feed itself).
import assert from "node:assert/strict";
import { ServiceBroker, type Context } from "moleculer";
import { formatArgs, LogShipper, shipperOf } from "../../lib/logs/shipper";
import type { LogBatch } from "../../lib/contracts";

async function until(what: string, ok: () => boolean, ms = 3000): Promise<void> {
	const end = Date.now() + ms;
	while (!ok()) {
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 10));
	}
}

describe("LogShipper", () => {
	let broker: ServiceBroker;
	let shipper: LogShipper;
	afterEach(() => broker?.stop());

	it("formats a log call's arguments as one bounded line", () => {
		assert.equal(formatArgs(["a", 1, { b: [2] }]), "a 1 { b: [ 2 ] }");
		assert.match(formatArgs([new Error("boom")]), /^Error: boom\n\s+at /);
		assert.equal(formatArgs(["x".repeat(10_000)]).length, 8193);
		assert.equal(formatArgs(["GET /io/b/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123&x=1 200"]), "GET /io/b/k?X-Amz-Credential=***&X-Amz-Signature=***&x=1 200");
	});

	it("buffers within bounds until a log service listens, counts what it drops, then ships in batches", async () => {
		shipper = new LogShipper({ level: "warn", bufferSize: 5, batchSize: 2, flushMs: 20 });
		broker = new ServiceBroker({ nodeID: "node-x", logger: shipper });
		await broker.start();
		const log = broker.getLogger("test");
		for (let i = 0; i < 8; i++) log.warn(`w${i}`);
		log.info("below the level");
		assert.deepEqual(shipper.state, { buffered: 5, dropped: 3 });
		await new Promise((r) => setTimeout(r, 60));
		assert.deepEqual(shipper.state, { buffered: 5, dropped: 3 }, "kept while nobody listens");

		const batches: LogBatch[] = [];
		broker.createService({ name: "collector", events: { "log.entries"(ctx: Context<LogBatch>) { batches.push(ctx.params); } } });
		await until("the batches", () => batches.reduce((n, b) => n + b.entries.length, 0) >= 5);
		assert.ok(batches.every((b) => b.node === "node-x" && b.entries.length <= 2));
		const msgs = batches.flatMap((b) => b.entries.map((e) => e.msg));
		assert.deepEqual(msgs, ["w0", "w1", "w2", "w3", "w4"]);
		assert.equal(batches.reduce((n, b) => n + b.dropped, 0), 3);
		assert.ok(batches.flatMap((b) => b.entries).every((e) => e.level === "warn" && e.logger === "test"));
		assert.deepEqual(shipper.state, { buffered: 0, dropped: 0 });

		// The level changes at run time, for the loggers already made too.
		assert.equal(shipperOf(broker), shipper);
		shipper.setLevel("info");
		log.info("now shipped");
		await until("the info line", () => batches.some((b) => b.entries.some((e) => e.msg === "now shipped")));
	});

	it("never ships the log service's own lines: a log service that logs each batch does not feed itself", async () => {
		shipper = new LogShipper({ level: "info", bufferSize: 100, batchSize: 10, flushMs: 10 });
		broker = new ServiceBroker({ nodeID: "node-y", logger: shipper });
		const batches: LogBatch[] = [];
		broker.createService({
			name: "log",
			events: {
				"log.entries"(this: { logger: { warn(m: string): void } }, ctx: Context<LogBatch>) {
					batches.push(ctx.params);
					this.logger.warn(`stored ${ctx.params.entries.length} entries`);
				},
			},
		});
		await broker.start();
		broker.getLogger("test").warn("one line");
		await until("the line", () => batches.some((b) => b.entries.some((e) => e.msg === "one line")));
		await new Promise((r) => setTimeout(r, 100));
		const shipped = batches.flatMap((b) => b.entries);
		assert.ok(!shipped.some((e) => e.logger === "log" || e.msg.startsWith("stored ")), "the log service's lines stay local");
		const count = shipped.length;
		await new Promise((r) => setTimeout(r, 100));
		assert.equal(batches.flatMap((b) => b.entries).length, count, "nothing keeps coming");
	});
});
