// The scheduler's rules without a broker: ISO 8601 schedules (next occurrence, repetitions, minimum delta, refused
// forms), node filter globs, and job definitions normalised or refused with what is wrong.
import assert from "node:assert/strict";
import { durationMs, nextRun, parseSchedule } from "../../lib/scheduler/schedule";
import { globMatcher } from "../../lib/scheduler/scheduler";
import { normalizeJob, stepsOf } from "../../lib/scheduler/model";
import { stepParams } from "../../lib/jobs/chain";

describe("scheduler: schedules", () => {
	const t0 = Date.parse("2024-01-01T00:00:00Z");

	it("parses durations from weeks to fractions of seconds, refuses months and empty ones", () => {
		assert.equal(durationMs("PT10M", "d"), 600_000);
		assert.equal(durationMs("P1W2DT3H4M5.5S", "d"), ((9 * 24 + 3) * 60 + 4) * 60_000 + 5500);
		for (const bad of ["P1M", "P", "PT", "10M", "P1Y"]) assert.throws(() => durationMs(bad, "d"), /ISO 8601 duration/, bad);
	});

	it("computes the next occurrence strictly after a time, with repetitions and a minimum delta", () => {
		const s = parseSchedule("R/2024-01-01T00:00:00Z/PT10M");
		assert.equal(nextRun(s, t0 - 5000), t0);
		assert.equal(nextRun(s, t0), t0 + 600_000);
		assert.equal(nextRun(s, t0 + 601_000), t0 + 1_200_000);
		const three = parseSchedule("R3/2024-01-01T00:00:00Z/PT10M");
		assert.equal(nextRun(three, t0 + 1_000_000), t0 + 1_200_000);
		assert.equal(nextRun(three, t0 + 1_200_000), null);
		const spaced = parseSchedule("R/2024-01-01T00:00:00Z/PT1M", "PT5M");
		assert.equal(nextRun(spaced, t0, true), t0 + 6 * 60_000);
		assert.equal(nextRun(spaced, t0, false), t0 + 60_000);
	});

	it("refuses malformed schedules with a clear message", () => {
		assert.throws(() => parseSchedule("every hour"), /repeating interval/);
		assert.throws(() => parseSchedule("R/yesterday/PT1H"), /ISO 8601 date-time/);
		assert.throws(() => parseSchedule("R/2024-01-01T00:00:00Z/PT0.5S"), /at least one second/);
		assert.throws(() => parseSchedule("R/2024-01-01T00:00:00Z/PT1H", "soon"), /Iso8601MinDelta/);
	});
});

describe("scheduler: definitions", () => {
	it("matches node paths with *, ** and ?", () => {
		assert.ok(globMatcher("ws/in/*.txt").test("ws/in/a.txt"));
		assert.ok(!globMatcher("ws/in/*.txt").test("ws/in/sub/a.txt"));
		assert.ok(globMatcher("ws/**/a?.txt").test("ws/x/y/ab.txt"));
		assert.ok(!globMatcher("ws/(in)").test("ws/in"));
	});

	it("normalises a job: system owner, generated id, chained actions as steps in order", () => {
		const job = normalizeJob(
			{
				Label: "Chain",
				Owner: "pydio.system.user",
				Tasks: [{ ID: "t" }],
				Hooks: [{}],
				Actions: [{ ID: "actions.archive.compress", Parameters: { archiveName: "ws/a.zip" }, ChainedActions: [{ ID: "actions.tree.copymove", Parameters: { type: "move", target: "ws/out", targetParent: "true", nodes: '["ws/a.zip"]' } }] }],
			},
			"generated",
			100,
		);
		assert.equal(job.ID, "generated");
		assert.deepEqual(job.Hooks, [{ ApiSlug: "generated" }]);
		assert.equal((job as unknown as { Tasks?: unknown }).Tasks, undefined);
		const steps = stepsOf(job.Actions);
		assert.deepEqual(steps.map((s) => s.name), ["compress", "move"]);
		assert.deepEqual(stepParams(steps[1], { nodes: ["ws/ignored"] }, {}), { type: "move", nodes: ["ws/a.zip"], target: "ws/out", targetParent: true });
		assert.deepEqual(stepParams(steps[0], { nodes: ["ws/in.txt"] }, {}), { nodes: ["ws/in.txt"], archiveName: "ws/a.zip", format: "zip" });
	});

	it("fills job parameters in, and refuses other templates", () => {
		const job = normalizeJob({ Label: "P", Parameters: [{ Name: "dest", Value: "ws/default" }], Hooks: [{ ApiSlug: "p" }], Actions: [{ ID: "actions.tree.copymove", Parameters: { target: "{{.JobParameters.dest}}" } }] }, "p", 1);
		const [step] = stepsOf(job.Actions);
		assert.equal((stepParams(step, { nodes: ["ws/a"], parameters: { dest: "ws/other" } }, { dest: "ws/default" }) as { target: string }).target, "ws/other");
		assert.throws(() => normalizeJob({ Label: "P", Actions: [{ ID: "actions.tree.copymove", Parameters: { nodes: '["ws/a"]', target: "{{.Node.Path}}" } }] }, "p", 1), /only \{\{\.JobParameters\.NAME\}\}/);
		assert.throws(() => normalizeJob({ Label: "P", Actions: [{ ID: "actions.tree.copymove", ChainedActions: [{ ID: "actions.tree.delete" }, { ID: "actions.tree.delete" }] }] }, "p", 1), /parallel branches/);
		assert.throws(() => normalizeJob({ Label: "P", Owner: "alice", Actions: [{ ID: "actions.tree.delete" }] }, "p", 1), /Owner/);
	});
});
