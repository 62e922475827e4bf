// AclsRepo, one behaviour suite on SQLite and PostgreSQL: one value per (role, workspace, node, action) under
// concurrent puts, moves by ID, searches with OR / AND / not, finds with given lists, deletes by example, and
// the NeDB import of the acls collection.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AclsRepo, importNedbAcls } from "../../lib/db/acls";
import { importNedbOnce } from "../../lib/db/nedb-import";
import { checkSearch, type ACLFields, type ACLSingleQuery } from "../../lib/acl/model";
import { onEveryBackend } from "../helpers/db";

const f = (RoleID: string, ActionName: string, ActionValue = "1", WorkspaceID = "ws1", NodeID = "n1"): ACLFields => ({ RoleID, WorkspaceID, NodeID, ActionName, ActionValue });

onEveryBackend("AclsRepo", (h) => {
	let acls: AclsRepo;
	before(() => {
		acls = new AclsRepo(h().db);
	});
	const keys = (docs: { RoleID: string; ActionName: string; ActionValue: string }[]) => docs.map((d) => `${d.RoleID}:${d.ActionName}=${d.ActionValue}`);
	const search = async (queries: ACLSingleQuery[], op = "OR") => keys(await acls.search(checkSearch(queries, op), { limit: 100 }));

	it("puts an ACL, replaces its value on the same key, and says when nothing changed", async () => {
		const a = await acls.put(f("r1", "read"));
		assert.equal(a.changed, true);
		assert.ok(a.acl.ID && a.acl.Created > 0);
		const same = await acls.put(f("r1", "read"));
		assert.deepEqual(same, { acl: a.acl, changed: false });
		const b = await acls.put(f("r1", "read", "0"));
		assert.equal(b.changed, true);
		assert.equal(b.acl.ID, a.acl.ID, "the same ACL, a new value");
		assert.equal(b.acl.ActionValue, "0");
		assert.equal(await acls.count(checkSearch([], "OR")), 1);
	});

	it("20 concurrent puts of one key from two handles: one row, holding one of the values", async () => {
		const db2 = await h().second();
		const repos = [acls, new AclsRepo(db2)];
		await Promise.all(Array.from({ length: 20 }, (_, i) => repos[i % 2].put(f("race", "write", String(i)))));
		const rows = await acls.find({ RoleIDs: ["race"] });
		assert.equal(rows.length, 1);
		assert.ok(Number(rows[0].ActionValue) >= 0 && Number(rows[0].ActionValue) < 20);
	});

	it("moves an ACL named by ID to another key, replacing the one there", async () => {
		const a = (await acls.put(f("m1", "read"))).acl;
		const b = (await acls.put(f("m2", "read"))).acl;
		const moved = await acls.put(f("m2", "read", "moved"), a.ID);
		assert.equal(moved.acl.ID, a.ID);
		assert.equal(moved.changed, true);
		const m2 = await acls.find({ RoleIDs: ["m1", "m2"] });
		assert.deepEqual(keys(m2), ["m2:read=moved"]);
		assert.ok(!m2.some((x) => x.ID === b.ID));
		// An ID that names nothing is the ID of a new ACL.
		const fresh = await acls.put(f("m3", "read"), "given-id");
		assert.equal(fresh.acl.ID, "given-id");
	});

	it("searches with OR, AND and not; counts; pages in creation order", async () => {
		await acls.put(f("s1", "read", "1", "wsA", "nA"));
		await acls.put(f("s1", "write", "1", "wsA", "nA"));
		await acls.put(f("s2", "read", "1", "wsB", "nB"));
		await acls.put(f("s2", "quota", "100", "wsB", "nB"));
		const only = (xs: string[]) => xs.filter((x) => x.startsWith("s1") || x.startsWith("s2"));
		assert.deepEqual(await search([{ RoleIDs: ["s1"] }]), ["s1:read=1", "s1:write=1"]);
		assert.deepEqual(await search([{ RoleIDs: ["s1"] }, { WorkspaceIDs: ["wsB"], Actions: [{ Name: "quota" }] }]), ["s1:read=1", "s1:write=1", "s2:quota=100"]);
		assert.deepEqual(await search([{ RoleIDs: ["s1", "s2"] }, { Actions: [{ Name: "read" }] }], "AND"), ["s1:read=1", "s2:read=1"]);
		assert.deepEqual(await search([{ RoleIDs: ["s2"], Actions: [{ Name: "quota", Value: "100" }] }]), ["s2:quota=100"]);
		assert.deepEqual(await search([{ RoleIDs: ["s2"], Actions: [{ Name: "quota", Value: "5" }] }]), []);
		assert.deepEqual(only(await search([{ RoleIDs: ["s2"], not: true }])), ["s1:read=1", "s1:write=1"]);
		assert.deepEqual(await search([{ not: true }]), []);
		const total = await acls.count(checkSearch([], "OR"));
		assert.equal((await search([{ RoleIDs: ["s1"] }, {}])).length, total, "OR with an unconstrained query: everything");
		const all = await acls.search(checkSearch([], "OR"), { limit: 1000 });
		assert.deepEqual(await acls.search(checkSearch([], "OR"), { offset: 2, limit: 3 }), all.slice(2, 5));
		for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].Created <= all[i].Created);
	});

	it("finds by the lists given, an empty list matching nothing, long lists in slices", async () => {
		assert.deepEqual(keys(await acls.find({ RoleIDs: ["s1", "s2"], Actions: ["read"] })), ["s1:read=1", "s2:read=1"]);
		assert.deepEqual(await acls.find({ RoleIDs: [] }), []);
		assert.deepEqual(keys(await acls.find({ WorkspaceIDs: ["wsB"], NodeIDs: ["nB"] })), ["s2:read=1", "s2:quota=100"]);
		const many = Array.from({ length: 70_000 }, (_, i) => `role-${i}`);
		many.push("s1");
		assert.deepEqual(keys(await acls.find({ RoleIDs: many, Actions: ["read", "write"] })), ["s1:read=1", "s1:write=1"]);
	});

	it("deletes by example", async () => {
		assert.equal(await acls.deleteWhere({ RoleID: "s2", ActionName: "quota" }), 1);
		assert.equal(await acls.deleteWhere({ WorkspaceID: "wsA" }), 2);
		assert.equal(await acls.deleteWhere({ WorkspaceID: "wsA" }), 0);
		assert.deepEqual(keys(await acls.find({ RoleIDs: ["s1", "s2"] })), ["s2:read=1"]);
	});

	it("imports the ACLs of an NeDB DATA_DIR once, keeping their ids and order", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-acls-"));
		try {
			mkdirSync(join(dir, "db"));
			const docs = [
				{ _id: "i1", RoleID: "", WorkspaceID: "wsI", NodeID: "DATASOURCE:pydiods1", ActionName: "workspace-path", ActionValue: "pydiods1", Created: 2 },
				{ _id: "i2", RoleID: "ROOT_GROUP", WorkspaceID: "wsI", NodeID: "DATASOURCE:pydiods1", ActionName: "read", ActionValue: "1", Created: 1 },
			];
			writeFileSync(join(dir, "db", "acls.db"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");
			assert.equal((await importNedbOnce(h().db, dir, "acls", importNedbAcls)).imported, true);
			const got = await acls.find({ WorkspaceIDs: ["wsI"] });
			assert.deepEqual(
				got.map((a) => a.ID),
				["i2", "i1"],
			);
			assert.deepEqual(got[1], { ID: "i1", RoleID: "", WorkspaceID: "wsI", NodeID: "DATASOURCE:pydiods1", ActionName: "workspace-path", ActionValue: "pydiods1", Created: 2 });
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
