// User metadata through the real gateway: namespaces (admins), values on nodes checked against the node's rights
// and the namespace's policies, values shown in stats and listings to those who may read them, tags, bookmarks,
// search, and the contract search uses.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import type { Identity } from "../../lib/auth/identity";

describe("HTTP: user metadata", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;
	let bob: string;
	let doc: string;
	let roDoc: string;

	const uuidOf = async (path: string, token: string) => {
		const r = await node.api("GET", `/a/tree/stat/${path}`, undefined, token);
		assert.equal(r.status, 200, r.text);
		return r.body.Node.Uuid as string;
	};
	const listed = async (folder: string, token: string) => {
		const r = await node.api("POST", "/a/tree/stats", { NodePaths: [`${folder}/*`] }, token);
		assert.equal(r.status, 200, r.text);
		return r.body.Nodes as { Path: string; Uuid: string; MetaStore: Record<string, string> }[];
	};
	const update = (token: string, MetaDatas: unknown[], Operation = "PUT") => node.api("PUT", "/a/user-meta/update", { Operation, MetaDatas }, token);

	before(async () => {
		for (const u of ["alice", "bob"]) assert.equal((await node.api("PUT", `/a/user/${u}`, { Login: u, Password: "Meta-Pass-1234", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		alice = await node.login("alice", "Meta-Pass-1234");
		bob = await node.login("bob", "Meta-Pass-1234");
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/um/doc.txt", Type: "LEAF" }, { Path: "common-files/ro/locked.txt", Type: "LEAF" }], Recursive: true }, node.admin)).status, 200);
		doc = await uuidOf("common-files/um/doc.txt", alice);
		// A folder alice may only read (a node ACL on her role): its files take no values, but bookmarks.
		const ro = await uuidOf("common-files/ro", node.admin);
		const aliceUuid = (await node.broker.call<Identity, { token: string }>("auth.resolve", { token: alice })).Uuid;
		const acl = await node.api("PUT", "/a/acl", { Action: { Name: "read", Value: "1" }, RoleID: aliceUuid, NodeID: ro }, node.admin);
		assert.equal(acl.status, 200, acl.text);
		roDoc = await uuidOf("common-files/ro/locked.txt", alice);
	});

	it("admins declare namespaces; everyone lists them by order, without the built-in bookmark", async () => {
		const put = await node.api(
			"PUT",
			"/a/user-meta/namespace",
			{
				Operation: "PUT",
				Namespaces: [
					{ Namespace: "usermeta-color", Label: "Color", Order: 2, JsonDefinition: '{"type":"string"}', Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }, { Action: "WRITE", Subject: "profile:standard", Effect: "allow" }] },
					{ Namespace: "usermeta-tags", Label: "Tags", Order: 1, Indexable: true, JsonDefinition: '{"type":"tags"}', Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }, { Action: "WRITE", Subject: "*", Effect: "allow" }] },
					{ Namespace: "usermeta-secret", Label: "Secret", Order: 3 },
				],
			},
			node.admin,
		);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Namespaces.length, 3);
		const list = await node.api("GET", "/a/user-meta/namespace", undefined, alice);
		assert.equal(list.status, 200, list.text);
		assert.deepEqual(list.body.Namespaces.map((n: { Namespace: string }) => n.Namespace), ["usermeta-tags", "usermeta-color", "usermeta-secret"]);
		const tags = list.body.Namespaces[0];
		assert.equal(tags.Indexable, true);
		assert.equal(tags.Order, 1);
		assert.equal(tags.PoliciesContextEditable, undefined, "false is omitted for a standard user");
		// Declared without policies: everyone reads, admins write.
		const secret = list.body.Namespaces[2];
		assert.deepEqual(secret.Policies.map((p: { Action: string; Subject: string }) => `${p.Action} ${p.Subject}`), ["READ *", "WRITE profile:admin"]);
	});

	it("refuses namespaces from non-admins, bad names and definitions, and unknown deletions", async () => {
		const byAlice = await node.api("PUT", "/a/user-meta/namespace", { Operation: "PUT", Namespaces: [{ Namespace: "usermeta-mine" }] }, alice);
		// Cells' default REST policies keep PUT /user-meta/namespace to admins: refused before the handler.
		assert.ok([401, 403].includes(byAlice.status), byAlice.text);
		assert.equal((await node.api("PUT", "/a/user-meta/namespace", { Namespaces: [{ Namespace: "color" }] }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/user-meta/namespace", { Namespaces: [{ Namespace: "usermeta-x", JsonDefinition: "{oops" }] }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/user-meta/namespace", { Operation: "DELETE", Namespaces: [{ Namespace: "usermeta-nope" }] }, node.admin)).status, 404);
		assert.equal((await node.api("PUT", "/a/user-meta/namespace", { Operation: "MOVE", Namespaces: [] }, node.admin)).status, 400);
	});

	it("puts a value on a node the caller may write; stats and listings show it, a second PUT updates it", async () => {
		// Cached listing first: the update must not leave it stale.
		assert.equal((await listed("common-files/um", alice))[0].MetaStore["usermeta-color"], undefined);
		const r = await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-color", JsonValue: '"blue"' }]);
		assert.equal(r.status, 200, r.text);
		const meta = r.body.MetaDatas[0];
		assert.ok(meta.Uuid);
		assert.equal(meta.JsonValue, '"blue"');
		assert.equal(meta.PoliciesContextEditable, true);
		assert.equal((await listed("common-files/um", alice))[0].MetaStore["usermeta-color"], '"blue"');
		assert.equal((await listed("common-files/um", bob))[0].MetaStore["usermeta-color"], '"blue"');
		const again = await update(bob, [{ NodeUuid: doc, Namespace: "usermeta-color", JsonValue: '"green"' }]);
		assert.equal(again.body.MetaDatas[0].Uuid, meta.Uuid);
		const stat = await node.api("GET", "/a/tree/stat/common-files/um/doc.txt", undefined, alice);
		assert.equal(stat.body.Node.MetaStore["usermeta-color"], '"green"');
	});

	it("shows values only to those the namespace lets read, and lets only its writers write", async () => {
		assert.equal((await update(node.admin, [{ NodeUuid: doc, Namespace: "usermeta-secret", JsonValue: "42" }])).status, 200);
		const forAdmin = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/um/doc.txt"] }, node.admin);
		assert.equal(forAdmin.body.Nodes[0].MetaStore["usermeta-secret"], "42");
		const denied = await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-secret", JsonValue: "1" }]);
		assert.equal(denied.status, 403, denied.text);
		// A namespace readable by admins only.
		await node.api("PUT", "/a/user-meta/namespace", { Namespaces: [{ Namespace: "usermeta-hidden", Policies: [{ Action: "READ", Subject: "profile:admin", Effect: "allow" }, { Action: "WRITE", Subject: "profile:admin", Effect: "allow" }] }] }, node.admin);
		assert.equal((await update(node.admin, [{ NodeUuid: doc, Namespace: "usermeta-hidden", JsonValue: '"x"' }])).status, 200);
		assert.equal((await listed("common-files/um", alice))[0].MetaStore["usermeta-hidden"], undefined);
		assert.equal((await listed("common-files/um", node.admin))[0].MetaStore["usermeta-hidden"], '"x"');
	});

	it("refuses unknown namespaces and nodes, bad JSON, and values on nodes the caller may only read", async () => {
		assert.equal((await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-nope", JsonValue: "1" }])).status, 404);
		assert.equal((await update(alice, [{ NodeUuid: "no-such-node", Namespace: "usermeta-color", JsonValue: "1" }])).status, 404);
		assert.equal((await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-color", JsonValue: "{bad" }])).status, 400);
		const ro = await update(alice, [{ NodeUuid: roDoc, Namespace: "usermeta-color", JsonValue: '"red"' }]);
		assert.equal(ro.status, 403, ro.text);
		// Nothing of a refused batch is written.
		const batch = await update(alice, [
			{ NodeUuid: doc, Namespace: "usermeta-color", JsonValue: '"pink"' },
			{ NodeUuid: doc, Namespace: "usermeta-secret", JsonValue: "7" },
		]);
		assert.equal(batch.status, 403);
		assert.equal((await listed("common-files/um", alice))[0].MetaStore["usermeta-color"], '"green"');
		assert.equal((await update(alice, [{ NodeUuid: doc, Namespace: "content_lock", JsonValue: '"alice"' }])).status, 501);
	});

	it("adds the tags of tags values to the namespace's list; tags are added one by one and cleared by admins", async () => {
		assert.equal((await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-tags", JsonValue: '"work, urgent"' }])).status, 200);
		let tags = await node.api("GET", "/a/user-meta/tags/usermeta-tags", undefined, bob);
		assert.deepEqual(tags.body.Tags, ["urgent", "work"]);
		const put = await node.api("POST", "/a/user-meta/tags/usermeta-tags", { Tag: "later" }, bob);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Success, true);
		tags = await node.api("GET", "/a/user-meta/tags/usermeta-tags", undefined, bob);
		assert.deepEqual(tags.body.Tags, ["later", "urgent", "work"]);
		assert.equal((await node.api("POST", "/a/user-meta/tags/usermeta-secret", { Tag: "x" }, bob)).status, 403);
		assert.equal((await node.api("GET", "/a/user-meta/tags/usermeta-nope", undefined, bob)).status, 404);
		assert.ok([401, 403].includes((await node.api("DELETE", "/a/user-meta/tags/usermeta-tags/*", undefined, bob)).status));
		assert.equal((await node.api("DELETE", "/a/user-meta/tags/usermeta-tags/work", undefined, node.admin)).status, 400);
		const del = await node.api("DELETE", "/a/user-meta/tags/usermeta-tags/*", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.deepEqual((await node.api("GET", "/a/user-meta/tags/usermeta-tags", undefined, bob)).body.Tags, undefined, "an empty list is omitted");
	});

	it("keeps bookmarks per user, also on nodes the user may only read, and lists them as nodes", async () => {
		const r = await update(alice, [{ NodeUuid: doc, Namespace: "bookmark", JsonValue: "true" }, { NodeUuid: roDoc, Namespace: "bookmark", JsonValue: "true" }]);
		assert.equal(r.status, 200, r.text);
		const mine = await node.api("POST", "/a/user-meta/bookmarks", {}, alice);
		assert.equal(mine.status, 200, mine.text);
		assert.deepEqual(mine.body.Nodes.map((n: { Path: string }) => n.Path).sort(), ["common-files/ro/locked.txt", "common-files/um/doc.txt"]);
		assert.equal(mine.body.Nodes[0].MetaStore.bookmark, "true");
		assert.equal((await node.api("POST", "/a/user-meta/bookmarks", {}, bob)).body.Nodes, undefined);
		assert.equal((await listed("common-files/um", bob))[0].MetaStore.bookmark, undefined);
		assert.equal((await listed("common-files/um", alice))[0].MetaStore.bookmark, "true");
		const off = await update(alice, [{ NodeUuid: roDoc, Namespace: "bookmark" }], "DELETE");
		assert.equal(off.status, 200, off.text);
		assert.equal(off.body.MetaDatas.length, 1);
		assert.deepEqual((await node.api("POST", "/a/user-meta/bookmarks", {}, alice)).body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/um/doc.txt"]);
		// Deleting what is not there is a no-op.
		assert.equal((await update(alice, [{ NodeUuid: roDoc, Namespace: "bookmark" }], "DELETE")).status, 200);
	});

	it("searches values the caller may read; other users' own values are for admins only", async () => {
		const a = await node.api("POST", "/a/user-meta/search", { NodeUuids: [doc] }, alice);
		assert.equal(a.status, 200, a.text);
		assert.deepEqual(a.body.Metadatas.map((m: { Namespace: string }) => m.Namespace).sort(), ["bookmark", "usermeta-color", "usermeta-secret", "usermeta-tags"]);
		const b = await node.api("POST", "/a/user-meta/search", { Namespace: "usermeta-color" }, bob);
		assert.deepEqual(b.body.Metadatas.map((m: { NodeUuid: string; JsonValue: string }) => `${m.NodeUuid} ${m.JsonValue}`), [`${doc} "green"`]);
		assert.equal((await node.api("POST", "/a/user-meta/search", { Namespace: "bookmark" }, bob)).body.Metadatas, undefined);
		const aliceUuid = (await node.broker.call<Identity, { token: string }>("auth.resolve", { token: alice })).Uuid;
		assert.equal((await node.api("POST", "/a/user-meta/search", { ResourceSubjectOwner: aliceUuid }, bob)).status, 403);
		const byAdmin = await node.api("POST", "/a/user-meta/search", { Namespace: "bookmark", ResourceSubjectOwner: aliceUuid }, node.admin);
		assert.equal(byAdmin.body.Metadatas.length, 1);
	});

	it("answers search's contract: nodes whose readable value matches", async () => {
		const bobId = await node.broker.call<Identity, { token: string }>("auth.resolve", { token: bob });
		const opts = { meta: { user: bobId } };
		assert.deepEqual(await node.broker.call("user-meta.nodesMatching", { Namespace: "usermeta-color", Contains: "GRE" }, opts), { NodeUuids: [doc] });
		assert.deepEqual(await node.broker.call("user-meta.nodesMatching", { Namespace: "usermeta-color", Equals: '"green"' }, opts), { NodeUuids: [doc] });
		assert.deepEqual(await node.broker.call("user-meta.nodesMatching", { Namespace: "usermeta-hidden", Contains: "x" }, opts), { NodeUuids: [] });
	});

	it("a deleted node's values go with it", async () => {
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/um/tmp.txt", Type: "LEAF" }] }, alice)).status, 200);
		const tmp = await uuidOf("common-files/um/tmp.txt", alice);
		assert.equal((await update(alice, [{ NodeUuid: tmp, Namespace: "usermeta-color", JsonValue: '"gone"' }])).status, 200);
		const aliceId = await node.broker.call<Identity, { token: string }>("auth.resolve", { token: alice });
		await node.broker.call("tree.deleteObject", { Path: "common-files/um/tmp.txt" }, { meta: { user: aliceId } });
		let left: unknown = [];
		for (let i = 0; i < 50; i++) {
			left = (await node.api("POST", "/a/user-meta/search", { NodeUuids: [tmp] }, node.admin)).body.Metadatas;
			if (!left) break;
			await new Promise((res) => setTimeout(res, 20));
		}
		assert.equal(left, undefined);
	});

	it("deleting a namespace removes its values from listings", async () => {
		const del = await node.api("PUT", "/a/user-meta/namespace", { Operation: "DELETE", Namespaces: [{ Namespace: "usermeta-color" }] }, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.equal((await listed("common-files/um", alice))[0].MetaStore["usermeta-color"], undefined);
		assert.equal((await update(alice, [{ NodeUuid: doc, Namespace: "usermeta-color", JsonValue: '"x"' }])).status, 404);
	});
});
