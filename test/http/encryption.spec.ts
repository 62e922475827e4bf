import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

describe("HTTP: encryption keys", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	it("admin creates a key and lists it without its material", async () => {
		const c = await node.api("POST", "/a/config/encryption/create", { KeyID: "master1", Label: "Master key" }, node.admin);
		assert.equal(c.status, 200, c.text);
		assert.deepEqual(c.body, { Success: true });
		assert.equal((await node.api("POST", "/a/config/encryption/create", { KeyID: "master1", Label: "again" }, node.admin)).status, 409);
		assert.equal((await node.api("POST", "/a/config/encryption/create", { KeyID: "a/b" }, node.admin)).status, 400);
		const l = await node.api("POST", "/a/config/encryption/list", {}, node.admin);
		assert.equal(l.status, 200, l.text);
		const key = l.body.Keys.find((k: { ID: string }) => k.ID === "master1");
		assert.ok(key, l.text);
		assert.equal(key.Label, "Master key");
		assert.equal(key.Owner, "admin");
		assert.equal(typeof key.CreationDate, "number");
		assert.equal(key.Content, undefined);
	});

	it("exports and re-imports a key; a wrong password is a 400", async () => {
		const e = await node.api("POST", "/a/config/encryption/export", { KeyID: "master1", StrPassword: "backup-password" }, node.admin);
		assert.equal(e.status, 200, e.text);
		assert.equal(e.body.Key.ID, "master1");
		assert.equal(typeof e.body.Key.Content, "string");
		assert.equal(e.body.Key.Info.Exports[0].By, "admin");
		const wrong = await node.api("PUT", "/a/config/encryption/import", { Key: e.body.Key, StrPassword: "not-it", Override: true }, node.admin);
		assert.equal(wrong.status, 400, wrong.text);
		assert.match(wrong.body.Title, /wrong password/);
		assert.equal((await node.api("PUT", "/a/config/encryption/import", { Key: e.body.Key, StrPassword: "backup-password" }, node.admin)).status, 409);
		const ok = await node.api("PUT", "/a/config/encryption/import", { Key: { ...e.body.Key, ID: "restored" }, StrPassword: "backup-password" }, node.admin);
		assert.equal(ok.status, 200, ok.text);
		const over = await node.api("PUT", "/a/config/encryption/import", { Key: e.body.Key, StrPassword: "backup-password", Override: true }, node.admin);
		assert.equal(over.status, 200, over.text);
		const l = await node.api("POST", "/a/config/encryption/list", {}, node.admin);
		const k = l.body.Keys.find((x: { ID: string }) => x.ID === "master1");
		assert.equal(k.Info.Exports.length, 1);
		assert.equal(k.Info.Imports.length, 1);
		assert.ok(l.body.Keys.some((x: { ID: string }) => x.ID === "restored"));
	});

	it("a LOCAL datasource with EncryptionMode MASTER uses an existing key; the key cannot be deleted while used", async () => {
		const ds = await node.api("POST", "/a/config/datasource/secure", { StorageType: "LOCAL", StorageConfiguration: { folder: "secure" }, FlatStorage: true, EncryptionMode: "MASTER", EncryptionKey: "master1" }, node.admin);
		assert.equal(ds.status, 200, ds.text);
		assert.equal(ds.body.EncryptionMode, "MASTER");
		assert.equal(ds.body.EncryptionKey, "master1");
		const unknown = await node.api("POST", "/a/config/datasource/secure2", { StorageConfiguration: { folder: "secure2" }, FlatStorage: true, EncryptionMode: "MASTER", EncryptionKey: "nokey" }, node.admin);
		assert.equal(unknown.status, 400, unknown.text);
		assert.match(unknown.body.Title, /does not exist/);
		const user = await node.api("POST", "/a/config/datasource/secure3", { StorageConfiguration: { folder: "secure3" }, EncryptionMode: "USER" }, node.admin);
		assert.equal(user.status, 400, user.text);
		assert.match(user.body.Title, /not supported/);
		const del = await node.api("POST", "/a/config/encryption/delete", { KeyID: "master1" }, node.admin);
		assert.equal(del.status, 409, del.text);
		assert.match(del.body.Title, /secure/);
		const gone = await node.api("POST", "/a/config/encryption/delete", { KeyID: "restored" }, node.admin);
		assert.equal(gone.status, 200, gone.text);
		assert.equal((await node.api("POST", "/a/config/encryption/delete", { KeyID: "restored" }, node.admin)).status, 404);
	});

	it("a standard user gets 403 on the keys API", async () => {
		assert.equal((await node.api("POST", "/a/config/encryption/list", {}, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/encryption/create", { KeyID: "mine" }, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/encryption/export", { KeyID: "master1", StrPassword: "x" }, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/encryption/delete", { KeyID: "master1" }, alice)).status, 403);
		assert.equal((await node.api("PUT", "/a/config/encryption/import", { Key: { ID: "x", Content: "AAAA" }, StrPassword: "x" }, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/encryption/list", {})).status, 401);
	});
});
