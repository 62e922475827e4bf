// lib/config-tree without a database: paths, flatten/assemble round trips, and the console logger and log shipper
// whose level changes while the broker runs.
import assert from "node:assert/strict";
import { ServiceBroker } from "moleculer";
import { assemble, flatten, normalizePath } from "../../lib/config-tree/tree";
import { AdjustableConsoleLogger, LogLevelControl } from "../../lib/config-tree/log-level";
import { routesOf, ruleSchema } from "../../lib/discovery/openapi";
import { LogShipper } from "../../lib/logs/shipper";

describe("lib/config-tree", () => {
	it("normalises paths and refuses odd segments", () => {
		assert.equal(normalizePath("/frontend//plugin/core.pydio/"), "frontend/plugin/core.pydio");
		assert.equal(normalizePath(["services", "config"]), "services/config");
		for (const bad of ["frontend/..", "frontend/a b", "frontend/%2e", Array(20).fill("a").join("/")]) assert.throws(() => normalizePath(bad), /path/i, bad);
	});

	it("flattens to leaves and assembles them back", () => {
		const v = { a: 1, b: { c: [1, { d: 2 }], e: {}, f: null }, g: "x" };
		const leaves = flatten("frontend/t", v);
		assert.deepEqual(leaves.map((l) => l.path), ["frontend/t/a", "frontend/t/b/c", "frontend/t/b/e", "frontend/t/b/f", "frontend/t/g"]);
		assert.deepEqual(assemble("frontend/t", leaves), v);
		assert.deepEqual(assemble("frontend", leaves), { t: v });
		assert.equal(assemble("frontend/t/g", [{ path: "frontend/t/g", json: '"x"' }]), "x");
		assert.throws(() => flatten("frontend/t", { "a/b": 1 }), /key/);
	});

	it("changes the level of a running broker's console logger", async () => {
		const lines: string[] = [];
		const logger = new AdjustableConsoleLogger({ level: "info", formatter: (type: string, args: unknown[]) => [`${type}:${args.join(" ")}`] });
		const broker = new ServiceBroker({ logger, nodeID: "log-test" });
		const saved = { log: console.log, error: console.error, warn: console.warn };
		const capture = (...a: unknown[]) => void lines.push(a.join(" "));
		Object.assign(console, { log: capture, error: capture, warn: capture });
		try {
			const log = broker.getLogger("probe");
			log.debug("hidden");
			log.info("shown");
			const control = LogLevelControl.of(broker, "info", () => [logger]);
			assert.equal(control.apply("debug"), true);
			log.debug("now shown");
			control.apply("error");
			log.info("hidden again");
			log.error("an error");
		} finally {
			Object.assign(console, saved);
		}
		const text = lines.join("\n");
		assert.doesNotMatch(text, /hidden/);
		assert.match(text, /shown/);
		assert.match(text, /now shown/);
		assert.match(text, /an error/);
	});

	it("gives the configuration's level to the log shipper too, and its own back when the level is removed", async () => {
		const shipper = new LogShipper({ level: "warn", bufferSize: 100, batchSize: 50, flushMs: 10_000 });
		const broker = new ServiceBroker({ logger: shipper, nodeID: "ship-level-test" });
		// No log service listens: what the shipper keeps stays in its buffer, where it can be counted.
		const log = broker.getLogger("probe");
		const control = LogLevelControl.of(broker, "info", () => [shipper]);
		log.info("below LOG_SHIP_LEVEL");
		assert.equal(shipper.state.buffered, 0);
		assert.equal(control.apply("debug"), true);
		log.debug("shipped at debug");
		log.trace("still below");
		assert.equal(shipper.state.buffered, 1);
		assert.equal(control.apply("debug"), false, "unchanged");
		control.apply("error");
		log.warn("below the configured level");
		assert.equal(shipper.state.buffered, 1);
		// No level in the configuration: back to the shipper's own (warn), not the console's.
		assert.equal(control.apply(undefined), true);
		log.debug("below again");
		log.warn("shipped at warn");
		assert.equal(shipper.state.buffered, 2);
		await shipper.stop();
	});

	it("turns rest declarations and fastest-validator rules into OpenAPI", () => {
		assert.deepEqual(routesOf("GET /config/:Name", "/"), [{ method: "GET", path: "/config/:Name" }]);
		assert.deepEqual(routesOf(["POST /x", { method: "put", path: "/y" }], "/base"), [{ method: "POST", path: "/base/x" }, { method: "PUT", path: "/base/y" }]);
		assert.deepEqual(ruleSchema({ type: "number", integer: true, min: 0 }), { type: "integer", minimum: 0 });
		assert.deepEqual(ruleSchema({ type: "array", items: "string" }), { type: "array", items: { type: "string" } });
		assert.deepEqual(ruleSchema({ type: "object", props: { a: { type: "enum", values: ["x"] }, b: { type: "boolean", optional: true } } }), { type: "object", properties: { a: { type: "string", enum: ["x"] }, b: { type: "boolean" } }, required: ["a"] });
	});
});
