import assert from "node:assert/strict";
import { renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { finished } from "../helpers/jobs";

describe("HTTP: datasources", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	it("lists the default datasources, without secrets and with Cells' wire encoding", async () => {
		const r = await node.api("GET", "/a/config/datasource", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		const names = r.body.DataSources.map((d: { Name: string }) => d.Name);
		for (const n of ["pydiods1", "personal", "cellsdata", "versions", "thumbnails"]) assert.ok(names.includes(n), n);
		assert.equal(r.body.Total, names.length);
		const main = r.body.DataSources.find((d: { Name: string }) => d.Name === "pydiods1");
		// LOCAL and CLEAR are the enums' zero values: protojson leaves them out.
		assert.equal(main.StorageType, undefined);
		assert.equal(main.FlatStorage, true);
		assert.equal(main.StorageConfiguration.folder, "pydiods1");
		assert.equal(typeof main.CreationDate, "number");
	});

	it("admin creates a LOCAL datasource, reads it back and finds it in the list", async () => {
		const put = await node.api("POST", "/a/config/datasource/data2", { Name: "ignored", StorageType: "LOCAL", StorageConfiguration: { folder: "data2" }, FlatStorage: true }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Name, "data2");
		assert.equal(put.body.FlatStorage, true);
		assert.ok(statSync(join(node.dataDir, "data2")).isDirectory());
		const got = await node.api("GET", "/a/config/datasource/data2", undefined, node.admin);
		assert.equal(got.status, 200, got.text);
		assert.equal(got.body.StorageConfiguration.folder, "data2");
		const list = await node.api("GET", "/a/config/datasource", undefined, node.admin);
		assert.ok(list.body.DataSources.some((d: { Name: string }) => d.Name === "data2"));
		assert.equal((await node.api("GET", "/a/config/datasource/nothere", undefined, node.admin)).status, 404);
	});

	it("refuses bad names, unknown fields, unsupported storage and folders outside DATA_DIR with 400", async () => {
		for (const bad of ["Bad", "a-b", "a%2Fb", "..%2Fx", "x".repeat(65)]) {
			const r = await node.api("POST", `/a/config/datasource/${bad}`, { StorageConfiguration: { folder: "x" } }, node.admin);
			assert.equal(r.status, 400, `${bad} -> ${r.status} ${r.text}`);
		}
		assert.equal((await node.api("POST", "/a/config/datasource/x1", { Bogus: true }, node.admin)).status, 400);
		const az = await node.api("POST", "/a/config/datasource/az", { StorageType: "AZURE" }, node.admin);
		assert.equal(az.status, 400);
		assert.match(az.body.Title, /storage type AZURE is not supported/);
		const enc = await node.api("POST", "/a/config/datasource/enc", { EncryptionMode: "MASTER" }, node.admin);
		assert.equal(enc.status, 400);
		assert.match(enc.body.Title, /needs an EncryptionKey/);
		assert.equal((await node.api("POST", "/a/config/datasource/etc", { StorageConfiguration: { folder: "/etc/cellar" } }, node.admin)).status, 400);
	});

	it("a standard user gets 403 on every config route", async () => {
		assert.equal((await node.api("GET", "/a/config/datasource", undefined, alice)).status, 403);
		assert.equal((await node.api("GET", "/a/config/datasource/pydiods1", undefined, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/datasource/mine", { StorageConfiguration: { folder: "mine" } }, alice)).status, 403);
		assert.equal((await node.api("DELETE", "/a/config/datasource/data2", undefined, alice)).status, 403);
		assert.equal((await node.api("GET", "/a/config/virtualnodes", undefined, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/config/buckets", { DataSource: { StorageType: "S3" } }, alice)).status, 403);
		assert.equal((await node.api("GET", "/a/config/datasource")).status, 401);
	});

	it("refuses to delete pydiods1 (403) and datasources used by a workspace (409); deletes the others", async () => {
		assert.equal((await node.api("DELETE", "/a/config/datasource/pydiods1", undefined, node.admin)).status, 403);
		assert.equal((await node.api("DELETE", "/a/config/datasource/versions", undefined, node.admin)).status, 403);
		const ws = await node.api("PUT", "/a/workspace/on-data2", { Label: "On data2", RootNodes: { "node-d2": { Uuid: "node-d2", Path: "data2/projects" } } }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		const used = await node.api("DELETE", "/a/config/datasource/data2", undefined, node.admin);
		assert.equal(used.status, 409, used.text);
		assert.match(used.body.Title, /used by workspace/);
		assert.equal((await node.api("DELETE", "/a/workspace/on-data2", undefined, node.admin)).status, 200);
		const del = await node.api("DELETE", "/a/config/datasource/data2", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.deepEqual(del.body, { Success: true });
		assert.equal((await node.api("GET", "/a/config/datasource/data2", undefined, node.admin)).status, 404);
		assert.ok(statSync(join(node.dataDir, "data2")).isDirectory());
	});

	it("forgets a deleted datasource's tree: a structured one comes back from its storage, a flat one with files is kept", async () => {
		const ws = (name: string) => ({ Label: name, Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { [`DATASOURCE:${name}`]: { Uuid: `DATASOURCE:${name}`, Path: name } } });
		const names = async (slug: string) => ((await node.api("POST", "/a/tree/stats", { NodePaths: [`${slug}/*`] }, node.admin)).body.Nodes ?? []).map((n: { Path: string }) => n.Path);
		const put = (key: string) => fetch(`${node.url}/io/${key}`, { method: "PUT", headers: { "X-Pydio-Bearer": node.admin }, body: "kept on disk" });
		// Structured: deleted, added again on another folder: nothing of the old tree shows; on its own folder, all.
		assert.equal((await node.api("POST", "/a/config/datasource/gone1", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "gone1" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-gone1", ws("gone1"), node.admin)).status, 200);
		assert.equal((await put("ws-gone1/old.txt")).status, 200);
		assert.equal((await node.api("DELETE", "/a/workspace/ws-gone1", undefined, node.admin)).status, 200);
		assert.equal((await node.api("DELETE", "/a/config/datasource/gone1", undefined, node.admin)).status, 200);
		assert.equal((await node.api("POST", "/a/config/datasource/gone1", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "gone1-new" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-gone1", ws("gone1"), node.admin)).status, 200);
		assert.deepEqual(await names("ws-gone1"), [], "no file of the old datasource resurfaces");
		const found = await node.api("POST", "/a/search/nodes", { Query: { FileName: "old.txt" } }, node.admin);
		assert.equal(found.body.Total ?? 0, 0, "nor in search");
		assert.equal((await node.api("POST", "/a/config/datasource/gone1", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "gone1" } }, node.admin)).status, 200);
		await finished(node.api, node.admin, "datasource-resync", { dsName: "gone1" });
		assert.deepEqual(await names("ws-gone1"), ["ws-gone1/old.txt"]);
		// Flat with files: the index is all there is of their names, so the datasource stays until they go.
		assert.equal((await node.api("POST", "/a/config/datasource/gone2", { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "gone2" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-gone2", ws("gone2"), node.admin)).status, 200);
		assert.equal((await put("ws-gone2/only.txt")).status, 200);
		assert.equal((await node.api("DELETE", "/a/workspace/ws-gone2", undefined, node.admin)).status, 200);
		const refused = await node.api("DELETE", "/a/config/datasource/gone2", undefined, node.admin);
		assert.equal(refused.status, 409, refused.text);
		assert.match(refused.body.Title, /1 file/);
		assert.equal((await node.api("GET", "/a/config/datasource/gone2", undefined, node.admin)).status, 200);
		// Pointed at a folder that does not hold its objects, it would lose every file: refused; once they are
		// moved there, accepted.
		const moved = await node.api("POST", "/a/config/datasource/gone2", { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "gone2-moved" } }, node.admin);
		assert.equal(moved.status, 409, moved.text);
		assert.match(moved.body.Title, /move its objects there first/);
		renameSync(join(node.dataDir, "gone2"), join(node.dataDir, "gone2-moved"));
		const ok = await node.api("POST", "/a/config/datasource/gone2", { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "gone2-moved" } }, node.admin);
		assert.equal(ok.status, 200, ok.text);
	});

	it("lists, creates and deletes virtual nodes", async () => {
		const list = await node.api("GET", "/a/config/virtualnodes", undefined, node.admin);
		assert.equal(list.status, 200, list.text);
		const my = list.body.Children.find((c: { Uuid: string }) => c.Uuid === "my-files");
		assert.equal(my.Type, "COLLECTION");
		assert.equal(JSON.parse(my.MetaStore.resolution), 'Path = DataSources.personal + "/" + User.Name;');
		const put = await node.api("POST", "/a/config/virtualnodes/homes", { Type: "COLLECTION", MetaStore: { resolution: JSON.stringify('Path = DataSources.pydiods1 + "/homes/" + User.Name;') } }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Uuid, "homes");
		const bad = await node.api("POST", "/a/config/virtualnodes/evil", { MetaStore: { resolution: JSON.stringify("Path = process.env.HOME;") } }, node.admin);
		assert.equal(bad.status, 400, bad.text);
		assert.equal((await node.api("DELETE", "/a/config/virtualnodes/my-files", undefined, node.admin)).status, 403);
		assert.equal((await node.api("DELETE", "/a/config/virtualnodes/unknown", undefined, node.admin)).status, 404);
		const del = await node.api("DELETE", "/a/config/virtualnodes/homes", undefined, node.admin);
		assert.equal(del.status, 200, del.text);
		assert.deepEqual(del.body, { Success: true });
	});

	it("bucket routes only accept S3 datasources", async () => {
		const r = await node.api("POST", "/a/config/buckets", { DataSource: { StorageType: "LOCAL" } }, node.admin);
		assert.equal(r.status, 400, r.text);
		const c = await node.api("PUT", "/a/config/buckets/new-bucket", { DataSource: { StorageType: "LOCAL" } }, node.admin);
		assert.equal(c.status, 400, c.text);
	});
});
