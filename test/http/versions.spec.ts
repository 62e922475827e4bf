// Versioning end to end: files overwritten through /io keep their previous contents, listed with
// /a/tree/stats {Versions:true}, downloaded and restored with the AWS SDK's VersionId, pruned per policy; and
// the /a/config/versioning routes.
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand, CopyObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

interface VersionNode {
	Uuid: string;
	Path: string;
	Size?: string;
	Etag?: string;
	MetaStore: Record<string, string>;
	Commits?: { Uuid: string; MTime?: string; Size?: string; OwnerUuid?: string; Description?: string }[];
}

describe("HTTP: versioning", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;
	const key = "common-files/versions/doc.txt";

	before(async () => {
		token = await addUser(node, node.admin, "vera", "Vera-Pass-12345");
		s3 = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
	});

	const put = (k: string, body: string) => s3.send(new PutObjectCommand({ Bucket: "io", Key: k, Body: body }));
	const text = async (k: string, VersionId?: string) => (await s3.send(new GetObjectCommand({ Bucket: "io", Key: k, VersionId }))).Body!.transformToString();
	async function versions(path: string): Promise<VersionNode[]> {
		const r = await node.api("POST", "/a/tree/stats", { NodePaths: [path], Versions: true }, token);
		assert.equal(r.status, 200, r.text);
		return r.body.Nodes ?? [];
	}

	it("keeps previous contents of a file uploaded three times, newest first, as Cells lists them", async () => {
		for (const body of ["first", "second!", "third!!!"]) await put(key, body);
		const list = await versions(key);
		assert.equal(list.length, 2);
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent(key)}`, undefined, token);
		for (const v of list) {
			assert.equal(v.Uuid, stat.body.Node.Uuid);
			assert.equal(v.Path, key);
			assert.equal(v.Commits?.length, 1);
			assert.equal(JSON.parse(v.MetaStore.versionId), v.Commits![0].Uuid);
			assert.ok(JSON.parse(v.MetaStore.versionDescription));
		}
		assert.deepEqual(list.map((v) => v.Size), ["7", "5"]);
		assert.deepEqual(list.map((v) => v.Commits![0].Size), ["7", "5"]);
		// A folder has no versions; a missing file is a 404.
		assert.deepEqual(await versions("common-files/versions"), []);
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/versions/nope.txt"], Versions: true }, token)).status, 404);
	});

	it("downloads an old version with VersionId, and refuses a version of another file", async () => {
		const [newer, older] = await versions(key);
		assert.equal(await text(key, older.Commits![0].Uuid), "first");
		assert.equal(await text(key, newer.Commits![0].Uuid), "second!");
		assert.equal(await text(key), "third!!!");
		const head = await s3.send(new HeadObjectCommand({ Bucket: "io", Key: key, VersionId: older.Commits![0].Uuid }));
		assert.equal(head.ContentLength, 5);
		await put("common-files/versions/other.txt", "other");
		await assert.rejects(text("common-files/versions/other.txt", older.Commits![0].Uuid), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 404);
		await assert.rejects(text(key, "no-such-version"), (e: { $metadata: { httpStatusCode: number } }) => e.$metadata.httpStatusCode === 404);
	});

	it("restores a version with CopyObject onto the same key, keeping the replaced content as a version", async () => {
		const [, older] = await versions(key);
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: key, CopySource: `io/${key}?versionId=${older.Commits![0].Uuid}` }));
		assert.equal(await text(key), "first");
		const list = await versions(key);
		assert.equal(list.length, 3);
		assert.equal(await text(key, list[0].Commits![0].Uuid), "third!!!");
		// Copying a version to another key works too.
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "common-files/versions/copy.txt", CopySource: `io/${key}?versionId=${list[1].Commits![0].Uuid}` }));
		assert.equal(await text("common-files/versions/copy.txt"), "second!");
	});

	it("serves the policy routes to administrators only, with validation and protections", async () => {
		const list = await node.api("GET", "/a/config/versioning", undefined, node.admin);
		assert.equal(list.status, 200);
		assert.deepEqual(list.body.Policies.map((p: { Uuid: string }) => p.Uuid), ["default-policy", "keep-all", "regular-pruning"]);
		const def = await node.api("GET", "/a/config/versioning/default-policy", undefined, node.admin);
		assert.equal(def.status, 200);
		assert.equal(def.body.VersionsDataSourceName, "versions");
		assert.deepEqual(def.body.KeepPeriods, [{ IntervalStart: "0", MaxNumber: -1 }, { IntervalStart: "15d", MaxNumber: 10 }, { IntervalStart: "30d" }]);
		assert.equal((await node.api("GET", "/a/config/versioning/nope", undefined, node.admin)).status, 404);
		assert.equal((await node.api("GET", "/a/config/versioning", undefined, token)).status, 403);
		assert.equal((await node.api("GET", "/a/config/versioning")).status, 401);
		assert.equal((await node.api("POST", "/a/config/versioning/mine", { Name: "Mine" }, token)).status, 403);

		const created = await node.api("POST", "/a/config/versioning/small", { Name: "Small", MaxTotalSize: "1000000", KeepPeriods: [{ IntervalStart: "1h", MaxNumber: 1 }, { IntervalStart: "0", MaxNumber: 5 }], NodeDeletedStrategy: "KeepNone" }, node.admin);
		assert.equal(created.status, 200, created.text);
		assert.equal(created.body.MaxTotalSize, "1000000");
		assert.deepEqual(created.body.KeepPeriods.map((p: { IntervalStart: string }) => p.IntervalStart), ["0", "1h"]);
		assert.equal(created.body.NodeDeletedStrategy, "KeepNone");
		assert.equal((await node.api("GET", "/a/config/versioning/small", undefined, node.admin)).body.Name, "Small");

		for (const bad of [
			{ Name: "" },
			{ Name: "x", KeepPeriods: [{ IntervalStart: "soon", MaxNumber: 1 }] },
			{ Name: "x", KeepPeriods: [{ IntervalStart: "1d", MaxNumber: -3 }] },
			{ Name: "x", NodeDeletedStrategy: "KeepSome" },
			{ Name: "x", MaxSizePerFile: "-7" },
			{ Name: "x", VersionsDataSourceName: "nosuchds" },
			{ Name: "x", VersionsDataSourceName: "pydiods1" },
			{ Name: "x", Bogus: 1 },
		]) {
			const r = await node.api("POST", "/a/config/versioning/bad", bad, node.admin);
			assert.equal(r.status, 400, `${JSON.stringify(bad)} -> ${r.status} ${r.text}`);
		}
		assert.equal((await node.api("POST", "/a/config/versioning/a..b", { Name: "x" }, node.admin)).status, 400);

		assert.equal((await node.api("DELETE", "/a/config/versioning/default-policy", undefined, node.admin)).status, 403);
		assert.equal((await node.api("DELETE", "/a/config/versioning/small", undefined, token)).status, 403);
		assert.equal((await node.api("DELETE", "/a/config/versioning/nope", undefined, node.admin)).status, 404);
		const del = await node.api("DELETE", "/a/config/versioning/small", undefined, node.admin);
		assert.equal(del.status, 200);
		assert.equal(del.body.Success, true);
		assert.equal((await node.api("GET", "/a/config/versioning/small", undefined, node.admin)).status, 404);
	});

	it("keeps no version for an upload that changes nothing, nor for one that was cut", async () => {
		const k = "common-files/versions/steady.txt";
		await put(k, "steady");
		await put(k, "steady");
		assert.deepEqual(await versions(k), [], "the same bytes again are not a new version");
		const { request } = await import("node:http");
		const url = new URL(`${node.url}/io/${k}`);
		await new Promise<void>((resolve) => {
			const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "PUT", headers: { "X-Pydio-Bearer": token, "Content-Length": String(1024 * 1024) } });
			req.on("error", () => resolve());
			req.write(Buffer.alloc(64 * 1024, 1));
			setTimeout(() => {
				req.destroy();
				resolve();
			}, 200);
		});
		await new Promise((r) => setTimeout(r, 300));
		assert.deepEqual(await versions(k), [], "a cut upload replaced nothing");
		assert.equal(await text(k), "steady");
		await put(k, "changed");
		const list = await versions(k);
		assert.equal(list.length, 1);
		assert.equal(await text(k, list[0].Commits![0].Uuid), "steady");
	});

	it("prunes with a policy limiting MaxNumber, and refuses to delete a policy a datasource uses", async () => {
		assert.equal((await node.api("POST", "/a/config/versioning/two", { Name: "Two", KeepPeriods: [{ IntervalStart: "0", MaxNumber: 2 }] }, node.admin)).status, 200);
		const ds = await node.api("GET", "/a/config/datasource/pydiods1", undefined, node.admin);
		assert.equal(ds.body.VersioningPolicyName, "default-policy");
		const updated = await node.api("POST", "/a/config/datasource/pydiods1", { ...ds.body, VersioningPolicyName: "two" }, node.admin);
		assert.equal(updated.status, 200, updated.text);
		const k = "common-files/versions/pruned.txt";
		for (let i = 0; i < 6; i++) await put(k, `content ${i}`);
		const list = await versions(k);
		assert.equal(list.length, 2);
		assert.equal(await text(k, list[0].Commits![0].Uuid), "content 4");
		const used = await node.api("DELETE", "/a/config/versioning/two", undefined, node.admin);
		assert.equal(used.status, 409);
		assert.match(used.text, /pydiods1/);
		// The hourly prune under a stricter policy: a version list asked again at once no longer shows the dropped one
		// (the gateway's cached answer is dropped with it).
		assert.equal((await node.api("POST", "/a/config/versioning/two", { Name: "Two", KeepPeriods: [{ IntervalStart: "0", MaxNumber: 1 }] }, node.admin)).status, 200);
		assert.equal((await versions(k)).length, 2);
		const pruned = (await node.broker.call("versions.prune", {})) as { Removed: number };
		assert.equal(pruned.Removed, 1);
		const after = await versions(k);
		assert.equal(after.length, 1);
		assert.equal(await text(k, after[0].Commits![0].Uuid), "content 4");
	});
});
