// Deletes through /io as S3 tools send them: a key naming a folder removes nothing, `dir/` removes an empty folder
// only, a folder emptied by an S3 delete goes as an S3 prefix does (unless an ACL points to it or it carries
// metadata), empty folders are listed as `dir/` markers, and a tree deleted key by key, in any order, leaves
// nothing behind. No single request ever removes a folder holding anything.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { S3Client, PutObjectCommand, DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command, HeadObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import { s3Client } from "../helpers/s3";

describe("HTTP: S3 deletes never remove a folder holding anything", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;

	const stat = (p: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(p)}`, undefined, token);
	const exists = async (p: string) => (await stat(p)).status === 200;
	const put = (key: string, body = key) => s3.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: body }));
	const del = (key: string) => s3.send(new DeleteObjectCommand({ Bucket: "io", Key: key }));
	const mkdir = async (p: string) => assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: p, Type: "COLLECTION" }], Recursive: true }, token)).status, 200);
	const keys = async (prefix: string, delimiter?: string) => {
		const r = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: prefix, Delimiter: delimiter }));
		return { contents: (r.Contents ?? []).map((c) => c.Key as string), prefixes: (r.CommonPrefixes ?? []).map((c) => c.Prefix as string) };
	};

	before(async () => {
		assert.equal((await node.api("PUT", "/a/user/dana", { Password: "Dana-Pass-12345", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		const ds = await node.api("POST", "/a/config/datasource/delstruct", { StorageType: "LOCAL", FlatStorage: false, StorageConfiguration: { folder: "delstruct" } }, node.admin);
		assert.equal(ds.status, 200, ds.text);
		const ws = await node.api("PUT", "/a/workspace/ws-delstruct", { Label: "Structured", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { "DATASOURCE:delstruct": { Uuid: "DATASOURCE:delstruct", Path: "delstruct" } } }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		token = await node.login("dana", "Dana-Pass-12345");
		s3 = s3Client(node, token);
	});

	it("a key naming a folder (no trailing slash) is no object: 204, and the folder keeps everything", async () => {
		for (const k of ["reports/q1.txt", "reports/2024/q2.txt", "reports/2024/deep/q3.txt"]) await put(`personal-files/${k}`);
		const r = await del("personal-files/reports");
		assert.equal(r.$metadata.httpStatusCode, 204);
		const batch = await s3.send(new DeleteObjectsCommand({ Bucket: "io", Delete: { Objects: [{ Key: "personal-files/reports" }, { Key: "personal-files/reports/2024" }] } }));
		assert.equal(batch.Errors, undefined);
		for (const k of ["reports/q1.txt", "reports/2024/q2.txt", "reports/2024/deep/q3.txt"]) assert.ok(await exists(`personal-files/${k}`), k);
		// A marker key for a folder holding files removes nothing either.
		assert.equal((await del("personal-files/reports/")).$metadata.httpStatusCode, 204);
		assert.equal((await del("personal-files/reports/2024/")).$metadata.httpStatusCode, 204);
		for (const k of ["reports/q1.txt", "reports/2024/q2.txt", "reports/2024/deep/q3.txt"]) assert.ok(await exists(`personal-files/${k}`), k);
		// A file's name with a trailing slash names no object: the file stays.
		assert.equal((await del("personal-files/reports/q1.txt/")).$metadata.httpStatusCode, 204);
		assert.ok(await exists("personal-files/reports/q1.txt"));
		// The workspace root is no object at all.
		assert.equal((await del("personal-files")).$metadata.httpStatusCode, 204);
		assert.equal((await del("personal-files/")).$metadata.httpStatusCode, 204);
		assert.ok(await exists("personal-files/reports/q1.txt"));
	});

	it("a folder emptied by an S3 delete goes with its last file, as an S3 prefix, up to the workspace root", async () => {
		await mkdir("personal-files/made");
		await put("personal-files/made/a/b/only.txt");
		assert.equal((await del("personal-files/made/a/b/only.txt")).$metadata.httpStatusCode, 204);
		for (const p of ["made/a/b", "made/a", "made"]) assert.equal(await exists(`personal-files/${p}`), false, p);
		assert.ok(await exists("personal-files"));
		// Deleting one file of two leaves the folder.
		await put("personal-files/two/x.txt");
		await put("personal-files/two/y.txt");
		await del("personal-files/two/x.txt");
		assert.ok(await exists("personal-files/two"));
		await del("personal-files/two/y.txt");
		assert.equal(await exists("personal-files/two"), false);
		// A REST delete is Cells': the folder stays.
		await put("personal-files/rest/z.txt");
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "personal-files/rest/z.txt" }] }, token)).status, 200);
		assert.ok(await exists("personal-files/rest"));
	});

	it("keeps an emptied folder an ACL points to (a workspace's root, a restriction) or that carries metadata", async () => {
		for (const k of ["acl/f.txt", "root/f.txt", "meta/f.txt"]) await put(`ws-delstruct/keep/${k}`);
		const uuid = async (p: string) => (await stat(p)).body.Node.Uuid as string;
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: "some-team", NodeID: await uuid("ws-delstruct/keep/acl"), Action: { Name: "read", Value: "1" } }, node.admin)).status, 200);
		const rootUuid = await uuid("ws-delstruct/keep/root");
		const sub = await node.api("PUT", "/a/workspace/ws-sub", { Label: "Sub", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: { [rootUuid]: { Uuid: rootUuid, Path: "delstruct/keep/root" } } }, node.admin);
		assert.equal(sub.status, 200, sub.text);
		const meta = await node.api("POST", `/a/meta/set/${encodeURIComponent("ws-delstruct/keep/meta")}`, { Metadatas: [{ Namespace: "usermeta-note", JsonMeta: '"keep me"' }] }, token);
		assert.equal(meta.status, 200, meta.text);
		for (const k of ["acl/f.txt", "root/f.txt", "meta/f.txt"]) await del(`ws-delstruct/keep/${k}`);
		for (const k of ["acl", "root", "meta"]) assert.ok(await exists(`ws-delstruct/keep/${k}`), k);
		// Asked for by name, the folder a workspace stands on stays too; an empty folder with metadata goes.
		await del("ws-delstruct/keep/root/");
		await del("ws-delstruct/keep/acl/");
		assert.ok(await exists("ws-delstruct/keep/root"));
		assert.ok(await exists("ws-delstruct/keep/acl"));
		await del("ws-delstruct/keep/meta/");
		assert.equal(await exists("ws-delstruct/keep/meta"), false);
	});

	it("dir/ removes an empty folder; on a folder holding anything it removes nothing, and the folder goes with it", async () => {
		await mkdir("personal-files/empty/inner");
		assert.equal((await del("personal-files/empty/")).$metadata.httpStatusCode, 204);
		assert.ok(await exists("personal-files/empty/inner"), "not empty: nothing removed");
		await del("personal-files/empty/inner/");
		assert.equal(await exists("personal-files/empty/inner"), false);
		assert.equal(await exists("personal-files/empty"), false, "emptied: gone with its last folder");

		await mkdir("personal-files/team");
		await put("personal-files/team/plan.txt");
		await del("personal-files/team/");
		assert.ok(await exists("personal-files/team/plan.txt"));
		await del("personal-files/team/plan.txt");
		assert.equal(await exists("personal-files/team"), false);
	});

	it("a recursive listing shows empty folders as dir/ markers; a delimited one only prefixes", async () => {
		await mkdir("personal-files/lst/made/sub");
		await put("personal-files/lst/made/f.txt");
		await put("personal-files/lst/up/g.txt");
		assert.equal((await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/lst/marker/", Body: Buffer.alloc(0) }))).$metadata.httpStatusCode, 200);
		const all = await keys("personal-files/lst/");
		assert.deepEqual(all.contents, ["personal-files/lst/made/f.txt", "personal-files/lst/made/sub/", "personal-files/lst/marker/", "personal-files/lst/up/g.txt"]);
		const marker = all.contents.indexOf("personal-files/lst/marker/");
		const r = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "personal-files/lst/marker/" }));
		assert.equal(r.Contents?.[0].Size, 0);
		assert.equal(r.Contents?.[0].ETag, '"d41d8cd98f00b204e9800998ecf8427e"');
		assert.ok(marker >= 0);
		const top = await keys("personal-files/lst/", "/");
		assert.deepEqual(top, { contents: [], prefixes: ["personal-files/lst/made/", "personal-files/lst/marker/", "personal-files/lst/up/"] });
		// A marker PUT below missing folders: deleting it leaves nothing.
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/p1/p2/p3/", Body: Buffer.alloc(0) }));
		assert.deepEqual((await keys("personal-files/p1/")).contents, ["personal-files/p1/p2/p3/"]);
		await del("personal-files/p1/p2/p3/");
		assert.equal(await exists("personal-files/p1"), false);
	});

	it("a tree deleted key by key in parallel, in any order, markers included, leaves no folder (aws s3 rm --recursive)", async () => {
		await mkdir("personal-files/par/m1/m2");
		await mkdir("personal-files/par/e1/e2");
		await mkdir("personal-files/par/e3");
		for (let i = 0; i < 6; i++) await put(`personal-files/par/m1/m2/f${i}.txt`);
		for (let i = 0; i < 4; i++) await put(`personal-files/par/u1/u2/g${i}.txt`);
		await put("personal-files/par/top.txt");
		const listed = (await keys("personal-files/par/")).contents;
		assert.ok(listed.includes("personal-files/par/e1/e2/") && listed.includes("personal-files/par/e3/"), listed.join(","));
		// Markers first: the worst order for a folder that must go with its files.
		const order = [...listed.filter((k) => k.endsWith("/")), ...listed.filter((k) => !k.endsWith("/")).reverse()];
		const results = await Promise.all(order.map((k) => del(k)));
		assert.ok(results.every((r) => r.$metadata.httpStatusCode === 204));
		assert.equal(await exists("personal-files/par"), false);
		assert.deepEqual(await keys("personal-files/par/"), { contents: [], prefixes: [] });
	});

	it("DeleteObjects takes a folder with its content in one batch, markers first or last", async () => {
		await mkdir("personal-files/batch/a/b");
		await put("personal-files/batch/a/b/f.txt");
		await put("personal-files/batch/a/g.txt");
		await put("personal-files/batch/z.txt");
		const objects = ["personal-files/batch/", "personal-files/batch/a/", "personal-files/batch/a/b/", "personal-files/batch/a/b/f.txt", "personal-files/batch/a/g.txt", "personal-files/batch/z.txt"];
		const r = await s3.send(new DeleteObjectsCommand({ Bucket: "io", Delete: { Objects: objects.map((Key) => ({ Key })) } }));
		assert.equal(r.Errors, undefined);
		assert.deepEqual(r.Deleted?.map((d) => d.Key), objects, "answered in the order asked");
		assert.equal(await exists("personal-files/batch"), false);
		// Bad keys fail alone.
		const bad = await s3.send(new DeleteObjectsCommand({ Bucket: "io", Delete: { Objects: [{ Key: "personal-files/a//b" }, { Key: "personal-files/nothing.txt" }] } }));
		assert.deepEqual(bad.Errors?.map((e) => [e.Key, e.Code]), [["personal-files/a//b", "InvalidArgument"]]);
		assert.deepEqual(bad.Deleted?.map((d) => d.Key), ["personal-files/nothing.txt"]);
	});

	it("on a structured datasource, emptied folders leave its storage too, and files stay", async () => {
		for (const k of ["s/a/one.txt", "s/a/two.txt", "s/b/three.txt"]) await put(`ws-delstruct/${k}`);
		const root = join(node.dataDir, "delstruct");
		assert.ok(existsSync(join(root, "s/a/one.txt")));
		await del("ws-delstruct/s/a");
		await del("ws-delstruct/s/a/");
		assert.ok(existsSync(join(root, "s/a/one.txt")), "a folder's name removes nothing in storage");
		await del("ws-delstruct/s/a/one.txt");
		await del("ws-delstruct/s/a/two.txt");
		assert.equal(existsSync(join(root, "s/a")), false);
		assert.ok(existsSync(join(root, "s/b/three.txt")));
		await del("ws-delstruct/s/b/three.txt");
		assert.equal(existsSync(join(root, "s")), false);
		await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: "io", Key: "ws-delstruct/s/b/three.txt" })), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 404);
	});
});
