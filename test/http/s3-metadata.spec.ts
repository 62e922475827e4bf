// What S3 clients store with an object and read back through /io: Content-Type, Content-Disposition,
// Content-Encoding, Cache-Control, Content-Language, Expires and x-amz-meta-*, given to PutObject,
// CreateMultipartUpload (kept until CompleteMultipartUpload) and CopyObject (COPY / REPLACE), answered by HEAD
// and GET, replaced by overwrites.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import {
	S3Client,
	PutObjectCommand,
	GetObjectCommand,
	HeadObjectCommand,
	CopyObjectCommand,
	CreateMultipartUploadCommand,
	UploadPartCommand,
	CompleteMultipartUploadCommand,
	type HeadObjectCommandOutput,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { s3Client } from "../helpers/s3";

type S3Failure = { name: string; $metadata: { httpStatusCode?: number } };

describe("HTTP: S3 object metadata through /io", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let s3: S3Client;

	before(async () => {
		token = await addUser(node, node.admin, "meta-mia", "Mia-Pass-12345");
		s3 = s3Client(node, token);
	});

	const head = (Key: string) => s3.send(new HeadObjectCommand({ Bucket: "io", Key }));
	const expires = new Date("2031-05-01T10:00:00Z");
	const full = {
		ContentType: "application/vnd.cellar+json",
		ContentDisposition: 'attachment; filename="report.json"',
		ContentEncoding: "identity",
		CacheControl: "max-age=3600, private",
		ContentLanguage: "fr-CH",
		Expires: expires,
		Metadata: { mtime: "1700000000.123456789", "md5chksum": "XrY7u+Ae7tCTyyK7j1rNww==", owner: "mia" },
	};
	function assertFull(h: HeadObjectCommandOutput, what: string): void {
		assert.equal(h.ContentType, full.ContentType, what);
		assert.equal(h.ContentDisposition, full.ContentDisposition, what);
		assert.equal(h.ContentEncoding, full.ContentEncoding, what);
		assert.equal(h.CacheControl, full.CacheControl, what);
		assert.equal(h.ContentLanguage, full.ContentLanguage, what);
		assert.equal(h.Expires?.getTime(), expires.getTime(), what);
		assert.deepEqual(h.Metadata, full.Metadata, what);
	}

	it("stores the headers of a PutObject and answers them on HEAD and GET", async () => {
		const Key = "personal-files/meta/report.json";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: '{"a":1}', ...full }));
		assertFull(await head(Key), "HEAD");
		const got = await s3.send(new GetObjectCommand({ Bucket: "io", Key }));
		assertFull(got as HeadObjectCommandOutput, "GET");
		assert.equal(await got.Body!.transformToString(), '{"a":1}');
		// response-* overrides still take precedence over what is stored.
		const over = await s3.send(new GetObjectCommand({ Bucket: "io", Key, ResponseContentType: "text/plain", ResponseContentDisposition: "inline", ResponseCacheControl: "no-store" }));
		assert.equal(over.ContentType, "text/plain");
		assert.equal(over.ContentDisposition, "inline");
		assert.equal(over.CacheControl, "no-store");
		assert.equal(over.ContentLanguage, "fr-CH");
		await over.Body!.transformToString();
		// A Range read answers them too.
		const part = await s3.send(new GetObjectCommand({ Bucket: "io", Key, Range: "bytes=0-2" }));
		assert.equal(part.Metadata?.mtime, full.Metadata.mtime);
		assert.equal(await part.Body!.transformToString(), '{"a');
	});

	it("answers the type derived from the name when none was stored, the stored one otherwise", async () => {
		const plain = await fetch(`${node.url}/io/personal-files/meta/notes.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: Buffer.from("notes") });
		assert.equal(plain.status, 200);
		const h = await head("personal-files/meta/notes.txt");
		assert.match(h.ContentType ?? "", /^text\/plain/);
		assert.deepEqual(h.Metadata, {});
		assert.equal(h.CacheControl, undefined);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/meta/page.txt", Body: "<p>hi</p>", ContentType: "text/html; charset=utf-8" }));
		const r = await fetch(`${node.url}/io/personal-files/meta/page.txt`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
		assert.equal(await r.text(), "<p>hi</p>");
		// application/octet-stream, which the SDK sends when its caller gave no type, means "unknown": the name's type.
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/meta/report.pdf", Body: "%PDF-1.4", ContentType: "application/octet-stream" }));
		assert.equal((await head("personal-files/meta/report.pdf")).ContentType, "application/pdf");
	});

	it("replaces the headers on overwrite: what the new content was sent with, nothing of the old", async () => {
		const Key = "personal-files/meta/over.bin";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "one", ...full }));
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "two", Metadata: { mtime: "1700000099" } }));
		const h = await head(Key);
		assert.deepEqual(h.Metadata, { mtime: "1700000099" });
		assert.equal(h.CacheControl, undefined);
		assert.equal(h.ContentDisposition, undefined);
		assert.equal(h.ContentLanguage, undefined);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "three" }));
		assert.deepEqual((await head(Key)).Metadata, {});
	});

	it("keeps the headers of a streamed aws-chunked upload without its framing encoding", async () => {
		const Key = "personal-files/meta/streamed.bin";
		const body = Buffer.alloc(200_000, 3);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: Readable.from([body.subarray(0, 70_000), body.subarray(70_000)]), ContentLength: body.length, ContentEncoding: "gzip", Metadata: { mtime: "1" } }));
		const h = await head(Key);
		assert.equal(h.ContentEncoding, "gzip", "aws-chunked is the transfer's framing, never stored");
		assert.deepEqual(h.Metadata, { mtime: "1" });
		assert.equal(h.ContentLength, body.length);
	});

	it("carries the headers of CreateMultipartUpload to the completed object", async () => {
		const Key = "personal-files/meta/multi.bin";
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key, ...full }));
		const parts = [Buffer.alloc(5 * 1024 * 1024, 1), Buffer.from("tail")];
		const etags = [];
		for (let i = 0; i < parts.length; i++) etags.push((await s3.send(new UploadPartCommand({ Bucket: "io", Key, UploadId, PartNumber: i + 1, Body: parts[i] }))).ETag);
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key, UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) } }));
		const h = await head(Key);
		assertFull(h, "multipart HEAD");
		assert.match(h.ETag ?? "", /-2"$/, "a multipart ETag, not an md5: why rclone reads x-amz-meta-md5chksum");
		// The same through lib-storage, as most SDK users upload.
		await new Upload({ client: s3, params: { Bucket: "io", Key: "personal-files/meta/lib.bin", Body: Readable.from([Buffer.alloc(11 * 1024 * 1024, 9)]), Metadata: { mtime: "42" }, ContentType: "application/x-test" }, partSize: 5 * 1024 * 1024 }).done();
		const l = await head("personal-files/meta/lib.bin");
		assert.deepEqual(l.Metadata, { mtime: "42" });
		assert.equal(l.ContentType, "application/x-test");
		// An upload id is signed: headers cannot be slipped into one.
		const forged = `${Buffer.from(JSON.stringify({ h: { "x-amz-meta-evil": "1" } })).toString("base64url")}.${UploadId!.split(".")[1]}`;
		await assert.rejects(s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key, UploadId: forged, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: etags[0] }] } })), (e: S3Failure) => e.name === "NoSuchUpload");
	});

	it("copies the source's headers by default (COPY) and takes the request's with REPLACE", async () => {
		const src = "personal-files/meta/src.json";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: src, Body: "{}", ...full }));
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal-files/meta/copy-default.json", CopySource: `io/${src}` }));
		assertFull(await head("personal-files/meta/copy-default.json"), "COPY by default");
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal-files/meta/copy-explicit.json", CopySource: `io/${src}`, MetadataDirective: "COPY", Metadata: { ignored: "yes" } }));
		assertFull(await head("personal-files/meta/copy-explicit.json"), "COPY given");
		await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal-files/meta/copy-replace.json", CopySource: `io/${src}`, MetadataDirective: "REPLACE", Metadata: { mtime: "5" }, ContentType: "text/x-replaced" }));
		const r = await head("personal-files/meta/copy-replace.json");
		assert.deepEqual(r.Metadata, { mtime: "5" });
		assert.equal(r.ContentType, "text/x-replaced");
		assert.equal(r.CacheControl, undefined);
		assertFull(await head(src), "the source is left as it was");
	});

	it("updates only the headers of a copy onto itself with REPLACE (how rclone sets a time), refuses one without", async () => {
		const Key = "personal-files/meta/self.txt";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "same bytes", Metadata: { mtime: "100" } }));
		const before = await node.api("GET", `/a/tree/stat/${encodeURIComponent(Key)}`, undefined, token);
		const copied = await s3.send(new CopyObjectCommand({ Bucket: "io", Key, CopySource: `io/${Key}`, MetadataDirective: "REPLACE", Metadata: { mtime: "200" }, ContentType: "text/plain" }));
		assert.equal(copied.CopyObjectResult?.ETag, (await head(Key)).ETag);
		const h = await head(Key);
		assert.deepEqual(h.Metadata, { mtime: "200" });
		const after = await node.api("GET", `/a/tree/stat/${encodeURIComponent(Key)}`, undefined, token);
		assert.equal(after.body.Node.Uuid, before.body.Node.Uuid);
		assert.equal(after.body.Node.Etag, before.body.Node.Etag);
		assert.equal(await (await s3.send(new GetObjectCommand({ Bucket: "io", Key }))).Body!.transformToString(), "same bytes");
		await assert.rejects(s3.send(new CopyObjectCommand({ Bucket: "io", Key, CopySource: `io/${Key}` })), (e: S3Failure) => e.name === "InvalidRequest" && e.$metadata.httpStatusCode === 400);
		assert.deepEqual((await head(Key)).Metadata, { mtime: "200" });
	});

	it("refuses more than 2 KB of user metadata with MetadataTooLarge, creating nothing", async () => {
		const big = { a: "x".repeat(1500), b: "y".repeat(600) };
		await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/toolarge/a.txt", Body: "x", Metadata: big })), (e: S3Failure) => e.name === "MetadataTooLarge" && e.$metadata.httpStatusCode === 400);
		await assert.rejects(s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key: "personal-files/toolarge/b.bin", Metadata: big })), (e: S3Failure) => e.name === "MetadataTooLarge");
		await assert.rejects(s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal-files/toolarge/c.txt", CopySource: "io/personal-files/meta/notes.txt", MetadataDirective: "REPLACE", Metadata: big })), (e: S3Failure) => e.name === "MetadataTooLarge");
		assert.equal((await node.api("GET", "/a/tree/stat/personal-files%2Ftoolarge", undefined, token)).status, 404, "no folder made");
		// Just under the limit is fine, and a multipart upload id carries it.
		const fits = { a: "x".repeat(1000), b: "y".repeat(1000) };
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/meta/fits.txt", Body: "x", Metadata: fits }));
		assert.deepEqual((await head("personal-files/meta/fits.txt")).Metadata, fits);
		const Key = "personal-files/meta/fits.bin";
		const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key, Metadata: fits, CacheControl: "c".repeat(1500) }));
		const p = await s3.send(new UploadPartCommand({ Bucket: "io", Key, UploadId, PartNumber: 1, Body: "only part" }));
		await s3.send(new CompleteMultipartUploadCommand({ Bucket: "io", Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p.ETag }] } }));
		const h = await head(Key);
		assert.deepEqual(h.Metadata, fits);
		assert.equal(h.CacheControl, "c".repeat(1500));
	});

	it("keeps the stored headers out of reach of /a/meta/set (they are answered as headers)", async () => {
		const r = await node.api("POST", `/a/meta/set/${encodeURIComponent("personal-files/meta/notes.txt")}`, { Metadatas: [{ Namespace: "s3_headers", JsonMeta: JSON.stringify({ "x-amz-meta-a": "b" }) }] }, token);
		assert.equal(r.status, 403, r.text);
	});

	it("answers a kept version without the current content's headers", async () => {
		const Key = "common-files/meta-versions/v.txt";
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "old", Metadata: { mtime: "1" } }));
		await s3.send(new PutObjectCommand({ Bucket: "io", Key, Body: "new", Metadata: { mtime: "2" } }));
		const list = await node.api("POST", "/a/tree/stats", { NodePaths: [Key], Versions: true }, token);
		const versionId: string = list.body.Nodes[0].Commits[0].Uuid;
		const old = await s3.send(new GetObjectCommand({ Bucket: "io", Key, VersionId: versionId }));
		assert.equal(await old.Body!.transformToString(), "old");
		assert.deepEqual(old.Metadata, {});
		assert.deepEqual((await head(Key)).Metadata, { mtime: "2" });
	});
});
