// WorkspacesRepo, one behaviour suite on SQLite and PostgreSQL: slugs unique under concurrency, de-duplication
// candidates, every field read back as written, and the NeDB import of the workspaces collection.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConflictError } from "../../lib/errors";
import { WorkspacesRepo, importNedbWorkspaces } from "../../lib/db/workspaces";
import { importNedbOnce } from "../../lib/db/nedb-import";
import type { WorkspaceDoc } from "../../lib/workspaces/model";
import { onEveryBackend } from "../helpers/db";

const ws = (uuid: string, slug: string, extra: Partial<WorkspaceDoc> = {}): WorkspaceDoc => ({
	UUID: uuid,
	Slug: slug,
	Label: slug.toUpperCase(),
	Description: "",
	Scope: "ADMIN",
	LastUpdated: 1700000000,
	Policies: [{ Resource: uuid, Action: "READ", Subject: "profile:standard", Effect: "allow" }],
	Attributes: "{}",
	...extra,
});

onEveryBackend("WorkspacesRepo", (h) => {
	let repo: WorkspacesRepo;
	before(() => {
		repo = new WorkspacesRepo(h().db);
	});

	it("creates a workspace and reads it back by uuid and by slug, every field as written", async () => {
		const w = ws("w1", "projects", { Description: "Team projects", Scope: "ROOM", Attributes: '{"META_LAYOUT":"x"}' });
		assert.deepEqual(await repo.create(w), w);
		assert.deepEqual(await repo.byId("w1"), w);
		assert.deepEqual(await repo.bySlug("projects"), w);
		assert.equal(await repo.bySlug("Projects"), null, "slugs are compared exactly");
		assert.equal(await repo.byId("nope"), null);
	});

	it("refuses a taken slug or uuid with ConflictError (workspace.exists)", async () => {
		for (const w of [ws("w2", "projects"), ws("w1", "other")]) {
			await assert.rejects(repo.create(w), (err: unknown) => err instanceof ConflictError && err.type === "workspace.exists" && err.code === 409);
		}
		assert.deepEqual((await repo.all()).map((w) => w.UUID), ["w1"]);
	});

	it("20 concurrent creates of one slug from two handles: one workspace, 19 ConflictErrors", async () => {
		const db2 = await h().second();
		const repos = [repo, new WorkspacesRepo(db2)];
		const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => repos[i % 2].create(ws(`race-${i}`, "race"))));
		assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
		for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError, String(r.reason));
		assert.ok(await repo.bySlug("race"));
	});

	it("lists the slugs a de-duplication must avoid: the base and its -N forms only", async () => {
		await repo.create(ws("w3", "projects-1"));
		await repo.create(ws("w4", "projects-12"));
		await repo.create(ws("w5", "projects-x"));
		await repo.create(ws("w6", "projectsx"));
		assert.deepEqual([...(await repo.slugsLike("projects"))].sort(), ["projects", "projects-1", "projects-12"]);
		assert.deepEqual([...(await repo.slugsLike("none"))], []);
	});

	it("updates every field, refuses a taken slug, deletes; reads several by uuid", async () => {
		const w = (await repo.byId("w3")) as WorkspaceDoc;
		assert.deepEqual(await repo.update({ ...w, Label: "P1", Slug: "p1", Attributes: "{}" }), { ...w, Label: "P1", Slug: "p1", Attributes: "{}" });
		await assert.rejects(repo.update({ ...w, Slug: "projects" }), ConflictError);
		assert.equal((await repo.byId("w3"))?.Slug, "p1");
		assert.equal(await repo.update(ws("ghost", "ghost")), null);
		assert.deepEqual((await repo.byIds(["w4", "w1", "nope"])).map((x) => x.UUID), ["w1", "w4"]);
		assert.deepEqual(await repo.byIds([]), []);
		assert.equal(await repo.delete("w3"), true);
		assert.equal(await repo.delete("w3"), false);
		await repo.create(ws("w7", "p1"));
	});

	it("imports the workspaces of an NeDB DATA_DIR once", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-ws-"));
		try {
			mkdirSync(join(dir, "db"));
			const old = { _id: "n1", UUID: "n1", Slug: "legacy", Label: "Legacy", Description: "d", Scope: "ADMIN", LastUpdated: 12, Policies: [], Attributes: '{"A":"1"}' };
			writeFileSync(join(dir, "db", "workspaces.db"), `${JSON.stringify(old)}\n${JSON.stringify({ $$indexCreated: { fieldName: "Slug" } })}\n`);
			assert.equal((await importNedbOnce(h().db, dir, "workspaces", importNedbWorkspaces)).imported, true);
			const { _id, ...doc } = old;
			assert.deepEqual(await repo.byId("n1"), doc);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
