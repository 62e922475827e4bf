import { strict as assert } from "node:assert";
import { FollowedNodes, type FollowedSource } from "../../lib/activity/followed";

/** A store of subscriptions in memory that counts its reads, and can hold a read until told. */
function source(subs: Record<string, Record<string, string[]>>) {
	const reads = { byUser: 0, among: 0 };
	let gate: Promise<void> | undefined;
	const src: FollowedSource = {
		async byUser(user, max) {
			reads.byUser++;
			const mine = { ...(subs[user] ?? {}) };
			await gate;
			const entries = Object.entries(mine);
			return entries.length > max ? null : new Map(entries);
		},
		async among(user, ids) {
			reads.among++;
			const out: Record<string, string[]> = {};
			for (const id of ids) if (subs[user]?.[id]) out[id] = subs[user][id];
			return out;
		},
	};
	return { src, reads, hold: (p: Promise<void>) => (gate = p) };
}

describe("lib/activity/followed", () => {
	it("reads a user's subscriptions once, then answers every stat and listing from memory", async () => {
		const { src, reads } = source({ ann: { n1: ["change"], n2: ["read", "change"] } });
		const f = new FollowedNodes(src);
		assert.deepEqual(await f.of("ann", ["n1", "n3"]), { n1: ["change"] });
		assert.deepEqual(await f.of("ann", ["n2", "n1", "n2"]), { n1: ["change"], n2: ["read", "change"] });
		assert.deepEqual(await f.of("bob", ["n1"]), {});
		assert.deepEqual(await f.of("ann", []), {});
		assert.equal(reads.byUser, 2);
	});

	it("reads again after a change to that user's subscriptions, and after the entry's time is up", async () => {
		const subs: Record<string, Record<string, string[]>> = { ann: { n1: ["change"] }, bob: { n1: ["read"] } };
		const { src, reads } = source(subs);
		let now = 1000;
		const f = new FollowedNodes(src, { ttlMs: 500, now: () => now });
		await f.of("ann", ["n1"]);
		await f.of("bob", ["n1"]);
		subs.ann = { n2: ["read"] };
		f.forget("ann");
		assert.deepEqual(await f.of("ann", ["n1", "n2"]), { n2: ["read"] });
		assert.equal(reads.byUser, 3, "bob was kept");
		subs.bob = {};
		now += 499;
		assert.deepEqual(await f.of("bob", ["n1"]), { n1: ["read"] }, "a change it was not told of shows within the TTL only");
		now += 1;
		assert.deepEqual(await f.of("bob", ["n1"]), {});
		f.clear();
		assert.equal(f.size, 0);
	});

	it("never keeps what a read started before a change found", async () => {
		const subs: Record<string, Record<string, string[]>> = { ann: { n1: ["change"] } };
		const { src, reads, hold } = source(subs);
		const f = new FollowedNodes(src);
		let open!: () => void;
		hold(new Promise<void>((r) => (open = r)));
		const before = f.of("ann", ["n1"]);
		subs.ann = {};
		f.forget("ann");
		open();
		assert.deepEqual(await before, { n1: ["change"] }, "the answer of its time");
		hold(Promise.resolve());
		assert.deepEqual(await f.of("ann", ["n1"]), {}, "read again, not the older answer");
		assert.equal(reads.byUser, 2);
	});

	it("looks the nodes of each answer up for a user following more than a few, and bounds the users kept", async () => {
		const many = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`g${i}`, ["read"]]));
		const { src, reads } = source({ ivy: many, a: {}, b: {}, c: {} });
		const f = new FollowedNodes(src, { few: 3, maxUsers: 2 });
		assert.deepEqual(await f.of("ivy", ["g4", "zz"]), { g4: ["read"] });
		assert.deepEqual(await f.of("ivy", ["g0"]), { g0: ["read"] });
		assert.equal(reads.among, 2);
		assert.equal(reads.byUser, 1, "that the user follows many is kept too");
		for (const u of ["a", "b", "c"]) await f.of(u, ["x"]);
		assert.equal(f.size, 2);
	});
});
