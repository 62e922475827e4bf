import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

describe("HTTP: workspaces", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	it("admin creates a workspace with PUT /a/workspace/my-ws and finds it with POST /a/workspace", async () => {
		const put = await node.api(
			"PUT",
			"/a/workspace/my-ws",
			{ Label: "My WS", Description: "Admins only", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "" }), RootNodes: { "node-my": { Uuid: "node-my", Path: "pydiods1/my" } } },
			node.admin,
		);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Slug, "my-ws");
		assert.equal(put.body.Label, "My WS");
		assert.equal(put.body.Scope, "ADMIN");
		assert.ok(put.body.UUID);
		assert.deepEqual(put.body.RootUUIDs, ["node-my"]);
		assert.equal(put.body.RootNodes["node-my"].Path, "pydiods1/my");
		assert.equal(typeof put.body.Attributes, "string");
		assert.equal(put.body.PoliciesContextEditable, true);

		const found = await node.api("POST", "/a/workspace", { Queries: [{ slug: "my-ws" }] }, node.admin);
		assert.equal(found.status, 200, found.text);
		assert.equal(found.body.Total, 1);
		assert.equal(found.body.Workspaces[0].UUID, put.body.UUID);

		// Update by UUID; unknown body fields are refused.
		const upd = await node.api("PUT", "/a/workspace/my-ws", { UUID: put.body.UUID, Label: "My WS 2" }, node.admin);
		assert.equal(upd.status, 200, upd.text);
		assert.equal(upd.body.Label, "My WS 2");
		assert.equal((await node.api("PUT", "/a/workspace/my-ws", { Label: "x", Bogus: 1 }, node.admin)).status, 400);
	});

	it("refuses bad slugs and attributes with 400", async () => {
		for (const bad of ["..%2Fetc", "a%2Fb", "nul%00"]) {
			const r = await node.api("PUT", `/a/workspace/${bad}`, { Label: "Bad" }, node.admin);
			assert.equal(r.status, 400, `${bad} -> ${r.status} ${r.text}`);
		}
		assert.equal((await node.api("PUT", "/a/workspace/attrs", { Label: "A", Attributes: "{oops" }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/workspace/nolabel", { Description: "no label" }, node.admin)).status, 400);
	});

	it("a standard user cannot create or edit workspaces (403)", async () => {
		const r = await node.api("PUT", "/a/workspace/x", { Label: "X" }, alice);
		assert.equal(r.status, 403, r.text);
		assert.equal((await node.api("DELETE", "/a/workspace/my-ws", undefined, alice)).status, 403);
	});

	it("a standard user sees only the workspaces their roles can access", async () => {
		const shared = await node.api(
			"PUT",
			"/a/workspace/team-space",
			{ Label: "Team Space", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "r" }), RootNodes: { "node-team": { Uuid: "node-team", Path: "pydiods1/team" } } },
			node.admin,
		);
		assert.equal(shared.status, 200, shared.text);
		const r = await node.api("POST", "/a/workspace", {}, alice);
		assert.equal(r.status, 200, r.text);
		const slugs = (r.body.Workspaces ?? []).map((w: { Slug: string }) => w.Slug);
		assert.ok(slugs.includes("team-space"), slugs.join(","));
		assert.ok(!slugs.includes("my-ws"), slugs.join(","));
		assert.equal(r.body.Total, slugs.length);
		const team = r.body.Workspaces.find((w: { Slug: string }) => w.Slug === "team-space");
		assert.equal(JSON.parse(team.Attributes).DEFAULT_RIGHTS, "r");
		assert.equal(team.PoliciesContextEditable, undefined, "false is omitted on the wire");
	});

	it("admin deletes a workspace; a second delete is a 404", async () => {
		const del = await node.api("DELETE", "/a/workspace/team-space", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.deepEqual(del.body, { Success: true, NumRows: "1" });
		assert.equal((await node.api("DELETE", "/a/workspace/team-space", undefined, node.admin)).status, 404);
		const acls = await node.api("POST", "/a/acl", { Queries: [{ NodeIDs: ["node-team"] }] }, node.admin);
		assert.equal(acls.status, 200, acls.text);
		assert.equal(acls.body.ACLs, undefined);
	});
});
