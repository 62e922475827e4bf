import assert from "node:assert/strict";
import { S3Client, PutObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import { zipTexts } from "../helpers/zip";

describe("HTTP: selections downloaded as one zip through /io", function () {
	this.timeout(30_000);
	const node = useNode();
	let token: string;
	let other: string;

	before(async () => {
		token = await node.login("admin", node.adminPassword);
		await node.api("PUT", "/a/user/zoe", { Password: "Zoe-Pass-12345", Attributes: { profile: "standard" } }, token);
		other = await node.login("zoe", "Zoe-Pass-12345");
		const s3 = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
		for (const [k, v] of Object.entries({ "sel/one.txt": "1", "sel/dir/two.txt": "22", "sel/dir/deep/three.txt": "333" })) await s3.send(new PutObjectCommand({ Bucket: "io", Key: `common-files/${k}`, Body: v }));
	});

	it("saves a selection and streams it as a zip with folders expanded", async () => {
		const sel = await node.api("POST", "/a/tree/selection", { Nodes: [{ Path: "common-files/sel/one.txt" }, { Path: "common-files/sel/dir" }] }, token);
		assert.equal(sel.status, 200, sel.text);
		assert.equal(sel.body.Nodes.length, 2);
		const r = await fetch(`${node.url}/io/common-files/download-${sel.body.SelectionUUID}.zip`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(r.status, 200);
		assert.equal(r.headers.get("content-type"), "application/zip");
		assert.equal(r.headers.get("content-disposition"), `attachment; filename="download.zip"; filename*=UTF-8''download.zip`, "named as the request names it");
		assert.deepEqual(await zipTexts(Buffer.from(await r.arrayBuffer())), { "one.txt": "1", "dir/two.txt": "22", "dir/deep/three.txt": "333" });
	});

	it("belongs to its creator and refuses unknown nodes", async () => {
		const sel = await node.api("POST", "/a/tree/selection", { Nodes: [{ Path: "common-files/sel/one.txt" }] }, token);
		const r = await fetch(`${node.url}/io/common-files/x-${sel.body.SelectionUUID}.zip`, { headers: { "X-Pydio-Bearer": other } });
		assert.equal(r.status, 404);
		assert.equal((await node.api("POST", "/a/tree/selection", { Nodes: [{ Path: "common-files/sel/none.txt" }] }, token)).status, 404);
		assert.equal((await node.api("POST", "/a/tree/selection", { Nodes: [] }, token)).status, 400);
	});
});
