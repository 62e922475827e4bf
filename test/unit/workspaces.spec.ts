import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import type { Identity } from "../../lib/auth/identity";
import type { ACL } from "../../lib/acl/model";
import { dedupSlug, matchLastUpdated, parseAttributes, slugify, type Workspace } from "../../lib/workspaces/model";

const admin: Identity = { Uuid: "u1", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP"], TokenKind: "session", ExpiresAt: 2e9 };
const alice: Identity = { Uuid: "u2", Login: "alice", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u2"], TokenKind: "session", ExpiresAt: 2e9 };
const bob: Identity = { Uuid: "u3", Login: "bob", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "team", "u3"], TokenKind: "session", ExpiresAt: 2e9 };

describe("lib/workspaces/model", () => {
	it("slugifies and de-duplicates", () => {
		assert.equal(slugify("Équipe Projets / 2024!"), "equipe-projets-2024");
		assert.equal(slugify("---"), "");
		const taken = new Set(["docs", "docs-1"]);
		assert.equal(dedupSlug("docs", (s) => taken.has(s)), "docs-2");
		assert.equal(dedupSlug("other", (s) => taken.has(s)), "other");
	});
	it("splits DEFAULT_RIGHTS and QUOTA out of the attributes", () => {
		assert.deepEqual(parseAttributes('{"DEFAULT_RIGHTS":"rw","ALLOW_SYNC":true,"QUOTA":"1024"}'), { rest: { ALLOW_SYNC: true }, defaultRights: "rw", quota: "1024" });
		assert.deepEqual(parseAttributes(""), { rest: {} });
		assert.throws(() => parseAttributes("[1]"), { code: 400 });
		assert.throws(() => parseAttributes("{nope"), { code: 400 });
		assert.throws(() => parseAttributes('{"DEFAULT_RIGHTS":"x"}'), { code: 400 });
	});
	it("compares LastUpdated", () => {
		assert.ok(matchLastUpdated(">100", 200));
		assert.ok(!matchLastUpdated("<100", 200));
		assert.ok(matchLastUpdated("<1d", 1000 - 3600, 1000));
		assert.throws(() => matchLastUpdated("soon", 1), { code: 400 });
	});
});

describe("workspaces service", () => {
	let broker: ServiceBroker;
	let dataDir: string;
	const events: unknown[] = [];

	before(async () => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-ws-"));
		process.env.DATA_DIR = dataDir;
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.loadService(join(__dirname, "../../services/acl.service.ts"));
		broker.loadService(join(__dirname, "../../services/workspaces.service.ts"));
		broker.createService({ name: "listener", events: { "identity.changed"(ctx: { params: unknown }) { events.push(ctx.params); } } });
		await broker.start();
	});
	after(async () => {
		await broker.stop();
		rmSync(dataDir, { recursive: true, force: true });
	});

	const put = (ws: Workspace & { Slug: string }, user: Identity | null = admin) => broker.call<Workspace, object>("workspaces.put", ws, { meta: { user } });
	const search = (p: object, user: Identity | null = admin) => broker.call<{ Workspaces?: Workspace[]; Total: number }, object>("workspaces.search", p, { meta: { user } });
	const acls = (p: object) => broker.call<ACL[], object>("acl.find", p);

	let projects: Workspace;

	it("creates a workspace with defaults, roots and DEFAULT_RIGHTS turned into ACLs", async () => {
		events.length = 0;
		projects = await put({
			Slug: "Projects",
			Label: "Projects",
			Description: "Team projects",
			Attributes: JSON.stringify({ DEFAULT_RIGHTS: "r", META_LAYOUT: "x" }),
			RootNodes: { "node-1": { Uuid: "node-1", Path: "pydiods1/projects" } },
		});
		assert.ok(projects.UUID);
		assert.equal(projects.Slug, "projects");
		assert.equal(projects.Scope, "ADMIN");
		assert.deepEqual(projects.RootUUIDs, ["node-1"]);
		assert.deepEqual(projects.RootNodes, { "node-1": { Uuid: "node-1", Path: "pydiods1/projects" } });
		assert.deepEqual(JSON.parse(projects.Attributes!), { META_LAYOUT: "x", DEFAULT_RIGHTS: "r" });
		assert.equal(projects.PoliciesContextEditable, true);
		assert.deepEqual(
			projects.Policies!.map((p) => `${p.Action} ${p.Subject}`).sort(),
			["READ profile:shared", "READ profile:standard", "WRITE profile:admin"],
		);
		const list = await acls({ WorkspaceIDs: [projects.UUID!] });
		const names = list.map((a) => `${a.RoleID ?? ""}|${a.NodeID}|${a.Action!.Name}|${a.Action!.Value}`).sort();
		assert.deepEqual(names, ["ROOT_GROUP|node-1|read|1", "|node-1|recycle_root|1", "|node-1|workspace-path|pydiods1/projects"].sort());
		for (let i = 0; i < 50 && !events.length; i++) await new Promise((r) => setTimeout(r, 10));
		assert.ok(events.some((e) => (e as { kind?: string }).kind === "workspace"));
	});

	it("de-duplicates slugs with -1, -2", async () => {
		const a = await put({ Slug: "Team Docs", Label: "Team Docs" });
		const b = await put({ Slug: "Team Docs", Label: "Team Docs again" });
		const c = await put({ Slug: "Team Docs", Label: "Team Docs third" });
		assert.deepEqual([a.Slug, b.Slug, c.Slug], ["team-docs", "team-docs-1", "team-docs-2"]);
		// Same slug as given + no UUID = the existing workspace is updated, not duplicated.
		const again = await put({ Slug: "team-docs", Label: "Team Docs renamed" });
		assert.equal(again.UUID, a.UUID);
		assert.equal(again.Label, "Team Docs renamed");
	});

	it("updates roots and DEFAULT_RIGHTS, moving role rights to the new roots", async () => {
		await broker.call("acl.put", { RoleID: "team", WorkspaceID: projects.UUID, NodeID: "node-1", Action: { Name: "write", Value: "1" } });
		const updated = await put({
			Slug: projects.Slug!,
			UUID: projects.UUID,
			Label: "Projects 2",
			Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }),
			RootNodes: { "node-2": { Uuid: "node-2", Path: "pydiods1/p2" } },
		});
		assert.equal(updated.UUID, projects.UUID);
		assert.equal(updated.Slug, "projects");
		assert.deepEqual(updated.RootUUIDs, ["node-2"]);
		assert.equal(JSON.parse(updated.Attributes!).DEFAULT_RIGHTS, "rw");
		const list = await acls({ WorkspaceIDs: [projects.UUID!] });
		assert.ok(!list.some((a) => a.NodeID === "node-1"), "old root ACLs are gone");
		const names = list.map((a) => `${a.RoleID ?? ""}|${a.NodeID}|${a.Action!.Name}`).sort();
		assert.deepEqual(names, ["ROOT_GROUP|node-2|read", "ROOT_GROUP|node-2|write", "team|node-2|write", "|node-2|recycle_root", "|node-2|workspace-path"].sort());
		// Rights down to "r": the ROOT_GROUP write ACL goes.
		const down = await put({ Slug: "projects", UUID: projects.UUID, Attributes: JSON.stringify({ DEFAULT_RIGHTS: "r" }) });
		assert.equal(JSON.parse(down.Attributes!).DEFAULT_RIGHTS, "r");
		assert.equal(down.Label, "Projects 2", "fields not sent are kept");
		assert.deepEqual(down.RootUUIDs, ["node-2"], "roots not sent are kept");
	});

	it("refuses bad input with 400", async () => {
		await assert.rejects(put({ Slug: "../x", Label: "x" }), { code: 400 });
		await assert.rejects(put({ Slug: "a/b", Label: "x" }), { code: 400 });
		await assert.rejects(put({ Slug: "a\u0000b", Label: "x" }), { code: 400 });
		await assert.rejects(put({ Slug: "nolabel" }), { code: 400 });
		await assert.rejects(put({ Slug: "blank", Label: "   " }), { code: 400 });
		await assert.rejects(put({ Slug: "badattrs", Label: "x", Attributes: "{" }), { code: 400 });
		await assert.rejects(put({ Slug: "badattrs", Label: "x", Attributes: "\"str\"" }), { code: 400 });
		// Parameter validation errors (422 inside the broker) are answered 400 by the gateway.
		await assert.rejects(put({ Slug: "badscope", Label: "x", Scope: "WORLD" as never }), { name: "ValidationError" });
		await assert.rejects(put({ Slug: "badroot", Label: "x", RootNodes: { "a/../b": { Uuid: "a/../b" } } }), { code: 400 });
	});

	it("requires WRITE to update or delete, admin to create", async () => {
		await assert.rejects(put({ Slug: "projects", UUID: projects.UUID, Label: "hacked" }, alice), { code: 403 });
		await assert.rejects(put({ Slug: "brand-new", Label: "new" }, alice), { code: 403 });
		await assert.rejects(broker.call("workspaces.remove", { Slug: "projects" }, { meta: { user: alice } }), { code: 403 });
		await assert.rejects(put({ Slug: "x", Label: "x" }, null), { code: 401 });
	});

	it("searches with lower-case query fields, OR/AND, not, pagination", async () => {
		let r = await search({});
		assert.equal(r.Total, 4);
		r = await search({ Queries: [{ slug: "projects" }] });
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug), ["projects"]);
		r = await search({ Queries: [{ label: "team docs*" }] });
		assert.equal(r.Total, 3);
		r = await search({ Queries: [{ label: "team docs*" }, { slug: "team-docs", not: true }], Operation: "AND" });
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug).sort(), ["team-docs-1", "team-docs-2"]);
		r = await search({ Queries: [{ slug: "projects" }, { uuid: projects.UUID }, { description: "team" }], Operation: "OR" });
		assert.equal(r.Total, 1);
		r = await search({ Queries: [{ scope: "ROOM" }] });
		assert.equal(r.Total, 0);
		r = await search({ Queries: [{ AttributeName: "DEFAULT_RIGHTS", AttributeValue: "r" }] });
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug), ["projects"]);
		r = await search({ Offset: 1, Limit: 2 });
		assert.equal(r.Total, 4);
		assert.equal(r.Workspaces!.length, 2);
		// As Cells does (and cec idm list-workspaces relies on): CountOnly still lists the workspaces.
		r = await search({ CountOnly: true });
		assert.equal(r.Total, 4);
		assert.equal(r.Workspaces!.length, 4);
	});

	it("shows standard users only the workspaces their roles can access", async () => {
		// alice: ROOT_GROUP has read on "projects" only.
		let r = await search({}, alice);
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug), ["projects"]);
		assert.equal(r.Workspaces![0].PoliciesContextEditable, false);
		// bob's team gets write on team-docs-1 (ACL on its root-less workspace counts by workspace id).
		const docs1 = (await search({ Queries: [{ slug: "team-docs-1" }] })).Workspaces![0];
		await broker.call("acl.put", { RoleID: "team", WorkspaceID: docs1.UUID, NodeID: "nX", Action: { Name: "write", Value: "1" } });
		r = await search({}, bob);
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug).sort(), ["projects", "team-docs-1"]);
		// A deny in bob's own role (later in the stack) hides "projects" from him.
		await broker.call("acl.put", { RoleID: "u3", WorkspaceID: projects.UUID, NodeID: "node-2", Action: { Name: "deny", Value: "1" } });
		r = await search({}, bob);
		assert.deepEqual(r.Workspaces!.map((w) => w.Slug), ["team-docs-1"]);
		// Policies first: a workspace readable by admins only is hidden even with ACLs.
		await put({ Slug: "secret", Label: "Secret", Policies: [{ Action: "WRITE", Subject: "profile:admin", Effect: "allow" }], Attributes: '{"DEFAULT_RIGHTS":"rw"}', RootUUIDs: ["sec-root"] });
		r = await search({ Queries: [{ slug: "secret" }] }, alice);
		assert.equal(r.Total, 0);
		await assert.rejects(search({ ResourcePolicyQuery: { Type: "ANY" } }, alice), { code: 403 });
	});

	it("lists accessible workspaces for a role stack (workspaces.accessible)", async () => {
		const list = await broker.call<{ Slug: string; Access: string; RootNodes: object }[], object>("workspaces.accessible", { roles: bob.Roles });
		assert.deepEqual(list.map((w) => `${w.Slug}:${w.Access}`).sort(), ["secret:rw", "team-docs-1:w"]);
		const forAlice = await broker.call<{ Slug: string; Access: string; RootNodes: object }[], object>("workspaces.accessible", { roles: alice.Roles });
		const p = forAlice.find((w) => w.Slug === "projects")!;
		assert.equal(p.Access, "r");
		assert.deepEqual(p.RootNodes, { "node-2": { Uuid: "node-2", Path: "pydiods1/p2" } });
		// With bob's deny role forced first it would not matter; forced last it wins over everything.
		const forced = await broker.call<{ Slug: string }[], object>("workspaces.accessible", { roles: ["u3", "ROOT_GROUP"], forceOverride: ["u3"] });
		assert.ok(!forced.some((w) => w.Slug === "projects"));
		assert.deepEqual(await broker.call("workspaces.accessible", { roles: [] }), []);
	});

	it("deletes a workspace and its ACLs", async () => {
		await assert.rejects(broker.call("workspaces.remove", { Slug: "nope" }, { meta: { user: admin } }), { code: 404 });
		const res = await broker.call("workspaces.remove", { Slug: "projects" }, { meta: { user: admin } });
		assert.deepEqual(res, { Success: true, NumRows: 1 });
		assert.deepEqual(await acls({ WorkspaceIDs: [projects.UUID!] }), []);
		assert.equal((await search({ Queries: [{ slug: "projects" }] })).Total, 0);
	});

	it("creates Cells' default workspaces once", async () => {
		const first = await broker.call<{ Created: string[] }, object>("workspaces.ensureDefaults", {});
		assert.deepEqual(first.Created, ["common-files", "personal-files"]);
		const snapshot = await search({ Queries: [{ slug: "common-files" }, { slug: "personal-files" }] });
		const aclCount = (await acls({ WorkspaceIDs: snapshot.Workspaces!.map((w) => w.UUID!) })).length;
		const second = await broker.call<{ Created: string[] }, object>("workspaces.ensureDefaults", {});
		assert.deepEqual(second.Created, []);
		const after = await search({ Queries: [{ slug: "common-files" }, { slug: "personal-files" }] });
		assert.deepEqual(after, snapshot);
		assert.equal((await acls({ WorkspaceIDs: after.Workspaces!.map((w) => w.UUID!) })).length, aclCount);
		const common = after.Workspaces!.find((w) => w.Slug === "common-files")!;
		assert.equal(common.Label, "Common Files");
		assert.equal(common.Description, "Data shared by all users");
		assert.deepEqual(common.RootNodes, { "DATASOURCE:pydiods1": { Uuid: "DATASOURCE:pydiods1", Path: "pydiods1" } });
		assert.equal(JSON.parse(common.Attributes!).DEFAULT_RIGHTS, "rw");
		const personal = after.Workspaces!.find((w) => w.Slug === "personal-files")!;
		assert.equal(personal.Label, "My Files");
		assert.deepEqual(personal.RootNodes, { "my-files": { Uuid: "my-files", Path: "my-files" } });
		const mine = await broker.call<{ Slug: string; Access: string }[], object>("workspaces.accessible", { roles: alice.Roles });
		assert.deepEqual(mine.filter((w) => w.Slug.endsWith("-files")).map((w) => `${w.Slug}:${w.Access}`).sort(), ["common-files:rw", "personal-files:rw"]);
	});
});
