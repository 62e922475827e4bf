import { strict as assert } from "node:assert";
import { ValuedNodes } from "../../lib/usermeta/valued";

describe("lib/usermeta/valued", () => {
	it("keeps which nodes have values: only those are looked up, and a node added here or announced is at once", async () => {
		const stored = ["n1", "n2"];
		const v = new ValuedNodes({ nodesWithValues: async () => [...stored] });
		assert.deepEqual(v.among(["n1", "x"]), ["n1", "x"], "before the first read, every node is looked up");
		await v.load();
		assert.ok(v.kept);
		assert.deepEqual(v.among(["x", "n2", "y", "n1"]), ["n2", "n1"]);
		assert.deepEqual(v.among(["x"]), []);
		v.add(["x"]);
		assert.deepEqual(v.among(["x", "y"]), ["x"]);
	});

	it("keeps a node added while the whole set is read again, and drops what the store no longer has", async () => {
		let stored = ["n1", "gone"];
		let release!: () => void;
		const v = new ValuedNodes({
			nodesWithValues: async () => {
				const snapshot = [...stored];
				await new Promise<void>((r) => (release = r));
				return snapshot;
			},
		});
		const first = v.load();
		release();
		await first;
		stored = ["n1"];
		const again = v.load();
		v.add(["late"]);
		release();
		await again;
		assert.deepEqual(v.among(["n1", "gone", "late"]), ["n1", "late"]);
	});

	it("asks the store for every node when more nodes than it keeps have values", async () => {
		const v = new ValuedNodes({ nodesWithValues: async (max) => (max < 3 ? null : ["a", "b", "c"]) }, 2);
		await v.load();
		assert.equal(v.kept, false);
		assert.deepEqual(v.among(["q", "a"]), ["q", "a"]);
		const w = new ValuedNodes({ nodesWithValues: async () => ["a"] }, 2);
		await w.load();
		w.add(["b", "c"]);
		assert.equal(w.kept, false, "past the bound by additions too");
		assert.deepEqual(w.among(["z"]), ["z"]);
	});
});
