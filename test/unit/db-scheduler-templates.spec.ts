// SchedulerTemplatesRepo on SQLite and PostgreSQL: put replaces by (kind, name), the same name lives once per
// kind, concurrent puts of one name leave one row, deletion says whether there was one.
import assert from "node:assert/strict";
import { SchedulerTemplatesRepo } from "../../lib/db/scheduler-templates";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("SchedulerTemplatesRepo", (h) => {
	let repo: SchedulerTemplatesRepo;
	before(() => {
		repo = new SchedulerTemplatesRepo(h().db);
	});

	it("creates then replaces a template by kind and name, listed by name", async () => {
		await repo.put("job", "b-job", { Label: "B" }, "admin", 1);
		await repo.put("job", "a-job", { Label: "A" }, "admin", 2);
		await repo.put("job", "b-job", { Label: "B2" }, "root", 3);
		const list = await repo.list<{ Label: string }>("job");
		assert.deepEqual(list.map((t) => [t.name, t.body.Label]), [["a-job", "A"], ["b-job", "B2"]]);
		const b = await repo.get<{ Label: string }>("job", "b-job");
		assert.equal(b?.updatedBy, "root");
		assert.equal(b?.updatedAt, 3);
	});

	it("keeps names per kind", async () => {
		await repo.put("action", "a-job", { Name: "a-job" }, "admin", 4);
		assert.deepEqual((await repo.list("action")).map((t) => t.name), ["a-job"]);
		assert.equal((await repo.get<{ Label: string }>("job", "a-job"))?.body.Label, "A");
		assert.deepEqual(await repo.list("selector"), []);
	});

	it("leaves one row when puts of one name race, on another handle too", async () => {
		const other = new SchedulerTemplatesRepo(await h().second());
		await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : repo).put("selector", "race", { Label: `v${i}` }, "admin", 10 + i)));
		const rows = (await repo.list<{ Label: string }>("selector")).filter((t) => t.name === "race");
		assert.equal(rows.length, 1);
		assert.match(rows[0].body.Label, /^v[0-7]$/);
	});

	it("deletes, saying whether it existed", async () => {
		assert.equal(await repo.delete("job", "a-job"), true);
		assert.equal(await repo.delete("job", "a-job"), false);
		assert.equal(await repo.get("job", "a-job"), null);
		assert.ok(await repo.get("action", "a-job"), "the action of the same name stays");
	});
});
