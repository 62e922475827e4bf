// S3 protocol layer of the /io gateway (lib/io/*): the real @aws-sdk/client-s3 talks to a tiny in-test gateway
// built only from lib/io (SigV4 verification, request classification, aws-chunked decoding, XML answers); the
// captured requests are checked piece by piece, plus AWS's documented SigV4 test vectors.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable, type Transform } from "node:stream";
import { crc32 } from "node:zlib";
import {
	AbortMultipartUploadCommand,
	CompleteMultipartUploadCommand,
	CopyObjectCommand,
	CreateMultipartUploadCommand,
	DeleteObjectCommand,
	DeleteObjectsCommand,
	GetBucketLocationCommand,
	GetObjectCommand,
	HeadBucketCommand,
	HeadObjectCommand,
	ListBucketsCommand,
	ListMultipartUploadsCommand,
	ListObjectsCommand,
	ListObjectsV2Command,
	ListPartsCommand,
	PutObjectCommand,
	S3Client,
	UploadPartCommand,
	UploadPartCopyCommand,
} from "@aws-sdk/client-s3";
import { AwsChunkedDecoder, chunkSignature, createBodyDecoder, Sha256Verifier, trailerSignature } from "../../lib/io/chunked";
import { contentRange, parseCopySource, parseS3Request, payloadInfo, resolveRange, type S3Request } from "../../lib/io/request";
import {
	deriveSigningKey,
	extractCredentials,
	GATEWAY_SECRET,
	presignUrl,
	stripPydioJwt,
	verifySigV4,
	type Credentials,
	type SigV4Credentials,
	type VerifyOk,
	type VerifyResult,
} from "../../lib/io/sigv4";
import {
	completeMultipartUploadXml,
	copyObjectResultXml,
	copyPartResultXml,
	deleteResultXml,
	errorResponse,
	initiateMultipartUploadXml,
	listBucketsXml,
	listMultipartUploadsXml,
	listObjectsV1Xml,
	listObjectsV2Xml,
	listPartsXml,
	locationXml,
	parseCompleteMultipartUpload,
	parseDeleteObjects,
	parseXml,
	S3_ERROR_STATUS,
	S3Error,
	toS3Error,
	type S3ErrorCode,
	type S3ObjectEntry,
} from "../../lib/io/xml";

// A JWT-looking access key (~500 chars, dots, base64url) as Cells clients use.
const b64u = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const JWT = [
	b64u({ alg: "RS256", kid: "cellar-1", typ: "JWT" }),
	b64u({ sub: "admin", name: "admin", iss: "http://127.0.0.1/oidc", aud: ["cells-frontend"], exp: 4102444800, iat: 1700000000, sid: "f3b1d0a4-7c2e-4a55-9b1e-0c3f6d7a8e90", scope: "openid email profile pydio offline", claims: { roles: ["ROOT_GROUP", "ADMINS"] } }),
	randomBytes(256).toString("base64url"),
].join(".");
const PAT = "pat_" + randomBytes(32).toString("base64url");

// AWS documentation examples (SigV4 for S3).
const AWS_KEY = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const AWS_TIME = Date.UTC(2013, 4, 24, 0, 0, 0);

interface Captured {
	method: string;
	url: string;
	headers: IncomingHttpHeaders;
	body: Buffer;
	creds: Credentials;
	verify?: VerifyResult;
	parsed?: S3Request;
	error?: S3Error;
	decoded?: Buffer;
	trailers?: Record<string, string>;
}

async function pipeAll(t: Transform, pieces: Buffer[]): Promise<Buffer> {
	const out: Buffer[] = [];
	t.on("data", (d: Buffer) => out.push(d));
	const done = new Promise<void>((resolve, reject) => {
		t.on("end", resolve);
		t.on("error", reject);
	});
	for (const p of pieces) t.write(p);
	t.end();
	await done;
	return Buffer.concat(out);
}

/** A miniature /io gateway made of lib/io only; every request is recorded in `log`. */
class FakeGateway {
	server: Server;
	port = 0;
	log: Captured[] = [];
	objects = new Map<string, { body: Buffer; etag: string; modified: Date; type?: string }>();
	secret = GATEWAY_SECRET;

	constructor() {
		this.server = createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on("data", (c: Buffer) => chunks.push(c));
			req.on("end", () => {
				const cap: Captured = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks), creds: { kind: "none" } };
				this.log.push(cap);
				this.handle(cap)
					.then(({ status, headers, body }) => {
						res.writeHead(status, headers);
						res.end(req.method === "HEAD" ? undefined : body);
					})
					.catch((err) => {
						const e = errorResponse(err, req.url!.split("?")[0], "req-1");
						cap.error = e.error;
						res.writeHead(e.status, e.headers);
						res.end(req.method === "HEAD" ? undefined : e.body);
					});
			});
		});
	}

	async start(): Promise<void> {
		await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
		this.port = (this.server.address() as AddressInfo).port;
	}
	async stop(): Promise<void> {
		this.server.closeAllConnections();
		await new Promise<void>((r) => this.server.close(() => r()));
	}
	last(): Captured {
		return this.log[this.log.length - 1];
	}

	private async handle(c: Captured): Promise<{ status: number; headers: Record<string, string>; body?: Buffer | string }> {
		c.creds = extractCredentials(c.method, c.url, c.headers);
		let auth: VerifyOk | undefined;
		if (c.creds.kind === "sigv4-header" || c.creds.kind === "sigv4-query") {
			c.verify = verifySigV4({ method: c.method, url: c.url, headers: c.headers }, c.creds, this.secret);
			if (!c.verify.ok) throw new S3Error(c.verify.code === "InvalidRequest" ? "InvalidRequest" : c.verify.code, c.verify.message);
			auth = c.verify;
		} else if (c.creds.kind !== "bearer") throw new S3Error("AccessDenied");
		const r = parseS3Request(c.method, stripPydioJwt(c.url), c.headers);
		c.parsed = r;
		const xml = (body: string) => ({ status: 200, headers: { "Content-Type": "application/xml" }, body });
		const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
		const decodeBody = async () => {
			const dec = createBodyDecoder(r.payload, auth);
			c.decoded = await pipeAll(dec, [c.body]);
			if (dec instanceof AwsChunkedDecoder) c.trailers = dec.trailers;
			return c.decoded;
		};
		const entries = (): S3ObjectEntry[] =>
			[...this.objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([Key, o]) => ({ Key, LastModified: o.modified, ETag: o.etag, Size: o.body.length, Owner: { ID: "admin", DisplayName: "admin" } }));
		switch (r.operation) {
			case "ListBuckets":
				return xml(listBucketsXml({ Owner: { ID: "admin", DisplayName: "admin" }, Buckets: [{ Name: "io", CreationDate: 0 }] }));
			case "HeadBucket":
				return { status: 200, headers: {} };
			case "GetBucketLocation":
				return xml(locationXml("us-east-1"));
			case "ListObjectsV2":
			case "ListObjects": {
				const l = r.list!;
				const all = entries().filter((e) => e.Key.startsWith(l.prefix) && (!l.startAfter || e.Key > l.startAfter) && (!l.marker || e.Key > l.marker));
				const contents: S3ObjectEntry[] = [];
				const prefixes = new Set<string>();
				for (const e of all) {
					const rest = e.Key.slice(l.prefix.length);
					const i = l.delimiter ? rest.indexOf(l.delimiter) : -1;
					if (i >= 0) prefixes.add(l.prefix + rest.slice(0, i + l.delimiter!.length));
					else contents.push(e);
				}
				const page = contents.slice(0, l.maxKeys);
				const base = { Name: "io", Prefix: l.prefix, MaxKeys: l.maxKeys, Contents: page, CommonPrefixes: [...prefixes], IsTruncated: page.length < contents.length };
				if (l.version === 2)
					return xml(listObjectsV2Xml({ ...base, Delimiter: l.delimiter, EncodingType: l.encodingType, ContinuationToken: l.continuationToken, StartAfter: l.startAfter, NextContinuationToken: "tok-2", FetchOwner: l.fetchOwner }));
				return xml(listObjectsV1Xml({ ...base, Delimiter: l.delimiter, EncodingType: l.encodingType, Marker: l.marker, NextMarker: page[page.length - 1]?.Key }));
			}
			case "PutObject":
			case "UploadPart": {
				const body = await decodeBody();
				const etag = md5(body);
				if (r.operation === "PutObject") this.objects.set(r.key!, { body, etag, modified: new Date(), type: r.contentType });
				return { status: 200, headers: { ETag: `"${etag}"` } };
			}
			case "GetObject":
			case "HeadObject": {
				const o = this.objects.get(r.key!);
				if (!o) throw new S3Error("NoSuchKey", undefined, { Key: r.key! });
				const headers: Record<string, string> = { ETag: `"${o.etag}"`, "Last-Modified": o.modified.toUTCString(), "Accept-Ranges": "bytes", "Content-Type": o.type ?? "application/octet-stream", ...r.responseHeaders };
				const range = resolveRange(r.range, o.body.length);
				if (range === "unsatisfiable") throw new S3Error("InvalidRange", undefined, { ActualObjectSize: String(o.body.length) });
				if (range) {
					headers["Content-Range"] = contentRange(range, o.body.length);
					headers["Content-Length"] = String(range.end - range.start + 1);
					return { status: 206, headers, body: o.body.subarray(range.start, range.end + 1) };
				}
				headers["Content-Length"] = String(o.body.length);
				return { status: 200, headers, body: o.body };
			}
			case "CopyObject":
				return xml(copyObjectResultXml({ ETag: "abc", LastModified: Date.UTC(2024, 0, 2) }));
			case "UploadPartCopy":
				return xml(copyPartResultXml({ ETag: "def", LastModified: Date.UTC(2024, 0, 2) }));
			case "DeleteObject":
			case "AbortMultipartUpload":
				return { status: 204, headers: {} };
			case "DeleteObjects": {
				const d = parseDeleteObjects(await decodeBody());
				return xml(deleteResultXml({ Deleted: d.Objects.filter((o) => o.Key !== "locked"), Errors: d.Objects.filter((o) => o.Key === "locked").map((o) => ({ Key: o.Key, Code: "AccessDenied", Message: "Access Denied" })), Quiet: d.Quiet }));
			}
			case "CreateMultipartUpload":
				return xml(initiateMultipartUploadXml({ Bucket: "io", Key: r.key!, UploadId: "upload-1" }));
			case "CompleteMultipartUpload": {
				const parts = parseCompleteMultipartUpload(await decodeBody());
				return xml(completeMultipartUploadXml({ Location: `http://127.0.0.1/io/${r.key}`, Bucket: "io", Key: r.key!, ETag: `${parts[0].ETag}-${parts.length}` }));
			}
			case "ListParts":
				return xml(listPartsXml({ Bucket: "io", Key: r.key!, UploadId: r.uploadId!, MaxParts: r.listParts!.maxParts, IsTruncated: false, Parts: [{ PartNumber: 1, ETag: "p1", Size: 5, LastModified: Date.UTC(2024, 0, 1) }] }));
			case "ListMultipartUploads":
				return xml(listMultipartUploadsXml({ Bucket: "io", MaxUploads: r.listUploads!.maxUploads, IsTruncated: false, Uploads: [{ Key: "a/b.bin", UploadId: "upload-1", Initiated: Date.UTC(2024, 0, 1) }] }));
			default:
				throw new S3Error("NotImplemented");
		}
	}
}

function client(gw: FakeGateway, opts: { accessKeyId?: string; secret?: string; checksums?: "WHEN_SUPPORTED" | "WHEN_REQUIRED" } = {}): S3Client {
	return new S3Client({
		endpoint: `http://127.0.0.1:${gw.port}`,
		region: "us-east-1",
		forcePathStyle: true,
		credentials: { accessKeyId: opts.accessKeyId ?? JWT, secretAccessKey: opts.secret ?? GATEWAY_SECRET },
		requestChecksumCalculation: opts.checksums ?? "WHEN_SUPPORTED",
		responseChecksumValidation: "WHEN_SUPPORTED",
		maxAttempts: 1,
	});
}

function assertVerified(c: Captured): VerifyOk {
	assert.equal(c.creds.kind, "sigv4-header", `credentials of ${c.method} ${c.url}`);
	assert.ok(c.verify, "verified");
	assert.ok(c.verify.ok, `signature of ${c.method} ${c.url}: ${c.verify.ok ? "" : c.verify.code}`);
	return c.verify;
}

function expectS3Error(fn: () => unknown, code: S3ErrorCode): void {
	assert.throws(fn, (e: unknown) => e instanceof S3Error && e.code === code && e.status === S3_ERROR_STATUS[code]);
}

/** A signed aws-chunked body made by hand (`sizes` = chunk data sizes, the final 0-chunk is added). */
function signedChunkedBody(payload: Buffer, sizes: number[], ctx: { key: Buffer; amzDate: string; scope: string; seed: string }, trailers?: Array<[string, string]>): Buffer {
	const out: Buffer[] = [];
	let prev = ctx.seed;
	let off = 0;
	for (const n of [...sizes, 0]) {
		const data = payload.subarray(off, off + n);
		off += n;
		prev = chunkSignature(ctx.key, ctx.amzDate, ctx.scope, prev, createHash("sha256").update(data).digest("hex"));
		out.push(Buffer.from(`${n.toString(16)};chunk-signature=${prev}\r\n`), data);
		if (n > 0) out.push(Buffer.from("\r\n"));
	}
	if (trailers) {
		let canon = "";
		for (const [k, v] of trailers) {
			out.push(Buffer.from(`${k}:${v}\r\n`));
			canon += `${k}:${v}\n`;
		}
		out.push(Buffer.from(`x-amz-trailer-signature:${trailerSignature(ctx.key, ctx.amzDate, ctx.scope, prev, canon)}\r\n`));
	}
	out.push(Buffer.from("\r\n"));
	assert.equal(off, payload.length);
	return Buffer.concat(out);
}

describe("io protocol: the real SDK against lib/io", function () {
	const gw = new FakeGateway();
	let s3: S3Client;
	before(async () => {
		await gw.start();
		s3 = client(gw);
	});
	after(async () => {
		s3.destroy();
		await gw.stop();
	});

	it("PutObject: JWT access key verified, key decoded, body checked against x-amz-content-sha256", async () => {
		const key = "common-files/a b/é+%&=?#.txt";
		const out = await s3.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: "hello world", ContentType: "text/plain", Metadata: { "relative-path": "a b" } }));
		assert.equal(out.ETag, `"${createHash("md5").update("hello world").digest("hex")}"`);
		const c = gw.last();
		assert.match(c.url, /^\/io\/common-files\/a%20b\/.*\?x-id=PutObject$/);
		const v = assertVerified(c);
		assert.equal(v.payloadHash, createHash("sha256").update("hello world").digest("hex"));
		assert.ok(c.creds.kind === "sigv4-header" && c.creds.accessKey === JWT && JWT.length > 400);
		assert.equal(c.parsed?.operation, "PutObject");
		assert.equal(c.parsed?.key, key);
		assert.equal(c.parsed?.contentType, "text/plain");
		assert.deepEqual(c.parsed?.metadata, { "relative-path": "a b" });
		assert.equal(c.parsed?.payload.mode, "sha256");
		assert.equal(c.decoded?.toString(), "hello world");
		assert.ok(c.headers["x-amz-checksum-crc32"], "SDK sent a CRC32 header (ignored)");
	});

	it("GetObject (Range, response overrides) and HeadObject", async () => {
		const got = await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/a b/é+%&=?#.txt", Range: "bytes=0-4", ResponseContentDisposition: 'attachment; filename="x y.txt"' }));
		assert.equal(await got.Body!.transformToString(), "hello");
		assert.equal(got.ContentRange, "bytes 0-4/11");
		assert.equal(got.ContentDisposition, 'attachment; filename="x y.txt"');
		let c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "GetObject");
		assert.equal(c.parsed?.range, "bytes=0-4");
		assert.deepEqual(c.parsed?.responseHeaders, { "Content-Disposition": 'attachment; filename="x y.txt"' });
		const head = await s3.send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/a b/é+%&=?#.txt" }));
		assert.equal(head.ContentLength, 11);
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "HeadObject");
	});

	it("GetObject on a missing key: NoSuchKey XML is understood by the SDK", async () => {
		await assert.rejects(s3.send(new GetObjectCommand({ Bucket: "io", Key: "nope/x.txt" })), (e: Error & { $metadata?: { httpStatusCode?: number } }) => {
			assert.equal(e.name, "NoSuchKey");
			assert.equal(e.$metadata?.httpStatusCode, 404);
			return true;
		});
		await assert.rejects(s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/a b/é+%&=?#.txt", Range: "bytes=50-" })), (e: Error) => e.name === "InvalidRange");
	});

	it("ListObjectsV2 / ListObjects v1 / ListBuckets / HeadBucket / GetBucketLocation", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/dir/b.txt", Body: "bb" }));
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "common-files/c <&>.txt", Body: "ccc" }));
		const l2 = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/", Delimiter: "/", StartAfter: "common-files/" }));
		let c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "ListObjectsV2");
		assert.deepEqual(c.parsed?.list, { version: 2, prefix: "common-files/", delimiter: "/", maxKeys: 1000, fetchOwner: false, startAfter: "common-files/" });
		assert.deepEqual(l2.Contents?.map((o) => [o.Key, o.Size, o.StorageClass]), [["common-files/c <&>.txt", 3, "STANDARD"]]);
		assert.deepEqual(l2.CommonPrefixes?.map((p) => p.Prefix).sort(), ["common-files/a b/", "common-files/dir/"]);
		assert.equal(l2.KeyCount, 3);
		assert.equal(l2.IsTruncated, false);
		assert.ok(l2.Contents?.[0].LastModified instanceof Date);
		assert.match(l2.Contents?.[0].ETag ?? "", /^"[0-9a-f]{32}"$/);

		const paged = await s3.send(new ListObjectsV2Command({ Bucket: "io", MaxKeys: 1, ContinuationToken: "tok-1", FetchOwner: true }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.list?.continuationToken, "tok-1");
		assert.equal(c.parsed?.list?.fetchOwner, true);
		assert.equal(paged.IsTruncated, true);
		assert.equal(paged.NextContinuationToken, "tok-2");
		assert.equal(paged.Contents?.[0].Owner?.ID, "admin");

		const l1 = await s3.send(new ListObjectsCommand({ Bucket: "io", Prefix: "common-files/", Marker: "common-files/a" }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "ListObjects");
		assert.equal(c.parsed?.list?.marker, "common-files/a");
		assert.equal(l1.Contents?.length, 3);

		const enc = await s3.send(new ListObjectsV2Command({ Bucket: "io", Prefix: "common-files/c", EncodingType: "url" }));
		assert.equal(enc.Contents?.[0].Key, "common-files/c%20%3C%26%3E.txt");

		const lb = await s3.send(new ListBucketsCommand({}));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "ListBuckets");
		assert.deepEqual(lb.Buckets?.map((b) => b.Name), ["io"]);

		await s3.send(new HeadBucketCommand({ Bucket: "io" }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "HeadBucket");

		await s3.send(new GetBucketLocationCommand({ Bucket: "io" }));
		assert.equal(gw.last().parsed?.operation, "GetBucketLocation");
	});

	it("multipart: Create / UploadPart / UploadPartCopy / ListParts / ListMultipartUploads / Complete / Abort", async () => {
		const cmu = await s3.send(new CreateMultipartUploadCommand({ Bucket: "io", Key: "personal/big file.bin", ContentType: "application/zip" }));
		let c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "CreateMultipartUpload");
		assert.match(c.url, /\?uploads(=|$)/);
		assert.equal(c.parsed?.contentType, "application/zip");
		assert.equal(cmu.UploadId, "upload-1");

		const part = await s3.send(new UploadPartCommand({ Bucket: "io", Key: "personal/big file.bin", UploadId: "upload-1", PartNumber: 3, Body: Buffer.alloc(1000, 7) }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "UploadPart");
		assert.equal(c.parsed?.partNumber, 3);
		assert.equal(c.parsed?.uploadId, "upload-1");
		assert.equal(c.decoded?.length, 1000);
		assert.ok(part.ETag);

		const pc = await s3.send(new UploadPartCopyCommand({ Bucket: "io", Key: "personal/big file.bin", UploadId: "upload-1", PartNumber: 4, CopySource: "io/common-files/dir/b.txt", CopySourceRange: "bytes=0-1" }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "UploadPartCopy");
		assert.deepEqual(c.parsed?.copySource, { bucket: "io", key: "common-files/dir/b.txt" });
		assert.equal(c.parsed?.copySourceRange, "bytes=0-1");
		assert.equal(pc.CopyPartResult?.ETag, '"def"');

		const lp = await s3.send(new ListPartsCommand({ Bucket: "io", Key: "personal/big file.bin", UploadId: "upload-1", MaxParts: 5000 }));
		c = gw.last();
		assert.equal(c.parsed?.operation, "ListParts");
		assert.deepEqual(c.parsed?.listParts, { maxParts: 1000, partNumberMarker: 0 });
		assert.equal(lp.Parts?.[0].PartNumber, 1);
		assert.equal(lp.Parts?.[0].Size, 5);

		const lmu = await s3.send(new ListMultipartUploadsCommand({ Bucket: "io", Prefix: "a/" }));
		c = gw.last();
		assert.equal(c.parsed?.operation, "ListMultipartUploads");
		assert.equal(c.parsed?.listUploads?.prefix, "a/");
		assert.equal(lmu.Uploads?.[0].UploadId, "upload-1");

		const done = await s3.send(
			new CompleteMultipartUploadCommand({
				Bucket: "io",
				Key: "personal/big file.bin",
				UploadId: "upload-1",
				MultipartUpload: { Parts: [{ PartNumber: 3, ETag: part.ETag }, { PartNumber: 4, ETag: '"def"' }] },
			}),
		);
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "CompleteMultipartUpload");
		assert.deepEqual(parseCompleteMultipartUpload(c.decoded!), [
			{ PartNumber: 3, ETag: part.ETag!.slice(1, -1) },
			{ PartNumber: 4, ETag: "def" },
		]);
		assert.equal(done.ETag, `"${part.ETag!.slice(1, -1)}-2"`);

		await s3.send(new AbortMultipartUploadCommand({ Bucket: "io", Key: "personal/big file.bin", UploadId: "upload-1" }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "AbortMultipartUpload");
	});

	it("CopyObject / DeleteObject / DeleteObjects", async () => {
		const cp = await s3.send(new CopyObjectCommand({ Bucket: "io", Key: "personal/copy.txt", CopySource: "io/common-files/a%20b/%C3%A9.txt?versionId=3", MetadataDirective: "REPLACE" }));
		let c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "CopyObject");
		assert.deepEqual(c.parsed?.copySource, { bucket: "io", key: "common-files/a b/é.txt", versionId: "3" });
		assert.equal(c.parsed?.metadataDirective, "REPLACE");
		assert.equal(cp.CopyObjectResult?.ETag, '"abc"');

		await s3.send(new DeleteObjectCommand({ Bucket: "io", Key: "personal/copy.txt" }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "DeleteObject");

		const del = await s3.send(new DeleteObjectsCommand({ Bucket: "io", Delete: { Objects: [{ Key: "a b" }, { Key: "x<&>'\"" }, { Key: "locked" }] } }));
		c = gw.last();
		assertVerified(c);
		assert.equal(c.parsed?.operation, "DeleteObjects");
		assert.match(c.url, /\?delete(=|&|$)/);
		assert.deepEqual(del.Deleted?.map((d) => d.Key), ["a b", "x<&>'\""]);
		assert.deepEqual(del.Errors?.map((e) => [e.Key, e.Code]), [["locked", "AccessDenied"]]);
	});

	it("a personal token (pat_…) works as access key too", async () => {
		const pat = client(gw, { accessKeyId: PAT });
		await pat.send(new HeadObjectCommand({ Bucket: "io", Key: "common-files/dir/b.txt" }));
		const c = gw.last();
		assertVerified(c);
		assert.ok(c.creds.kind === "sigv4-header" && c.creds.accessKey === PAT);
		pat.destroy();
	});

	it("refuses a wrong secret", async () => {
		const bad = client(gw, { secret: "not-the-gateway-secret" });
		await assert.rejects(bad.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/dir/b.txt" })), (e: Error & { $metadata?: { httpStatusCode?: number } }) => {
			assert.equal(e.name, "SignatureDoesNotMatch");
			assert.equal(e.$metadata?.httpStatusCode, 403);
			return true;
		});
		bad.destroy();
		const c = gw.last();
		assert.ok(c.verify && !c.verify.ok && c.verify.code === "SignatureDoesNotMatch");
	});

	it("refuses tampered headers, URL, method and stale dates on a captured request", async () => {
		await s3.send(new GetObjectCommand({ Bucket: "io", Key: "common-files/dir/b.txt", Range: "bytes=0-0" }));
		const c = gw.last();
		const creds = c.creds as SigV4Credentials;
		const parts = { method: c.method, url: c.url, headers: c.headers };
		assert.ok(verifySigV4(parts, creds, GATEWAY_SECRET).ok);
		const fails = (p: typeof parts, code: string, now?: number) => {
			const r = verifySigV4(p, creds, GATEWAY_SECRET, now === undefined ? {} : { now });
			assert.ok(!r.ok && r.code === code, `expected ${code}, got ${JSON.stringify(r.ok ? "ok" : r.code)}`);
		};
		fails({ ...parts, headers: { ...c.headers, range: "bytes=0-100" } }, "SignatureDoesNotMatch");
		fails({ ...parts, headers: { ...c.headers, host: "evil.example:80" } }, "SignatureDoesNotMatch");
		fails({ ...parts, url: c.url.replace("b.txt", "c.txt") }, "SignatureDoesNotMatch");
		fails({ ...parts, url: c.url + "&extra=1" }, "SignatureDoesNotMatch");
		fails({ ...parts, method: "DELETE" }, "SignatureDoesNotMatch");
		const { range: _r, ...noRange } = c.headers;
		void _r;
		fails({ ...parts, headers: noRange }, "SignatureDoesNotMatch");
		fails(parts, "RequestTimeTooSkewed", Date.now() + 16 * 60 * 1000);
		fails(parts, "RequestTimeTooSkewed", Date.now() - 16 * 60 * 1000);
		assert.ok(verifySigV4(parts, creds, GATEWAY_SECRET, { now: Date.now() + 14 * 60 * 1000 }).ok);
		fails({ ...parts, headers: { ...c.headers, "x-amz-date": "20200101T000000Z" } }, "AuthorizationHeaderMalformed", Date.UTC(2020, 0, 1));
		// a different signature value
		const sig = creds.signature;
		const flipped = { ...creds, signature: (sig[0] === "0" ? "1" : "0") + sig.slice(1) };
		assert.ok(!verifySigV4(parts, flipped, GATEWAY_SECRET).ok);
	});

	it("streaming upload (WHEN_SUPPORTED): aws-chunked with a CRC32 trailer is decoded to the exact payload", async () => {
		const pieces = [randomBytes(70_000), randomBytes(1), randomBytes(65_536), randomBytes(12_345)];
		const payload = Buffer.concat(pieces);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal/stream.bin", Body: Readable.from(pieces), ContentLength: payload.length }));
		const c = gw.last();
		assertVerified(c);
		assert.equal(c.headers["x-amz-content-sha256"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
		assert.equal(c.parsed?.payload.mode, "streaming-unsigned-trailer");
		assert.equal(c.parsed?.payload.decodedContentLength, payload.length);
		assert.equal(c.parsed?.payload.objectSize, payload.length);
		assert.equal(c.parsed?.payload.contentEncoding, undefined);
		assert.deepEqual(c.parsed?.payload.trailer, ["x-amz-checksum-crc32"]);
		assert.ok(c.body.length > payload.length, "framing on the wire");
		assert.ok(c.decoded?.equals(payload), "decoded payload");
		const crc = Buffer.alloc(4);
		crc.writeUInt32BE(crc32(payload) >>> 0);
		assert.equal(c.trailers?.["x-amz-checksum-crc32"], crc.toString("base64"));
		// The same captured body, split at arbitrary points.
		for (const step of [1, 3, 4096, 65_537]) {
			const bits: Buffer[] = [];
			for (let i = 0; i < c.body.length; i += step) bits.push(c.body.subarray(i, i + step));
			const out = await pipeAll(createBodyDecoder(c.parsed!.payload), bits);
			assert.ok(out.equals(payload), `split every ${step}`);
		}
		assert.ok(gw.objects.get("personal/stream.bin")?.body.equals(payload));
	});

	it("x-amz-content-sha256 mismatch on a plain body is refused", async () => {
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal/p.txt", Body: "payload" }));
		const c = gw.last();
		await assert.rejects(pipeAll(createBodyDecoder(c.parsed!.payload, c.verify as VerifyOk), [Buffer.from("pAyload")]), (e: S3Error) => e.code === "XAmzContentSHA256Mismatch");
		assert.equal((await pipeAll(createBodyDecoder(c.parsed!.payload), [Buffer.from("pay"), Buffer.from("load")])).toString(), "payload");
	});

	it("presigned GET built with presignUrl: verified through a real HTTP request; expiry and tampering refused", async () => {
		const host = `127.0.0.1:${gw.port}`;
		const url = presignUrl({ method: "GET", url: "/io/common-files/dir/b.txt?response-content-disposition=attachment%3B%20filename%3D%22b%20b.txt%22", host, accessKey: JWT, expires: 600 });
		const res = await fetch(`http://${host}${url}`);
		assert.equal(res.status, 200);
		assert.equal(await res.text(), "bb");
		assert.equal(res.headers.get("content-disposition"), 'attachment; filename="b b.txt"');
		const c = gw.last();
		assert.equal(c.creds.kind, "sigv4-query");
		assert.ok(c.creds.kind === "sigv4-query" && c.creds.accessKey === JWT && c.creds.expires === 600);
		assert.ok(c.verify?.ok);
		assert.equal(c.verify.payloadHash, "UNSIGNED-PAYLOAD");
		assert.equal(c.parsed?.operation, "GetObject");
		const creds = c.creds as SigV4Credentials;
		const parts = { method: "GET", url: c.url, headers: c.headers };
		const at = (now: number) => verifySigV4(parts, creds, GATEWAY_SECRET, { now });
		const r1 = at(Date.now() + 601_000);
		assert.ok(!r1.ok && r1.code === "AccessDenied" && /expired/.test(r1.message));
		const r2 = verifySigV4({ ...parts, url: c.url.replace("b.txt", "c.txt") }, creds, GATEWAY_SECRET);
		assert.ok(!r2.ok && r2.code === "SignatureDoesNotMatch");
		const r3 = verifySigV4({ ...parts, method: "PUT" }, creds, GATEWAY_SECRET);
		assert.ok(!r3.ok && r3.code === "SignatureDoesNotMatch");
		const r4 = verifySigV4(parts, creds, "wrong");
		assert.ok(!r4.ok && r4.code === "SignatureDoesNotMatch");
		// presigned PUT, with a body
		const put = presignUrl({ method: "PUT", url: "/io/personal/up%20load.txt", host, accessKey: PAT, expires: 60 });
		const pr = await fetch(`http://${host}${put}`, { method: "PUT", body: "uploaded!" });
		assert.equal(pr.status, 200);
		assert.equal(gw.last().parsed?.key, "personal/up load.txt");
		assert.equal(gw.objects.get("personal/up load.txt")?.body.toString(), "uploaded!");
	});

	it("bearer credentials: pydio_jwt query and X-Pydio-Bearer header", async () => {
		const host = `127.0.0.1:${gw.port}`;
		const r1 = await fetch(`http://${host}/io/common-files/dir/b.txt?pydio_jwt=${encodeURIComponent(JWT)}`);
		assert.equal(await r1.text(), "bb");
		assert.deepEqual(gw.last().creds, { kind: "bearer", token: JWT, source: "query" });
		assert.equal(gw.last().parsed?.operation, "GetObject");
		const r2 = await fetch(`http://${host}/io/common-files/dir/b.txt`, { headers: { "X-Pydio-Bearer": PAT } });
		assert.equal(await r2.text(), "bb");
		assert.deepEqual(gw.last().creds, { kind: "bearer", token: PAT, source: "header" });
		const r3 = await fetch(`http://${host}/io/common-files/dir/b.txt`);
		assert.equal(r3.status, 403);
		assert.match(await r3.text(), /<Code>AccessDenied<\/Code>/);
	});
});

describe("io protocol: AWS SigV4 documented test vectors", function () {
	it("presigned URL example (GET /test.txt, 86400 s)", () => {
		const url =
			"/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
		const headers = { host: "examplebucket.s3.amazonaws.com" };
		const creds = extractCredentials("GET", url, headers);
		assert.equal(creds.kind, "sigv4-query");
		assert.ok(creds.kind === "sigv4-query");
		assert.equal(creds.accessKey, AWS_KEY);
		assert.equal(creds.scope, "20130524/us-east-1/s3/aws4_request");
		const ok = verifySigV4({ method: "GET", url, headers }, creds, AWS_SECRET, { now: AWS_TIME + 3600_000 });
		assert.ok(ok.ok, JSON.stringify(ok));
		const expired = verifySigV4({ method: "GET", url, headers }, creds, AWS_SECRET, { now: AWS_TIME + 86_401_000 });
		assert.ok(!expired.ok && expired.code === "AccessDenied");
		assert.ok(verifySigV4({ method: "GET", url, headers }, creds, AWS_SECRET, { now: AWS_TIME + 86_400_000 }).ok, "valid up to the last second");
		const early = verifySigV4({ method: "GET", url, headers }, creds, AWS_SECRET, { now: AWS_TIME - 3600_000 });
		assert.ok(!early.ok && early.code === "AccessDenied");
		// our own signer reproduces the documented URL
		assert.equal(presignUrl({ method: "GET", url: "/test.txt", host: "examplebucket.s3.amazonaws.com", accessKey: AWS_KEY, secret: AWS_SECRET, expires: 86400, date: new Date(AWS_TIME) }), url);
	});

	it("GET Object example (Range header)", () => {
		const headers = {
			host: "examplebucket.s3.amazonaws.com",
			range: "bytes=0-9",
			"x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"x-amz-date": "20130524T000000Z",
			authorization: `AWS4-HMAC-SHA256 Credential=${AWS_KEY}/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41`,
		};
		const creds = extractCredentials("GET", "/test.txt", headers);
		assert.equal(creds.kind, "sigv4-header");
		assert.ok(verifySigV4({ method: "GET", url: "/test.txt", headers }, creds as SigV4Credentials, AWS_SECRET, { now: AWS_TIME }).ok);
		assert.ok(!verifySigV4({ method: "GET", url: "/test.txt", headers: { ...headers, range: "bytes=0-10" } }, creds as SigV4Credentials, AWS_SECRET, { now: AWS_TIME }).ok);
	});

	it("chunked PUT example: seed signature, then 64 KiB + 1 KiB + final chunk signatures", async () => {
		const headers = {
			host: "s3.amazonaws.com",
			"x-amz-date": "20130524T000000Z",
			"x-amz-storage-class": "REDUCED_REDUNDANCY",
			"x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
			"content-encoding": "aws-chunked",
			"x-amz-decoded-content-length": "66560",
			"content-length": "66824",
			authorization: `AWS4-HMAC-SHA256 Credential=${AWS_KEY}/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9`,
		};
		const url = "/examplebucket/chunkObject.txt";
		const creds = extractCredentials("PUT", url, headers) as SigV4Credentials;
		const v = verifySigV4({ method: "PUT", url, headers }, creds, AWS_SECRET, { now: AWS_TIME });
		assert.ok(v.ok, JSON.stringify(v));
		assert.equal(v.seedSignature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
		const sigs = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648", "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497", "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"];
		const a = (n: number) => Buffer.alloc(n, "a");
		const body = Buffer.concat([
			Buffer.from(`10000;chunk-signature=${sigs[0]}\r\n`),
			a(65536),
			Buffer.from(`\r\n400;chunk-signature=${sigs[1]}\r\n`),
			a(1024),
			Buffer.from(`\r\n0;chunk-signature=${sigs[2]}\r\n\r\n`),
		]);
		assert.equal(body.length, 66824);
		const payload = payloadInfo(headers);
		assert.equal(payload.mode, "streaming-signed");
		for (const step of [1, 7, 8192, 65_600, body.length]) {
			const bits: Buffer[] = [];
			for (let i = 0; i < body.length; i += step) bits.push(body.subarray(i, i + step));
			const out = await pipeAll(createBodyDecoder(payload, v), bits);
			assert.ok(out.equals(a(66560)), `split every ${step}`);
		}
		// the same body under another secret fails on the first chunk
		const key2 = deriveSigningKey("other", "20130524", "us-east-1");
		await assert.rejects(
			pipeAll(new AwsChunkedDecoder({ signed: true, trailer: false, signing: { signingKey: key2, seedSignature: v.seedSignature, amzDate: v.amzDate, scope: v.scope } }), [body]),
			(e: S3Error) => e.code === "SignatureDoesNotMatch",
		);
	});

	it("trailer signature example (x-amz-checksum-crc32c)", () => {
		const key = deriveSigningKey(AWS_SECRET, "20130524", "us-east-1", "s3");
		assert.equal(
			trailerSignature(key, "20130524T000000Z", "20130524/us-east-1/s3/aws4_request", "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992", "x-amz-checksum-crc32c:sOO8/Q==\n"),
			"d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435",
		);
	});
});

describe("io protocol: aws-chunked decoder", function () {
	const ctx = { key: deriveSigningKey(GATEWAY_SECRET, "20250101", "us-east-1"), amzDate: "20250101T120000Z", scope: "20250101/us-east-1/s3/aws4_request", seed: "a".repeat(64) };
	const signing = { signingKey: ctx.key, seedSignature: ctx.seed, amzDate: ctx.amzDate, scope: ctx.scope };
	const payload = Buffer.from("The quick brown fox jumps over the lazy dog\r\n0;chunk-signature=\r\n");
	const sizes = [5, 17, 1, payload.length - 23];

	it("hand-made signed body: decoded and verified when split at every byte boundary (and byte by byte)", async () => {
		const body = signedChunkedBody(payload, sizes, ctx);
		for (let i = 0; i <= body.length; i++) {
			const out = await pipeAll(new AwsChunkedDecoder({ signed: true, trailer: false, signing, decodedContentLength: payload.length }), [body.subarray(0, i), body.subarray(i)]);
			assert.ok(out.equals(payload), `split at ${i}`);
		}
		const bytes = [...body].map((b) => Buffer.from([b]));
		assert.ok((await pipeAll(new AwsChunkedDecoder({ signed: true, trailer: false, signing }), bytes)).equals(payload));
	});

	it("signed body with signed trailers", async () => {
		const body = signedChunkedBody(payload, sizes, ctx, [["x-amz-checksum-crc32", "AAAAAA=="]]);
		for (let i = 0; i <= body.length; i += 3) {
			const d = new AwsChunkedDecoder({ signed: true, trailer: true, signing });
			const out = await pipeAll(d, [body.subarray(0, i), body.subarray(i)]);
			assert.ok(out.equals(payload));
			assert.deepEqual(d.trailers, { "x-amz-checksum-crc32": "AAAAAA==" });
		}
		const tampered = Buffer.from(body.toString("latin1").replace("AAAAAA==", "AAAAAB=="), "latin1");
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: true, trailer: true, signing }), [tampered]), (e: S3Error) => e.code === "SignatureDoesNotMatch");
	});

	it("refuses tampered data, reordered chunks, a wrong seed, bad framing and length mismatches", async () => {
		const body = signedChunkedBody(payload, sizes, ctx);
		const run = (b: Buffer, o: Partial<ConstructorParameters<typeof AwsChunkedDecoder>[0]> = {}) => pipeAll(new AwsChunkedDecoder({ signed: true, trailer: false, signing, ...o }), [b]);
		const code = (c: S3ErrorCode) => (e: S3Error) => e instanceof S3Error && e.code === c;
		const t = Buffer.from(body);
		const at = body.indexOf("brown");
		assert.ok(at > 0);
		t[at + 1] ^= 0x20;
		await assert.rejects(run(t), code("SignatureDoesNotMatch"));
		await assert.rejects(run(body, { signing: { ...signing, seedSignature: "b".repeat(64) } }), code("SignatureDoesNotMatch"));
		// swap the first two chunks (5 and 17 bytes) keeping their own signatures
		const s = body.toString("latin1");
		const lines = s.split(/(?<=^|\r\n)(?=[0-9a-f]+;chunk-signature=[0-9a-f]{64}\r\n)/);
		assert.equal(lines.length, sizes.length + 1);
		await assert.rejects(run(Buffer.from([lines[1], lines[0], ...lines.slice(2)].join(""), "latin1")), code("SignatureDoesNotMatch"));
		await assert.rejects(run(body.subarray(0, body.length - 10)), code("IncompleteBody"));
		await assert.rejects(run(body, { decodedContentLength: payload.length + 1 }), code("IncompleteBody"));
		await assert.rejects(run(body, { decodedContentLength: payload.length - 1 }), code("IncompleteBody"));
		await assert.rejects(run(Buffer.concat([body, Buffer.from("x")])), code("InvalidRequest"));
		await assert.rejects(run(Buffer.from("zz;chunk-signature=" + "0".repeat(64) + "\r\n")), code("InvalidRequest"));
		await assert.rejects(run(Buffer.from("5\r\nhello\r\n0\r\n\r\n")), code("InvalidRequest"), "missing chunk-signature in signed mode");
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: false, trailer: true }), [Buffer.from("5\r\nhelloXX0\r\n\r\n")]), code("InvalidRequest"));
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: false, trailer: true }), [Buffer.from("5\nhello\r\n0\r\n\r\n")]), code("InvalidRequest"));
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: false, trailer: true }), [Buffer.from("1".repeat(5000))]), code("InvalidRequest"));
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: false, trailer: true, maxChunkSize: 10 }), [Buffer.from("b\r\n")]), code("InvalidRequest"));
		await assert.rejects(pipeAll(new AwsChunkedDecoder({ signed: false, trailer: false }), [Buffer.from("0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n")]), code("InvalidRequest"));
		// unsigned trailer mode, tolerant of a missing final CRLF
		assert.equal((await pipeAll(new AwsChunkedDecoder({ signed: false, trailer: true }), [Buffer.from("3;ext=1\r\nabc\r\n0\r\n")])).toString(), "abc");
	});

	it("streams: payload bytes come out before the chunk ends (flat memory for big chunks)", async () => {
		const chunkSize = 8 * 1024 * 1024;
		const d = new AwsChunkedDecoder({ signed: false, trailer: true, decodedContentLength: chunkSize });
		let seen = 0;
		d.on("data", (b: Buffer) => (seen += b.length));
		const ended = new Promise<void>((resolve, reject) => {
			d.on("end", resolve);
			d.on("error", reject);
		});
		d.write(Buffer.from(`${chunkSize.toString(16)}\r\n`));
		const slab = Buffer.alloc(64 * 1024, 1);
		let written = 0;
		while (written < chunkSize / 2) {
			d.write(slab);
			written += slab.length;
		}
		await new Promise((r) => setImmediate(r));
		assert.equal(seen, written, "half a chunk in, half a chunk out");
		while (written < chunkSize) {
			d.write(slab);
			written += slab.length;
		}
		d.end(Buffer.from("\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"));
		await ended;
		assert.equal(seen, chunkSize);
		assert.equal(d.decodedBytes, chunkSize);
	});

	it("Sha256Verifier checks digest and length", async () => {
		const h = createHash("sha256").update("abc").digest("hex");
		assert.equal((await pipeAll(new Sha256Verifier(h, 3), [Buffer.from("a"), Buffer.from("bc")])).toString(), "abc");
		await assert.rejects(pipeAll(new Sha256Verifier(h), [Buffer.from("abd")]), (e: S3Error) => e.code === "XAmzContentSHA256Mismatch");
		await assert.rejects(pipeAll(new Sha256Verifier(h, 4), [Buffer.from("abc")]), (e: S3Error) => e.code === "IncompleteBody");
	});
});

describe("io protocol: request classification", function () {
	const H = {};
	const op = (m: string, u: string, h: Record<string, string> = {}) => parseS3Request(m, u, h).operation;

	it("classifies operations from method, path and query (x-id ignored, ?uploads= and ?uploads alike)", () => {
		assert.equal(op("GET", "/"), "ListBuckets");
		assert.equal(op("GET", "/?x-id=ListBuckets"), "ListBuckets");
		assert.equal(op("HEAD", "/io"), "HeadBucket");
		assert.equal(op("HEAD", "/io/"), "HeadBucket");
		assert.equal(op("GET", "/io/?list-type=2&prefix=a%2F"), "ListObjectsV2");
		assert.equal(op("GET", "/io?marker=x"), "ListObjects");
		assert.equal(op("GET", "/io/?location"), "GetBucketLocation");
		assert.equal(op("GET", "/io/?uploads"), "ListMultipartUploads");
		assert.equal(op("GET", "/io/?uploads="), "ListMultipartUploads");
		assert.equal(op("POST", "/io/?delete"), "DeleteObjects");
		assert.equal(op("POST", "/io/?delete="), "DeleteObjects");
		assert.equal(op("GET", "/io/k?x-id=GetObject"), "GetObject");
		assert.equal(op("HEAD", "/io/k"), "HeadObject");
		assert.equal(op("PUT", "/io/k?x-id=PutObject"), "PutObject");
		assert.equal(op("PUT", "/io/k?x-id=CopyObject", { "x-amz-copy-source": "/io/src" }), "CopyObject");
		assert.equal(op("DELETE", "/io/k?x-id=DeleteObject"), "DeleteObject");
		assert.equal(op("POST", "/io/k?uploads"), "CreateMultipartUpload");
		assert.equal(op("POST", "/io/k?uploads="), "CreateMultipartUpload");
		assert.equal(op("PUT", "/io/k?partNumber=1&uploadId=u&x-id=UploadPart"), "UploadPart");
		assert.equal(op("PUT", "/io/k?partNumber=2&uploadId=u&x-id=UploadPartCopy", { "x-amz-copy-source": "io/src" }), "UploadPartCopy");
		assert.equal(op("POST", "/io/k?uploadId=u"), "CompleteMultipartUpload");
		assert.equal(op("DELETE", "/io/k?uploadId=u&x-id=AbortMultipartUpload"), "AbortMultipartUpload");
		assert.equal(op("GET", "/io/k?uploadId=u&x-id=ListParts"), "ListParts");
		assert.equal(op("GET", "http://host:8080/io/k"), "GetObject", "absolute-form URL");
		// the key "io/…" inside bucket io
		const r = parseS3Request("GET", "/io/io/x", H);
		assert.equal(r.key, "io/x");
	});

	it("refuses other buckets, bad keys, bad parameters and unsupported sub-resources", () => {
		expectS3Error(() => parseS3Request("GET", "/other/k", H), "NoSuchBucket");
		expectS3Error(() => parseS3Request("GET", "/io/a%00b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a%5Cb", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a\\b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a/../b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a/%2E%2E/b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/..", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a/./b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a//b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io//b", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a%0Ab", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/a%ZZ", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/" + "x".repeat(1025), H), "KeyTooLongError");
		expectS3Error(() => parseS3Request("GET", "/io/?list-type=2&max-keys=-1", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/?list-type=2&max-keys=abc", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/?list-type=2&encoding-type=base64", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("GET", "/io/?list-type=3", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k?partNumber=0&uploadId=u", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k?partNumber=10001&uploadId=u", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k?partNumber=1", H), "NoSuchUpload");
		expectS3Error(() => parseS3Request("PUT", "/io/k", { "x-amz-copy-source": "/other/x" }), "NoSuchBucket");
		expectS3Error(() => parseS3Request("PUT", "/io/k", { "x-amz-copy-source": "/io/a/../b" }), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k", { "x-amz-copy-source": "/io/" }), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k", { "x-amz-content-sha256": "garbage" }), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k", { "x-amz-content-sha256": "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD" }), "NotImplemented");
		expectS3Error(() => parseS3Request("GET", "/io/k?response-content-type=a%0D%0AX-Evil:%201", H), "InvalidArgument");
		expectS3Error(() => parseS3Request("PUT", "/io/k?acl", H), "NotImplemented");
		expectS3Error(() => parseS3Request("GET", "/io/?versioning", H), "NotImplemented");
		expectS3Error(() => parseS3Request("DELETE", "/io", H), "MethodNotAllowed");
		expectS3Error(() => parseS3Request("POST", "/", H), "MethodNotAllowed");
		expectS3Error(() => parseS3Request("PATCH", "/io/k", H), "MethodNotAllowed");
		// a folder marker keeps its trailing slash
		assert.equal(parseS3Request("PUT", "/io/common-files/new%20folder/", H).key, "common-files/new folder/");
	});

	it("list parameters: defaults, cap, v1/v2 fields", () => {
		assert.deepEqual(parseS3Request("GET", "/io/?list-type=2", H).list, { version: 2, prefix: "", maxKeys: 1000, fetchOwner: false });
		assert.deepEqual(parseS3Request("GET", "/io/?list-type=2&max-keys=5000&prefix=a+b%2F&delimiter=%2F&continuation-token=t&start-after=a&fetch-owner=true&encoding-type=url", H).list, {
			version: 2,
			prefix: "a b/",
			delimiter: "/",
			maxKeys: 1000,
			encodingType: "url",
			continuationToken: "t",
			startAfter: "a",
			fetchOwner: true,
		});
		assert.deepEqual(parseS3Request("GET", "/io?max-keys=0&marker=m", H).list, { version: 1, prefix: "", maxKeys: 0, marker: "m", fetchOwner: true });
	});

	it("copy sources, response overrides, payload modes", () => {
		assert.deepEqual(parseCopySource("/io/a%20b/c%2Bd.txt"), { bucket: "io", key: "a b/c+d.txt" });
		assert.deepEqual(parseCopySource("io/x/y?versionId=v%201"), { bucket: "io", key: "x/y", versionId: "v 1" });
		const g = parseS3Request("GET", "/io/k?response-content-type=text%2Fplain&response-content-disposition=attachment&response-cache-control=no-cache", H);
		assert.deepEqual(g.responseHeaders, { "Content-Type": "text/plain", "Content-Disposition": "attachment", "Cache-Control": "no-cache" });
		assert.equal(payloadInfo({ "x-amz-content-sha256": "UNSIGNED-PAYLOAD" }).mode, "unsigned");
		assert.equal(payloadInfo({}).mode, "unsigned");
		assert.equal(payloadInfo({ "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "content-encoding": "aws-chunked,gzip", "x-amz-decoded-content-length": "5", "content-length": "99" }).contentEncoding, "gzip");
		const p = payloadInfo({ "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "x-amz-decoded-content-length": "5", "content-length": "99", "x-amz-trailer": "x-amz-checksum-crc64nvme" });
		assert.deepEqual(p, { mode: "streaming-signed-trailer", contentSha256: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", contentLength: 99, decodedContentLength: 5, objectSize: 5, trailer: ["x-amz-checksum-crc64nvme"] });
		expectS3Error(() => payloadInfo({ "content-encoding": "aws-chunked" }), "InvalidArgument");
		expectS3Error(() => payloadInfo({ "content-length": "-1" }), "InvalidArgument");
	});

	it("resolveRange / contentRange", () => {
		const cases: Array<[string | undefined, number, ReturnType<typeof resolveRange>]> = [
			[undefined, 10, undefined],
			["bytes=0-4", 10, { start: 0, end: 4 }],
			["bytes=5-", 10, { start: 5, end: 9 }],
			["bytes=-3", 10, { start: 7, end: 9 }],
			["bytes=-30", 10, { start: 0, end: 9 }],
			["bytes=2-100", 10, { start: 2, end: 9 }],
			["bytes=9-9", 10, { start: 9, end: 9 }],
			["bytes=10-", 10, "unsatisfiable"],
			["bytes=10-20", 10, "unsatisfiable"],
			["bytes=-0", 10, "unsatisfiable"],
			["bytes=0-", 0, "unsatisfiable"],
			["bytes=-5", 0, "unsatisfiable"],
			["bytes=5-2", 10, undefined],
			["bytes=0-1,4-5", 10, undefined],
			["items=0-1", 10, undefined],
			["bytes=abc", 10, undefined],
			["bytes=-", 10, undefined],
		];
		for (const [h, size, want] of cases) assert.deepEqual(resolveRange(h, size), want, `${h} / ${size}`);
		assert.equal(contentRange({ start: 0, end: 4 }, 10), "bytes 0-4/10");
		assert.equal(contentRange("unsatisfiable", 10), "bytes */10");
	});
});

describe("io protocol: credentials extraction", function () {
	it("Cells' order: pydio_jwt, X-Pydio-Bearer, SigV4 header, presigned query", () => {
		const auth = `AWS4-HMAC-SHA256 Credential=${JWT}/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=${"ab".repeat(32)}`;
		assert.deepEqual(extractCredentials("GET", `/io/k?pydio_jwt=${JWT}`, { "x-pydio-bearer": PAT, authorization: auth }), { kind: "bearer", token: JWT, source: "query" });
		assert.deepEqual(extractCredentials("GET", "/io/k", { "x-pydio-bearer": PAT, authorization: auth }), { kind: "bearer", token: PAT, source: "header" });
		const h = extractCredentials("GET", "/io/k", { authorization: auth });
		assert.ok(h.kind === "sigv4-header");
		assert.equal(h.accessKey, JWT);
		assert.equal(h.region, "us-east-1");
		assert.deepEqual(h.signedHeaders, ["host", "x-amz-date"]);
		assert.deepEqual(extractCredentials("GET", "/io/k", {}), { kind: "none" });
		assert.equal(stripPydioJwt(`/io/k?a=1&pydio_jwt=${JWT}&b=2`), "/io/k?a=1&b=2");
		assert.equal(stripPydioJwt(`/io/k?pydio_jwt=${JWT}`), "/io/k");
	});

	it("credential scope split from the right; malformed inputs are reported", () => {
		const sig = "0".repeat(64);
		const c = extractCredentials("GET", "/io/k", { authorization: `AWS4-HMAC-SHA256 Credential=we/ird/20250101/eu-west-1/s3/aws4_request,SignedHeaders=host,Signature=${sig}` });
		assert.ok(c.kind === "sigv4-header" && c.accessKey === "we/ird" && c.region === "eu-west-1" && c.date === "20250101");
		const bad = (h: Record<string, string>, url = "/io/k") => {
			const r = extractCredentials("GET", url, h);
			assert.equal(r.kind, "invalid", JSON.stringify(h) + url);
			return r.kind === "invalid" ? r.code : "";
		};
		assert.equal(bad({ authorization: `AWS4-HMAC-SHA256 Credential=x/20250101/us-east-1/s3/aws5_request,SignedHeaders=host,Signature=${sig}` }), "AuthorizationHeaderMalformed");
		assert.equal(bad({ authorization: `AWS4-HMAC-SHA256 Credential=x/2025/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=${sig}` }), "AuthorizationHeaderMalformed");
		assert.equal(bad({ authorization: `AWS4-HMAC-SHA256 Credential=x/20250101/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=xyz` }), "AuthorizationHeaderMalformed");
		assert.equal(bad({ authorization: "AWS AKIA:abc" }), "AccessDenied");
		const q = (o: Record<string, string>) =>
			"/io/k?" + Object.entries({ "X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": `${JWT}/20250101/us-east-1/s3/aws4_request`, "X-Amz-Date": "20250101T000000Z", "X-Amz-Expires": "60", "X-Amz-SignedHeaders": "host", "X-Amz-Signature": sig, ...o }).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&");
		const ok = extractCredentials("GET", q({}), {});
		assert.ok(ok.kind === "sigv4-query" && ok.accessKey === JWT && ok.expires === 60);
		assert.equal(bad({}, q({ "X-Amz-Expires": "604801" })), "AuthorizationQueryParametersError");
		assert.equal(bad({}, q({ "X-Amz-Expires": "0" })), "AuthorizationQueryParametersError");
		assert.equal(bad({}, q({ "X-Amz-Date": "2025-01-01" })), "AuthorizationQueryParametersError");
		assert.equal(bad({}, q({ "X-Amz-Algorithm": "AWS4-ECDSA-P256-SHA256" })), "AuthorizationQueryParametersError");
		assert.equal(bad({}, q({ "X-Amz-Signature": "nope" })), "AuthorizationQueryParametersError");
	});

	it("header auth without x-amz-content-sha256: allowed for bodiless requests only", () => {
		const key = deriveSigningKey(GATEWAY_SECRET, "20250101", "us-east-1");
		void key;
		const creds: SigV4Credentials = { kind: "sigv4-header", accessKey: JWT, date: "20250101", region: "us-east-1", service: "s3", scope: "20250101/us-east-1/s3/aws4_request", signedHeaders: ["host"], signature: "0".repeat(64) };
		const now = Date.UTC(2025, 0, 1);
		const r = verifySigV4({ method: "PUT", url: "/io/k", headers: { host: "h", "x-amz-date": "20250101T000000Z", "content-length": "5" } }, creds, GATEWAY_SECRET, { now });
		assert.ok(!r.ok && r.code === "InvalidRequest");
		const r2 = verifySigV4({ method: "GET", url: "/io/k", headers: { host: "h", "x-amz-date": "20250101T000000Z" } }, creds, GATEWAY_SECRET, { now });
		assert.ok(!r2.ok && r2.code === "SignatureDoesNotMatch");
		const r3 = verifySigV4({ method: "GET", url: "/io/k", headers: { host: "h", "x-amz-date": "20250101T000000Z" } }, { ...creds, signedHeaders: ["x-amz-date"] }, GATEWAY_SECRET, { now });
		assert.ok(!r3.ok && r3.code === "AuthorizationHeaderMalformed", "host must be signed");
	});
});

describe("io protocol: XML", function () {
	it("error documents: codes, statuses, escaping", () => {
		const want: Record<string, number> = {
			AccessDenied: 403, NoSuchKey: 404, NoSuchBucket: 404, NoSuchUpload: 404, InvalidArgument: 400, InvalidRange: 416, SignatureDoesNotMatch: 403,
			RequestTimeTooSkewed: 403, EntityTooLarge: 400, MalformedXML: 400, InvalidPart: 400, InvalidPartOrder: 400, NotImplemented: 501, InternalError: 500, MethodNotAllowed: 405,
		};
		for (const [code, status] of Object.entries(want)) assert.equal(new S3Error(code as S3ErrorCode).status, status, code);
		const r = errorResponse(new S3Error("NoSuchKey", "no <such> & key", { Key: "a&b" }), "/io/a&b", "rid-1");
		assert.equal(r.status, 404);
		assert.equal(r.headers["Content-Type"], "application/xml");
		assert.equal(r.body, '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>no &lt;such&gt; &amp; key</Message><Key>a&amp;b</Key><Resource>/io/a&amp;b</Resource><RequestId>rid-1</RequestId></Error>');
		const doc = parseXml(r.body);
		assert.equal(doc.children.find((c) => c.name === "Message")?.text, "no <such> & key");
		// unknown errors hide their message
		const internal = errorResponse(new Error("secret stack detail"), "/io/x", "r");
		assert.equal(internal.status, 500);
		assert.doesNotMatch(internal.body, /secret/);
		assert.equal(toS3Error({ code: 404, message: "gone" }).code, "NoSuchKey");
		assert.equal(toS3Error({ code: 403, message: "no" }).code, "AccessDenied");
	});

	it("ListBucketResult v2 with encoding-type=url, v1 shape, other builders parse back", () => {
		const xml = listObjectsV2Xml({
			Name: "io", Prefix: "a b/", Delimiter: "/", MaxKeys: 2, EncodingType: "url", IsTruncated: true, NextContinuationToken: "n&1", ContinuationToken: "c1", StartAfter: "a b/0",
			Contents: [{ Key: "a b/x&y.txt", LastModified: Date.UTC(2024, 1, 3, 4, 5, 6), ETag: "e1", Size: 12 }],
			CommonPrefixes: ["a b/sub dir/"],
		});
		const doc = parseXml(xml);
		const get = (n: string) => doc.children.find((c) => c.name === n)?.text;
		assert.equal(doc.name, "ListBucketResult");
		assert.equal(get("Prefix"), "a%20b/");
		assert.equal(get("KeyCount"), "2");
		assert.equal(get("IsTruncated"), "true");
		assert.equal(get("NextContinuationToken"), "n&1");
		assert.equal(get("EncodingType"), "url");
		const contents = doc.children.find((c) => c.name === "Contents")!;
		const f = (n: string) => contents.children.find((c) => c.name === n)?.text;
		assert.equal(f("Key"), "a%20b/x%26y.txt");
		assert.equal(f("LastModified"), "2024-02-03T04:05:06.000Z");
		assert.equal(f("ETag"), '"e1"');
		assert.equal(f("StorageClass"), "STANDARD");
		assert.match(xml, /<CommonPrefixes><Prefix>a%20b\/sub%20dir\/<\/Prefix><\/CommonPrefixes>/);
		const v1 = parseXml(listObjectsV1Xml({ Name: "io", Prefix: "", Marker: "m", NextMarker: "z", MaxKeys: 1000, IsTruncated: true, Contents: [] }));
		assert.deepEqual(v1.children.map((c) => c.name), ["Name", "Prefix", "Marker", "NextMarker", "MaxKeys", "IsTruncated"]);
		assert.equal(parseXml(deleteResultXml({ Deleted: [{ Key: "a" }], Errors: [], Quiet: true })).children.length, 0);
		assert.match(locationXml("eu-west-1"), /<LocationConstraint xmlns="[^"]+">eu-west-1<\/LocationConstraint>/);
	});

	it("CompleteMultipartUpload / Delete parsers: tolerant of namespaces, comments, CDATA, checksums", () => {
		const parts = parseCompleteMultipartUpload(
			`<?xml version="1.0" encoding="UTF-8"?>\n<!-- c --><CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">\n <Part><PartNumber> 1 </PartNumber><ETag>&quot;aa&quot;</ETag><ChecksumCRC32>x==</ChecksumCRC32></Part>\n <s3:Part xmlns:s3="x"><s3:ETag><![CDATA["bb"]]></s3:ETag><s3:PartNumber>2</s3:PartNumber></s3:Part></CompleteMultipartUpload>`,
		);
		assert.deepEqual(parts, [{ PartNumber: 1, ETag: "aa", Checksums: { ChecksumCRC32: "x==" } }, { PartNumber: 2, ETag: "bb" }]);
		const del = parseDeleteObjects(Buffer.from("<Delete><Quiet>TRUE</Quiet><Object><Key> sp ace &#x263A;&#65;</Key><VersionId>v1</VersionId></Object><Object><Key>b</Key></Object></Delete>"));
		assert.deepEqual(del, { Quiet: true, Objects: [{ Key: " sp ace ☺A", VersionId: "v1" }, { Key: "b" }] });
	});

	it("parsers refuse malformed documents, entities and oversize bodies", () => {
		const mx = (s: string | Buffer, f: (b: string | Buffer) => unknown = parseCompleteMultipartUpload) => expectS3Error(() => f(s), "MalformedXML");
		const p = (n: number, e = '"x"') => `<Part><PartNumber>${n}</PartNumber><ETag>${e}</ETag></Part>`;
		mx("");
		mx("not xml");
		mx(`<CompleteMultipartUpload>${p(1)}`);
		mx(`<CompleteMultipartUpload>${p(1)}</CompleteMultipartUploadX>`);
		mx(`<CompleteMultipartUpload><Part><PartNumber>1</ETag></Part></CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload>${p(1)}</CompleteMultipartUpload><x/>`);
		mx(`<CompleteMultipartUpload></CompleteMultipartUpload>`);
		mx(`<Other>${p(1)}</Other>`);
		mx(`<CompleteMultipartUpload>${p(1, "")}</CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload>${p(1, "&unknown;")}</CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload>${p(1, "a & b")}</CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload a=b>${p(1)}</CompleteMultipartUpload>`);
		mx(`<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><CompleteMultipartUpload>${p(1, "&x;")}</CompleteMultipartUpload>`);
		mx(`<CompleteMultipartUpload><!ENTITY x "y">${p(1)}</CompleteMultipartUpload>`);
		mx(Buffer.from([0x3c, 0x61, 0xff, 0xfe, 0x3e]));
		mx("<a>" + "<b>".repeat(40) + "</b>".repeat(40) + "</a>");
		mx(`<CompleteMultipartUpload>${p(1)}</CompleteMultipartUpload>`.padEnd(100, " "), (b) => parseCompleteMultipartUpload(b, 50));
		expectS3Error(() => parseCompleteMultipartUpload(`<CompleteMultipartUpload>${p(2)}${p(1)}</CompleteMultipartUpload>`), "InvalidPartOrder");
		expectS3Error(() => parseCompleteMultipartUpload(`<CompleteMultipartUpload>${p(1)}${p(1)}</CompleteMultipartUpload>`), "InvalidPartOrder");
		expectS3Error(() => parseCompleteMultipartUpload(`<CompleteMultipartUpload>${p(10001)}</CompleteMultipartUpload>`), "InvalidArgument");
		const d = (s: string) => mx(s, parseDeleteObjects);
		d("<Delete></Delete>");
		d("<Delete><Object></Object></Delete>");
		d("<Delete><Object><Key></Key></Object></Delete>");
		d("<Delete><Object><Key>a</Key></Object><Quiet>maybe</Quiet></Delete>");
		d("<Delete>" + "<Object><Key>k</Key></Object>".repeat(1001) + "</Delete>");
		assert.equal(parseDeleteObjects("<Delete>" + "<Object><Key>k</Key></Object>".repeat(1000) + "</Delete>").Objects.length, 1000);
		// 10,000 parts fit in the default limit
		let big = "<CompleteMultipartUpload>";
		for (let i = 1; i <= 10000; i++) big += `<Part><PartNumber>${i}</PartNumber><ETag>"${"f".repeat(32)}"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>`;
		assert.equal(parseCompleteMultipartUpload(big + "</CompleteMultipartUpload>").length, 10000);
	});
});
