// ACLs set on a folder narrow (or widen) what a user may do below it, on every path: REST and /io alike.
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";

describe("HTTP: ACLs on folders", function () {
	this.timeout(30_000);
	const node = useNode();
	let ann: string;
	let annUuid: string;

	const s3 = (token: string) => new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
	const uuidOf = async (p: string) => (await node.api("GET", `/a/tree/stat/${encodeURIComponent(p)}`, undefined, node.admin)).body.Node.Uuid as string;

	before(async () => {
		annUuid = (await node.api("PUT", "/a/user/ann", { Password: "Ann-Pass-12345", Attributes: { profile: "standard" } }, node.admin)).body.Uuid;
		ann = await node.login("ann", "Ann-Pass-12345");
		for (const [k, v] of Object.entries({ "acl/secret/plan.txt": "top secret", "acl/readonly/doc.txt": "read me", "acl/open/x.txt": "x" })) await s3(node.admin).send(new PutObjectCommand({ Bucket: "io", Key: `common-files/${k}`, Body: v }));
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: annUuid, NodeID: await uuidOf("common-files/acl/secret"), Action: { Name: "deny", Value: "1" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: annUuid, NodeID: await uuidOf("common-files/acl/readonly"), Action: { Name: "read", Value: "1" } }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: annUuid, NodeID: await uuidOf("common-files/acl/readonly"), Action: { Name: "write", Value: "0" } }, node.admin)).status, 200);
	});

	it("a denied folder is closed to the user, below it too, through REST and /io", async () => {
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Facl%2Fsecret%2Fplan.txt", undefined, ann)).status, 403);
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/acl/secret/*"] }, ann)).status, 403);
		await assert.rejects(s3(ann).send(new GetObjectCommand({ Bucket: "io", Key: "common-files/acl/secret/plan.txt" })), (e: { name: string }) => e.name === "AccessDenied");
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Facl%2Fsecret%2Fplan.txt", undefined, node.admin)).status, 200);
	});

	it("a read-only folder can be read but not written", async () => {
		const got = await s3(ann).send(new GetObjectCommand({ Bucket: "io", Key: "common-files/acl/readonly/doc.txt" }));
		assert.equal(await got.Body!.transformToString(), "read me");
		await assert.rejects(s3(ann).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/acl/readonly/new.txt", Body: "no" })), (e: { name: string }) => e.name === "AccessDenied");
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/acl/readonly/doc.txt" }] }, ann)).status, 403);
		// What a client shows: read-only permission bits and meta.
		const st = await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/acl/readonly/doc.txt")}`, undefined, ann);
		assert.equal(st.body.Node.Mode, 0o444);
		assert.equal(st.body.Node.MetaStore.node_readonly, "true");
		const open = await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/acl/open")}`, undefined, ann);
		assert.equal(open.body.Node.Mode, 0o755);
	});

	it("elsewhere the workspace rights apply", async () => {
		await s3(ann).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/acl/open/y.txt", Body: "yes" }));
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Facl%2Fopen%2Fy.txt", undefined, ann)).status, 200);
	});
});
