// Admin-managed templates through the real gateway (Cells enterprise): node templates copied from a file or a
// folder tree (later edits of the source leave them unchanged), listed by GET /a/templates and used by
// POST /a/tree/create; metadata templates (GET/PUT/DELETE /a/templates/meta). Writes are the admin's.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

const enc = (p: string) => encodeURIComponent(p);

describe("HTTP: node and metadata templates", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;
	let folderTpl: string;
	let fileTpl: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	const put = async (path: string, body: string, token = node.admin) => {
		const r = await fetch(`${node.url}/io/${path.split("/").map(enc).join("/")}`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body });
		assert.equal(r.status, 200, path);
	};
	const get = async (path: string, token = alice) => {
		const r = await fetch(`${node.url}/io/${path.split("/").map(enc).join("/")}`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(r.status, 200, path);
		return r.text();
	};
	const uuidOf = async (path: string) => {
		const s = await node.api("GET", `/a/tree/stat/${enc(path)}`, undefined, node.admin);
		assert.equal(s.status, 200, s.text);
		return s.body.Node.Uuid as string;
	};

	it("makes templates from a folder tree and from a file, admin only", async () => {
		await put("common-files/skeleton/README.md", "# Project");
		await put("common-files/skeleton/docs/plan.txt", "plan v1");
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/skeleton/empty", Type: "COLLECTION" }] }, node.admin)).status, 200);
		await put("common-files/letter.txt", "Dear …");
		const folder = await uuidOf("common-files/skeleton");

		const refused = await node.api("POST", "/a/templates/node", { RefNodeUuid: folder, TplLabel: "Project" }, alice);
		assert.equal(refused.status, 403, refused.text);
		assert.equal((await node.api("POST", "/a/templates/node", {}, node.admin)).status, 400);
		assert.equal((await node.api("POST", "/a/templates/node", { RefNodeUuid: "no-such-node" }, node.admin)).status, 404);

		const r = await node.api("POST", "/a/templates/node", { RefNodeUuid: folder, TplLabel: "Project" }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Success, true);
		folderTpl = r.body.TemplateUuid;
		const f = await node.api("POST", "/a/templates/node", { RefNodeUuid: await uuidOf("common-files/letter.txt") }, node.admin);
		assert.equal(f.status, 200, f.text);
		fileTpl = f.body.TemplateUuid;

		// The template is a copy: the source changes afterwards, the template does not.
		await put("common-files/skeleton/docs/plan.txt", "plan v2, edited");
		await put("common-files/skeleton/later.txt", "added later");

		const list = await node.api("GET", "/a/templates", undefined, alice);
		assert.equal(list.status, 200, list.text);
		const mine = list.body.Templates.find((t: { UUID: string }) => t.UUID === folderTpl);
		assert.equal(mine.Label, "Project");
		assert.equal(mine.Editable, true);
		assert.equal(mine.Node.Node.Type, "COLLECTION");
		assert.deepEqual(Object.keys(mine.Node.Children).sort(), ["README.md", "docs", "empty"]);
		const letter = list.body.Templates.find((t: { UUID: string }) => t.UUID === fileTpl);
		assert.equal(letter.Label, "letter.txt");
		assert.equal(letter.Node.Node.Size, String(Buffer.byteLength("Dear …")));
		assert.ok(list.body.Templates.some((t: { UUID: string }) => t.UUID === "01-Microsoft Word.docx"));
	});

	it("creates a folder tree and a file from them, with the bytes of the time of the copy", async () => {
		const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/new project", Type: "COLLECTION" }], TemplateUUID: folderTpl }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Children[0].Path, "personal-files/new project");
		assert.equal(await get("personal-files/new project/README.md"), "# Project");
		assert.equal(await get("personal-files/new project/docs/plan.txt"), "plan v1");
		const empty = await node.api("GET", `/a/tree/stat/${enc("personal-files/new project/empty")}`, undefined, alice);
		assert.equal(empty.body.Node.Type, "COLLECTION");
		assert.equal((await node.api("GET", `/a/tree/stat/${enc("personal-files/new project/later.txt")}`, undefined, alice)).status, 404);

		const again = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/new project", Type: "COLLECTION" }], TemplateUUID: folderTpl }, alice);
		assert.equal(again.status, 409, again.text);
		const asFile = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/x.txt", Type: "LEAF" }], TemplateUUID: folderTpl }, alice);
		assert.equal(asFile.status, 400, asFile.text);

		const file = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/to bob.txt", Type: "LEAF" }], TemplateUUID: fileTpl }, alice);
		assert.equal(file.status, 200, file.text);
		assert.equal(await get("personal-files/to bob.txt"), "Dear …");
	});

	it("deletes a node template (admin only); built-ins cannot be deleted", async () => {
		assert.equal((await node.api("DELETE", `/a/templates/node/${folderTpl}`, undefined, alice)).status, 403);
		const builtIn = await node.api("DELETE", `/a/templates/node/${enc("01-Microsoft Word.docx")}`, undefined, node.admin);
		assert.equal(builtIn.status, 403, builtIn.text);
		const d = await node.api("DELETE", `/a/templates/node/${folderTpl}`, undefined, node.admin);
		assert.equal(d.status, 200, d.text);
		assert.equal(d.body.Success, true);
		assert.equal((await node.api("DELETE", `/a/templates/node/${folderTpl}`, undefined, node.admin)).status, 404);
		const list = await node.api("GET", "/a/templates", undefined, alice);
		assert.ok(!list.body.Templates.some((t: { UUID: string }) => t.UUID === folderTpl));
		const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/gone", Type: "COLLECTION" }], TemplateUUID: folderTpl }, alice);
		assert.equal(r.status, 404, r.text);
	});

	it("shows a template with policies only to the subjects they let read", async () => {
		await put("common-files/secret.txt", "for admins");
		const r = await node.api("POST", "/a/templates/node", { RefNodeUuid: await uuidOf("common-files/secret.txt"), TplLabel: "Admins only", Policies: [{ Action: "READ", Subject: "profile:admin", Effect: "allow" }] }, node.admin);
		assert.equal(r.status, 200, r.text);
		const id = r.body.TemplateUuid;
		const seen = async (token: string) => (await node.api("GET", "/a/templates", undefined, token)).body.Templates.some((t: { UUID: string }) => t.UUID === id);
		assert.equal(await seen(node.admin), true);
		assert.equal(await seen(alice), false);
		const used = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/secret.txt", Type: "LEAF" }], TemplateUUID: id }, alice);
		assert.equal(used.status, 404, used.text);
	});

	it("refuses a node of an encrypted datasource: its bytes are not copied out in clear", async () => {
		assert.equal((await node.api("POST", "/a/config/encryption/create", { KeyID: "tplkey", Label: "k" }, node.admin)).status, 200);
		const ds = await node.api("POST", "/a/config/datasource/vault", { StorageType: "LOCAL", StorageConfiguration: { folder: "vault" }, FlatStorage: true, EncryptionMode: "MASTER", EncryptionKey: "tplkey" }, node.admin);
		assert.equal(ds.status, 200, ds.text);
		const ws = await node.api("PUT", "/a/workspace/vault", { Label: "vault", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:vault": { Uuid: "DATASOURCE:vault", Path: "vault" } } }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		await put("vault/secret.txt", "classified");
		const r = await node.api("POST", "/a/templates/node", { RefNodeUuid: await uuidOf("vault/secret.txt") }, node.admin);
		assert.equal(r.status, 400, r.text);
		assert.match(r.body.Title, /encrypted/);
	});

	it("keeps metadata templates: named sets of existing namespaces, admin writes, anyone logged in reads", async () => {
		const ns = await node.api("PUT", "/a/user-meta/namespace", { Operation: "PUT", Namespaces: [{ Namespace: "usermeta-client", Label: "Client" }, { Namespace: "usermeta-stage", Label: "Stage" }] }, node.admin);
		assert.equal(ns.status, 200, ns.text);
		const body = { Template: { Label: "Contract", Namespace: "usermeta-client", Meta: JSON.stringify(["usermeta-client", { Namespace: "usermeta-stage" }]) } };
		assert.equal((await node.api("PUT", "/a/templates/meta", body, alice)).status, 403);
		assert.equal((await node.api("PUT", "/a/templates/meta", { Template: { Label: "Bad", Meta: '["usermeta-none"]' } }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/templates/meta", { Template: { Label: "Bad", Meta: "{not json" } }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/templates/meta", {}, node.admin)).status, 400);

		const p = await node.api("PUT", "/a/templates/meta", body, node.admin);
		assert.equal(p.status, 200, p.text);
		const uuid = p.body.Template.Uuid;
		assert.ok(uuid);
		assert.equal(p.body.Template.Label, "Contract");
		const other = await node.api("PUT", "/a/templates/meta", { Template: { Label: "Plain" } }, node.admin);
		assert.equal(other.status, 200, other.text);
		assert.equal((await node.api("PUT", "/a/templates/meta", { Template: { Label: "Contract" } }, node.admin)).status, 409);

		const renamed = await node.api("PUT", "/a/templates/meta", { Uuid: uuid, Template: { ...body.Template, Label: "Contract v2" } }, node.admin);
		assert.equal(renamed.status, 200, renamed.text);
		const all = await node.api("GET", "/a/templates/meta", undefined, alice);
		assert.equal(all.status, 200, all.text);
		assert.deepEqual(all.body.Templates.map((t: { Label: string }) => t.Label), ["Contract v2", "Plain"]);
		const filtered = await node.api("GET", "/a/templates/meta?Namespace=usermeta-client", undefined, alice);
		assert.deepEqual(filtered.body.Templates.map((t: { Uuid: string }) => t.Uuid), [uuid]);
		assert.equal(filtered.body.Templates[0].Meta, body.Template.Meta);

		assert.equal((await node.api("DELETE", `/a/templates/meta/${uuid}`, undefined, alice)).status, 403);
		assert.equal((await node.api("DELETE", `/a/templates/meta/${uuid}`, undefined, node.admin)).status, 200);
		assert.equal((await node.api("DELETE", `/a/templates/meta/${uuid}`, undefined, node.admin)).status, 404);
		assert.deepEqual((await node.api("GET", "/a/templates/meta", undefined, alice)).body.Templates.map((t: { Label: string }) => t.Label), ["Plain"]);
	});

	it("leaves an audit trail of template changes", async () => {
		let found: { Msg?: string }[] = [];
		for (let i = 0; i < 20 && !found.length; i++) {
			const r = await node.api("POST", "/a/log/audit", { Query: "+MsgId:template.delete", Size: 50 }, node.admin);
			assert.equal(r.status, 200, r.text);
			found = (r.body.Logs ?? []).filter((l: { Msg?: string }) => /admin deleted template/.test(l.Msg ?? ""));
			if (!found.length) await new Promise((res) => setTimeout(res, 100));
		}
		assert.ok(found.length >= 2, "template deletions are audited");
	});
});
