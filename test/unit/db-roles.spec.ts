// RolesRepo, one behaviour suite on SQLite and PostgreSQL: ids unique under concurrency (create is an insert,
// ensure an insert-or-nothing), every field read back as written, and the NeDB import of the roles collection.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError } from "../../lib/errors";
import { RolesRepo, importNedbRoles } from "../../lib/db/roles";
import { importNedbOnce } from "../../lib/db/nedb-import";
import type { Role } from "../../lib/identity/roles";
import { onEveryBackend } from "../helpers/db";

const policies = [{ Resource: "role", Action: "READ" as const, Subject: "profile:standard", Effect: "allow" as const }];

onEveryBackend("RolesRepo", (h) => {
	let roles: RolesRepo;
	before(() => {
		roles = new RolesRepo(h().db);
	});

	it("creates a role and reads every field back; off flags and empty AutoApplies are absent", async () => {
		const team: Role = { Uuid: "team-a", Label: "Team A", IsTeam: true, AutoApplies: ["standard"], ForceOverride: true, Policies: policies, LastUpdated: 1700000000 };
		assert.deepEqual(await roles.create(team), team);
		assert.deepEqual(await roles.byId("team-a"), team);
		const plain = await roles.create({ Uuid: "plain", Label: "Plain", IsTeam: false, AutoApplies: [] });
		assert.deepEqual(plain, { Uuid: "plain", Label: "Plain", Policies: [], LastUpdated: 0 });
		assert.equal(await roles.byId("nope"), null);
	});

	it("refuses a taken id with ConflictError (role.exists)", async () => {
		await assert.rejects(roles.create({ Uuid: "team-a", Label: "Other" }), (err: unknown) => err instanceof ConflictError && err.type === "role.exists");
		assert.equal((await roles.byId("team-a"))?.Label, "Team A");
	});

	it("20 concurrent creates of one id: one role, 19 ConflictErrors", async () => {
		const db2 = await h().second();
		const repos = [roles, new RolesRepo(db2)];
		const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => repos[i % 2].create({ Uuid: "racer", Label: `Racer ${i}` })));
		assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
		for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError, String(r.reason));
		assert.equal((await roles.all()).filter((r) => r.Uuid === "racer").length, 1);
	});

	it("20 concurrent ensures of one id: one creates it, all get the same stored role", async () => {
		const results = await Promise.all(Array.from({ length: 20 }, (_, i) => roles.ensure({ Uuid: "ensured", Label: `E ${i}`, UserRole: true })));
		assert.equal(results.filter((r) => r.created).length, 1);
		const label = results.find((r) => r.created)?.role.Label;
		for (const r of results) assert.equal(r.role.Label, label);
		assert.equal((await roles.ensure({ Uuid: "team-a", Label: "ignored" })).role.Label, "Team A");
	});

	it("updates every field of an existing role, null for a missing one; deletes several at once", async () => {
		const updated = await roles.update({ Uuid: "team-a", Label: "Renamed", Policies: [], LastUpdated: 5 });
		assert.deepEqual(updated, { Uuid: "team-a", Label: "Renamed", Policies: [], LastUpdated: 5 });
		assert.equal(await roles.update({ Uuid: "ghost", Label: "x" }), null);
		assert.deepEqual(
			(await roles.all()).map((r) => r.Uuid),
			["ensured", "plain", "racer", "team-a"],
		);
		assert.equal(await roles.delete(["plain", "racer", "ghost"]), 2);
		assert.equal(await roles.delete([]), 0);
		assert.deepEqual(
			(await roles.all()).map((r) => r.Uuid),
			["ensured", "team-a"],
		);
	});

	it("imports the roles of an NeDB DATA_DIR once, keeping what the documents hold", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-roles-"));
		try {
			mkdirSync(join(dir, "db"));
			const lines = [
				{ _id: "ROOT_GROUP", Uuid: "ROOT_GROUP", Label: "Root Group", GroupRole: true, Policies: policies, LastUpdated: 10 },
				{ _id: "old-team", Uuid: "old-team", Label: "Old", IsTeam: true, LastUpdated: { $$date: 1000 } },
				{ _id: "old-team", Uuid: "old-team", Label: "Old team", IsTeam: true, AutoApplies: ["shared"], LastUpdated: 11 },
				{ _id: "gone", Uuid: "gone", Label: "Gone" },
				{ _id: "gone", $$deleted: true },
			];
			writeFileSync(join(dir, "db", "roles.db"), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
			const report = await importNedbOnce(h().db, dir, "roles", importNedbRoles);
			assert.equal(report.imported, true);
			assert.deepEqual(await roles.byId("ROOT_GROUP"), { Uuid: "ROOT_GROUP", Label: "Root Group", GroupRole: true, Policies: policies, LastUpdated: 10 });
			assert.deepEqual(await roles.byId("old-team"), { Uuid: "old-team", Label: "Old team", IsTeam: true, AutoApplies: ["shared"], Policies: [], LastUpdated: 11 });
			assert.equal(await roles.byId("gone"), null);
			assert.ok(!existsSync(join(dir, "db", "roles.db")) && existsSync(join(dir, "db", "roles.db.imported")));
			assert.equal((await importNedbOnce(h().db, dir, "roles", importNedbRoles)).imported, false);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
