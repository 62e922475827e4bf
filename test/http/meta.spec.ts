import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: node metadata", function () {
	this.timeout(30_000);
	const node = useNode();
	let user: string;

	before(async () => {
		await node.api("PUT", "/a/user/meta-user", { Password: "Meta-Pass-1234", Attributes: { profile: "standard" } }, node.admin);
		user = await node.login("meta-user", "Meta-Pass-1234");
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/m/doc.txt", Type: "LEAF" }], Recursive: true }, user)).status, 200);
	});

	it("sets, gets and deletes metadata on a node", async () => {
		const set = await node.api("POST", "/a/meta/set/common-files/m/doc.txt", { Metadatas: [{ Namespace: "usermeta-color", JsonMeta: '"blue"' }, { Namespace: "rating", JsonMeta: "5" }] }, user);
		assert.equal(set.status, 200, set.text);
		assert.equal(set.body.MetaStore["usermeta-color"], '"blue"');
		const got = await node.api("POST", "/a/meta/get/common-files/m/doc.txt", { Namespace: ["rating"] }, user);
		assert.equal(got.status, 200);
		assert.deepEqual(Object.keys(got.body.MetaStore).sort(), ["name", "rating"]);
		const del = await node.api("POST", "/a/meta/delete/common-files/m/doc.txt", { Namespace: ["rating"] }, user);
		assert.equal(del.body.MetaStore.rating, undefined);
		assert.equal(del.body.MetaStore["usermeta-color"], '"blue"');
	});

	it("keeps metadata across moves and copies", async () => {
		const listed = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/m/*"] }, user);
		assert.equal(listed.body.Nodes[0].MetaStore["usermeta-color"], '"blue"');
		const restore = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/m/doc.txt" }] }, user);
		assert.equal(restore.status, 200);
		const binned = await node.api("POST", "/a/meta/get/common-files/recycle_bin/doc.txt", {}, user);
		assert.equal(binned.body.MetaStore["usermeta-color"], '"blue"');
		await node.broker.call("tree.copy", { From: "common-files/recycle_bin/doc.txt", To: "common-files/m/copy.txt" }, { meta: { user: await node.broker.call("auth.resolve", { token: user }) } });
		const copy = await node.api("POST", "/a/meta/get/common-files/m/copy.txt", {}, user);
		assert.equal(copy.body.MetaStore["usermeta-color"], '"blue"');
		assert.equal(copy.body.MetaStore.recycle_restore, undefined);
	});

	it("refuses bad values, reserved namespaces and unknown nodes", async () => {
		assert.equal((await node.api("POST", "/a/meta/set/common-files/m/copy.txt", { Metadatas: [{ Namespace: "x", JsonMeta: "{not json" }] }, user)).status, 400);
		assert.equal((await node.api("POST", "/a/meta/set/common-files/m/copy.txt", { Metadatas: [{ Namespace: "name", JsonMeta: '"evil"' }] }, user)).status, 403);
		assert.equal((await node.api("POST", "/a/meta/set/common-files/nope.txt", { Metadatas: [{ Namespace: "x", JsonMeta: "1" }] }, user)).status, 404);
		assert.equal((await node.api("POST", "/a/meta/get/common-files/a%00b", {}, user)).status, 400);
		assert.equal((await node.api("POST", "/a/meta/get/common-files/..%2Fetc", {}, user)).status, 400);
	});
});
