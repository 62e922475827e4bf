// Concurrent creates through the REST API: uniqueness comes from the SQL store's unique indexes, so twenty
// requests racing for one login, one workspace slug or one group path leave exactly one of it. On SQLite one
// node takes them all; on PostgreSQL two nodes sharing the database take them in turns, as a cluster would
// (without a transporter between them: the database alone keeps them apart).
import assert from "node:assert/strict";
import { startNode, type TestNode, type ApiResponse } from "../helpers/node";
import { freshPostgres } from "../helpers/db";

const N = 20;

for (const backend of ["sqlite", "postgres"] as const) {
	describe(`HTTP: concurrent creates on ${backend}`, function () {
		this.timeout(90_000);
		const nodes: TestNode[] = [];
		const tokens: string[] = [];
		let drop: (() => Promise<void>) | undefined;

		before(async function () {
			const env: Record<string, string> = { JWT_SECRET: "races-secret-races-secret-races-secret" };
			if (backend === "postgres") {
				const pg = await freshPostgres(this);
				drop = pg.drop;
				env.DATABASE_URL = pg.url;
			}
			for (let i = 0; i < (backend === "postgres" ? 2 : 1); i++) {
				const node = await startNode({ env });
				nodes.push(node);
				tokens.push(await node.login("admin", node.adminPassword));
			}
		});
		after(async () => {
			for (const n of nodes.reverse()) await n.stop();
			await drop?.();
		});

		/** N requests at once, spread over the nodes. */
		const race = (fn: (node: TestNode, token: string, i: number) => Promise<ApiResponse>) => Promise.all(Array.from({ length: N }, (_, i) => fn(nodes[i % nodes.length], tokens[i % nodes.length], i)));
		const statuses = (rs: ApiResponse[]) => rs.map((r) => r.status).sort().join(",");
		/** What a transporter would carry between nodes: each drops its cached identities. */
		const settle = async () => {
			for (const n of nodes) await n.broker.broadcastLocal("identity.changed", { kind: "test" });
		};
		const api = (method: string, path: string, body?: unknown) => nodes[0].api(method, path, body, tokens[0]);

		it(`${N} concurrent PUT /workspace/race-ws: one workspace with that slug, the others update it as if they came second`, async () => {
			const rs = await race((node, token, i) => node.api("PUT", "/a/workspace/race-ws", { Label: `Race ${i}`, Description: `writer ${i}` }, token));
			for (const r of rs) assert.equal(r.status, 200, r.text);
			const uuids = new Set(rs.map((r) => r.body.UUID));
			assert.equal(uuids.size, 1, `one workspace, answered by every request (got ${uuids.size})`);
			const found = await api("POST", "/a/workspace", {});
			const slugs = (found.body.Workspaces as { Slug: string }[]).map((w) => w.Slug).filter((s) => s.startsWith("race-ws"));
			assert.deepEqual(slugs, ["race-ws"]);
		});

		it(`${N} concurrent creates of a workspace by label, each a new workspace: ${N} workspaces, no slug twice`, async () => {
			// A UUID each: every request is a creation, and Cells de-duplicates the slug (race-label, race-label-1...).
			const rs = await race((node, token, i) => node.api("PUT", "/a/workspace/race-label", { UUID: `race-label-${i}`, Label: "Race label" }, token));
			for (const r of rs) assert.equal(r.status, 200, r.text);
			const slugs = rs.map((r) => r.body.Slug as string);
			assert.equal(new Set(slugs).size, N, slugs.join(" "));
			assert.ok(slugs.includes("race-label"));
		});

		it(`${N} concurrent PUT /user/bob creating one login: one user, ${N - 1} answers 409`, async () => {
			const rs = await race((node, token, i) => node.api("PUT", "/a/user/bob", { Login: "bob", Password: `Bob-Pass-${1000 + i}`, Attributes: { profile: "standard", displayName: `Bob ${i}` } }, token));
			assert.equal(statuses(rs), ["200", ...Array(N - 1).fill("409")].join(","));
			const winner = rs.find((r) => r.status === 200) as ApiResponse;
			for (const r of rs) if (r.status === 409) assert.match(r.text, /already taken/);
			await settle();
			const found = await api("POST", "/a/user", { Queries: [{ Login: "bob" }] });
			assert.deepEqual(
				(found.body.Users as { Uuid: string }[]).map((u) => u.Uuid),
				[winner.body.Uuid],
			);
			// The winner's password is the one stored.
			const i = Number(String(winner.body.Attributes.displayName).slice(4));
			assert.ok(await nodes[0].login("bob", `Bob-Pass-${1000 + i}`));
			// The losers' personal roles went with their failed creates.
			const roles = await api("POST", "/a/role", { Queries: [{ IsUserRole: true }] });
			assert.deepEqual(
				(roles.body.Roles as { Label: string; Uuid: string }[]).filter((r) => r.Label === "User bob").map((r) => r.Uuid),
				[winner.body.Uuid],
			);
		});

		it(`${N} concurrent PUT /role/race-team creating one team: one role, the others update it`, async () => {
			const rs = await race((node, token, i) => node.api("PUT", "/a/role/race-team", { Uuid: "race-team", Label: `Race team ${i}`, IsTeam: true }, token));
			for (const r of rs) assert.equal(r.status, 200, `${statuses(rs)}: ${r.text}`);
			await settle();
			const roles = await api("POST", "/a/role", { Queries: [{ Uuid: ["race-team"] }] });
			assert.equal(roles.body.Total, 1);
			assert.equal(roles.body.Roles[0].IsTeam, true);
		});

		it(`${N} concurrent creates of group /race: one group (the requests that lost update it)`, async () => {
			const rs = await race((node, token) => node.api("PUT", "/a/user/race", { Login: "race", IsGroup: true, GroupLabel: "race", GroupPath: "/" }, token));
			for (const r of rs) assert.equal(r.status, 200, `${statuses(rs)}: ${r.text}`);
			await settle();
			const groups = await api("POST", "/a/user", { Queries: [{ NodeType: "GROUP", GroupPath: "/" }] });
			const race_ = (groups.body.Groups as { GroupLabel: string; Uuid: string }[]).filter((g) => g.GroupLabel === "race");
			assert.equal(race_.length, 1);
			for (const r of rs) assert.equal(r.body.Uuid, race_[0].Uuid);
			const roles = await api("POST", "/a/role", { Queries: [{ IsGroupRole: true }] });
			assert.deepEqual(
				(roles.body.Roles as { Label: string; Uuid: string }[]).filter((r) => r.Label === "Group race").map((r) => r.Uuid),
				[race_[0].Uuid],
				"one group role",
			);
		});
	});
}
