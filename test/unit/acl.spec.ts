import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import { accessString, effectiveOrder, rightsByWorkspace, rightsFor } from "../../lib/acl/merge";
import { checkFilter, checkSearch, isKnownAction, type ACL } from "../../lib/acl/model";
import type { Identity } from "../../lib/auth/identity";

const admin: Identity = { Uuid: "u1", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP"], TokenKind: "session", ExpiresAt: 2e9 };
const alice: Identity = { Uuid: "u2", Login: "alice", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u2"], TokenKind: "session", ExpiresAt: 2e9 };

function acl(RoleID: string, Name: string, Value = "1", WorkspaceID = "ws1", NodeID = "n1"): ACL {
	return { RoleID, WorkspaceID, NodeID, Action: { Name, Value } };
}

describe("lib/acl/merge", () => {
	it("grants nothing without ACLs", () => {
		assert.deepEqual(rightsFor([], ["a"]), { read: false, write: false, deny: false });
	});
	it("ignores ACLs of roles the user does not have", () => {
		assert.deepEqual(rightsFor([acl("other", "read")], ["a"]), { read: false, write: false, deny: false });
	});
	it("unions actions set by different roles", () => {
		const r = rightsFor([acl("ROOT_GROUP", "read"), acl("team", "write")], ["ROOT_GROUP", "team"]);
		assert.deepEqual(r, { read: true, write: true, deny: false });
		assert.equal(accessString(r), "rw");
	});
	it("lets a later role override an earlier one per action", () => {
		const acls = [acl("ROOT_GROUP", "read"), acl("ROOT_GROUP", "write"), acl("user", "write", "0")];
		assert.deepEqual(rightsFor(acls, ["ROOT_GROUP", "user"]), { read: true, write: false, deny: false });
		// Order matters: the same ACLs with the roles reversed.
		assert.deepEqual(rightsFor(acls, ["user", "ROOT_GROUP"]), { read: true, write: true, deny: false });
	});
	it("makes deny win over read/write of the same role", () => {
		const r = rightsFor([acl("g", "read"), acl("g", "write"), acl("g", "deny")], ["g"]);
		assert.deepEqual(r, { read: false, write: false, deny: true });
		assert.equal(accessString(r), "");
	});
	it("lets a later deny remove earlier grants, and a later grant lift an earlier deny", () => {
		assert.deepEqual(rightsFor([acl("ROOT_GROUP", "read"), acl("interns", "deny")], ["ROOT_GROUP", "interns"]), { read: false, write: false, deny: true });
		assert.deepEqual(rightsFor([acl("interns", "deny"), acl("me", "read")], ["interns", "me"]), { read: true, write: false, deny: false });
	});
	it("applies ForceOverride roles last", () => {
		const acls = [acl("locked", "deny"), acl("me", "read"), acl("me", "write")];
		assert.deepEqual(rightsFor(acls, ["locked", "me"]).read, true);
		assert.deepEqual(rightsFor(acls, ["locked", "me"], ["locked"]), { read: false, write: false, deny: true });
		assert.deepEqual(effectiveOrder(["a", "f", "b", "a"], ["f"]), ["a", "b", "f"]);
	});
	it("treats an empty value as a grant and one grant among several ACLs as enough", () => {
		assert.equal(rightsFor([acl("r", "read", "")], ["r"]).read, true);
		assert.equal(rightsFor([acl("r", "read", "0", "ws1", "n1"), acl("r", "read", "1", "ws1", "n2")], ["r"]).read, true);
	});
	it("groups by workspace", () => {
		const m = rightsByWorkspace([acl("r", "read", "1", "w1"), acl("r", "write", "1", "w2"), acl("r", "read", "1", "w2")], ["r"]);
		assert.equal(accessString(m.get("w1")!), "r");
		assert.equal(accessString(m.get("w2")!), "rw");
	});
});

describe("lib/acl/model", () => {
	it("knows Cells' action names", () => {
		for (const n of ["read", "write", "deny", "policy", "quota", "workspace-path", "recycle_root", "content_lock", "default-cells-policy", "parameter:core.conf:lang", "action:access.gateway:share"]) {
			assert.ok(isKnownAction(n), n);
		}
		for (const n of ["", "READ", "admin", "parameter:", "action:bad/name", "readx"]) assert.ok(!isKnownAction(n), n);
	});
	// The queries themselves are SQL now (lib/db/acls, test/unit/db-acls.spec.ts): what is checked here is the input.
	it("checks searches and deletes by example", () => {
		assert.deepEqual(checkSearch([{ RoleIDs: ["a"], WorkspaceIDs: [], Actions: [{ Name: "" }, { Name: "read", Value: "1" }] }], undefined), {
			queries: [{ RoleIDs: ["a"], Actions: [{ Name: "read", Value: "1" }] }],
			operation: "OR",
		});
		assert.deepEqual(checkSearch([{ not: true }], "AND"), { queries: [{ not: true }], operation: "AND" });
		assert.deepEqual(checkSearch(undefined, "OR"), { queries: [], operation: "OR" });
		assert.throws(() => checkSearch([{ RoleIDs: "a" as unknown as string[] }], "OR"), /RoleIDs must be an array/);
		assert.throws(() => checkFilter({}), /without any criterion/);
		assert.throws(() => checkFilter({ RoleID: "../x" }), /forbidden/);
	});
});

describe("acl service", () => {
	let broker: ServiceBroker;
	let dataDir: string;
	const events: unknown[] = [];
	const meta = { user: admin };

	before(async () => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-acl-"));
		process.env.DATA_DIR = dataDir;
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.loadService(join(__dirname, "../../services/acl.service.ts"));
		broker.createService({ name: "listener", events: { "identity.changed"(ctx: { params: unknown }) { events.push(ctx.params); } } });
		await broker.start();
	});
	after(async () => {
		await broker.stop();
		rmSync(dataDir, { recursive: true, force: true });
	});

	const put = (a: ACL, m: object = meta) => broker.call<ACL, ACL>("acl.store", a, { meta: m });
	const search = (p: object, m: object = meta) => broker.call<{ ACLs?: ACL[]; Total: number }, object>("acl.search", p, { meta: m });

	it("stores an ACL and answers it with an ID, announcing the change", async () => {
		events.length = 0;
		const a = await put({ RoleID: "r1", WorkspaceID: "ws1", NodeID: "n1", Action: { Name: "read", Value: "1" } });
		assert.ok(a.ID);
		assert.deepEqual({ ...a, ID: undefined }, { ID: undefined, RoleID: "r1", WorkspaceID: "ws1", NodeID: "n1", Action: { Name: "read", Value: "1" } });
		for (let i = 0; i < 50 && !events.length; i++) await new Promise((r) => setTimeout(r, 10));
		assert.ok(events.length > 0);
	});

	it("is idempotent: same role, workspace, node and action replaces the value", async () => {
		const first = await put({ RoleID: "r1", WorkspaceID: "ws1", NodeID: "n1", Action: { Name: "quota", Value: "100" } });
		const second = await put({ RoleID: "r1", WorkspaceID: "ws1", NodeID: "n1", Action: { Name: "quota", Value: "200" } });
		assert.equal(second.ID, first.ID);
		const r = await search({ Queries: [{ RoleIDs: ["r1"], Actions: [{ Name: "quota" }] }] });
		assert.equal(r.Total, 1);
		assert.equal(r.ACLs![0].Action!.Value, "200");
	});

	it("refuses unknown actions, missing roles and bad ids (400)", async () => {
		await assert.rejects(put({ RoleID: "r1", NodeID: "n1", Action: { Name: "admin", Value: "1" } }), { code: 400 });
		await assert.rejects(put({ NodeID: "n1", Action: { Name: "read", Value: "1" } }), { code: 400 });
		await assert.rejects(put({ RoleID: "r1", NodeID: "n1" }), { code: 400 });
		await assert.rejects(put({ RoleID: "../etc", NodeID: "n1", Action: { Name: "read" } }), { code: 400 });
		await assert.rejects(put({ RoleID: "r1", NodeID: "a\u0000b", Action: { Name: "read" } }), { code: 400 });
		// Root ACLs have no role but need a workspace and a node.
		await assert.rejects(put({ NodeID: "n1", Action: { Name: "workspace-path", Value: "x" } }), { code: 400 });
		const root = await put({ WorkspaceID: "wsX", NodeID: "n9", Action: { Name: "workspace-path", Value: "pydiods1" } });
		assert.ok(root.ID);
	});

	it("is reserved to administrators", async () => {
		await assert.rejects(put({ RoleID: "r1", NodeID: "n1", Action: { Name: "read" } }, { user: alice }), { code: 403 });
		await assert.rejects(search({}, { user: alice }), { code: 403 });
		await assert.rejects(search({}, { user: null }), { code: 401 });
		await assert.rejects(broker.call("acl.bulkDelete", { RoleID: "r1" }, { meta: { user: alice } }), { code: 403 });
	});

	it("searches with OR / AND / not, paginates and fills Total", async () => {
		await put({ RoleID: "s1", WorkspaceID: "wA", NodeID: "nA", Action: { Name: "read", Value: "1" } });
		await put({ RoleID: "s1", WorkspaceID: "wA", NodeID: "nA", Action: { Name: "write", Value: "1" } });
		await put({ RoleID: "s2", WorkspaceID: "wB", NodeID: "nB", Action: { Name: "read", Value: "1" } });
		await put({ RoleID: "s2", WorkspaceID: "wA", NodeID: "nA", Action: { Name: "parameter:core.conf:lang", Value: "\"fr\"" } });

		let r = await search({ Queries: [{ RoleIDs: ["s1", "s2"] }] });
		assert.equal(r.Total, 4);
		r = await search({ Queries: [{ RoleIDs: ["s1", "s2"], Actions: [{ Name: "read" }] }] });
		assert.equal(r.Total, 2);
		r = await search({ Queries: [{ RoleIDs: ["s1"] }, { WorkspaceIDs: ["wB"] }], Operation: "OR" });
		assert.equal(r.Total, 3);
		r = await search({ Queries: [{ RoleIDs: ["s1", "s2"] }, { WorkspaceIDs: ["wA"] }], Operation: "AND" });
		assert.equal(r.Total, 3);
		r = await search({ Queries: [{ RoleIDs: ["s1", "s2"] }, { Actions: [{ Name: "read" }], not: true }], Operation: "AND" });
		assert.deepEqual(r.ACLs!.map((a) => a.Action!.Name).sort(), ["parameter:core.conf:lang", "write"]);
		r = await search({ Queries: [{ RoleIDs: ["s2"] }, { Actions: [{ Name: "parameter:core.conf:lang", Value: "\"fr\"" }], not: true }], Operation: "AND" });
		assert.equal(r.Total, 1);
		r = await search({ Queries: [{ RoleIDs: ["s1", "s2"] }], Offset: 1, Limit: 2 });
		assert.equal(r.Total, 4);
		assert.equal(r.ACLs!.length, 2);
		r = await search({ Queries: [{ RoleIDs: ["s1", "s2"] }], CountOnly: true });
		assert.deepEqual(r, { Total: 4 });
	});

	it("internal find, put and deleteWhere", async () => {
		const found = await broker.call<ACL[], object>("acl.find", { RoleIDs: ["s1", "s2"], Actions: ["read"] });
		assert.equal(found.length, 2);
		assert.deepEqual(await broker.call("acl.find", { RoleIDs: [] }), []);
		const p = await broker.call<ACL, ACL>("acl.put", { RoleID: "s3", WorkspaceID: "wC", NodeID: "nC", Action: { Name: "deny", Value: "1" } });
		assert.ok(p.ID);
		await assert.rejects(broker.call("acl.put", { RoleID: "s3", Action: { Name: "nope" } }), { code: 400 });
		await assert.rejects(broker.call("acl.deleteWhere", {}), { code: 400 });
		assert.equal(await broker.call("acl.deleteWhere", { RoleID: "s3" }), 1);
	});

	it("bulk-deletes by example and refuses an empty filter", async () => {
		await assert.rejects(broker.call("acl.bulkDelete", {}, { meta }), { code: 400 });
		await assert.rejects(broker.call("acl.bulkDelete", { Action: { Name: "" } }, { meta }), { code: 400 });
		const before = (await search({})).Total;
		const res = await broker.call<{ Success: boolean; NumRows: number }, ACL>("acl.bulkDelete", { RoleID: "s1", Action: { Name: "read" } }, { meta });
		assert.deepEqual(res, { Success: true, NumRows: 1 });
		const res2 = await broker.call<{ Success: boolean; NumRows: number }, ACL>("acl.bulkDelete", { WorkspaceID: "wA" }, { meta });
		assert.deepEqual(res2, { Success: true, NumRows: 2 });
		assert.equal((await search({})).Total, before - 3);
	});
});
