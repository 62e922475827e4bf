// UserMetaRepo on SQLite and PostgreSQL: namespaces upsert and delete with their values and tags, one value per
// (node, namespace, owner) whatever the race, the lookups a listing page, a bookmark list and a search make.
import assert from "node:assert/strict";
import { UserMetaRepo } from "../../lib/db/user-meta";
import { NodesRepo } from "../../lib/db/nodes";
import type { UserMetaNamespace } from "../../lib/usermeta/model";
import { onEveryBackend } from "../helpers/db";

const ns = (name: string, order = 0): UserMetaNamespace => ({
	Namespace: name,
	Label: name.toUpperCase(),
	Order: order,
	Indexable: order % 2 === 1,
	JsonDefinition: '{"type":"string"}',
	Policies: [{ Resource: name, Action: "READ", Subject: "*", Effect: "allow" }],
});

onEveryBackend("UserMetaRepo", (h) => {
	let repo: UserMetaRepo;
	before(() => {
		repo = new UserMetaRepo(h().db);
	});

	it("stores namespaces, replaces one on a second put, lists them by order then name", async () => {
		await repo.putNamespace(ns("usermeta-b", 2));
		await repo.putNamespace(ns("usermeta-a", 2));
		await repo.putNamespace(ns("usermeta-c", 1));
		const replaced = await repo.putNamespace({ ...ns("usermeta-c", 1), Label: "Colour" });
		assert.equal(replaced.Label, "Colour");
		assert.deepEqual((await repo.namespaces()).map((n) => n.Namespace), ["usermeta-c", "usermeta-a", "usermeta-b"]);
		assert.deepEqual(await repo.namespace("usermeta-a"), ns("usermeta-a", 2));
		assert.equal((await repo.namespace("usermeta-c"))?.Indexable, true);
		assert.equal(await repo.namespace("nope"), null);
		assert.equal(await repo.addNamespaceIfAbsent(ns("usermeta-a", 9)), false);
		assert.equal((await repo.namespace("usermeta-a"))?.Order, 2);
		assert.equal(await repo.addNamespaceIfAbsent(ns("usermeta-d", 3)), true);
	});

	it("keeps one value per node, namespace and owner: a second put updates it and keeps its uuid", async () => {
		const first = await repo.put({ NodeUuid: "n1", Namespace: "usermeta-a", Owner: "", JsonValue: '"red"', Policies: [], UpdatedAt: 10 });
		const again = await repo.put({ NodeUuid: "n1", Namespace: "usermeta-a", Owner: "", JsonValue: '"blue"', Policies: [], UpdatedAt: 11 });
		assert.equal(again.Uuid, first.Uuid);
		assert.equal(again.JsonValue, '"blue"');
		const racing = await Promise.all([1, 2, 3, 4].map((i) => repo.put({ NodeUuid: "n2", Namespace: "usermeta-a", Owner: "", JsonValue: String(i), Policies: [], UpdatedAt: 20 + i })));
		assert.equal(new Set(racing.map((v) => v.Uuid)).size, 1);
		assert.equal((await repo.find({ nodeUuids: ["n2"] })).length, 1);
		// Per-user values of one node do not collide.
		await repo.put({ NodeUuid: "n1", Namespace: "bookmark", Owner: "alice", JsonValue: "true", Policies: [], UpdatedAt: 30 });
		await repo.put({ NodeUuid: "n1", Namespace: "bookmark", Owner: "bob", JsonValue: "true", Policies: [], UpdatedAt: 31 });
		assert.equal((await repo.find({ nodeUuids: ["n1"] })).length, 3);
		assert.equal((await repo.at("n1", "bookmark", "bob"))?.UpdatedAt, 31);
		assert.deepEqual(await repo.byUuid(first.Uuid), { ...again });
	});

	it("finds values by node page, owner, namespace and uuid, newest first; an empty list matches nothing", async () => {
		const page = await repo.find({ nodeUuids: ["n1", "n2", "n3"], owners: ["", "alice"] });
		assert.deepEqual(page.map((v) => `${v.NodeUuid}/${v.Namespace}/${v.Owner}`), ["n1/bookmark/alice", "n2/usermeta-a/", "n1/usermeta-a/"]);
		assert.deepEqual((await repo.find({ namespace: "bookmark", owners: ["bob"] })).map((v) => v.Owner), ["bob"]);
		assert.deepEqual(await repo.find({ nodeUuids: [] }), []);
		const one = page[0];
		assert.deepEqual(await repo.find({ uuids: [one.Uuid] }), [one]);
		assert.equal((await repo.find({ namespace: "usermeta-a", limit: 1 })).length, 1);
		// More node uuids than one IN list holds.
		const many = Array.from({ length: 1200 }, (_, i) => `x${i}`).concat(["n2"]);
		assert.equal((await repo.find({ nodeUuids: many })).length, 1);
	});

	it("matches values by equality or case-insensitive substring, shared and the owner's only", async () => {
		await repo.put({ NodeUuid: "n3", Namespace: "usermeta-a", Owner: "", JsonValue: '"Dark Blue"', Policies: [], UpdatedAt: 40 });
		await repo.put({ NodeUuid: "n4", Namespace: "usermeta-a", Owner: "carol", JsonValue: '"blue"', Policies: [], UpdatedAt: 41 });
		assert.deepEqual((await repo.matching("usermeta-a", { contains: "BLUE" }, "alice", 10)).map((v) => v.NodeUuid), ["n3", "n1"]);
		assert.deepEqual((await repo.matching("usermeta-a", { contains: "blue" }, "carol", 10)).map((v) => v.NodeUuid), ["n4", "n3", "n1"]);
		assert.deepEqual((await repo.matching("usermeta-a", { equals: '"blue"' }, "alice", 10)).map((v) => v.NodeUuid), ["n1"]);
	});

	it("deletes one value, the values of nodes, and a namespace with its values and tags", async () => {
		const v = await repo.at("n4", "usermeta-a", "carol");
		assert.ok(v);
		assert.equal(await repo.delete(v.Uuid), true);
		assert.equal(await repo.delete(v.Uuid), false);
		assert.equal(await repo.deleteOfNodes(["n3"]), 1);
		await repo.addTags("usermeta-a", ["x"]);
		assert.deepEqual((await repo.deleteNamespace("usermeta-a"))?.sort(), ["n1", "n2"]);
		assert.equal(await repo.deleteNamespace("usermeta-a"), null);
		assert.deepEqual(await repo.find({ namespace: "usermeta-a" }), []);
		assert.deepEqual(await repo.tags("usermeta-a"), []);
		assert.equal((await repo.find({ namespace: "bookmark" })).length, 2);
	});

	it("keeps each tag once per namespace, sorted, and clears a namespace's list", async () => {
		assert.equal(await repo.addTags("usermeta-t", ["b", "a", "b"]), 2);
		assert.equal(await repo.addTags("usermeta-t", ["a", "c"]), 1);
		await repo.addTags("usermeta-u", ["z"]);
		assert.deepEqual(await repo.tags("usermeta-t"), ["a", "b", "c"]);
		assert.equal(await repo.clearTags("usermeta-t"), 3);
		assert.deepEqual(await repo.tags("usermeta-t"), []);
		assert.deepEqual(await repo.tags("usermeta-u"), ["z"]);
	});

	it("sweeps the values of nodes that no longer exist, and only those", async () => {
		const nodes = new NodesRepo(h().db);
		const root = await nodes.ensureRoot("ds-um");
		const file = await nodes.insert({ ds: "ds-um", path: "f.txt", type: "LEAF" });
		await repo.put({ NodeUuid: root.uuid, Namespace: "usermeta-z", Owner: "", JsonValue: "1", Policies: [], UpdatedAt: 1 });
		await repo.put({ NodeUuid: file.uuid, Namespace: "usermeta-z", Owner: "", JsonValue: "2", Policies: [], UpdatedAt: 2 });
		await repo.put({ NodeUuid: "gone-1", Namespace: "usermeta-z", Owner: "", JsonValue: "3", Policies: [], UpdatedAt: 3 });
		const before = (await repo.find({})).length;
		const removed = await repo.deleteOrphans();
		assert.ok(removed >= 1);
		assert.equal((await repo.find({})).length, before - removed);
		assert.deepEqual((await repo.find({ namespace: "usermeta-z" })).map((v) => v.JsonValue), ["2", "1"]);
	});

	it("nodesWithValues: each node having values once, or null past the bound", async () => {
		await repo.put({ NodeUuid: "v-1", Namespace: "usermeta-v", Owner: "", JsonValue: "1", Policies: [], UpdatedAt: 1 });
		await repo.put({ NodeUuid: "v-1", Namespace: "usermeta-w", Owner: "u", JsonValue: "2", Policies: [], UpdatedAt: 2 });
		await repo.put({ NodeUuid: "v-2", Namespace: "usermeta-v", Owner: "", JsonValue: "3", Policies: [], UpdatedAt: 3 });
		const all = (await repo.nodesWithValues(10_000)) ?? [];
		assert.equal(all.filter((u) => u === "v-1").length, 1);
		assert.ok(all.includes("v-2"));
		assert.equal(new Set(all).size, all.length);
		assert.equal(await repo.nodesWithValues(all.length - 1), null);
	});
});
