// lib/usermeta without a broker: the checks of namespaces and values, and UserMetadata's rules (admins declare
// namespaces, values need a readable node and the namespace's WRITE policy, bookmarks stay their user's) over a
// real UserMetaRepo on SQLite and a fake tree.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../lib/db";
import { UserMetaRepo } from "../../lib/db/user-meta";
import { UserMetadata } from "../../lib/usermeta/metadata";
import { checkJsonDefinition, checkNamespaceName, checkTag, fieldType, tagsOf } from "../../lib/usermeta/model";
import type { Identity } from "../../lib/auth/identity";
import type { TreeNode } from "../../lib/tree/model";
import type { UserMetaChange } from "../../lib/contracts/usermeta";

const user = (login: string, profile: Identity["Profile"] = "standard"): Identity => ({ Uuid: `uuid-${login}`, Login: login, Profile: profile, GroupPath: "/", Roles: ["ROOT_GROUP", `uuid-${login}`], TokenKind: "session", ExpiresAt: 2e9 });
const code = (n: number) => (e: { code?: number }) => e.code === n;

describe("lib/usermeta", () => {
	it("checks namespace names, definitions, tags and splits tag values", () => {
		assert.equal(checkNamespaceName("usermeta-x"), "usermeta-x");
		for (const bad of ["x", "", "usermeta-a b", "usermeta-" + "x".repeat(200), 3]) assert.throws(() => checkNamespaceName(bad), code(400));
		assert.equal(checkJsonDefinition(undefined), "");
		assert.throws(() => checkJsonDefinition("[1]"), code(400));
		assert.equal(fieldType({ JsonDefinition: '{"type":"tags"}' }), "tags");
		assert.equal(fieldType({ JsonDefinition: "oops" }), "");
		assert.deepEqual(tagsOf('"a, b,,a"'), ["a", "b"]);
		assert.deepEqual(tagsOf('["x","y"]'), ["x", "y"]);
		assert.deepEqual(tagsOf("5"), []);
		assert.throws(() => checkTag(" "), code(400));
		assert.throws(() => checkTag("a\u0000"), code(400));
	});

	describe("UserMetadata", () => {
		let dir: string;
		let db: Db;
		let meta: UserMetadata;
		const changes: UserMetaChange[] = [];
		const alice = user("alice");
		const bob = user("bob");
		const admin = user("root", "admin");
		// Node "w" is writable, "r" read-only for everyone; "gone" does not exist.
		const nodes = async (uuids: string[]): Promise<TreeNode[]> =>
			uuids.filter((u) => u === "w" || u === "r").map((u) => ({ Uuid: u, Path: `ws/${u}`, Type: "LEAF", MetaStore: (u === "r" ? { node_readonly: "true" } : {}) as Record<string, string> }));

		before(async () => {
			dir = mkdtempSync(join(tmpdir(), "cellar-usermeta-"));
			db = await openDatabase({ dataDir: dir });
			meta = new UserMetadata({ repo: new UserMetaRepo(db), nodes, changed: async (c) => void changes.push(c), now: () => 1000 });
		});
		after(async () => {
			await db.close();
			rmSync(dir, { recursive: true, force: true });
		});

		it("lets only administrators declare or delete namespaces (403), with default policies", async () => {
			await assert.rejects(meta.updateNamespaces(alice, "PUT", [{ Namespace: "usermeta-a" }]), code(403));
			const [ns] = await meta.updateNamespaces(admin, "PUT", [{ Namespace: "usermeta-a", JsonDefinition: '{"type":"tags"}', Indexable: true }]);
			assert.equal(ns.Label, "usermeta-a");
			assert.deepEqual(ns.Policies.map((p) => `${p.Action} ${p.Subject}`), ["READ *", "WRITE profile:admin"]);
			await meta.updateNamespaces(admin, "PUT", [{ Namespace: "usermeta-open", Policies: [{ Action: "WRITE", Subject: "*" }, { Action: "READ", Subject: "*" }] }]);
			await assert.rejects(meta.updateNamespaces(admin, "PUT", []), code(400));
			await assert.rejects(meta.updateNamespaces(admin, "DELETE", [{ Namespace: "bookmark" }]), code(403));
			assert.equal((await meta.namespaces(alice))[0].PoliciesContextEditable, false);
		});

		it("writes values where node and namespace allow it, and tells which nodes changed", async () => {
			await assert.rejects(meta.update(alice, "PUT", [{ NodeUuid: "w", Namespace: "usermeta-a", JsonValue: '"x"' }]), code(403));
			await assert.rejects(meta.update(alice, "PUT", [{ NodeUuid: "r", Namespace: "usermeta-open", JsonValue: '"x"' }]), code(403));
			await assert.rejects(meta.update(alice, "PUT", [{ NodeUuid: "gone", Namespace: "usermeta-open", JsonValue: '"x"' }]), code(404));
			await assert.rejects(meta.update(alice, "PUT", [{ NodeUuid: "w", Namespace: "usermeta-open" }]), code(400));
			const [v] = await meta.update(admin, "PUT", [{ NodeUuid: "w", Namespace: "usermeta-a", JsonValue: '"t1,t2"' }]);
			assert.equal(v.PoliciesContextEditable, true);
			assert.deepEqual(await meta.tags("usermeta-a"), ["t1", "t2"]);
			assert.deepEqual(changes.at(-1), { NodeUuids: ["w"], Namespaces: ["usermeta-a"], Indexable: true });
			// Naming a value by its uuid: it must be that node's and namespace's, and writable by the caller.
			await assert.rejects(meta.update(alice, "PUT", [{ Uuid: v.Uuid, NodeUuid: "w", Namespace: "usermeta-open", JsonValue: "1" }]), code(404));
			await assert.rejects(meta.update(admin, "PUT", [{ Uuid: "nope", NodeUuid: "w", Namespace: "usermeta-a", JsonValue: "1" }]), code(404));
			assert.deepEqual(await meta.valuesFor(bob, ["w", "r"]), { w: { "usermeta-a": '"t1,t2"' } });
			// By uuid alone: the stored value's node and namespace.
			const [open] = await meta.update(alice, "PUT", [{ NodeUuid: "w", Namespace: "usermeta-open", JsonValue: "3" }]);
			assert.deepEqual((await meta.update(bob, "DELETE", [{ Uuid: open.Uuid }])).map((m) => m.Uuid), [open.Uuid]);
			await assert.rejects(meta.update(bob, "DELETE", [{ Uuid: open.Uuid }]), code(404));
		});

		it("keeps bookmarks to their user, on read-only nodes too", async () => {
			await meta.update(alice, "PUT", [{ NodeUuid: "r", Namespace: "bookmark", JsonValue: "true" }]);
			assert.deepEqual(await meta.bookmarkedUuids(alice), ["r"]);
			assert.deepEqual(await meta.bookmarkedUuids(bob), []);
			assert.deepEqual(await meta.valuesFor(bob, ["r"]), {});
			assert.deepEqual(await meta.valuesFor(alice, ["r"]), { r: { bookmark: "true" } });
			assert.deepEqual((await meta.bookmarks(alice)).map((n) => n.Path), ["ws/r"]);
			// Bob's delete of "his" bookmark there touches nothing of alice's.
			assert.deepEqual(await meta.update(bob, "DELETE", [{ NodeUuid: "r", Namespace: "bookmark" }]), []);
			assert.deepEqual(await meta.bookmarkedUuids(alice), ["r"]);
			await assert.rejects(meta.search(bob, { ResourceSubjectOwner: alice.Uuid }), code(403));
			assert.equal((await meta.search(admin, { ResourceSubjectOwner: alice.Uuid })).length, 1);
		});

		it("clears tags for administrators only, and only all of them", async () => {
			await assert.rejects(meta.clearTags(alice, "usermeta-a", "*"), code(403));
			await assert.rejects(meta.clearTags(admin, "usermeta-a", "t1"), code(400));
			await meta.clearTags(admin, "usermeta-a", "*");
			assert.deepEqual(await meta.tags("usermeta-a"), []);
			await assert.rejects(meta.addTag(alice, "usermeta-a", "x"), code(403));
			await meta.addTag(alice, "usermeta-open", "x");
			assert.deepEqual(await meta.tags("usermeta-open"), ["x"]);
		});
	});
});
