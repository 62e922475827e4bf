// The gateway's short-lived caches (lib/gateway/ttl-cache, response-cache): expiry, clears that outrun late
// writers, and bounds on entries and bytes so that no client can make the gateway hold more.
import assert from "node:assert/strict";
import { TtlCache } from "../../lib/gateway/ttl-cache";
import { ResponseCache } from "../../lib/gateway/response-cache";

describe("gateway caches", () => {
	it("expires entries, and ignores a value computed before a clear", () => {
		const c = new TtlCache<string>(1000);
		c.set("a", "1", Infinity, 0);
		assert.equal(c.get("a", 999), "1");
		assert.equal(c.get("a", 1000), undefined);
		const gen = c.generation;
		c.clear();
		c.set("b", "2", Infinity, Date.now(), gen);
		assert.equal(c.get("b"), undefined);
		c.set("c", "3", Date.now() - 1);
		assert.equal(c.get("c"), undefined, "a credential already expired is not kept");
	});

	it("holds at most so many entries and so many bytes", () => {
		const c = new TtlCache<string>(60_000, 3, 10, (_k, v) => v.length);
		for (const k of ["a", "b", "c"]) c.set(k, "xx");
		assert.equal(c.size, 3);
		c.set("d", "xx");
		assert.equal(c.size, 1, "past the count, the old entries go");
		c.set("e", "xxxxxxxx");
		assert.equal(c.heldBytes, 10);
		c.set("f", "x");
		assert.equal(c.size, 1);
		assert.equal(c.heldBytes, 1, "past the bytes, the old entries go");
		c.set("g", "x".repeat(11));
		assert.equal(c.get("g"), undefined, "an entry larger than the whole budget is not kept");
		c.set("f", "xyz");
		assert.equal(c.heldBytes, 3, "replacing an entry counts it once");
	});

	it("keeps answers within its byte budget and leaves out large ones", () => {
		const r = new ResponseCache(1000, 400);
		const body = (n: number) => ({ type: "application/json", body: Buffer.alloc(n, 97), user: "u" });
		r.set("k1", body(300));
		assert.ok(r.get("k1"));
		r.set("big", body(500));
		assert.equal(r.get("big"), undefined);
		assert.ok(r.get("k1"), "a refused large answer evicts nothing");
		for (let i = 0; i < 5; i++) r.set(`k${i + 2}`, body(300));
		assert.ok(r.heldBytes <= 1000);
	});
});
