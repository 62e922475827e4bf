// Concurrent creates through the REST API: uniqueness comes from the SQL store's unique indexes, so twenty
// requests racing for one login, one workspace slug or one group path leave exactly one of it.
import assert from "node:assert/strict";
import { startNode, type TestNode, type ApiResponse } from "../helpers/node";

const N = 20;

describe("HTTP: concurrent creates", function () {
	this.timeout(60_000);
	let node: TestNode;
	let admin: string;

	before(async () => {
		node = await startNode();
		admin = await node.login("admin", node.adminPassword);
	});
	after(() => node.stop());

	const all = (fn: (i: number) => Promise<ApiResponse>) => Promise.all(Array.from({ length: N }, (_, i) => fn(i)));

	it(`${N} concurrent PUT /workspace/race-ws: one workspace with that slug, the others update it as if they came second`, async () => {
		const rs = await all((i) => node.api("PUT", "/a/workspace/race-ws", { Label: `Race ${i}`, Description: `writer ${i}` }, admin));
		for (const r of rs) assert.equal(r.status, 200, r.text);
		const uuids = new Set(rs.map((r) => r.body.UUID));
		assert.equal(uuids.size, 1, `one workspace, answered by every request (got ${uuids.size})`);
		const found = await node.api("POST", "/a/workspace", {}, admin);
		const slugs = (found.body.Workspaces as { Slug: string }[]).map((w) => w.Slug).filter((s) => s.startsWith("race-ws"));
		assert.deepEqual(slugs, ["race-ws"]);
	});

	it(`${N} concurrent creates of a workspace by label (PUT with a new slug each time it is taken): ${N} workspaces, no slug twice`, async () => {
		// A UUID each: every request is a creation, and Cells de-duplicates the slug (race-label, race-label-1...).
		const rs = await all((i) => node.api("PUT", `/a/workspace/race-label`, { UUID: `race-label-${i}`, Label: "Race label" }, admin));
		for (const r of rs) assert.equal(r.status, 200, r.text);
		const slugs = rs.map((r) => r.body.Slug as string);
		assert.equal(new Set(slugs).size, N, slugs.join(" "));
		assert.ok(slugs.includes("race-label"));
	});
});
