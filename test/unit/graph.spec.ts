// lib/graph without a broker: which cells and roles two users share, the state map, and how recommendations
// are ordered, deduplicated, filtered by category and limited.
import assert from "node:assert/strict";
import { Graph, type GraphDeps } from "../../lib/graph/graph";
import type { Identity } from "../../lib/auth/identity";
import type { AccessibleWorkspace } from "../../lib/workspaces/model";
import type { TreeNode } from "../../lib/tree/model";

const ws = (uuid: string, scope: string, access: AccessibleWorkspace["Access"] = "rw"): AccessibleWorkspace => ({ UUID: uuid, Slug: uuid, Label: uuid, Description: "", Scope: scope, Access: access, RootNodes: { [`root-${uuid}`]: { Uuid: `root-${uuid}` } } });
const node = (uuid: string): TreeNode => ({ Uuid: uuid, Path: `p/${uuid}`, Type: "LEAF" });
const code = (n: number) => (e: { code?: number }) => e.code === n;

const alice: Identity = { Uuid: "ua", Login: "alice", Profile: "standard", GroupPath: "/sales", Roles: ["ROOT_GROUP", "g-sales", "team-mine", "ua"], TokenKind: "session", ExpiresAt: 2e9 };
const bobRoles = ["ROOT_GROUP", "g-sales", "team-mine", "team-managed", "team-other", "ub"];

const deps: GraphDeps = {
	accessible: async (roles) => (roles.includes("ua") ? [ws("common", "ADMIN"), ws("cell-1", "ROOM"), ws("cell-2", "ROOM"), ws("link", "LINK", "r")] : [ws("common", "ADMIN"), ws("cell-1", "ROOM")]),
	authInfo: async (uuid) => (uuid === "ub" ? { Uuid: "ub", Login: "bob", Profile: "standard", GroupPath: "/sales", Roles: bobRoles, Locked: false, Hidden: false } : null),
	byLogin: async (login) => (login === "bob" ? { Uuid: "ub", Login: "bob", GroupPath: "/sales", Attributes: {}, Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }] } : login === "hidden" ? { Uuid: "uh", Login: "hidden", GroupPath: "/", Attributes: {}, Policies: [] } : null),
	roles: async (uuids) =>
		uuids.map((u) => ({
			Uuid: u,
			Label: u,
			GroupRole: u.startsWith("g-") || undefined,
			IsTeam: u.startsWith("team-") || undefined,
			Policies: u === "team-managed" ? [{ Action: "WRITE" as const, Subject: "user:alice", Effect: "allow" as const }] : [],
		})),
	recent: async (_u, limit) => ["r1", "b1", "r2", "r3"].slice(0, limit).map(node),
	bookmarks: async (_u, limit) => ["b1", "b2"].slice(0, limit).map(node),
	stat: async (_u, paths) => paths.map((p) => ({ Uuid: `root-${p}`, Path: p, Type: "COLLECTION" })),
};

describe("lib/graph", () => {
	const graph = new Graph(deps);

	it("relation: common cells, common groups, teams the caller is in or manages; unknown or unreadable users are 404", async () => {
		for (const id of ["bob", "ub"]) {
			const r = await graph.relation(alice, id);
			assert.deepEqual(r.SharedCells.map((w) => w.UUID), ["cell-1"]);
			assert.deepEqual(r.SharedCells[0].RootUUIDs, ["root-cell-1"]);
			assert.deepEqual(r.BelongsToTeams.map((t) => t.Uuid), ["g-sales", "team-mine", "team-managed"]);
		}
		await assert.rejects(graph.relation(alice, "nobody"), code(404));
		await assert.rejects(graph.relation(alice, "hidden"), code(404));
	});

	it("state: every accessible workspace and its access", async () => {
		const s = await graph.state(alice, "x");
		assert.equal(s.Workspaces.length, 4);
		assert.deepEqual(s.WorkspacesAccesses, { common: "rw", "cell-1": "rw", "cell-2": "rw", link: "r" });
		await assert.rejects(graph.state(alice, " "), code(400));
	});

	it("recommend: bookmarks, recent files, shared roots, each once, within the limit and category", async () => {
		assert.deepEqual((await graph.recommend(alice, undefined, 20)).map((n) => n.Uuid), ["b1", "b2", "r1", "r2", "r3", "root-cell-1", "root-cell-2", "root-link"]);
		assert.deepEqual((await graph.recommend(alice, undefined, 3)).map((n) => n.Uuid), ["b1", "b2", "r1"]);
		// A recent file already bookmarked does not take the place of another.
		assert.deepEqual((await graph.recommend(alice, undefined, 4)).map((n) => n.Uuid), ["b1", "b2", "r1", "r2"]);
		assert.deepEqual((await graph.recommend(alice, "shared")).map((n) => n.Uuid), ["root-cell-1", "root-cell-2", "root-link"]);
		assert.deepEqual((await graph.recommend(alice, "Bookmarks")).map((n) => n.Uuid), ["b1", "b2"]);
		await assert.rejects(graph.recommend(alice, "popular"), code(400));
		await assert.rejects(graph.recommend(alice, undefined, 0), code(400));
	});
});
