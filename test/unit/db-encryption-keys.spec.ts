// EncryptionKeysRepo on SQLite and PostgreSQL: keys read back as written, a taken id is a ConflictError (also
// between two handles), a put replaces, exports recorded at once all stay, and the NeDB collection imports.
import assert from "node:assert/strict";
import { ConflictError } from "../../lib/errors";
import type { KeyDoc } from "../../lib/encryption/keys";
import { EncryptionKeysRepo } from "../../lib/db/encryption-keys";
import { onEveryBackend } from "../helpers/db";

const key = (id: string, created: number, extra: Partial<KeyDoc> = {}): KeyDoc => ({
	_id: id,
	ID: id,
	Label: `Key ${id}`,
	Owner: "admin",
	CreationDate: created,
	Sealed: `v1.sealed-${id}`,
	Info: { Exports: [], Imports: [] },
	...extra,
});

onEveryBackend("EncryptionKeysRepo", (h) => {
	let repo: EncryptionKeysRepo;
	before(() => {
		repo = new EncryptionKeysRepo(h().db);
	});

	it("reads keys back as written, listed oldest first", async () => {
		const b = key("kb", 200, { Info: { Exports: [{ By: "x", Date: 1 }], Imports: [] } });
		const a = key("ka", 100);
		await repo.create(b);
		await repo.create(a);
		assert.deepEqual(await repo.byId("kb"), b);
		assert.deepEqual((await repo.list()).map((k) => k.ID), ["ka", "kb"]);
		assert.equal(await repo.byId("nope"), null);
	});

	it("refuses a taken id with ConflictError, from either of two nodes at once", async () => {
		const other = new EncryptionKeysRepo(await h().second());
		const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : repo).create(key("race", 300))));
		assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
		for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError, String(r.reason));
	});

	it("put creates or replaces the whole key; delete removes it", async () => {
		await repo.put(key("kp", 400));
		const replaced = key("kp", 400, { Label: "Replaced", Sealed: "v1.other", Info: { Exports: [], Imports: [{ By: "admin", Date: 5 }] } });
		await repo.put(replaced);
		assert.deepEqual(await repo.byId("kp"), replaced);
		assert.equal(await repo.delete("kp"), true);
		assert.equal(await repo.delete("kp"), false);
	});

	it("records concurrent exports without losing one", async () => {
		const other = new EncryptionKeysRepo(await h().second());
		await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : repo).recordExport("ka", { By: `u${i}`, Date: i })));
		assert.equal((await repo.byId("ka"))?.Info.Exports.length, 8);
		assert.equal(await repo.recordExport("nope", { By: "u", Date: 1 }), false);
	});

	it("imports the NeDB collection", async () => {
		const doc = { _id: "fixture", ID: "fixture", Label: "Fixture key", Owner: "admin", CreationDate: 1795487885, Sealed: "v1.abc", Info: { Exports: [{ By: "a", Date: 2 }], Imports: [] } };
		assert.equal(await h().db.transaction((trx) => EncryptionKeysRepo.importNedb(trx, [doc, { _id: "broken" }])), 1);
		assert.deepEqual(await repo.byId("fixture"), doc);
	});
});
