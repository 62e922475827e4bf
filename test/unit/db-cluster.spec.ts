// LeasesRepo and JobsRepo, one behaviour suite on SQLite and PostgreSQL: what makes periodic work run once per
// cluster and a task run on one node, decided by the database under concurrent callers.
import assert from "node:assert/strict";
import { JobsRepo, LeasesRepo, type TaskRecord } from "../../lib/db";
import { onEveryBackend, taskRecord } from "../helpers/db";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

onEveryBackend("LeasesRepo", (h) => {
	let leases: LeasesRepo;
	before(() => {
		leases = new LeasesRepo(h().db);
	});

	it("gives a free lease to the first holder, keeps it from others, lets the holder extend it", async () => {
		assert.equal(await leases.holder("sweep"), null);
		assert.equal(await leases.acquire("sweep", "node-a", 60_000), true);
		assert.equal(await leases.holder("sweep"), "node-a");
		assert.equal(await leases.acquire("sweep", "node-b", 60_000), false);
		assert.equal(await leases.holder("sweep"), "node-a");
		assert.equal(await leases.acquire("sweep", "node-a", 60_000), true, "acquiring again is extending");
		assert.equal(await leases.renew("sweep", "node-a", 60_000), true);
		assert.equal(await leases.renew("sweep", "node-b", 60_000), false);
		assert.equal(await leases.acquire("other", "node-b", 60_000), true, "leases are independent");
	});

	it("lets another holder take an expired lease; the old holder can no longer renew it", async () => {
		assert.equal(await leases.acquire("short", "node-a", 50), true);
		assert.equal(await leases.acquire("short", "node-b", 60_000), false);
		await sleep(120);
		assert.equal(await leases.holder("short"), null, "expired");
		assert.equal(await leases.acquire("short", "node-b", 60_000), true);
		assert.equal(await leases.renew("short", "node-a", 60_000), false);
		assert.equal(await leases.holder("short"), "node-b");
	});

	it("lets a holder renew its expired lease while nobody took it", async () => {
		assert.equal(await leases.acquire("lapsed", "node-a", 30), true);
		await sleep(80);
		assert.equal(await leases.renew("lapsed", "node-a", 60_000), true);
		assert.equal(await leases.holder("lapsed"), "node-a");
	});

	it("is released only by its holder, and is then free for anyone", async () => {
		assert.equal(await leases.release("sweep", "node-b"), false);
		assert.equal(await leases.holder("sweep"), "node-a");
		assert.equal(await leases.release("sweep", "node-a"), true);
		assert.equal(await leases.holder("sweep"), null);
		assert.equal(await leases.acquire("sweep", "node-b", 60_000), true);
	});

	it("20 concurrent acquires by 20 holders (two handles): exactly one holder", async () => {
		const repos = [leases, new LeasesRepo(await h().second())];
		for (let round = 0; round < 3; round++) {
			const name = `race-${round}`;
			const results = await Promise.all(Array.from({ length: 20 }, (_, i) => repos[i % 2].acquire(name, `node-${i}`, 60_000)));
			const winners = results.flatMap((won, i) => (won ? [`node-${i}`] : []));
			assert.equal(winners.length, 1, `round ${round}: ${winners.join(", ")}`);
			assert.equal(await leases.holder(name), winners[0]);
		}
	});

	it("refuses a ttl that is not a positive number of ms", async () => {
		await assert.rejects(leases.acquire("bad", "node-a", 0), RangeError);
		await assert.rejects(leases.acquire("bad", "node-a", Number.NaN), RangeError);
	});
});

onEveryBackend("JobsRepo", (h) => {
	let jobs: JobsRepo<{ nodes: string[] }, { Login: string }>;
	const task = (id: string, jobId: string, created: number, status = "Queued"): TaskRecord => taskRecord(id, jobId, created, { Status: status });
	before(async () => {
		jobs = new JobsRepo(h().db, () => 5000);
		await jobs.createJob({ id: "job-1", Name: "copy", Label: "Copy", Owner: "alice", OwnerUuid: "u-alice", Params: { nodes: ["a", "b"] }, User: { Login: "alice" }, CreatedAt: 100, ModifiedAt: 100 });
	});

	it("stores a job and its tasks and reads them back", async () => {
		assert.deepEqual(await jobs.job("job-1"), { id: "job-1", Name: "copy", Label: "Copy", Owner: "alice", OwnerUuid: "u-alice", Params: { nodes: ["a", "b"] }, User: { Login: "alice" }, CreatedAt: 100, ModifiedAt: 100 });
		await jobs.createTask(task("t-1", "job-1", 1000));
		await jobs.createTask({ ...task("t-2", "job-1", 2000, "Finished"), Progress: 1, StartTime: 1, EndTime: 2, Node: "n1" });
		assert.deepEqual(await jobs.task("t-1"), task("t-1", "job-1", 1000));
		assert.deepEqual((await jobs.tasksOf("job-1")).map((t) => t.id), ["t-2", "t-1"]);
		assert.deepEqual((await jobs.queued()).map((t) => t.id), ["t-1"]);
		assert.equal((await jobs.task("t-2"))?.Progress, 1);
		await assert.rejects(jobs.createTask(task("t-orphan", "no-such-job", 1)));
	});

	it("gives a queued task to one claimer: 20 concurrent claims from two handles, one winner", async () => {
		const repos = [jobs, new JobsRepo<{ nodes: string[] }, { Login: string }>(await h().second(), () => 6000)];
		for (let round = 0; round < 3; round++) {
			const id = `claim-${round}`;
			await jobs.createTask(task(id, "job-1", 3000 + round));
			const won = await Promise.all(Array.from({ length: 20 }, (_, i) => repos[i % 2].claim(id, `node-${i}`)));
			const winners = won.flatMap((w, i) => (w ? [`node-${i}`] : []));
			assert.equal(winners.length, 1, `round ${round}: ${winners.join(", ")}`);
			const t = await jobs.task(id);
			assert.equal(t?.Status, "Running");
			assert.equal(t?.Node, winners[0]);
			assert.ok(t?.StartTime === 5000 || t?.StartTime === 6000);
		}
		assert.equal(await jobs.claim("t-2", "node-x"), false, "a finished task cannot be claimed");
		assert.equal(await jobs.claim("missing", "node-x"), false);
	});

	it("lets only the node running a task finish it", async () => {
		const t = (await jobs.task("claim-0")) as TaskRecord;
		assert.equal(await jobs.finish("claim-0", "someone-else", "Finished"), false);
		assert.equal(await jobs.finish("claim-0", t.Node, "Error", "disk full"), true);
		const done = await jobs.task("claim-0");
		assert.equal(done?.Status, "Error");
		assert.equal(done?.StatusMessage, "disk full");
		assert.equal(done?.EndTime, 5000);
		assert.equal(await jobs.finish("claim-0", t.Node, "Finished"), false, "already over");
	});

	it("deletes a job with its tasks", async () => {
		assert.equal(await jobs.deleteJob("job-1"), true);
		assert.equal(await jobs.task("t-1"), null);
		assert.deepEqual(await jobs.tasksOf("job-1"), []);
		assert.equal(await jobs.deleteJob("job-1"), false);
	});
});
