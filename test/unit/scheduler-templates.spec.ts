// lib/scheduler-templates without a broker: which action ids a template may name (the catalog's, by name and by
// Cells id), how deep and how big a definition may be, sub-queries rewritten as Cells writes them, and nodes
// selection: OR/AND of sub-queries, Pathes, ranges.
import assert from "node:assert/strict";
import { JOB_NAMES } from "../../lib/jobs/params";
import { ACTION_IDS } from "../../lib/jobs/model";
import { checkJob, knownActions } from "../../lib/scheduler-templates/actions";
import { cellsSelector, compileSelector, selectNodes } from "../../lib/scheduler-templates/nodes";
import type { JobAction } from "../../lib/scheduler-templates/model";

describe("lib/scheduler-templates", () => {
	it("knows every catalog action by its name and by its Cells id, and Cells' remote download", () => {
		const ids = knownActions().map((a) => a.id);
		for (const n of JOB_NAMES) assert.ok(ids.includes(n) && ids.includes(ACTION_IDS[n]), n);
		assert.ok(ids.includes("actions.cmd.wget"));
		const copymove = knownActions().find((a) => a.id === "actions.tree.copymove");
		assert.deepEqual(copymove?.params[0].choices, ["copy", "move"]);
		assert.equal(new Set(copymove?.params.map((p) => p.name)).size, copymove?.params.length, "parameters merged once");
	});

	it("checks every action of a definition, however it is chained, within bounds", () => {
		const found = checkJob({ Actions: [{ ID: "copy", FailedFilterActions: [{ ID: "delete" }] }], MergeAction: { ID: "actions.cmd.resync", ChainedActions: [{ ID: "move" }] } });
		assert.deepEqual(found.map((f) => f.at), ["Job.Actions[0]", "Job.Actions[0].FailedFilterActions[0]", "Job.MergeAction", "Job.MergeAction.ChainedActions[0]"]);
		assert.throws(() => checkJob({ Actions: [{ ID: "copy", MergeAction: { ID: "nope" } }] }), /Job\.Actions\[0\]\.MergeAction\.ID "nope"/);
		let deep: JobAction = { ID: "copy" };
		for (let i = 0; i < 40; i++) deep = { ID: "copy", ChainedActions: [deep] };
		assert.throws(() => checkJob({ Actions: [deep] }), /nested more than 32 levels/);
		assert.throws(() => checkJob({ Actions: Array.from({ length: 300 }, () => ({ ID: "copy" })) }), /at most 256 actions/);
		assert.throws(() => checkJob({ Actions: [{ ID: "copy", Parameters: { n: 1 as unknown as string } }] }), /Parameters must map names to strings/);
	});

	it("writes sub-queries as Cells does: int64 as strings, enums as names, zero values left out", () => {
		const sel = cellsSelector({ Query: { SubQueries: [{ MinSize: 10, Type: 1, Not: false, FileName: "" }] } });
		assert.deepEqual(sel.Query?.SubQueries, [{ "@type": "type.googleapis.com/tree.Query", MinSize: "10", Type: "LEAF" }]);
	});

	it("selects by OR or AND of sub-queries, then Pathes and range", () => {
		const nodes = [
			{ Path: "ws/a.txt", Type: "LEAF", Size: 5 },
			{ Path: "ws/b.txt", Type: "LEAF", Size: 50 },
			{ Path: "ws/c.md", Type: "LEAF", Size: 500 },
		];
		const q = (Operation: "OR" | "AND") => compileSelector({ Query: { Operation, SubQueries: [{ Extension: "txt" }, { MinSize: 40 }] } }, "s", true);
		assert.deepEqual(selectNodes(q("OR"), nodes).map((n) => n.Path), ["ws/a.txt", "ws/b.txt", "ws/c.md"]);
		assert.deepEqual(selectNodes(q("AND"), nodes).map((n) => n.Path), ["ws/b.txt"]);
		const paged = compileSelector({ Pathes: ["/ws/a.txt", "ws/b.txt", "ws/c.md/"], Range: { OrderBy: "size", OrderDir: "desc", Offset: "1", Limit: "1" } }, "s", true);
		assert.deepEqual(selectNodes(paged, nodes).map((n) => n.Path), ["ws/b.txt"]);
		assert.throws(() => compileSelector({ Query: { SubQueries: [{ GeoQuery: {} }] } }, "s", true), /need the search index/);
		assert.doesNotThrow(() => compileSelector({ Query: { SubQueries: [{ Content: "word" }] } }, "s", false), "kept in a stored template");
	});
});
