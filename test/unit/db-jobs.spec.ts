// JobsRepo beyond the claim (test/unit/db-cluster.spec.ts), on SQLite and PostgreSQL: taking a dead node's task
// over, writes only while a task is the node's own, the newest jobs kept, log queries by exact value and prefix,
// and the NeDB jobs collection imported.
import assert from "node:assert/strict";
import { JobsRepo, openDatabase, type TaskRecord } from "../../lib/db";
import { NEDB_BATCH, nedbDocs, type NedbDoc } from "../../lib/db/nedb-import";
import { onEveryBackend, taskRecord } from "../helpers/db";

const task = (id: string, jobId: string, created: number, status = "Queued", node = "n1"): TaskRecord => taskRecord(id, jobId, created, { Status: status, CanPause: true, Node: node });
const job = (id: string, created: number, owner = "alice") => ({ id, Name: "copy", Label: id, Owner: owner, OwnerUuid: `u-${owner}`, Params: {}, User: {}, CreatedAt: created, ModifiedAt: created });

onEveryBackend("JobsRepo (tasks, logs, pruning)", (h) => {
	let repo: JobsRepo;
	before(async () => {
		repo = new JobsRepo(h().db, () => 7000);
		for (let i = 1; i <= 5; i++) await repo.createJob(job(`j${i}`, i));
	});

	it("claims a task paused before it started, never one that started", async () => {
		await repo.createTask(task("p1", "j1", 1, "Paused"));
		assert.equal(await repo.claim("p1", "n2", "Paused"), true);
		assert.deepEqual([(await repo.task("p1"))?.Status, (await repo.task("p1"))?.Node, (await repo.task("p1"))?.StartTime], ["Paused", "n2", 7000]);
		assert.equal(await repo.claim("p1", "n3"), false);
	});

	it("counts the tasks by status (the jobs queue depth /metrics shows)", async () => {
		const before = await repo.countByStatus();
		await repo.createTask(task("c1", "j2", 1, "Queued"));
		await repo.createTask(task("c2", "j2", 2, "Queued"));
		await repo.createTask(task("c3", "j2", 3, "Running"));
		const after = await repo.countByStatus();
		assert.equal((after.Queued ?? 0) - (before.Queued ?? 0), 2);
		assert.equal((after.Running ?? 0) - (before.Running ?? 0), 1);
		await repo.deleteTasks(["c1", "c2", "c3"]);
		assert.deepEqual(await repo.countByStatus(), before);
	});

	it("lets one of two survivors take a dead node's task over", async () => {
		await repo.createTask(task("d1", "j1", 2, "Running", "dead"));
		const other = new JobsRepo(await h().second());
		const won = await Promise.all([repo, other, repo, other].map((r, i) => r.takeOver("d1", "dead", "Running", { Status: "Error", StatusMessage: "restart", Node: `n${i}`, EndTime: 9 })));
		assert.equal(won.filter(Boolean).length, 1);
		const t = await repo.task("d1");
		assert.equal(t?.Status, "Error");
		assert.equal(t?.EndTime, 9);
	});

	it("writes a node's progress only while the task is still that node's", async () => {
		await repo.createTask(task("w1", "j2", 3, "Running", "n1"));
		assert.equal(await repo.updateTask("w1", { Progress: 0.5 }, "n1"), true);
		assert.equal(await repo.takeOver("w1", "n1", "Running", { Node: "n2" }), true);
		assert.equal(await repo.updateTask("w1", { Status: "Finished", Progress: 1 }, "n1"), false);
		assert.deepEqual([(await repo.task("w1"))?.Status, (await repo.task("w1"))?.Progress], ["Running", 0.5]);
		assert.equal(await repo.updateTask("w1", { Status: "Interrupted", EndTime: undefined }), true);
		assert.equal((await repo.task("w1"))?.EndTime, undefined);
	});

	it("lists tasks by job, ids and statuses, newest first, and counts an owner's active ones", async () => {
		assert.deepEqual((await repo.tasks({ jobId: "j1" })).map((t) => t.id), ["d1", "p1"]);
		assert.deepEqual((await repo.tasks({ statuses: ["Error", "Interrupted"] })).map((t) => t.id), ["w1", "d1"]);
		assert.deepEqual((await repo.tasks({ ids: ["p1", "w1", "nope"] })).map((t) => t.id), ["w1", "p1"]);
		assert.deepEqual(await repo.tasks({ ids: [] }), []);
		assert.deepEqual((await repo.tasksOfJobs(["j1", "j2"])).map((t) => t.id), ["w1", "d1", "p1"]);
		// A page per job, counted in SQL.
		assert.deepEqual((await repo.tasksOfJobs(["j1", "j2"], { limit: 1 })).map((t) => t.id), ["w1", "d1"]);
		assert.deepEqual((await repo.tasksOfJobs(["j1", "j2"], { offset: 1 })).map((t) => t.id), ["p1"]);
		assert.deepEqual((await repo.tasksOfJobs(["j1", "j2"], { status: "Paused", limit: 5 })).map((t) => t.id), ["p1"]);
		assert.deepEqual((await repo.tasksOfJobs(["j1", "j2"], { status: "Error" })).map((t) => t.id), ["d1"]);
		assert.deepEqual(await repo.tasksOfJobs(["j1", "j2"], { offset: 1, limit: 0 }), []);
		assert.equal(await repo.countActive("alice"), 1);
		assert.deepEqual((await repo.activeTasks()).map((t) => t.id), ["p1"]);
	});

	it("finds logs by exact value and by prefix, newest first, paged", async () => {
		for (let i = 0; i < 5; i++) {
			await repo.addLog({ id: `l${i}`, JobID: "j1", TaskID: i % 2 ? "p1" : "d1", Owner: "alice", OwnerUuid: "u-alice", Ts: i, Seq: 100 + i, Level: "info", Msg: `m${i}`, OperationUuid: `copy-j1-${i % 2 ? "p1" : "d1"}` });
		}
		assert.deepEqual((await repo.logs({ TaskID: { eq: "p1" } }, 10)).map((l) => l.id), ["l3", "l1"]);
		assert.deepEqual((await repo.logs({ OperationUuid: { prefix: "copy-j1-" } }, 2, 1)).map((l) => l.id), ["l3", "l2"]);
		assert.deepEqual((await repo.logs({ OperationUuid: { prefix: "copy-j1-d" }, Owner: { eq: "alice" } }, 10)).map((l) => l.Msg), ["m4", "m2", "m0"]);
		assert.deepEqual(await repo.logs({ Owner: { eq: "bob" } }, 10), []);
	});

	it("deleting tasks takes their logs; pruning keeps the newest jobs and any with a task under way", async () => {
		assert.equal(await repo.deleteTasks(["d1"]), 1);
		assert.deepEqual((await repo.logs({ JobID: { eq: "j1" } }, 10)).map((l) => l.id), ["l3", "l1"]);
		// j1 has a paused task: kept although old. j2..j5: the two newest kept.
		assert.equal(await repo.prune("alice", 2), 2);
		assert.deepEqual((await repo.jobs("alice")).map((j) => j.id), ["j5", "j4", "j1"]);
		assert.equal(await repo.updateJob("j5", { Inactive: true, ModifiedAt: 50 }), true);
		assert.deepEqual([(await repo.job("j5"))?.Inactive, (await repo.job("j5"))?.ModifiedAt], [true, 50]);
		assert.deepEqual((await repo.jobs(undefined, ["j4", "j5"])).map((j) => j.id), ["j5", "j4"]);
	});

	it("imports the NeDB jobs collection, leaving out tasks and logs whose job or task is gone", async () => {
		const db = await openDatabase(await h().fresh());
		try {
			const docs = [
				{ _id: "job-a", kind: "job", Name: "copy", Label: "Copy", Owner: "admin", OwnerUuid: "u1", Params: { nodes: ["a"] }, User: { Login: "admin" }, CreatedAt: 5, ModifiedAt: 6 },
				{ _id: "task-a", kind: "task", JobID: "job-a", Owner: "admin", Status: "Finished", StatusMessage: "done", TriggerOwner: "admin", Progress: 1, HasProgress: true, CanStop: true, CanPause: true, Node: "vm", Created: 7, StartTime: 8, EndTime: 9 },
				{ _id: "task-orphan", kind: "task", JobID: "gone", Owner: "admin", Status: "Queued", Created: 1 },
				{ _id: "log-a", kind: "log", JobID: "job-a", TaskID: "task-a", Owner: "admin", OwnerUuid: "u1", Ts: 8, Seq: 8000, Level: "info", Msg: "Started: Copy", OperationUuid: "job-a-task-a" },
				{ _id: "log-orphan", kind: "log", JobID: "gone", TaskID: "task-orphan", Owner: "admin", Ts: 1, Seq: 1, Level: "info", Msg: "x" },
			];
			assert.deepEqual(await db.transaction((trx) => JobsRepo.importNedb(trx, nedbDocs(docs))), { jobs: 1, tasks: 1, logs: 1 });
			const imported = new JobsRepo(db);
			assert.deepEqual(await imported.job("job-a"), { id: "job-a", Name: "copy", Label: "Copy", Owner: "admin", OwnerUuid: "u1", Params: { nodes: ["a"] }, User: { Login: "admin" }, CreatedAt: 5, ModifiedAt: 6 });
			const { _id, kind, ...t } = docs[1];
			assert.deepEqual(await imported.task("task-a"), { id: "task-a", ...t });
			assert.deepEqual((await imported.logs({ TaskID: { eq: "task-a" } }, 10)).map((l) => l.id), ["log-a"]);
			// A job whose last write comes after its tasks' and logs', batches later: read first all the same.
			const later: NedbDoc[] = [
				{ _id: "task-b", kind: "task", JobID: "job-b", Owner: "admin", Status: "Finished", Created: 2 },
				{ _id: "log-b", kind: "log", JobID: "job-b", TaskID: "task-b", Owner: "admin", Ts: 2, Seq: 1, Level: "info", Msg: "b" },
				...Array.from({ length: NEDB_BATCH }, (_, i) => ({ _id: `log-gone-${i}`, kind: "log", JobID: "gone", TaskID: "gone", Ts: 1, Seq: i, Msg: "x" })),
				{ _id: "job-b", kind: "job", Name: "copy", Owner: "admin", CreatedAt: 1 },
			];
			assert.deepEqual(await db.transaction((trx) => JobsRepo.importNedb(trx, nedbDocs(later))), { jobs: 1, tasks: 1, logs: 1 });
			assert.deepEqual((await imported.logs({ TaskID: { eq: "task-b" } }, 10)).map((l) => l.id), ["log-b"]);
		} finally {
			await db.close();
		}
	});
});
