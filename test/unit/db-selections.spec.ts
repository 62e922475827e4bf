// SelectionsRepo on SQLite and PostgreSQL: a selection reads back as written, the sweep removes only expired
// ones, and the NeDB collection imports.
import assert from "node:assert/strict";
import { SelectionsRepo, type SelectionRecord } from "../../lib/db/selections";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("SelectionsRepo", (h) => {
	let repo: SelectionsRepo;
	before(() => {
		repo = new SelectionsRepo(h().db);
	});

	it("reads a selection back as written, with or without an action; null for an unknown uuid", async () => {
		const a: SelectionRecord = { uuid: "s-a", owner: "u1", paths: ["ws/a.txt", "ws/dossier é/b"], action: "download", expires: 2_000_000_000 };
		const b: SelectionRecord = { uuid: "s-b", owner: "u2", paths: ["ws/c"], expires: 2_000_000_000 };
		await repo.create(a);
		await repo.create(b);
		assert.deepEqual(await repo.byUuid("s-a"), a);
		assert.deepEqual(await repo.byUuid("s-b"), b);
		assert.equal(await repo.byUuid("nope"), null);
	});

	it("sweeps the selections that expired, and only those", async () => {
		await repo.create({ uuid: "s-old", owner: "u1", paths: ["x"], expires: 1000 });
		await repo.create({ uuid: "s-edge", owner: "u1", paths: ["x"], expires: 5000 });
		assert.equal(await repo.sweepExpired(5000), 1);
		assert.equal(await repo.byUuid("s-old"), null);
		assert.ok(await repo.byUuid("s-edge"));
		assert.ok(await repo.byUuid("s-a"));
	});

	it("imports the NeDB collection, skipping documents it cannot use", async () => {
		const n = await h().db.transaction((trx) =>
			SelectionsRepo.importNedb(trx, [
				{ _id: "s-imp", owner: "u3", paths: ["ws/one", "ws/two"], action: "zip", expires: 2_000_000_000 },
				{ _id: "s-bad", paths: ["ws/x"], expires: 1 },
			]),
		);
		assert.equal(n, 1);
		assert.deepEqual(await repo.byUuid("s-imp"), { uuid: "s-imp", owner: "u3", paths: ["ws/one", "ws/two"], action: "zip", expires: 2_000_000_000 });
		assert.equal(await repo.byUuid("s-bad"), null);
	});
});
