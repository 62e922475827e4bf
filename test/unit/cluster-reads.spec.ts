// lib/cluster/reads and lib/cluster/redis-transporter with real brokers in one process: a caller, and two replicas
// "b" and "c" of a service with a read and a write. A node leaving with a call pending on it rejects that call
// (Moleculer's RequestRejectedError): a read is answered by the other replica, a write fails with it and is never
// sent again. Over Redis, a replica whose connection is gone is dropped at the first request that reaches nobody.
import assert from "node:assert/strict";
import { ServiceBroker, type Context } from "moleculer";
import { isNodeFailure, readRetry } from "../../lib/cluster/reads";
import { RedisTransporter } from "../../lib/cluster/redis-transporter";
import { NotFoundError, toRestError } from "../../lib/errors";
import { REDIS, requireRedis, until } from "../helpers/cluster";

type Calls = { get: string[]; put: string[]; missing: string[] };

/** A replica whose `get` and `put` hang while `hang` is true, as on a node that died mid-call. */
function replica(nodeID: string, calls: Calls, state: { hang: boolean }) {
	return {
		name: "svc",
		actions: {
			get: {
				read: true,
				handler(ctx: Context<{ id: string }>) {
					calls.get.push(nodeID);
					return state.hang ? new Promise(() => undefined) : { id: ctx.params.id, by: nodeID };
				},
			},
			put: {
				handler() {
					calls.put.push(nodeID);
					return state.hang ? new Promise(() => undefined) : { by: nodeID };
				},
			},
			missing: {
				read: true,
				handler() {
					calls.missing.push(nodeID);
					throw new NotFoundError("no such thing");
				},
			},
		},
	};
}

describe("cluster reads: retried on another replica when their node fails, writes never", function () {
	this.timeout(30_000);
	const brokers: ServiceBroker[] = [];
	const make = (nodeID: string, namespace: string, transporter: "Fake" | RedisTransporter, extra: Partial<ConstructorParameters<typeof ServiceBroker>[0]> = {}) => {
		const b = new ServiceBroker({ nodeID, namespace, transporter, logger: false, requestTimeout: 10_000, heartbeatInterval: 1, heartbeatTimeout: 30, middlewares: [readRetry({ retries: 3, delay: 10, maxDelay: 50 })], registry: { strategy: "RoundRobin", preferLocal: true }, ...extra });
		brokers.push(b);
		return b;
	};
	afterEach(async () => {
		await Promise.all(brokers.splice(0).map((b) => b.stop().catch(() => undefined)));
	});

	/** Caller "a" and replicas "b" (hanging) and "c", over the in-process transporter. */
	async function cluster() {
		const ns = `reads-${process.pid}-${Date.now()}-${Math.random()}`;
		const calls: Calls = { get: [], put: [], missing: [] };
		const a = make("a", ns, "Fake");
		const b = make("b", ns, "Fake");
		const c = make("c", ns, "Fake");
		b.createService(replica("b", calls, { hang: true }));
		c.createService(replica("c", calls, { hang: false }));
		await Promise.all([a.start(), b.start(), c.start()]);
		await a.waitForServices("svc");
		await until("b and c to be known to a", async () => a.registry.getActionEndpoints("svc.get")?.count() === 2, 5000);
		return { a, calls };
	}

	it("answers a read from c when b, where it was pending, leaves", async () => {
		const { a, calls } = await cluster();
		const read = a.call("svc.get", { id: "x" });
		// Only reads that the balancer sent to b hang: send until one does.
		const more = [read];
		while (!calls.get.includes("b")) {
			more.push(a.call("svc.get", { id: "x" }));
			await new Promise((r) => setTimeout(r, 10));
		}
		a.registry.nodes.disconnected("b", true);
		for (const answer of await Promise.all(more)) assert.deepEqual(answer, { id: "x", by: "c" });
		assert.equal(calls.get.filter((n) => n === "b").length, 1);
	});

	it("fails a write pending on b with a 503 when b leaves, and never sends it to c", async () => {
		const { a, calls } = await cluster();
		const writes: Promise<unknown>[] = [];
		while (!calls.put.includes("b")) {
			writes.push(a.call("svc.put", {}).catch((e: unknown) => e));
			await new Promise((r) => setTimeout(r, 10));
		}
		const onC = calls.put.filter((n) => n === "c").length;
		a.registry.nodes.disconnected("b", true);
		const results = await Promise.all(writes);
		const rejected = results.filter((r) => r instanceof Error);
		assert.equal(rejected.length, 1);
		assert.equal((rejected[0] as Error).name, "RequestRejectedError");
		assert.ok(isNodeFailure(rejected[0]));
		assert.deepEqual(toRestError(rejected[0]), { status: 503, body: { Code: "service.unavailable", Title: "Service temporarily unavailable", Detail: "Service Unavailable: Service temporarily unavailable" } });
		await new Promise((r) => setTimeout(r, 100));
		assert.equal(calls.put.filter((n) => n === "c").length, onC, "the write was sent again");
	});

	it("does not retry a read that failed for its own reason, nor one directed at a node", async () => {
		const { a, calls } = await cluster();
		await assert.rejects(a.call("svc.missing", {}), (e: Error) => e.name === "NotFoundError");
		assert.equal(calls.missing.length, 1);
		const directed = a.call("svc.get", { id: "y" }, { nodeID: "b" }).catch((e: unknown) => e);
		await until("b to get the directed read", async () => calls.get.includes("b"), 5000);
		a.registry.nodes.disconnected("b", true);
		assert.equal(((await directed) as Error).name, "RequestRejectedError");
		assert.deepEqual(calls.get, ["b"]);
	});

	it("over Redis, drops a replica whose connection is gone at the first request to it, long before its heartbeat timeout", async function () {
		await requireRedis(this);
		const ns = `reads-redis-${process.pid}-${Date.now()}`;
		const calls: Calls = { get: [], put: [], missing: [] };
		const caller = new RedisTransporter(REDIS);
		// Only the publish that reached nobody may drop b here: the periodic check of pending requests is off.
		caller.pendingCheckMs = 3_600_000;
		const a = make("a", ns, caller);
		const b = make("b", ns, new RedisTransporter(REDIS));
		const c = make("c", ns, new RedisTransporter(REDIS));
		b.createService(replica("b", calls, { hang: true }));
		c.createService(replica("c", calls, { hang: false }));
		await Promise.all([a.start(), b.start(), c.start()]);
		await until("b and c to be known to a", async () => a.registry.getActionEndpoints("svc.get")?.count() === 2, 10_000);
		const reads: Promise<unknown>[] = [];
		while (!calls.get.includes("b")) {
			reads.push(a.call("svc.get", { id: "z" }));
			await new Promise((r) => setTimeout(r, 20));
		}
		// b's process "dies": its connections to Redis close, and it sends nothing more (no DISCONNECT, no heartbeat).
		const tx = b.transit!.tx as RedisTransporter;
		(tx.clientSub as { disconnect(): void }).disconnect();
		(tx.clientPub as { disconnect(): void }).disconnect();
		const gone = Date.now();
		// Reads go on: the first one balanced to b reaches nobody, which drops b and rejects what was pending there.
		while (a.registry.nodes.get("b")?.available) {
			reads.push(a.call("svc.get", { id: "z" }));
			await new Promise((r) => setTimeout(r, 20));
			assert.ok(Date.now() - gone < 5000, "b is still in a's registry");
		}
		for (const answer of await Promise.all(reads)) assert.deepEqual(answer, { id: "z", by: "c" });
		assert.ok(Date.now() - gone < 5000);
	});

	it("over Redis, drops a replica that dies holding a request when no other request goes to it (pending requests checked)", async function () {
		await requireRedis(this);
		const ns = `reads-pending-${process.pid}-${Date.now()}`;
		const calls: Calls = { get: [], put: [], missing: [] };
		const a = make("a", ns, new RedisTransporter(REDIS));
		const b = make("b", ns, new RedisTransporter(REDIS));
		const c = make("c", ns, new RedisTransporter(REDIS));
		b.createService(replica("b", calls, { hang: true }));
		c.createService(replica("c", calls, { hang: false }));
		await Promise.all([a.start(), b.start(), c.start()]);
		await until("b and c to be known to a", async () => a.registry.getActionEndpoints("svc.get")?.count() === 2, 10_000);
		const reads: Promise<unknown>[] = [];
		while (!calls.get.includes("b")) {
			reads.push(a.call("svc.get", { id: "w" }));
			await new Promise((r) => setTimeout(r, 20));
		}
		const tx = b.transit!.tx as RedisTransporter;
		(tx.clientSub as { disconnect(): void }).disconnect();
		(tx.clientPub as { disconnect(): void }).disconnect();
		const gone = Date.now();
		// No new request: only the check of the nodes holding pending requests can find b gone.
		for (const answer of await Promise.all(reads)) assert.deepEqual(answer, { id: "w", by: "c" });
		assert.equal(a.registry.nodes.get("b")?.available, false);
		assert.ok(Date.now() - gone < 5000, `b dropped after ${Date.now() - gone} ms`);
	});
});
