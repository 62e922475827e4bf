// Document tokens and scoped personal tokens reach only their nodes, with only the rights they name.
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";

describe("HTTP: tokens scoped to nodes", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	const get = (token: string, key: string) => fetch(`${node.url}/io/${key}`, { headers: { "X-Pydio-Bearer": token } });
	const put = (token: string, key: string, body: string) => fetch(`${node.url}/io/${key}`, { method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-Length": String(body.length) }, body });

	before(async () => {
		await node.api("PUT", "/a/user/alice", { Password: "Alice-Pass-1234", Attributes: { profile: "standard" } }, node.admin);
		alice = await node.login("alice", "Alice-Pass-1234");
		const s3 = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: alice, secretAccessKey: "gatewaysecret" } });
		for (const k of ["doc/a.txt", "doc/b.txt", "shared/x/one.txt"]) await s3.send(new PutObjectCommand({ Bucket: "io", Key: `common-files/${k}`, Body: k }));
	});

	it("a document token opens its document and nothing else", async () => {
		const r = await node.api("POST", "/a/auth/token/document", { Path: "common-files/doc/a.txt" }, alice);
		assert.equal(r.status, 200, r.text);
		const doc = r.body.AccessToken as string;
		assert.equal((await get(doc, "common-files/doc/a.txt")).status, 200);
		assert.equal((await put(doc, "common-files/doc/a.txt", "edited")).status, 200);
		assert.equal(await (await get(doc, "common-files/doc/a.txt")).text(), "edited");
		assert.equal((await get(doc, "common-files/doc/b.txt")).status, 403);
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fdoc%2Fb.txt", undefined, doc)).status, 403);
		assert.equal((await node.api("POST", "/a/auth/token/document", { Path: "common-files/doc/none.txt" }, alice)).status, 404);
		// The root lists only the workspace holding its document, on /a and as /io's top-level prefixes alike.
		const root = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["/*"] }, doc);
		assert.equal(root.status, 200, root.text);
		assert.deepEqual(root.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files"]);
		const all = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["/*"] }, alice);
		assert.ok(all.body.Nodes.length > 1);
		const prefixes = await (await fetch(`${node.url}/io?list-type=2&delimiter=%2F`, { headers: { "X-Pydio-Bearer": doc } })).text();
		assert.match(prefixes, /<Prefix>common-files\/<\/Prefix>/);
		assert.doesNotMatch(prefixes, /personal-files/);
	});

	it("a personal token scoped read-only to a folder reads below it and writes nowhere", async () => {
		const folder = (await node.api("GET", "/a/tree/stat/common-files%2Fshared", undefined, alice)).body.Node.Uuid;
		const r = await node.api("POST", "/a/auth/token/personal", { UserLogin: "alice", Label: "read shared", AutoRefresh: 3600, Scopes: [`node:${folder}:r`] }, alice);
		assert.equal(r.status, 200, r.text);
		const pat = r.body.AccessToken as string;
		assert.equal((await get(pat, "common-files/shared/x/one.txt")).status, 200);
		assert.equal((await put(pat, "common-files/shared/x/two.txt", "no")).status, 403);
		assert.equal((await get(pat, "common-files/doc/a.txt")).status, 403);
		const list = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/shared/x/*"] }, pat);
		assert.equal(list.status, 200);
		assert.deepEqual(list.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/shared/x/one.txt"]);
	});
});
