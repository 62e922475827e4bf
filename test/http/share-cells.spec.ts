// Cells through the real gateway: alice shares a folder of hers with bob, bob finds the cell in his front-end
// state, lists it and writes into it through /io, the shared folder carries workspaces_shares; taking bob out
// of the cell cuts his access at once. A cell with an empty root of its own, multi-root cells, the owner-only
// edits, the shared resources listing, share policies, and hostile inputs.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUsers } from "../helpers/users";

describe("HTTP: cells (PUT/GET/DELETE /a/share/cell)", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;
	let bob: string;
	let carol: string;
	let bobUuid: string;
	let carolUuid: string;

	const stat = (path: string, token: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(path)}`, undefined, token);
	const list = (path: string, token: string) => node.api("POST", "/a/tree/stats", { NodePaths: [`${path}/*`] }, token);
	const member = (uuid: string, ...actions: string[]) => ({ [uuid]: { RoleId: uuid, IsUserRole: true, Actions: actions.map((Name) => ({ Name })) } });

	before(async () => {
		const users = await addUsers(node, node.admin, ["alice", "bob", "carol"], { email: false, displayName: false });
		[alice, bob, carol] = [users.alice.token, users.bob.token, users.carol.token];
		[bobUuid, carolUuid] = [users.bob.uuid, users.carol.uuid];
	});

	let cellUuid: string;
	let folderUuid: string;

	it("alice shares a folder with bob (read-write): the answer is the cell with its members and root", async () => {
		assert.equal((await node.io("PUT", "personal-files/project/plan.txt", alice, "the plan")).status, 200);
		folderUuid = (await stat("personal-files/project", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/cell", { Room: { Label: "Project X", Description: "our project", RootNodes: [{ Uuid: folderUuid }], ACLs: member(bobUuid, "read", "write") } }, alice);
		assert.equal(r.status, 200, r.text);
		cellUuid = r.body.Uuid;
		assert.ok(cellUuid);
		assert.equal(r.body.Label, "Project X");
		assert.equal(r.body.PoliciesContextEditable, true);
		assert.equal(r.body.RootNodes.length, 1);
		assert.equal(r.body.RootNodes[0].Uuid, folderUuid);
		assert.ok(r.body.RootNodes[0].AppearsIn.some((a: { WsSlug: string; Path: string }) => a.WsSlug === "personal-files" && a.Path === "personal-files/project"));
		const bobAcl = r.body.ACLs[bobUuid];
		assert.equal(bobAcl.User.Login, "bob");
		assert.deepEqual(bobAcl.Actions.map((a: { Name: string }) => a.Name).sort(), ["read", "write"]);
		// The owner holds read and write too.
		assert.ok(Object.values(r.body.ACLs).some((a) => (a as { User?: { Login: string } }).User?.Login === "alice"));
		// GET answers the same cell, for alice and for bob.
		const g = await node.api("GET", `/a/share/cell/${cellUuid}`, undefined, bob);
		assert.equal(g.status, 200, g.text);
		assert.equal(g.body.Label, "Project X");
		assert.equal(g.body.PoliciesContextEditable, undefined);
	});

	it("the shared folder carries workspaces_shares in alice's listing and stat", async () => {
		const l = await list("personal-files", alice);
		const project = l.body.Nodes.find((n: { Path: string }) => n.Path === "personal-files/project");
		const shares = JSON.parse(project.MetaStore.workspaces_shares);
		assert.equal(shares[0].UUID, cellUuid);
		assert.equal(shares[0].Label, "Project X");
		const s = await stat("personal-files/project", alice);
		assert.ok(s.body.Node.MetaStore.workspaces_shares.includes(cellUuid));
	});

	it("bob sees the cell in /a/frontend/state, lists it and writes into it through /io", async () => {
		const state = await node.api("GET", "/a/frontend/state", undefined, bob);
		assert.equal(state.status, 200);
		assert.match(state.text, /repository_type="cell"/);
		assert.match(state.text, /Project X/);
		const l = await list("project-x", bob);
		assert.equal(l.status, 200, l.text);
		assert.deepEqual(l.body.Nodes.map((n: { Path: string }) => n.Path), ["project-x/plan.txt"]);
		const got = await node.io("GET", "project-x/plan.txt", bob);
		assert.equal(got.status, 200);
		assert.equal(await got.text(), "the plan");
		assert.equal((await node.io("PUT", "project-x/bob.txt", bob, "from bob")).status, 200);
		// alice finds it in her folder.
		const mine = await node.io("GET", "personal-files/project/bob.txt", alice);
		assert.equal(await mine.text(), "from bob");
		// carol, not a member, sees nothing.
		assert.equal((await list("project-x", carol)).status, 404);
		assert.equal((await node.io("GET", "project-x/plan.txt", carol)).status, 404);
	});

	it("only the owner edits membership: bob's update is refused, alice makes bob read-only and adds carol", async () => {
		const byBob = await node.api("PUT", "/a/share/cell", { Room: { Uuid: cellUuid, Label: "Mine now", ACLs: member(bobUuid, "read", "write") } }, bob);
		assert.equal(byBob.status, 403, byBob.text);
		const r = await node.api("PUT", "/a/share/cell", { Room: { Uuid: cellUuid, Label: "Project X", RootNodes: [{ Uuid: folderUuid }], ACLs: { ...member(bobUuid, "read"), ...member(carolUuid, "read") } } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body.ACLs[bobUuid].Actions.map((a: { Name: string }) => a.Name), ["read"]);
		const refused = await node.io("PUT", "project-x/again.txt", bob, "no");
		assert.equal(refused.status, 403);
		assert.equal((await list("project-x", carol)).status, 200);
		// An update without ACLs (a new description) keeps the members.
		const d = await node.api("PUT", "/a/share/cell", { Room: { Uuid: cellUuid, Label: "Project X", Description: "renamed" } }, alice);
		assert.equal(d.status, 200, d.text);
		assert.equal(d.body.Description, "renamed");
		assert.deepEqual(Object.keys(d.body.ACLs).sort(), Object.keys(r.body.ACLs).sort());
	});

	it("removing bob from the cell cuts his access at once", async () => {
		// bob reads now (and his answers are cached)...
		assert.equal((await list("project-x", bob)).status, 200);
		const r = await node.api("PUT", "/a/share/cell", { Room: { Uuid: cellUuid, Label: "Project X", RootNodes: [{ Uuid: folderUuid }], ACLs: member(carolUuid, "read") } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.ACLs[bobUuid], undefined);
		// ... and not a moment later.
		assert.equal((await list("project-x", bob)).status, 404);
		assert.equal((await node.io("GET", "project-x/plan.txt", bob)).status, 404);
		assert.doesNotMatch((await node.api("GET", "/a/frontend/state", undefined, bob)).text, /Project X/);
		assert.equal((await node.api("GET", `/a/share/cell/${cellUuid}`, undefined, bob)).status, 404);
	});

	it("POST /a/share/resources lists alice's shares by node; a Subject is for administrators only", async () => {
		const r = await node.api("POST", "/a/share/resources", { ShareType: "CELLS", OwnedBySubject: true }, alice);
		assert.equal(r.status, 200, r.text);
		const res = r.body.Resources.find((x: { Node: { Uuid: string } }) => x.Node.Uuid === folderUuid);
		assert.equal(res.Cells[0].Uuid, cellUuid);
		assert.equal((await node.api("POST", "/a/share/resources", { ShareType: "CELLS", OwnedBySubject: true }, bob)).body.Resources?.length ?? 0, 0);
		assert.equal((await node.api("POST", "/a/share/resources", { Subject: "user:alice" }, bob)).status, 403);
		const byAdmin = await node.api("POST", "/a/share/resources", { Subject: `user:${carolUuid}`, ShareType: "ANY" }, node.admin);
		assert.equal(byAdmin.status, 200, byAdmin.text);
	});

	it("PUT /a/share/policies: the owner replaces them, others get 403, a plain workspace is refused", async () => {
		const g = await node.api("GET", `/a/share/cell/${cellUuid}`, undefined, alice);
		const policies = g.body.Policies;
		assert.equal((await node.api("PUT", "/a/share/policies", { Uuid: cellUuid, Policies: policies }, carol)).status, 403);
		const r = await node.api("PUT", "/a/share/policies", { Uuid: cellUuid, Policies: policies }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Success, true);
		assert.equal(r.body.PoliciesContextEditable, true);
		const ws = await node.api("POST", "/a/workspace", {}, node.admin);
		const common = ws.body.Workspaces.find((w: { Slug: string }) => w.Slug === "common-files");
		assert.equal((await node.api("PUT", "/a/share/policies", { Uuid: common.UUID, Policies: policies }, node.admin)).status, 403);
	});

	it("CreateEmptyRoot makes a new folder under alice's cells; two roots show as children of the cell's slug", async () => {
		assert.equal((await node.io("PUT", "personal-files/docs/d.txt", alice, "doc")).status, 200);
		const docs = (await stat("personal-files/docs", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/cell", { CreateEmptyRoot: true, Room: { Label: "Team room", RootNodes: [{ Uuid: docs }], ACLs: member(bobUuid, "read", "write") } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.RootNodes.length, 2);
		const l = await list("team-room", bob);
		assert.equal(l.status, 200, l.text);
		assert.deepEqual(l.body.Nodes.map((n: { Path: string }) => n.Path).sort(), ["team-room/Team room", "team-room/docs"]);
		assert.equal((await node.io("PUT", "team-room/Team room/new.txt", bob, "new")).status, 200);
		assert.equal(await (await node.io("GET", "team-room/docs/d.txt", bob)).text(), "doc");
		// S3 listings see the roots as folders of the cell.
		const top = await (await fetch(`${node.url}/io/?list-type=2&prefix=team-room/&delimiter=/`, { headers: { "X-Pydio-Bearer": bob } })).text();
		assert.match(top, /<Prefix>team-room\/Team room\/<\/Prefix>/);
		assert.match(top, /<Prefix>team-room\/docs\/<\/Prefix>/);
		const deep = await (await fetch(`${node.url}/io/?list-type=2&prefix=team-room/`, { headers: { "X-Pydio-Bearer": bob } })).text();
		assert.match(deep, /<Key>team-room\/docs\/d.txt<\/Key>/);
		assert.match(deep, /<Key>team-room\/Team room\/new.txt<\/Key>/);
		// Nothing can be written beside the roots: there is no such root.
		assert.equal((await node.io("PUT", "team-room/loose.txt", bob, "x")).status, 404);
		const del = await node.api("DELETE", `/a/share/cell/${r.body.Uuid}`, undefined, bob);
		assert.equal(del.status, 403);
		// Search finds files in the cell's roots, in the cell's paths.
		let found: string[] = [];
		for (let i = 0; i < 50 && !found.includes("team-room/docs/d.txt"); i++) {
			const q = await node.api("POST", "/a/search/nodes", { Query: { FileName: "d.txt" } }, bob);
			found = (q.body.Results ?? []).map((n: { Path: string }) => n.Path);
			if (!found.includes("team-room/docs/d.txt")) await new Promise((res) => setTimeout(res, 100));
		}
		assert.ok(found.includes("team-room/docs/d.txt"), JSON.stringify(found));
		const cellsFolder = async () => ((await node.api("POST", "/a/tree/admin/list", { Node: { Path: "cellsdata/alice" } }, node.admin)).body.Children ?? []).map((n: { Path: string }) => n.Path);
		assert.deepEqual(await cellsFolder(), ["cellsdata/alice/Team room"]);
		const ok = await node.api("DELETE", `/a/share/cell/${r.body.Uuid}`, undefined, alice);
		assert.equal(ok.status, 200, ok.text);
		assert.equal(ok.body.Success, true);
		assert.equal((await list("team-room", bob)).status, 404);
		// The folder made for the cell went with it; alice's own folder stays, no longer marked shared.
		assert.deepEqual(await cellsFolder(), []);
		assert.equal((await stat("personal-files/docs", alice)).body.Node.MetaStore.workspaces_shares, undefined);
	});

	it("a cell shared with a group reaches its members, and says it is a group", async () => {
		const g = await node.api("PUT", "/a/user/%2Fdesigners", { IsGroup: true, GroupLabel: "designers", GroupPath: "/" }, node.admin);
		assert.equal(g.status, 200, g.text);
		const dave = await node.api("PUT", "/a/user/dave", { Password: "dave-Pass-12345", GroupPath: "/designers", Attributes: { profile: "standard" } }, node.admin);
		assert.equal(dave.status, 200, dave.text);
		assert.equal((await node.io("PUT", "personal-files/mockups/m.txt", alice, "mock")).status, 200);
		const folder = (await stat("personal-files/mockups", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/cell", { Room: { Label: "Mockups", RootNodes: [{ Uuid: folder }], ACLs: { [g.body.Uuid]: { RoleId: g.body.Uuid, Actions: [{ Name: "read" }] } } } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.ACLs[g.body.Uuid].Group.GroupLabel, "designers");
		const daveToken = await node.login("dave", "dave-Pass-12345");
		assert.equal(await (await node.io("GET", "mockups/m.txt", daveToken)).text(), "mock");
		assert.equal((await node.io("PUT", "mockups/n.txt", daveToken, "no")).status, 403);
	});

	it("hostile inputs are clear 4xx", async () => {
		const cases: [unknown, number][] = [
			[{ Room: { Label: "x", RootNodes: [] } }, 400],
			[{ Room: { RootNodes: [{ Uuid: folderUuid }] } }, 400],
			[{ Room: { Label: "x", RootNodes: [{ Uuid: "no-such-node" }] } }, 404],
			[{ Room: { Label: "x", RootNodes: [{ Uuid: folderUuid }], ACLs: { "a/../b": { RoleId: "a/../b", Actions: [{ Name: "read" }] } } } }, 400],
			[{ Room: { Label: "x", RootNodes: [{ Uuid: folderUuid }], ACLs: member("unknown-role", "read") } }, 400],
			[{ Room: { Label: "x", RootNodes: [{ Uuid: folderUuid }], ACLs: member(bobUuid, "admin") } }, 400],
			[{ Room: { Label: "x".repeat(600), RootNodes: [{ Uuid: folderUuid }] } }, 400],
			[{ Room: "nope" }, 400],
		];
		for (const [body, status] of cases) {
			const r = await node.api("PUT", "/a/share/cell", body, alice);
			assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 120)} -> ${r.status} ${r.text}`);
			assert.ok(r.body.Title || r.body.Detail, r.text);
		}
		// bob, no longer a member, cannot share alice's folder (he cannot read it).
		assert.equal((await node.api("PUT", "/a/share/cell", { Room: { Label: "x", RootNodes: [{ Uuid: folderUuid }] } }, bob)).status, 404);
		assert.equal((await node.api("GET", "/a/share/cell/nope", undefined, alice)).status, 404);
		assert.equal((await node.api("DELETE", "/a/share/cell/nope", undefined, alice)).status, 404);
		assert.equal((await node.api("PUT", "/a/share/cell", { Room: { Label: "x" } })).status, 401);
	});
});
