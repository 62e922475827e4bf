// lib/jobs/user-jobs (the user jobs API's rules) over a real JobsRepo, on SQLite and PostgreSQL: no broker,
// no engine; the cluster's parts (tasks queued, datasources, prechecks) are plain functions.
import assert from "node:assert/strict";
import type { Identity } from "../../lib/auth/identity";
import { JobsRepo } from "../../lib/db";
import { NotFoundError } from "../../lib/errors";
import { SYSTEM_USER, type JobStore, type TaskStatus } from "../../lib/jobs/model";
import { UserJobs, type UserJobsDeps } from "../../lib/jobs/user-jobs";
import { countingStatements, onEveryBackend, taskRecord } from "../helpers/db";

const admin: Identity = { Uuid: "u-admin", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP", "ADMINS", "u-admin"], TokenKind: "session", ExpiresAt: 2e9 };
const alice: Identity = { Uuid: "u-alice", Login: "alice", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u-alice"], TokenKind: "session", ExpiresAt: 2e9 };
const bob: Identity = { ...alice, Uuid: "u-bob", Login: "bob", Roles: ["ROOT_GROUP", "u-bob"] };

const copy = (n: number) => JSON.stringify({ nodes: [`personal-files/f${n}.txt`], target: "common-files" });

onEveryBackend("UserJobs (lib/jobs/user-jobs)", (h) => {
	let repo: JobStore;
	let jobs: UserJobs;
	let seq = 0;
	const queued: string[] = [];
	const prechecked: string[] = [];
	const datasources = new Set(["pydiods1"]);
	let refuse: string | undefined;

	function api(over: Partial<UserJobsDeps> = {}): UserJobs {
		return new UserJobs({
			repo,
			newTask: async (jobId, owner) => {
				const id = `t${++seq}`;
				await repo.createTask({ ...taskRecord(id, jobId, 1000 + seq, { Owner: owner, TriggerOwner: owner }), Status: "Queued" });
				queued.push(id);
			},
			requireDatasource: async (name) => {
				if (!datasources.has(name)) throw new NotFoundError(`Datasource ${name} not found`, "datasource.notfound");
			},
			precheck: async (user, name) => {
				if (refuse) throw new NotFoundError(refuse, "node.notfound");
				prechecked.push(`${user.Login}:${name}`);
			},
			uuid: () => `id${++seq}`,
			now: () => 5000,
			limits: { maxActivePerUser: 3, maxLogScan: 1000 },
			...over,
		});
	}
	const finish = async (taskId: string, status: TaskStatus = "Finished") => assert.ok(await repo.updateTask(taskId, { Status: status }));

	before(() => {
		repo = new JobsRepo(h().db) as JobStore;
		jobs = api();
	});

	it("records a job and queues its task, after the precheck, as the caller", async () => {
		const { JobUuid } = await jobs.create(alice, "copy", copy(1));
		assert.match(JobUuid, /^copy-move-id\d+$/);
		const job = await repo.job(JobUuid);
		assert.deepEqual([job?.Owner, job?.OwnerUuid, job?.Name, job?.CreatedAt], ["alice", "u-alice", "copy", 5000]);
		assert.equal((await repo.tasksOf(JobUuid)).length, 1);
		assert.deepEqual(prechecked, ["alice:copy"]);
		await finish(queued[queued.length - 1]);
	});

	it("refuses unknown jobs, bad parameters and a failed precheck before recording anything", async () => {
		const before = (await repo.jobs(undefined)).length;
		await assert.rejects(jobs.create(alice, "format-disk", "{}"), { code: 400, message: /unknown job name format-disk/ });
		await assert.rejects(jobs.create(alice, "copy", JSON.stringify({ nodes: [] })), { code: 400 });
		await assert.rejects(jobs.create(alice, "copy", "{not json"), { code: 400 });
		refuse = "personal-files/missing.txt not found";
		await assert.rejects(jobs.create(alice, "copy", copy(2)), NotFoundError);
		refuse = undefined;
		assert.equal((await repo.jobs(undefined)).length, before);
	});

	it("lets only administrators resync, only an existing datasource", async () => {
		const resync = JSON.stringify({ dsName: "pydiods1" });
		await assert.rejects(jobs.create(alice, "datasource-resync", resync), { code: 403 });
		await assert.rejects(jobs.create(admin, "datasource-resync", JSON.stringify({ dsName: "nope" })), NotFoundError);
	});

	it("keeps one resync job per datasource: a new run is a new task, none while one is under way", async () => {
		const resync = JSON.stringify({ dsName: "pydiods1" });
		const first = await jobs.create(admin, "datasource-resync", resync);
		const tasks = () => repo.tasksOf(first.JobUuid);
		assert.equal((await tasks()).length, 1);
		// Under way (queued): the same job, no second task, whoever asks (the system user at start-up too).
		assert.deepEqual(await jobs.create(admin, "datasource-resync", resync), first);
		assert.deepEqual(await jobs.create({ ...admin, Login: SYSTEM_USER.Login, Uuid: SYSTEM_USER.Uuid }, "datasource-resync", resync), first);
		assert.equal((await tasks()).length, 1);
		await finish((await tasks())[0].id);
		assert.deepEqual(await jobs.create(admin, "datasource-resync", resync), first);
		assert.equal((await tasks()).length, 2);
		assert.ok(!(await repo.job(first.JobUuid))?.Inactive);
	});

	it("takes a resync job another node created meanwhile (the primary key's conflict) as its own", async () => {
		datasources.add("other");
		const resync = JSON.stringify({ dsName: "other" });
		// The other node's job and queued task appear between this node's read (which finds nothing) and its insert.
		let missedByRead = false;
		const racingRepo = new Proxy(repo, {
			get(target, key) {
				if (key === "job") {
					return async (id: string) => {
						const seen = await target.job(id);
						if (!missedByRead) {
							missedByRead = seen === null;
							await api().create(admin, "datasource-resync", resync);
						}
						return seen;
					};
				}
				const v: unknown = Reflect.get(target, key, target);
				return typeof v === "function" ? v.bind(target) : v;
			},
		});
		const mine = await api({ repo: racingRepo }).create(admin, "datasource-resync", resync);
		assert.ok(missedByRead, "the read ran before the other node's insert");
		assert.equal((await repo.tasksOf(mine.JobUuid)).length, 1, "no second task while the winner's is queued");
	});

	it("caps the jobs a user has waiting or running", async () => {
		const capped = api({ limits: { maxActivePerUser: 2, maxLogScan: 1000 } });
		await capped.create(bob, "copy", copy(3));
		await capped.create(bob, "copy", copy(4));
		await assert.rejects(capped.create(bob, "copy", copy(5)), { code: 429 });
	});

	it("lists the caller's jobs; administrators anyone's, by owner, by id or everybody's", async () => {
		const owners = async (who: Identity, p: Parameters<UserJobs["list"]>[1]) => [...new Set((await jobs.list(who, p)).Jobs.map((j) => j.Owner))].sort();
		assert.deepEqual(await owners(alice, {}), ["alice"]);
		assert.deepEqual(await owners(alice, { Owner: "bob" }), ["alice"], "a standard user's Owner is ignored");
		assert.deepEqual(await owners(admin, { Owner: "bob" }), ["bob"]);
		assert.deepEqual(await owners(admin, { Owner: "*" }), ["admin", "alice", "bob"]);
		const bobs = (await jobs.list(bob, {})).Jobs.map((j) => j.ID as string);
		assert.deepEqual((await jobs.list(admin, { JobIDs: bobs })).Jobs.map((j) => j.ID).sort(), [...bobs].sort());
		assert.deepEqual((await jobs.list(alice, { JobIDs: bobs })).Jobs, [], "not someone else's jobs by id");
		assert.deepEqual(await jobs.list(admin, { EventsOnly: true }), { Jobs: [] });
		const finished = (await jobs.list(alice, { LoadTasks: "Finished" })).Jobs.flatMap((j) => (j.Tasks as { Status: string }[] | undefined) ?? []);
		assert.ok(finished.length > 0 && finished.every((t) => t.Status === "Finished"));
	});

	it("lists every job's page of tasks with one statement for the tasks, whatever the number of jobs", async () => {
		const statuses: TaskStatus[] = ["Finished", "Error", "Finished", "Running", "Finished", "Interrupted", "Finished"];
		for (let j = 0; j < 6; j++) {
			const id = `carol-job-${j}`;
			await repo.createJob({ id, Name: "copy", Label: "Copy", Owner: "carol", OwnerUuid: "u-carol", Params: JSON.parse(copy(j)), User: { Uuid: "u-carol", Login: "carol", Profile: "standard", GroupPath: "/", Roles: [], TokenKind: "session" }, CreatedAt: 6000 + j, ModifiedAt: 6000 + j });
			// Job j has j + 1 tasks; two of job 5's share a creation time (ordered by id then).
			for (let t = 0; t <= j; t++) await repo.createTask({ ...taskRecord(`carol-${j}-${t}`, id, j === 5 && t === 4 ? 7003 : 7000 + t, { Owner: "carol" }), Status: statuses[t] });
		}
		// Each job's tasks as a list used to take them: all of them, filtered and sliced per job.
		const expected = async (p: Parameters<UserJobs["list"]>[1]) => {
			const out: Record<string, string[]> = {};
			for (const j of await repo.jobs("carol")) {
				const mine = (await repo.tasksOf(j.id)).filter((t) => !p.LoadTasks || p.LoadTasks === "Any" || t.Status === p.LoadTasks);
				const start = p.TasksOffset ?? 0;
				out[j.id] = mine.slice(start, p.TasksLimit ? start + p.TasksLimit : undefined).map((t) => t.id);
			}
			return out;
		};
		const counted = countingStatements(h().db);
		const listing = api({ repo: new JobsRepo(counted.db) as JobStore });
		for (const p of [{}, { LoadTasks: "Finished" }, { TasksLimit: 2 }, { TasksOffset: 1, TasksLimit: 2 }, { LoadTasks: "Finished", TasksOffset: 1 }, { LoadTasks: "Any", TasksOffset: 3, TasksLimit: 0 }, { LoadTasks: "Error", TasksLimit: 1 }] as const) {
			counted.reset();
			const { Jobs } = await listing.list(admin, { ...p, Owner: "carol" });
			assert.equal(Jobs.length, 6);
			const got = Object.fromEntries(Jobs.map((j) => [j.ID as string, ((j.Tasks as { ID: string }[] | undefined) ?? []).map((t) => t.ID)]));
			assert.deepEqual(got, await expected(p), JSON.stringify(p));
			assert.equal(counted.count, 2, "the jobs, then all their tasks");
			assert.equal(counted.rows, 6 + Object.values(got).flat().length, "only the tasks shown are read");
		}
	});

	it("answers the caller's logs only, by a query the database pages or one filtered after", async () => {
		const [aliceJob] = (await jobs.list(alice, {})).Jobs;
		const [bobJob] = (await jobs.list(bob, {})).Jobs;
		const log = async (id: string, job: Record<string, unknown>, owner: string, msg: string) =>
			repo.addLog({ id, JobID: job.ID as string, TaskID: (await repo.tasksOf(job.ID as string))[0].id, Owner: owner, OwnerUuid: `u-${owner}`, Ts: 5000, Seq: Number(id.slice(1)), Level: "info", Msg: msg, OperationUuid: "op" });
		await log("l1", aliceJob, "alice", "copied f1.txt");
		await log("l2", bobJob, "bob", "copied f3.txt");
		await log("l3", aliceJob, "alice", "done");
		const msgs = async (who: Identity, Query?: string) => (await jobs.logs(who, { Query })).Logs.map((l) => l.Msg).sort();
		assert.deepEqual(await msgs(alice), ["copied f1.txt", "done"]);
		assert.deepEqual(await msgs(alice, `+SchedulerJobUuid:"${bobJob.ID as string}"`), []);
		assert.deepEqual(await msgs(admin, `+SchedulerJobUuid:"${bobJob.ID as string}"`), ["copied f3.txt"]);
		assert.deepEqual(await msgs(admin, "+Msg:copied"), ["copied f1.txt", "copied f3.txt"]);
		await assert.rejects(jobs.logs(alice, { Format: "XML" }), { code: 400 });
		await assert.rejects(jobs.logs(alice, { Query: "+Nope:x" }), { code: 400 });
	});

	it("deletes finished tasks selected by job, id or status, never one under way; prunes all but the newest", async () => {
		await assert.rejects(jobs.deleteTasks({}), { code: 400 });
		const { JobUuid } = await jobs.create(admin, "datasource-resync", JSON.stringify({ dsName: "pydiods1" }));
		const all = async () => (await repo.tasksOf(JobUuid)).map((t) => [t.id, t.Status]);
		for (const [id, status] of await all()) if (status !== "Finished") await finish(id as string);
		await jobs.create(admin, "datasource-resync", JSON.stringify({ dsName: "pydiods1" }));
		await finish((await repo.tasksOf(JobUuid)).find((t) => t.Status === "Queued")!.id);
		await jobs.create(admin, "datasource-resync", JSON.stringify({ dsName: "pydiods1" }));
		const before = await repo.tasksOf(JobUuid);
		assert.equal(before.length, 4);
		const { Deleted } = await jobs.deleteTasks({ JobId: JobUuid, PruneLimit: 2 });
		// Newest first: the queued task (under way) is never deleted, and counts for nothing; of the three
		// finished ones, the two newest stay.
		const finishedNewestFirst = before.filter((t) => t.Status === "Finished").map((t) => t.id);
		assert.deepEqual(Deleted, finishedNewestFirst.slice(2));
		assert.equal((await repo.tasksOf(JobUuid)).length, 3);
		assert.deepEqual((await jobs.deleteTasks({ JobId: JobUuid, Status: ["Queued"] })).Deleted, []);
	});
});
