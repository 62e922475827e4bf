import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

describe("HTTP: ACLs", function () {
	this.timeout(30_000);
	const node = useNode();
	let bob: string;

	before(async () => {
		bob = await addUser(node, node.admin, "bob", "Bob-Pass-12345");
	});

	it("PUT /a/acl stores an ACL once (idempotent) and POST /a/acl finds it with a Total", async () => {
		const acl = { RoleID: "team-a", WorkspaceID: "ws-a", NodeID: "node-a", Action: { Name: "read", Value: "1" } };
		const first = await node.api("PUT", "/a/acl", acl, node.admin);
		assert.equal(first.status, 200, first.text);
		assert.ok(first.body.ID);
		const second = await node.api("PUT", "/a/acl", acl, node.admin);
		assert.equal(second.body.ID, first.body.ID);
		const found = await node.api("POST", "/a/acl", { Queries: [{ RoleIDs: ["team-a"] }], Limit: "10" }, node.admin);
		assert.equal(found.status, 200, found.text);
		assert.equal(found.body.Total, 1);
		assert.deepEqual(found.body.ACLs[0], { ID: first.body.ID, ...acl });
	});

	it("refuses unknown actions and missing roles (400)", async () => {
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: "r", NodeID: "n", Action: { Name: "sudo", Value: "1" } }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/acl", { NodeID: "n", Action: { Name: "read", Value: "1" } }, node.admin)).status, 400);
	});

	it("bulk delete needs a criterion and reports NumRows", async () => {
		assert.equal((await node.api("POST", "/a/acl/bulk/delete", {}, node.admin)).status, 400);
		const del = await node.api("POST", "/a/acl/bulk/delete", { RoleID: "team-a" }, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.deepEqual(del.body, { Success: true, NumRows: "1" });
	});

	it("is closed to standard users", async () => {
		assert.equal((await node.api("POST", "/a/acl", {}, bob)).status, 403);
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: "x", NodeID: "n", Action: { Name: "read" } }, bob)).status, 403);
		assert.equal((await node.api("POST", "/a/acl/bulk/delete", { RoleID: "x" }, bob)).status, 403);
		assert.equal((await node.api("POST", "/a/acl", {})).status, 401);
	});
});
