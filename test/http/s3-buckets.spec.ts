// The bucket as S3 tools ask about it: `io` and `data` (the same bucket, as Cells serves its gateway under both),
// every other name NoSuchBucket in S3's XML, CreateBucket of io answered BucketAlreadyOwnedByYou (rclone makes the
// bucket before uploading), a real creation date, ACLs (the caller owns everything it may write), configurations
// nobody set answered as S3 answers them, and object tags kept with the file.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
	S3Client,
	ListBucketsCommand,
	HeadBucketCommand,
	CreateBucketCommand,
	GetBucketLocationCommand,
	GetBucketAclCommand,
	GetBucketPolicyCommand,
	GetBucketCorsCommand,
	GetBucketLifecycleConfigurationCommand,
	GetBucketTaggingCommand,
	GetBucketRequestPaymentCommand,
	GetObjectAclCommand,
	GetObjectTaggingCommand,
	PutObjectTaggingCommand,
	DeleteObjectTaggingCommand,
	PutObjectCommand,
	GetObjectCommand,
	ListObjectsV2Command,
	CopyObjectCommand,
	CreateMultipartUploadCommand,
	UploadPartCommand,
	CompleteMultipartUploadCommand,
	DeleteObjectCommand,
} from "@aws-sdk/client-s3";
import { parseS3Request, isS3Request } from "../../lib/io/request";
import { S3Error } from "../../lib/io/xml";
import { useNode } from "../helpers/node";
import { s3Client } from "../helpers/s3";

type SdkError = { name: string; $metadata: { httpStatusCode?: number } };
const fails = (code: string, status?: number) => (e: SdkError) => {
	assert.equal(e.name, code);
	if (status) assert.equal(e.$metadata.httpStatusCode, status);
	return true;
};

describe("S3 bucket requests: classification", () => {
	const op = (m: string, url: string, h: Record<string, string> = {}) => parseS3Request(m, url, h).operation;
	const code = (f: () => unknown) => {
		try {
			f();
		} catch (e) {
			return (e as S3Error).code;
		}
		return "none";
	};

	it("reads the bucket's configurations and object ACLs and tags; data is io", () => {
		assert.equal(op("PUT", "/io"), "CreateBucket");
		assert.equal(op("PUT", "/io/?x-id=CreateBucket"), "CreateBucket");
		assert.equal(op("GET", "/io/?acl"), "GetBucketAcl");
		assert.equal(op("GET", "/io?policy"), "GetBucketPolicy");
		assert.equal(op("GET", "/io/?cors"), "GetBucketCors");
		assert.equal(op("GET", "/io/?lifecycle"), "GetBucketLifecycle");
		assert.equal(op("GET", "/io/?tagging"), "GetBucketTagging");
		assert.equal(op("GET", "/io/?requestPayment"), "GetBucketRequestPayment");
		assert.equal(op("GET", "/io/k?acl"), "GetObjectAcl");
		assert.equal(op("GET", "/io/k?tagging"), "GetObjectTagging");
		assert.equal(op("PUT", "/io/k?tagging"), "PutObjectTagging");
		assert.equal(op("DELETE", "/io/k?tagging"), "DeleteObjectTagging");
		assert.equal(parseS3Request("GET", "/data/ws/a.txt", {}).bucket, "data");
		assert.equal(parseS3Request("PUT", "/io/k", { "x-amz-copy-source": "/data/ws/a.txt" }).copySource?.bucket, "data");
	});

	it("refuses what stays unsupported, and other buckets", () => {
		assert.equal(code(() => parseS3Request("PUT", "/io/?acl", {})), "NotImplemented");
		assert.equal(code(() => parseS3Request("PUT", "/io/k?acl", {})), "NotImplemented");
		assert.equal(code(() => parseS3Request("POST", "/io/k?tagging", {})), "MethodNotAllowed");
		assert.equal(code(() => parseS3Request("DELETE", "/io", {})), "MethodNotAllowed");
		assert.equal(code(() => parseS3Request("GET", "/other/k", {})), "NoSuchBucket");
		assert.equal(code(() => parseS3Request("PUT", "/other", {})), "AccessDenied");
		assert.equal(code(() => parseS3Request("PUT", "/io/k", { "x-amz-copy-source": "/other/x" })), "NoSuchBucket");
	});

	it("routes to the gateway io, data and S3-signed requests outside /a, nothing else", () => {
		const signed = { authorization: "AWS4-HMAC-SHA256 Credential=x/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0" };
		assert.ok(isS3Request("GET", "/io", {}));
		assert.ok(isS3Request("GET", "/io/ws/a.txt", {}));
		assert.ok(isS3Request("GET", "/data?list-type=2", {}));
		assert.ok(isS3Request("GET", "/data/ws/a.txt?pydio_jwt=t", {}));
		assert.ok(isS3Request("GET", "/other/k", signed));
		assert.ok(isS3Request("PUT", "/other", signed));
		assert.ok(isS3Request("GET", "/other/k?X-Amz-Credential=x", {}));
		assert.ok(isS3Request("GET", "/", signed));
		assert.ok(!isS3Request("GET", "/", {}));
		assert.ok(!isS3Request("GET", "/other/k", {}));
		assert.ok(!isS3Request("GET", "/iox", {}));
		assert.ok(!isS3Request("POST", "/a/tree/stats", signed));
		assert.ok(!isS3Request("GET", "/a", signed));
	});
});

describe("HTTP: the io bucket answered as S3 does", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let login: string;
	let s3: S3Client;

	before(async () => {
		assert.equal((await node.api("PUT", "/a/user/bea", { Password: "Bea-Pass-12345", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		// One folder seen through two workspaces: writable in one, read-only in the other.
		assert.equal((await node.api("POST", "/a/config/datasource/shared", { StorageType: "LOCAL", FlatStorage: true, StorageConfiguration: { folder: "shared" } }, node.admin)).status, 200);
		const root = { "DATASOURCE:shared": { Uuid: "DATASOURCE:shared", Path: "shared" } };
		assert.equal((await node.api("PUT", "/a/workspace/ws-rw", { Label: "RW", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "rw" }), RootNodes: root }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/workspace/ws-ro", { Label: "RO", Attributes: JSON.stringify({ DEFAULT_RIGHTS: "r" }), RootNodes: root }, node.admin)).status, 200);
		login = "bea";
		token = await node.login(login, "Bea-Pass-12345");
		s3 = s3Client(node, token);
	});

	it("lists io only, created when Cellar was installed; io and data exist, other buckets do not", async () => {
		const r = await s3.send(new ListBucketsCommand({}));
		assert.deepEqual(r.Buckets?.map((b) => b.Name), ["io"]);
		const installed = JSON.parse(readFileSync(join(node.dataDir, "install.json"), "utf8")).installedAt as string;
		assert.equal(r.Buckets?.[0].CreationDate?.toISOString(), new Date(installed).toISOString());
		assert.ok((r.Buckets?.[0].CreationDate?.getTime() ?? 0) > Date.UTC(2020, 0, 1));
		assert.equal((await s3.send(new HeadBucketCommand({ Bucket: "io" }))).$metadata.httpStatusCode, 200);
		assert.equal((await s3.send(new HeadBucketCommand({ Bucket: "data" }))).$metadata.httpStatusCode, 200);
		await assert.rejects(s3.send(new HeadBucketCommand({ Bucket: "other" })), (e: SdkError) => e.$metadata.httpStatusCode === 404);
		await assert.rejects(s3.send(new ListObjectsV2Command({ Bucket: "other" })), fails("NoSuchBucket", 404));
		await assert.rejects(s3.send(new GetObjectCommand({ Bucket: "other", Key: "ws-rw/x.txt" })), fails("NoSuchBucket", 404));
	});

	it("answers CreateBucket of io or data BucketAlreadyOwnedByYou (409); of another name AccessDenied", async () => {
		await assert.rejects(s3.send(new CreateBucketCommand({ Bucket: "io" })), fails("BucketAlreadyOwnedByYou", 409));
		await assert.rejects(s3.send(new CreateBucketCommand({ Bucket: "data", CreateBucketConfiguration: { LocationConstraint: "eu-west-1" } })), fails("BucketAlreadyOwnedByYou", 409));
		await assert.rejects(s3.send(new CreateBucketCommand({ Bucket: "newbucket" })), fails("AccessDenied", 403));
	});

	it("answers an unknown bucket in S3's XML, and leaves unsigned requests outside /a to the REST gateway", async () => {
		const put = await fetch(`${node.url}/other/k`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(put.status, 404);
		assert.match(put.headers.get("content-type") ?? "", /json/, "not signed: not an S3 request");
		await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "other", Key: "k", Body: "x" })), (e: SdkError & { Code?: string }) => {
			assert.equal(e.$metadata.httpStatusCode, 404);
			assert.equal(e.name, "NoSuchBucket");
			return true;
		});
	});

	it("serves the same objects under data as under io", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "data", Key: "ws-rw/d/one.txt", Body: "one" }));
		assert.equal(await (await s3.send(new GetObjectCommand({ Bucket: "io", Key: "ws-rw/d/one.txt" }))).Body?.transformToString(), "one");
		const list = await s3.send(new ListObjectsV2Command({ Bucket: "data", Prefix: "ws-rw/d/" }));
		assert.equal(list.Name, "data");
		assert.deepEqual(list.Contents?.map((c) => c.Key), ["ws-rw/d/one.txt"]);
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "ws-rw/d/two.txt", CopySource: "data/ws-rw/d/one.txt" }));
		assert.equal(await (await s3.send(new GetObjectCommand({ Bucket: "data", Key: "ws-rw/d/two.txt" }))).Body?.transformToString(), "one");
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "data", Key: "ws-rw/d/mp.bin" }));
		const part = await s3.send(new UploadPartCommand({ Bucket: "data", Key: "ws-rw/d/mp.bin", UploadId, PartNumber: 1, Body: "parts" }));
		const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: "data", Key: "ws-rw/d/mp.bin", UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
		assert.equal(done.Bucket, "data");
		await s3.send(new DeleteObjectCommand({ Bucket: "data", Key: "ws-rw/d/two.txt" }));
		await assert.rejects(s3.send(new GetObjectCommand({ Bucket: "io", Key: "ws-rw/d/two.txt" })), fails("NoSuchKey", 404));
	});

	it("answers the bucket's configurations as S3 does for a bucket nobody configured", async () => {
		assert.equal((await s3.send(new GetBucketLocationCommand({ Bucket: "io" }))).LocationConstraint, undefined);
		const acl = await s3.send(new GetBucketAclCommand({ Bucket: "data" }));
		assert.equal(acl.Owner?.DisplayName, login);
		assert.deepEqual(acl.Grants?.map((g) => [g.Grantee?.Type, g.Grantee?.DisplayName, g.Permission]), [["CanonicalUser", login, "FULL_CONTROL"]]);
		await assert.rejects(s3.send(new GetBucketPolicyCommand({ Bucket: "io" })), fails("NoSuchBucketPolicy", 404));
		await assert.rejects(s3.send(new GetBucketCorsCommand({ Bucket: "io" })), fails("NoSuchCORSConfiguration", 404));
		await assert.rejects(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: "io" })), fails("NoSuchLifecycleConfiguration", 404));
		await assert.rejects(s3.send(new GetBucketTaggingCommand({ Bucket: "io" })), fails("NoSuchTagSet", 404));
		assert.equal((await s3.send(new GetBucketRequestPaymentCommand({ Bucket: "io" }))).Payer, "BucketOwner");
	});

	it("gives object ACLs: FULL_CONTROL where the caller may write, READ where it may only read", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "ws-rw/acl/f.txt", Body: "f" }));
		const rw = await s3.send(new GetObjectAclCommand({ Bucket: "io", Key: "ws-rw/acl/f.txt" }));
		assert.deepEqual(rw.Grants?.map((g) => g.Permission), ["FULL_CONTROL"]);
		const ro = await s3.send(new GetObjectAclCommand({ Bucket: "io", Key: "ws-ro/acl/f.txt" }));
		assert.deepEqual(ro.Grants?.map((g) => g.Permission), ["READ"]);
		await assert.rejects(s3.send(new GetObjectAclCommand({ Bucket: "io", Key: "ws-rw/acl/none.txt" })), fails("NoSuchKey", 404));
		await assert.rejects(s3.send(new GetObjectAclCommand({ Bucket: "io", Key: "ws-rw/acl" })), fails("NoSuchKey", 404));
		assert.equal((await s3.send(new GetObjectAclCommand({ Bucket: "io", Key: "ws-rw/acl/" }))).Grants?.length, 1, "a folder's marker");
	});

	it("keeps object tags with the file, checks them as S3 does, and only through S3 writes", async () => {
		const Key = "ws-rw/tags/report.pdf";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "pdf" }));
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key }))).TagSet, []);
		const TagSet = [
			{ Key: "project", Value: "cellar" },
			{ Key: "Année", Value: "2024 Q1/final" },
			{ Key: "empty", Value: "" },
		];
		assert.equal((await s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet } }))).$metadata.httpStatusCode, 200);
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "data", Key }))).TagSet, TagSet);
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key: "ws-ro/tags/report.pdf" }))).TagSet, TagSet, "read-only: readable");
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key: "ws-ro/tags/report.pdf", Tagging: { TagSet: [] } })), fails("AccessDenied", 403));
		// New content keeps the node's tags, as Cells keeps a node's metadata.
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "pdf v2" }));
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key }))).TagSet, TagSet);
		// S3's rules.
		const many = Array.from({ length: 11 }, (_, i) => ({ Key: `k${i}`, Value: "v" }));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet: many } })), fails("InvalidTag", 400));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet: [{ Key: "a", Value: "1" }, { Key: "a", Value: "2" }] } })), fails("InvalidTag", 400));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet: [{ Key: "aws:x", Value: "1" }] } })), fails("InvalidTag", 400));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet: [{ Key: "x".repeat(129), Value: "1" }] } })), fails("InvalidTag", 400));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key, Tagging: { TagSet: [{ Key: "bad<", Value: "1" }] } })), fails("InvalidTag", 400));
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key }))).TagSet, TagSet, "a refused set changes nothing");
		// Not an object: a folder, or nothing.
		await assert.rejects(s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key: "ws-rw/tags" })), fails("NoSuchKey", 404));
		await assert.rejects(s3.send(new PutObjectTaggingCommand({ Bucket: "io", Key: "ws-rw/tags/none.pdf", Tagging: { TagSet } })), fails("NoSuchKey", 404));
		// The REST API cannot write them.
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent(Key)}`, undefined, token);
		assert.equal(JSON.parse(stat.body.Node.MetaStore.s3_tags).project, "cellar");
		const meta = await node.api("POST", `/a/meta/set/${encodeURIComponent(Key)}`, { Metadatas: [{ Namespace: "s3_tags", JsonMeta: '{"x":"y"}' }] }, token);
		assert.equal(meta.status, 403, meta.text);
		assert.equal((await node.api("POST", `/a/meta/set/${encodeURIComponent(Key)}`, { Metadatas: [{ Namespace: "usermeta-x", JsonMeta: '"y"' }] }, token)).status, 200, "other metadata can");
		assert.equal((await s3.send(new DeleteObjectTaggingCommand({ Bucket: "io", Key }))).$metadata.httpStatusCode, 204);
		assert.deepEqual((await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key }))).TagSet, []);
	});

	it("takes tags with the write (x-amz-tagging), and copies carry the source's unless told otherwise", async () => {
		const tags = async (Key: string) => (await s3.send(new GetObjectTaggingCommand({ Bucket: "io", Key }))).TagSet?.map((t) => `${t.Key}=${t.Value}`);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "ws-rw/tw/a.txt", Body: "a", Tagging: "team=ops&note=two%20words" }));
		assert.deepEqual(await tags("ws-rw/tw/a.txt"), ["team=ops", "note=two words"]);
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "ws-rw/tw/b.txt", CopySource: "io/ws-rw/tw/a.txt" }));
		assert.deepEqual(await tags("ws-rw/tw/b.txt"), ["team=ops", "note=two words"]);
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "ws-rw/tw/b.txt", CopySource: "io/ws-rw/tw/a.txt", TaggingDirective: "REPLACE", Tagging: "only=this" }));
		assert.deepEqual(await tags("ws-rw/tw/b.txt"), ["only=this"]);
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key: "ws-rw/tw/mp.bin", Tagging: "big=yes" }));
		const part = await s3.send(new UploadPartCommand({ Bucket: "io", Key: "ws-rw/tw/mp.bin", UploadId, PartNumber: 1, Body: "parts" }));
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key: "ws-rw/tw/mp.bin", UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
		assert.deepEqual(await tags("ws-rw/tw/mp.bin"), ["big=yes"]);
		await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "io", Key: "ws-rw/tw/bad.txt", Body: "x", Tagging: "aws:no=1" })), fails("InvalidTag", 400));
		await assert.rejects(s3.send(new GetObjectCommand({ Bucket: "io", Key: "ws-rw/tw/bad.txt" })), fails("NoSuchKey", 404), "refused before anything is written");
	});
});
