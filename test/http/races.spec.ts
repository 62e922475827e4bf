// Concurrent creates through the REST API: uniqueness comes from the SQL store's unique indexes, so twenty
// requests racing for one login, one workspace slug or one group path leave exactly one of it.
import assert from "node:assert/strict";
import { startNode, type TestNode, type ApiResponse } from "../helpers/node";

const N = 20;

describe("HTTP: concurrent creates", function () {
	this.timeout(60_000);
	let node: TestNode;
	let admin: string;

	before(async () => {
		node = await startNode();
		admin = await node.login("admin", node.adminPassword);
	});
	after(() => node.stop());

	const all = (fn: (i: number) => Promise<ApiResponse>) => Promise.all(Array.from({ length: N }, (_, i) => fn(i)));
	const statuses = (rs: ApiResponse[]) => rs.map((r) => r.status).sort().join(",");

	it(`${N} concurrent PUT /workspace/race-ws: one workspace with that slug, the others update it as if they came second`, async () => {
		const rs = await all((i) => node.api("PUT", "/a/workspace/race-ws", { Label: `Race ${i}`, Description: `writer ${i}` }, admin));
		for (const r of rs) assert.equal(r.status, 200, r.text);
		const uuids = new Set(rs.map((r) => r.body.UUID));
		assert.equal(uuids.size, 1, `one workspace, answered by every request (got ${uuids.size})`);
		const found = await node.api("POST", "/a/workspace", {}, admin);
		const slugs = (found.body.Workspaces as { Slug: string }[]).map((w) => w.Slug).filter((s) => s.startsWith("race-ws"));
		assert.deepEqual(slugs, ["race-ws"]);
	});

	it(`${N} concurrent creates of a workspace by label (PUT with a new slug each time it is taken): ${N} workspaces, no slug twice`, async () => {
		// A UUID each: every request is a creation, and Cells de-duplicates the slug (race-label, race-label-1...).
		const rs = await all((i) => node.api("PUT", `/a/workspace/race-label`, { UUID: `race-label-${i}`, Label: "Race label" }, admin));
		for (const r of rs) assert.equal(r.status, 200, r.text);
		const slugs = rs.map((r) => r.body.Slug as string);
		assert.equal(new Set(slugs).size, N, slugs.join(" "));
		assert.ok(slugs.includes("race-label"));
	});

	it(`${N} concurrent PUT /user/bob creating one login: one user, ${N - 1} answers 409`, async () => {
		const rs = await all((i) => node.api("PUT", "/a/user/bob", { Login: "bob", Password: `Bob-Pass-${1000 + i}`, Attributes: { profile: "standard", displayName: `Bob ${i}` } }, admin));
		assert.equal(statuses(rs), ["200", ...Array(N - 1).fill("409")].join(","));
		const winner = rs.find((r) => r.status === 200) as ApiResponse;
		for (const r of rs) if (r.status === 409) assert.match(r.body.Title ?? r.text, /already/i);
		const found = await node.api("POST", "/a/user", { Queries: [{ Login: "bob" }] }, admin);
		assert.equal(found.body.Users.length, 1);
		assert.equal(found.body.Users[0].Uuid, winner.body.Uuid);
		// The winner's password is the one stored.
		const i = Number(String(winner.body.Attributes.displayName).slice(4));
		assert.ok(await node.login("bob", `Bob-Pass-${1000 + i}`));
		// The losers' personal roles went with their failed creates.
		const roles = await node.api("POST", "/a/role", { Queries: [{ IsUserRole: true }] }, admin);
		assert.deepEqual(
			(roles.body.Roles as { Label: string; Uuid: string }[]).filter((r) => r.Label === "User bob").map((r) => r.Uuid),
			[winner.body.Uuid],
		);
	});

	it(`${N} concurrent creates of group /race: one group`, async () => {
		const rs = await all(() => node.api("PUT", "/a/user/race", { Login: "race", IsGroup: true, GroupLabel: "race", GroupPath: "/" }, admin));
		const ok = rs.filter((r) => r.status === 200);
		assert.ok(ok.length >= 1, statuses(rs));
		for (const r of rs) assert.ok(r.status === 200 || r.status === 409, `${r.status} ${r.text}`);
		const groups = await node.api("POST", "/a/user", { Queries: [{ NodeType: "GROUP", GroupPath: "/" }] }, admin);
		const race = (groups.body.Groups as { GroupLabel: string; Uuid: string }[]).filter((g) => g.GroupLabel === "race");
		assert.equal(race.length, 1);
		// Whoever got a 200 got that one group.
		for (const r of ok) assert.equal(r.body.Uuid, race[0].Uuid);
		const roles = await node.api("POST", "/a/role", { Queries: [{ IsGroupRole: true }] }, admin);
		assert.equal((roles.body.Roles as { Label: string }[]).filter((r) => r.Label === "Group race").length, 1, "one group role");
	});
});
