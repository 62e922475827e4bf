// TemplatesRepo on SQLite and PostgreSQL: a node template and its entries written whole (a failing entry leaves
// no template), bytes read back identical, deletion taking the entries along; metadata templates upserted by
// uuid with labels unique by index.
import assert from "node:assert/strict";
import { TemplatesRepo } from "../../lib/db/templates";
import type { NodeTemplate } from "../../lib/templates/model";
import { onEveryBackend } from "../helpers/db";

const tpl = (uuid: string, label: string): NodeTemplate => ({ uuid, label, type: "COLLECTION", name: "skeleton", size: 3, policies: [], createdBy: "admin", createdAt: 1 });

onEveryBackend("TemplatesRepo", (h) => {
	let repo: TemplatesRepo;
	before(() => {
		repo = new TemplatesRepo(h().db);
	});

	it("stores a node template with its bytes, parents listed before children", async () => {
		const bytes = Buffer.from([0, 1, 255]);
		await repo.createNodeTemplate(tpl("t1", "Skeleton"), [
			{ path: "", type: "COLLECTION", size: 0, etag: "" },
			{ path: "docs/a.bin", type: "LEAF", size: 3, etag: "e", data: bytes },
			{ path: "docs", type: "COLLECTION", size: 0, etag: "" },
		]);
		assert.deepEqual((await repo.nodeTemplate("t1"))?.label, "Skeleton");
		const entries = await repo.nodeTemplateEntries("t1", true);
		assert.deepEqual(entries.map((e) => e.path), ["", "docs", "docs/a.bin"]);
		assert.deepEqual(entries[2].data, bytes);
		assert.equal((await repo.nodeTemplateEntries("t1", false))[2].data, undefined);
	});

	it("writes a template whole or not at all", async () => {
		await assert.rejects(
			repo.createNodeTemplate(tpl("t2", "Broken"), [
				{ path: "x", type: "LEAF", size: 1, etag: "", data: Buffer.from("x") },
				{ path: "x", type: "LEAF", size: 1, etag: "", data: Buffer.from("y") },
			]),
		);
		assert.equal(await repo.nodeTemplate("t2"), null);
		assert.deepEqual(await repo.nodeTemplateEntries("t2", true), []);
	});

	it("deletes a node template with its entries", async () => {
		assert.equal(await repo.deleteNodeTemplate("t1"), true);
		assert.equal(await repo.deleteNodeTemplate("t1"), false);
		assert.deepEqual(await repo.nodeTemplateEntries("t1", true), []);
		assert.deepEqual(await repo.nodeTemplates(), []);
	});

	it("upserts metadata templates by uuid, labels unique, filtered by namespace", async () => {
		await repo.putMetaTemplate({ Uuid: "m1", Label: "A", Namespace: "ns1", Meta: "[]", Policies: [] }, 1);
		await repo.putMetaTemplate({ Uuid: "m2", Label: "B", Namespace: "", Meta: "", Policies: [] }, 1);
		await assert.rejects(repo.putMetaTemplate({ Uuid: "m3", Label: "A", Namespace: "", Meta: "", Policies: [] }, 2), /exists|unique|conflict/i);
		await repo.putMetaTemplate({ Uuid: "m1", Label: "A2", Namespace: "ns1", Meta: '["ns1"]', Policies: [{ Action: "READ", Subject: "*", Effect: "allow" }] }, 3);
		assert.deepEqual((await repo.metaTemplates()).map((t) => t.Label), ["A2", "B"]);
		const [m1] = await repo.metaTemplates("ns1");
		assert.equal(m1.Meta, '["ns1"]');
		assert.equal(m1.Policies.length, 1);
		assert.equal(await repo.deleteMetaTemplate("m1"), true);
		assert.equal(await repo.deleteMetaTemplate("m1"), false);
		assert.equal(await repo.metaTemplate("m1"), null);
	});
});
