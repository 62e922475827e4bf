// SchedulerRepo on SQLite and PostgreSQL: a PUT of an existing job keeps the replaced definition as a version,
// versions listed newest first and paged, deleted one by one or with their job; the schedule's claim on the next
// run taken by exactly one of several concurrent claimers; due jobs exclude inactive ones.
import assert from "node:assert/strict";
import { SchedulerRepo } from "../../lib/db/scheduler";
import { onEveryBackend } from "../helpers/db";

interface Def { label: string }

onEveryBackend("SchedulerRepo", (h) => {
	let repo: SchedulerRepo<Def>;
	before(() => {
		repo = new SchedulerRepo<Def>(h().db);
	});

	it("creates a job, then keeps each replaced definition as a version", async () => {
		assert.equal(await repo.put({ id: "j1", definition: { label: "one" }, inactive: false, nextRun: null }, 10, "v-unused", (p) => p.label), null);
		assert.deepEqual(await repo.versions("j1"), []);
		assert.deepEqual(await repo.put({ id: "j1", definition: { label: "two" }, inactive: false, nextRun: null }, 20, "v1", (p) => p.label), { label: "one" });
		await repo.put({ id: "j1", definition: { label: "three" }, inactive: true, nextRun: null }, 30, "v2", (p) => p.label);
		const row = await repo.job("j1");
		assert.deepEqual(row?.definition, { label: "three" });
		assert.equal(row?.inactive, true);
		const versions = await repo.versions("j1");
		assert.deepEqual(versions.map((v) => [v.id, v.label, v.definition.label, v.createdAt]), [["v2", "two", "two", 30], ["v1", "one", "one", 20]]);
		assert.deepEqual((await repo.versions("j1", 1)).map((v) => v.id), ["v1"]);
		assert.deepEqual((await repo.versions("j1", 0, 1)).map((v) => v.id), ["v2"]);
		assert.equal((await repo.version("j1", "v1"))?.definition.label, "one");
		assert.equal(await repo.version("other", "v1"), null);
	});

	it("deletes a version, then the job with its versions", async () => {
		assert.equal(await repo.deleteVersion("j1", "v1"), true);
		assert.equal(await repo.deleteVersion("j1", "v1"), false);
		assert.equal(await repo.delete("j1"), true);
		assert.equal(await repo.delete("j1"), false);
		assert.deepEqual(await repo.versions("j1"), []);
		assert.equal(await repo.job("j1"), null);
	});

	it("lists due active jobs, and lets one claimer of several move the next run", async () => {
		await repo.put({ id: "s1", definition: { label: "s" }, inactive: false, nextRun: 1000 }, 1, "x1", (p) => p.label);
		await repo.put({ id: "s2", definition: { label: "off" }, inactive: true, nextRun: 500 }, 1, "x2", (p) => p.label);
		await repo.put({ id: "s3", definition: { label: "later" }, inactive: false, nextRun: 5000 }, 1, "x3", (p) => p.label);
		assert.deepEqual((await repo.due(2000)).map((r) => r.id), ["s1"]);
		const claims = await Promise.all([1, 2, 3, 4].map(() => repo.claimRun("s1", 1000, 2000)));
		assert.equal(claims.filter(Boolean).length, 1);
		assert.equal((await repo.job("s1"))?.nextRun, 2000);
		assert.equal(await repo.claimRun("s1", 2000, null), true);
		assert.deepEqual((await repo.due(10_000)).map((r) => r.id), ["s3"]);
		assert.deepEqual((await repo.jobs()).map((r) => r.id), ["s1", "s2", "s3"]);
	});
});
