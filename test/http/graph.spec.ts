// The graph API through the real gateway: cells and groups two users share, the caller's workspace state, and
// recommendations (bookmarks, recent files, cells shared with the caller).
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import type { Identity } from "../../lib/auth/identity";

describe("HTTP: graph", function () {
	this.timeout(60_000);
	const node = useNode();
	const token: Record<string, string> = {};
	const uuid: Record<string, string> = {};
	let cell: string;

	const stat = async (path: string, t: string) => {
		const r = await node.api("GET", `/a/tree/stat/${path}`, undefined, t);
		assert.equal(r.status, 200, r.text);
		return r.body.Node.Uuid as string;
	};
	/** A cell (ROOM workspace) on a folder, opened read-write to these users' roles, as Cells stores one. */
	const makeCell = async (slug: string, folder: string, members: string[]) => {
		const root = await stat(folder, node.admin);
		const ws = await node.api("PUT", `/a/workspace/${slug}`, { Label: slug, Scope: "ROOM", RootNodes: { [root]: { Uuid: root, Path: `pydiods1/${folder.split("/").slice(1).join("/")}` } } }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		for (const m of members) {
			for (const name of ["read", "write"]) {
				const r = await node.api("PUT", "/a/acl", { Action: { Name: name, Value: "1" }, RoleID: uuid[m], WorkspaceID: ws.body.UUID, NodeID: root }, node.admin);
				assert.equal(r.status, 200, r.text);
			}
		}
		return ws.body.UUID as string;
	};

	before(async () => {
		assert.equal((await node.api("PUT", "/a/user/sales", { IsGroup: true, GroupPath: "/", GroupLabel: "sales" }, node.admin)).status, 200);
		for (const [u, group] of [["alice", "/sales"], ["bob", "/sales"], ["carol", "/"]]) {
			const r = await node.api("PUT", `/a/user/${u}`, { Login: u, Password: "Graph-Pass-1234", GroupPath: group, Attributes: { profile: "standard" } }, node.admin);
			assert.equal(r.status, 200, r.text);
			token[u] = await node.login(u, "Graph-Pass-1234");
			uuid[u] = (await node.broker.call<Identity, { token: string }>("auth.resolve", { token: token[u] })).Uuid;
		}
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/cells/team", Type: "COLLECTION" }, { Path: "common-files/cells/solo", Type: "COLLECTION" }], Recursive: true }, node.admin)).status, 200);
		cell = await makeCell("team-cell", "common-files/cells/team", ["alice", "bob"]);
		await makeCell("solo-cell", "common-files/cells/solo", ["alice"]);
	});

	it("relation: the cells and the groups two users have in common, by login or uuid", async () => {
		for (const id of ["bob", uuid.bob]) {
			const r = await node.api("GET", `/a/graph/relation/${id}`, undefined, token.alice);
			assert.equal(r.status, 200, r.text);
			assert.deepEqual(r.body.SharedCells.map((w: { Slug: string; Scope: string }) => `${w.Slug} ${w.Scope}`), ["team-cell ROOM"]);
			assert.equal(r.body.SharedCells[0].UUID, cell);
			assert.equal(r.body.BelongsToTeams.length, 1);
			assert.equal(r.body.BelongsToTeams[0].GroupRole, true);
			assert.equal(r.body.BelongsToTeams[0].Label, "Group sales");
		}
		const none = await node.api("GET", "/a/graph/relation/carol", undefined, token.alice);
		assert.equal(none.status, 200, none.text);
		assert.deepEqual(none.body, {}, "empty lists are omitted");
		assert.equal((await node.api("GET", "/a/graph/relation/nobody", undefined, token.alice)).status, 404);
		assert.equal((await node.api("GET", "/a/graph/relation/bob")).status, 401);
	});

	it("state: the caller's workspaces and their access by uuid", async () => {
		const r = await node.api("GET", "/a/graph/state/any", undefined, token.bob);
		assert.equal(r.status, 200, r.text);
		const slugs = r.body.Workspaces.map((w: { Slug: string }) => w.Slug).sort();
		assert.deepEqual(slugs, ["common-files", "personal-files", "team-cell"]);
		assert.equal(r.body.WorkspacesAccesses[cell], "rw");
		assert.equal(Object.keys(r.body.WorkspacesAccesses).length, 3);
		assert.ok(!(await node.api("GET", "/a/graph/state/any", undefined, token.carol)).body.Workspaces.some((w: { Slug: string }) => w.Slug === "team-cell"));
	});

	it("recommend: bookmarks first, then recent files, then the cells shared with the caller; by category and limit", async () => {
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/work/old.txt", Type: "LEAF" }], Recursive: true }, token.alice)).status, 200);
		const old = await stat("common-files/work/old.txt", token.alice);
		await new Promise((res) => setTimeout(res, 1100));
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "team-cell/new.txt", Type: "LEAF" }] }, token.bob)).status, 200);
		const bm = await node.api("PUT", "/a/user-meta/update", { MetaDatas: [{ NodeUuid: old, Namespace: "bookmark", JsonValue: "true" }] }, token.alice);
		assert.equal(bm.status, 200, bm.text);

		const all = await node.api("POST", "/a/graph/recommend", {}, token.alice);
		assert.equal(all.status, 200, all.text);
		const paths = all.body.Nodes.map((n: { Path: string }) => n.Path);
		assert.equal(paths[0], "common-files/work/old.txt", "the bookmark comes first");
		assert.equal(paths.filter((p: string) => p.endsWith("old.txt")).length, 1, "each node once");
		assert.ok(paths.some((p: string) => p.endsWith("/new.txt")), paths.join(","));
		assert.ok(paths.indexOf("team-cell") > paths.findIndex((p: string) => p.endsWith("/new.txt")), paths.join(","));
		assert.ok(paths.includes("solo-cell"));
		assert.equal(all.body.Nodes[0].MetaStore.bookmark, "true");

		const shared = await node.api("POST", "/a/graph/recommend", { Category: "shared" }, token.alice);
		assert.deepEqual(shared.body.Nodes.map((n: { Path: string }) => n.Path).sort(), ["solo-cell", "team-cell"]);
		const recent = await node.api("POST", "/a/graph/recommend", { Category: "recent", Limit: 1 }, token.alice);
		assert.equal(recent.body.Nodes.length, 1);
		assert.ok(recent.body.Nodes[0].Path.endsWith("/new.txt"), recent.text);
		assert.equal((await node.api("POST", "/a/graph/recommend", { Category: "friends" }, token.alice)).status, 400);
		// Carol is in no cell and bookmarked nothing: she sees files of the common workspace, no cell.
		const carol = await node.api("POST", "/a/graph/recommend", {}, token.carol);
		const carolPaths = (carol.body.Nodes ?? []).map((n: { Path: string }) => n.Path);
		assert.ok(carolPaths.includes("common-files/work/old.txt"), carolPaths.join(","));
		assert.ok(!carolPaths.some((p: string) => p.startsWith("team-cell") || p.startsWith("solo-cell")), carolPaths.join(","));
	});
});
