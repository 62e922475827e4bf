// The node's shared SQL handle (one per place, closed by its last user) and the one-time import of an NeDB
// collection from a DATA_DIR of the previous versions.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireDatabase } from "../../lib/db/shared";
import { importNedbOnce, openNedbFile, type NedbDoc } from "../../lib/db/nedb-import";

describe("lib/db: shared handles and the NeDB import", () => {
	let dir: string;
	beforeEach(() => {
		dir = mkdtempSync(join(tmpdir(), "cellar-shared-"));
	});
	afterEach(() => rmSync(dir, { recursive: true, force: true }));

	it("gives the services of one place one handle, closed when the last lets go", async () => {
		const [a, b] = await Promise.all([acquireDatabase({ dataDir: dir }), acquireDatabase({ dataDir: dir })]);
		assert.equal(a.db, b.db);
		const other = await acquireDatabase({ dataDir: join(dir, "other") });
		assert.notEqual(other.db, a.db);
		await a.release();
		await a.release(); // twice is once
		assert.ok(await b.db.kysely.selectFrom("markers").selectAll().execute());
		await b.release();
		await assert.rejects(b.db.kysely.selectFrom("markers").selectAll().execute());
		const again = await acquireDatabase({ dataDir: dir });
		assert.notEqual(again.db, a.db);
		await again.release();
		await other.release();
	});

	const readAll = async (file: string, size?: number): Promise<NedbDoc[][]> => {
		const batches: NedbDoc[][] = [];
		for await (const b of (await openNedbFile(file)).batches(size)) batches.push(b);
		return batches;
	};

	it("reads an NeDB file as NeDB did: later lines win, deletions and index lines drop, dates as ms, a torn line skipped", async () => {
		const file = join(dir, "x.db");
		writeFileSync(
			file,
			[
				JSON.stringify({ _id: "a", v: 1 }),
				JSON.stringify({ _id: "b", v: 1, at: { $$date: 1700000000000 } }),
				JSON.stringify({ $$indexCreated: { fieldName: "v" } }),
				JSON.stringify({ _id: "a", v: 2 }),
				JSON.stringify({ _id: "c", v: 1 }),
				JSON.stringify({ _id: "c", $$deleted: true }),
				'{"_id":"d","v":',
			].join("\n"),
		);
		// In the order of their last lines.
		assert.deepEqual(await readAll(file), [
			[
				{ _id: "b", v: 1, at: 1700000000000 },
				{ _id: "a", v: 2 },
			],
		]);
	});

	it("reads an NeDB file in batches, each document once as its last line has it, deleted ones not at all", async () => {
		const file = join(dir, "x.db");
		const lines: string[] = [];
		// d0..d9 written, then d0..d4 rewritten, d5..d7 deleted, d6 written again after its deletion.
		for (let i = 0; i < 10; i++) lines.push(JSON.stringify({ _id: `d${i}`, v: 1 }));
		for (let i = 0; i < 5; i++) lines.push(JSON.stringify({ _id: `d${i}`, v: 2 }));
		for (let i = 5; i < 8; i++) lines.push(JSON.stringify({ _id: `d${i}`, $$deleted: true }));
		lines.push(JSON.stringify({ _id: "d6", v: 3 }), "", JSON.stringify({ $$indexCreated: { fieldName: "v" } }));
		writeFileSync(file, lines.join("\r\n") + "\r\n");
		const c = await openNedbFile(file);
		assert.equal(c.documents, 8);
		const batches = await readAll(file, 3);
		assert.deepEqual(
			batches.map((b) => b.length),
			[3, 3, 2],
		);
		assert.deepEqual(
			batches.flat().map((d) => `${d._id}=${d.v}`),
			["d8=1", "d9=1", "d0=2", "d1=2", "d2=2", "d3=2", "d4=2", "d6=3"],
		);
		// The file replaced between the two readings (nobody should): an error, not a guess.
		writeFileSync(file, JSON.stringify({ _id: "d0", v: 1 }) + "\n");
		await assert.rejects(async () => {
			for await (const _ of c.batches()) void _;
		}, /changed while it was imported/);
	});

	it("imports a collection once, whole or not at all, and keeps the old file as a backup", async () => {
		mkdirSync(join(dir, "db"));
		const file = join(dir, "db", "things.db");
		writeFileSync(file, [JSON.stringify({ _id: "t1" }), JSON.stringify({ _id: "t2" })].join("\n") + "\n");
		const { db, release } = await acquireDatabase({ dataDir: dir });
		try {
			const rows = async () => (await db.kysely.selectFrom("markers").select("name").where("name", "like", "thing:%").execute()).map((r) => r.name).sort();
			// Cut in the middle: nothing of it stays, the file is still there.
			await assert.rejects(
				importNedbOnce(db, dir, "things", async (trx, docs) => {
					await trx.insertInto("markers").values({ name: `thing:${docs[0]._id}`, value: "1" }).execute();
					throw new Error("crash");
				}),
				/crash/,
			);
			assert.deepEqual(await rows(), []);
			assert.ok(existsSync(file));
			const r = await importNedbOnce(db, dir, "things", async (trx, docs) => {
				for (const d of docs) await trx.insertInto("markers").values({ name: `thing:${d._id}`, value: "1" }).execute();
			});
			assert.deepEqual({ ...r, backup: undefined }, { collection: "things", documents: 2, imported: true, backup: undefined });
			assert.deepEqual(await rows(), ["thing:t1", "thing:t2"]);
			assert.ok(!existsSync(file) && existsSync(`${file}.imported`));
			// Done: a file put back is not imported again.
			writeFileSync(file, JSON.stringify({ _id: "t3" }) + "\n");
			assert.equal((await importNedbOnce(db, dir, "things", async () => assert.fail("imported twice"))).imported, false);
			// A new DATA_DIR has nothing to import.
			assert.equal((await importNedbOnce(db, dir, "nothing", async () => assert.fail("no file"))).imported, false);
		} finally {
			await release();
		}
	});
});
