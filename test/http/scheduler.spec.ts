// The enterprise scheduler over real HTTP: an admin job with a hook and a copy action started by its hook (the
// task finishes in the jobs API, the copy exists), a schedule running every second, a job started by an upload
// (NODE_CHANGE:0 with a path filter), versions listed, restored and deleted, bad definitions refused with what is
// wrong, and non-administrators refused.
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import { s3Client } from "../helpers/s3";
import { addUser } from "../helpers/users";
import { tasks, waitTask } from "../helpers/jobs";
import { until } from "../helpers/poll";

describe("HTTP: scheduler jobs", function () {
	this.timeout(90_000);
	const node = useNode();
	let jo: string;
	let s3: S3Client;

	const put = (key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: body }));
	const get = async (key: string) => Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: "io", Key: key }))).Body!.transformToByteArray()).toString();
	const exists = async (path: string) => (await node.api("GET", `/a/tree/stat/${encodeURIComponent(path)}`, undefined, node.admin)).status === 200;
	const putJob = (Job: Record<string, unknown>, token = node.admin) => node.api("PUT", "/a/scheduler/jobs", { Job }, token);

	before(async () => {
		await addUser(node, node.admin, "jo", "jo-Pass-12345");
		jo = await node.login("jo", "jo-Pass-12345");
		s3 = s3Client(node, node.admin);
		await put("common-files/sched/src/a.txt", "alpha");
	});

	it("runs a job from its hook: the task finishes in the jobs API and the copy exists", async () => {
		const r = await putJob({
			ID: "hooked-copy",
			Label: "Copy on demand",
			Hooks: [{ ApiSlug: "copy-now" }],
			Actions: [{ ID: "actions.tree.copymove", Parameters: { type: "copy", target: "common-files/sched/hooked", targetParent: "true" } }],
		});
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Job.ID, "hooked-copy");
		assert.equal(r.body.Job.Owner, "pydio.system.user");
		assert.deepEqual(r.body.Job.Hooks, [{ ApiSlug: "copy-now" }]);
		// Any logged-in user may call a hook, for paths they can read.
		const h = await node.api("POST", "/a/scheduler/hooks/copy-now", { Paths: ["common-files/sched/src/a.txt"] }, jo);
		assert.equal(h.status, 200, h.text);
		assert.deepEqual(h.body, { Success: true });
		const task = await waitTask(node.api, node.admin, "hooked-copy");
		assert.equal(task.Status, "Finished", task.StatusMessage);
		assert.equal(await get("common-files/sched/hooked/a.txt"), "alpha");
		const listed = await node.api("POST", "/a/jobs/user", { Owner: "*" }, node.admin);
		const job = listed.body.Jobs.find((j: { ID: string }) => j.ID === "hooked-copy");
		assert.equal(job.Owner, "pydio.system.user");
		assert.equal(job.Actions[0].ID, "actions.tree.copymove");
		assert.equal(job.Tasks.length, 1);
		// Controlled like any job: switched off, a hook no longer starts it; RunOnce with run parameters is refused while off.
		assert.equal((await node.api("PUT", "/a/jobs/user", { Cmd: "Inactive", JobId: "hooked-copy" }, node.admin)).status, 200);
		const off = await node.api("POST", "/a/scheduler/hooks/copy-now", { Paths: ["common-files/sched/src/a.txt"] }, node.admin);
		// Success false: a zero value, omitted on the wire.
		assert.equal(off.status, 200, off.text);
		assert.notEqual(off.body.Success, true);
		assert.equal((await tasks(node.api, node.admin, "hooked-copy")).length, 1);
		assert.equal((await node.api("PUT", "/a/jobs/user", { Cmd: "Active", JobId: "hooked-copy" }, node.admin)).status, 200);
		// Unknown slugs, anonymous callers, unreadable paths.
		assert.equal((await node.api("POST", "/a/scheduler/hooks/nope", {}, node.admin)).status, 404);
		assert.equal((await node.api("POST", "/a/scheduler/hooks/copy-now", {})).status, 401);
		assert.equal((await node.api("POST", "/a/scheduler/hooks/copy-now", { Paths: ["common-files/sched/none.txt"] }, jo)).status, 404);
	});

	it("runs a schedule every second until it is switched off", async () => {
		const start = new Date(Date.now() - 60_000).toISOString();
		const r = await putJob({
			ID: "every-second",
			Label: "Snapshot",
			Schedule: { Iso8601Schedule: `R/${start}/PT1S` },
			Actions: [{ ID: "actions.archive.compress", Parameters: { nodes: '["common-files/sched/src/a.txt"]', archiveName: "common-files/sched/snap/s.zip" } }],
		});
		assert.equal(r.status, 200, r.text);
		await until("two scheduled runs", async () => ((await tasks(node.api, node.admin, "every-second")).filter((t) => t.Status === "Finished").length >= 2 ? true : undefined), 15_000);
		assert.ok(await exists("common-files/sched/snap/s.zip"));
		const timers = await node.api("POST", "/a/jobs/user", { Owner: "*", TimersOnly: true }, node.admin);
		assert.deepEqual(timers.body.Jobs.map((j: { ID: string }) => j.ID), ["every-second"]);
		assert.equal((await putJob({ ...r.body.Job, Inactive: true })).status, 200);
		await new Promise((res) => setTimeout(res, 1500));
		const n = (await tasks(node.api, node.admin, "every-second")).length;
		await new Promise((res) => setTimeout(res, 2500));
		assert.equal((await tasks(node.api, node.admin, "every-second")).length, n, "an inactive job does not run");
	});

	it("runs a job on upload, for nodes its filter takes, with the node as input", async () => {
		const r = await putJob({
			ID: "on-upload",
			Label: "Archive incoming",
			EventNames: ["NODE_CHANGE:0"],
			NodeEventFilter: { Pathes: ["common-files/sched/incoming/*.txt"] },
			Actions: [{ ID: "actions.tree.copymove", Parameters: { type: "copy", target: "common-files/sched/archived", targetParent: "true" } }],
		});
		assert.equal(r.status, 200, r.text);
		await put("common-files/sched/incoming/ignored.bin", "x");
		await put("common-files/sched/incoming/doc.txt", "delta");
		const task = await waitTask(node.api, node.admin, "on-upload");
		assert.equal(task.Status, "Finished", task.StatusMessage);
		assert.equal(await get("common-files/sched/archived/doc.txt"), "delta");
		await new Promise((res) => setTimeout(res, 500));
		assert.equal((await tasks(node.api, node.admin, "on-upload")).length, 1, "the filtered-out upload started nothing");
		assert.equal(await exists("common-files/sched/archived/ignored.bin"), false);
		const events = await node.api("POST", "/a/jobs/user", { Owner: "*", EventsOnly: true }, node.admin);
		assert.deepEqual(events.body.Jobs.map((j: { ID: string }) => j.ID), ["on-upload"]);
	});

	it("keeps each replaced definition as a version, restores and deletes one", async () => {
		const job = { ID: "versioned", Label: "First", Actions: [{ ID: "actions.cmd.resync", Parameters: { dsName: "cellsdata" } }] };
		assert.equal((await putJob(job)).status, 200);
		assert.equal((await putJob({ ...job, Label: "Second" })).status, 200);
		assert.equal((await putJob({ ...job, Label: "Third" })).status, 200);
		const list = await node.api("POST", "/a/scheduler/versions/versioned", { LoadJobs: true }, node.admin);
		assert.equal(list.status, 200, list.text);
		assert.deepEqual(list.body.Versions.map((v: { Label: string }) => v.Label), ["Second", "First"]);
		const [second, first] = list.body.Versions;
		assert.equal(first.JobID, "versioned");
		assert.equal(first.Job.Label, "First");
		assert.equal(typeof first.Date, "number");
		const short = await node.api("POST", "/a/scheduler/versions/versioned", {}, node.admin);
		assert.equal(short.body.Versions[0].Job, undefined);
		const restored = await node.api("PATCH", `/a/scheduler/versions/versioned/${first.ID}`, {}, node.admin);
		assert.equal(restored.status, 200, restored.text);
		assert.equal(restored.body.Success, true);
		assert.equal(restored.body.Job.Label, "First");
		const after = await node.api("POST", "/a/scheduler/versions/versioned", {}, node.admin);
		assert.deepEqual(after.body.Versions.map((v: { Label: string }) => v.Label), ["Third", "Second", "First"]);
		assert.deepEqual((await node.api("DELETE", `/a/scheduler/versions/versioned/${second.ID}`, undefined, node.admin)).body, { Success: true });
		assert.equal((await node.api("DELETE", `/a/scheduler/versions/versioned/${second.ID}`, undefined, node.admin)).status, 404);
		assert.equal((await node.api("PATCH", "/a/scheduler/versions/versioned/nope", {}, node.admin)).status, 404);
		assert.equal((await node.api("POST", "/a/scheduler/versions/nope", {}, node.admin)).status, 404);
		const del = await node.api("DELETE", "/a/scheduler/jobs/versioned", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.equal(del.body.Success, true);
		assert.equal((await node.api("DELETE", "/a/scheduler/jobs/versioned", undefined, node.admin)).status, 404);
		assert.deepEqual((await node.api("POST", "/a/jobs/user", { JobIDs: ["versioned"] }, node.admin)).body.Jobs ?? [], []);
	});

	it("refuses what it would not do, naming it", async () => {
		const copy = { ID: "actions.tree.copymove", Parameters: { target: "common-files/x" } };
		const cases: [Record<string, unknown>, RegExp][] = [
			[{ Label: "x", Actions: [{ ID: "actions.cmd.wget" }] }, /actions\.cmd\.wget/],
			[{ Label: "x", Actions: [{ ID: "actions.made.up" }] }, /actions\.made\.up/],
			[{ Label: "x", Actions: [] }, /at least one action/],
			[{ Label: "x", Schedule: { Iso8601Schedule: "every 10 minutes" }, Actions: [copy] }, /Iso8601Schedule/],
			[{ Label: "x", Schedule: { Iso8601Schedule: "R/2024-01-01T00:00:00Z/P1M" }, Actions: [copy] }, /duration/],
			[{ Label: "x", EventNames: ["NODE_CHANGE:9"], Actions: [copy] }, /NODE_CHANGE:9/],
			[{ Label: "x", EventNames: ["NODE_CHANGE:0"], NodeEventFilter: { Query: { SubQueries: [{}] } }, Actions: [copy] }, /Query/],
			[{ Label: "x", EventNames: ["NODE_CHANGE:0"], UserEventFilter: { Label: "u" }, Actions: [copy] }, /UserEventFilter/],
			[{ Label: "x", EventNames: ["NODE_CHANGE:0"], Actions: [{ ...copy, Parameters: { target: "common-files/x", color: "red" } }] }, /color/],
			[{ Label: "x", EventNames: ["NODE_CHANGE:0"], Actions: [{ ...copy, NodesSelector: { Pathes: ["a"] } }] }, /NodesSelector/],
			[{ Label: "x", Actions: [copy] }, /nodes/],
			[{ Label: "x", Hooks: [{ ApiSlug: "copy-now" }], Actions: [copy] }, /copy-now/],
			[{ Label: "x", Hooks: [{ ApiSlug: "h", Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }] }], Actions: [copy] }, /Policies/],
			[{ Label: "x", Hooks: [{ ApiSlug: "h" }], Actions: [{ ...copy, Parameters: { target: "{{.JobParameters.dest}}" } }] }, /dest/],
		];
		for (const [job, why] of cases) {
			const r = await putJob(job);
			assert.ok(r.status === 400 || r.status === 409, `${JSON.stringify(job)}: ${r.status} ${r.text}`);
			assert.match(r.text, why, JSON.stringify(job));
		}
		assert.equal((await node.api("DELETE", "/a/scheduler/jobs/hooked-copy?CleanableJobs=true", undefined, node.admin)).status, 400);
	});

	it("is for administrators", async () => {
		const job = { Label: "x", Actions: [{ ID: "actions.cmd.resync", Parameters: { dsName: "cellsdata" } }] };
		assert.equal((await putJob(job, jo)).status, 403);
		assert.equal((await node.api("DELETE", "/a/scheduler/jobs/hooked-copy", undefined, jo)).status, 403);
		assert.equal((await node.api("POST", "/a/scheduler/versions/hooked-copy", {}, jo)).status, 403);
		assert.equal((await node.api("PATCH", "/a/scheduler/versions/hooked-copy/v", {}, jo)).status, 403);
		assert.equal((await node.api("DELETE", "/a/scheduler/versions/hooked-copy/v", undefined, jo)).status, 403);
	});
});
