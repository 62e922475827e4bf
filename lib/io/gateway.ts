// The /io S3 gateway: one bucket, "io", whose keys are user paths (`<workspace-slug>/<path>`). Credentials are
// the user's token (as the SigV4 access key with the secret "gatewaysecret", as X-Pydio-Bearer, or as
// ?pydio_jwt=). Listings and permissions come from the tree service; bytes flow between the HTTP socket and the
// datasource's store in this process, streamed, never through the transporter.
import type { Located, Prepared, UserCaller } from "../contracts";
import type { LinkOp } from "../contracts/share";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { IoTransfers } from "./transfers";
import { lookup as mimeLookup } from "mime-types";
import type { Identity } from "../auth/identity";
import { checkRoom, type ObjectStore } from "../storage/types";
import { parseS3Request, BUCKETS, resolveRange, contentRange, validateKey, MAX_UPLOAD_ID, type S3Request } from "./request";
import { extractCredentials, verifySigV4, GATEWAY_SECRET, type VerifyOk } from "./sigv4";
import { createBodyDecoder, checkedChecksumHeader } from "./chunked";
import { bucketCreationDate, getTaggingXml, notConfigured, objectAclXml, putTagging, storeTags, tagsOf } from "./buckets";
import { readAhead } from "./read-ahead";
import { headersFromRequest, decodeObjectHeaders, type ObjectHeaders } from "./object-meta";
import { contentMd5, requestChecksum, withContentMd5 } from "./checksums";
import { ZipWriter, safeEntryPath } from "../jobs/zip";
import { MAX_ARCHIVE_ENTRIES, archiveSource } from "../jobs/archive";
import {
	S3Error,
	errorResponse,
	listBucketsXml,
	listObjectsV2Xml,
	listObjectsV1Xml,
	locationXml,
	initiateMultipartUploadXml,
	completeMultipartUploadXml,
	listPartsXml,
	copyObjectResultXml,
	copyPartResultXml,
	deleteResultXml,
	parseCompleteMultipartUpload,
	parseDeleteObjects,
	parseTagging,
	accessControlPolicyXml,
	requestPaymentXml,
	type S3Tag,
	readSmallBody,
	quoteETag,
	unquoteETag,
} from "./xml";

export interface IoDeps {
	identity(token: string, ip: string): Promise<Identity>;
	call: UserCaller<Identity>["call"];
	store(datasource: string): Promise<ObjectStore>;
	/** Key signing multipart upload ids, so that they carry their target without server-side state. */
	secret(): string;
	/** The client's address, as /a sees it (lib/gateway/client-address: proxies' headers only from trusted proxies). */
	clientIp(req: IncomingMessage): string;
	/** Addresses refused whatever their credentials (the administrators' blacklist). */
	banned(ip: string): boolean;
	log(line: string): void;
	/** The largest object an upload may make, in bytes (configuration tree core.uploader UPLOAD_MAX_SIZE); 0: none. */
	maxUploadSize?(): Promise<number>;
}

interface Upload extends Prepared {
	/** The store's own upload id. */
	s: string;
	/** Owner's uuid and the S3 key, checked on every part. */
	o: string;
	K: string;
	/** The headers to store with the object once completed (given to CreateMultipartUpload). */
	h?: ObjectHeaders;
	/** The tags to give it then (x-amz-tagging of CreateMultipartUpload: aws s3 cp copies tags this way). */
	t?: S3Tag[];
}

const BUCKET = "io";
/** Bytes of an archive entry read (and, for a smaller entry, checked whole) before its answer starts. */
const ARCHIVE_READ_AHEAD = 1 << 20;

/** An archive entry's path as extraction would write it, or null for one that is refused. */
function safeEntryPathOrNull(name: string): string | null {
	try {
		return safeEntryPath(name);
	} catch {
		return null;
	}
}
/** `<anything>-<SelectionUUID>.zip`: the download of a saved selection. */
const SELECTION_ZIP = /-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.zip$/;

/** Refuses an object larger than the configured upload limit. */
function checkLimit(size: number | undefined, max: number): void {
	if (max > 0 && size !== undefined && size > max) throw new S3Error("EntityTooLarge", `Uploads are limited to ${max} bytes (this one has ${size})`, { ProposedSize: String(size), MaxSizeAllowed: String(max) });
}

/** Counts a body of unannounced length, and fails it (nothing stored: puts are atomic) past the upload limit. */
function limited(body: NodeJS.ReadableStream, max: number): NodeJS.ReadableStream {
	if (max <= 0) return body;
	let seen = 0;
	const guard = new Transform({
		transform(chunk: Buffer, _enc, cb) {
			seen += chunk.length;
			if (seen > max) return cb(new S3Error("EntityTooLarge", `Uploads are limited to ${max} bytes`, { MaxSizeAllowed: String(max) }));
			cb(null, chunk);
		},
	});
	body.on("error", (e) => guard.destroy(e));
	return body.pipe(guard);
}

export class IoGateway {
	/** Requests and bytes through /io (the gateway's /metrics). */
	readonly transfers = new IoTransfers();
	constructor(private readonly deps: IoDeps) {}

	private async uploadLimit(): Promise<number> {
		return this.deps.maxUploadSize ? await this.deps.maxUploadSize() : 0;
	}

	async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		this.transfers.track(req, res);
		const requestId = randomBytes(8).toString("hex").toUpperCase();
		const started = Date.now();
		const path = (req.url ?? "/").split("?")[0];
		let user: Identity | undefined;
		try {
			const ip = this.deps.clientIp(req);
			if (this.deps.banned(ip)) throw new S3Error("AccessDenied", `Access from ${ip} is refused`);
			const s3 = parseS3Request(req.method ?? "GET", req.url ?? "/", req.headers);
			let verified: VerifyOk | null = null;
			const creds = extractCredentials(req.method ?? "GET", req.url ?? "/", req.headers);
			let token: string;
			if (creds.kind === "none") throw new S3Error("AccessDenied", "Credentials are required: your token as the access key (secret gatewaysecret), X-Pydio-Bearer, or pydio_jwt");
			else if (creds.kind === "invalid") throw new S3Error(creds.code, creds.message);
			else if (creds.kind === "bearer") token = creds.token;
			else {
				const v = verifySigV4({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers }, creds, GATEWAY_SECRET);
				if (!v.ok) throw new S3Error(v.code, v.message);
				verified = v;
				token = creds.accessKey;
			}
			user = await this.deps.identity(token, ip).catch(() => {
				throw new S3Error("AccessDenied", "Invalid or expired token");
			});
			res.setHeader("x-amz-request-id", requestId);
			await this.dispatch(s3, req, res, user, verified);
		} catch (err) {
			const r = errorResponse(err, path, requestId);
			if (r.status >= 500) this.deps.log(`io ${req.method} ${path} failed: ${(err as Error)?.stack ?? String(err)}`);
			if (res.headersSent) {
				res.destroy();
			} else {
				res.writeHead(r.status, r.headers);
				res.end(req.method === "HEAD" ? undefined : r.body);
			}
			// Whatever the client still sends is not read: close rather than wait for it.
			if (!req.complete) req.resume();
		} finally {
			this.deps.log(`${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms ${user?.Login ?? "-"}`);
		}
	}

	private async dispatch(s3: S3Request, req: IncomingMessage, res: ServerResponse, user: Identity, verified: VerifyOk | null): Promise<void> {
		const key = s3.key ?? "";
		switch (s3.operation) {
			case "ListBuckets":
				// As Cells: only io (data is the same bucket; listing both would show tools every file twice).
				return this.xml(res, 200, listBucketsXml({ Owner: { ID: user.Uuid, DisplayName: user.Login }, Buckets: [{ Name: BUCKET, CreationDate: bucketCreationDate() }] }));
			case "CreateBucket":
				// rclone creates the bucket before its first upload: it exists, and is the caller's.
				throw new S3Error("BucketAlreadyOwnedByYou", undefined, { BucketName: s3.bucket ?? BUCKET });
			case "GetBucketAcl":
				return this.xml(res, 200, accessControlPolicyXml({ ID: user.Uuid, DisplayName: user.Login }, "FULL_CONTROL"));
			case "GetBucketPolicy":
			case "GetBucketCors":
			case "GetBucketLifecycle":
			case "GetBucketTagging":
				throw notConfigured(s3.operation);
			case "GetBucketRequestPayment":
				return this.xml(res, 200, requestPaymentXml());
			case "GetObjectAcl":
				return this.xml(res, 200, await objectAclXml(this.deps, key, user));
			case "GetObjectTagging":
				return this.xml(res, 200, await getTaggingXml(this.deps, key, user));
			case "PutObjectTagging":
				await putTagging(this.deps, key, user, parseTagging(await readSmallBody(req.pipe(createBodyDecoder(s3.payload, verified)))));
				return void res.writeHead(200, { "Content-Length": 0 }).end();
			case "DeleteObjectTagging":
				await putTagging(this.deps, key, user, []);
				return void res.writeHead(204).end();
			case "HeadBucket":
				return void res.writeHead(200).end();
			case "GetBucketLocation":
				return this.xml(res, 200, locationXml());
			case "ListObjectsV2":
			case "ListObjects":
				return this.list(s3, res, user);
			case "HeadObject":
			case "GetObject":
				return this.get(s3, req, res, user, key);
			case "PutObject":
				return this.put(s3, req, res, user, verified, key);
			case "DeleteObject":
				await this.deps.call("tree.deleteObject", { Path: key }, user);
				return void res.writeHead(204).end();
			case "DeleteObjects": {
				const body = parseDeleteObjects(await readSmallBody(req));
				const outcome = new Map<number, { Code: string; Message: string } | null>();
				// Deepest keys first (descending order puts `dir/x` before `dir/`): a folder marker sent with the
				// folder's content then finds the folder emptied, and removes it.
				const order = body.Objects.map((o, i) => ({ key: o.Key, i })).sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
				for (const { key: k, i } of order) {
					try {
						validateKey(k);
						await this.deps.call("tree.deleteObject", { Path: k }, user);
						outcome.set(i, null);
					} catch (e) {
						const r = errorResponse(e, k, "");
						outcome.set(i, { Code: r.error.code, Message: r.error.message });
					}
				}
				const deleted: { Key: string }[] = [];
				const errors: { Key: string; Code: string; Message: string }[] = [];
				body.Objects.forEach((o, i) => {
					const err = outcome.get(i);
					if (err) errors.push({ Key: o.Key, ...err });
					else deleted.push({ Key: o.Key });
				});
				return this.xml(res, 200, deleteResultXml({ Deleted: deleted, Errors: errors, Quiet: body.Quiet }));
			}
			case "CopyObject": {
				const src = s3.copySource;
				if (!src || !BUCKETS.includes(src.bucket)) throw new S3Error("NoSuchBucket", "Objects can only be copied inside the io bucket");
				// COPY (the default) keeps the source's stored headers, REPLACE takes the request's.
				const headers = s3.metadataDirective === "REPLACE" ? headersFromRequest(req.headers, s3.payload) : undefined;
				if (src.key === key && !headers && (!src.versionId || src.versionId === "null"))
					throw new S3Error("InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.");
				if (src.versionId && src.versionId !== "null") return this.copyVersion(res, user, key, src.key, src.versionId, headers); // versions
				// The copy has the source's tags (COPY, S3's default) or the request's (REPLACE); onto itself it keeps its own.
				const tags = s3.taggingDirective === "REPLACE" ? (s3.tagging ?? []) : src.key !== key ? await tagsOf(this.deps, src.key, user) : undefined;
				const r = await this.deps.call("tree.copyObject", { From: src.key, To: key, ...(headers ? { Headers: headers } : {}) }, user);
				if (tags) await storeTags(this.deps, key, user, tags);
				return this.xml(res, 200, copyObjectResultXml({ ETag: r.Etag ?? "", LastModified: r.MTime * 1000 }));
			}
			case "CreateMultipartUpload": {
				// Checked before anything is created: too large metadata leaves no upload behind.
				const h = headersFromRequest(req.headers, s3.payload);
				await this.linkAccess(user, "upload");
				const w = await this.deps.call("tree.prepareWrite", { Path: key }, user);
				const store = await this.deps.store(w.ds);
				const s = await store.createMultipart(w.key);
				// The headers ride in the signed upload id, as the rest of the upload's state.
				const uploadId = this.signUpload({ ...w, s, o: user.Uuid, K: key, ...(Object.keys(h).length ? { h } : {}), ...(s3.tagging ? { t: s3.tagging } : {}) });
				if (uploadId.length > MAX_UPLOAD_ID) {
					await store.abortMultipart(s).catch(() => undefined);
					throw new S3Error("MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size for a multipart upload, whose id carries them");
				}
				return this.xml(res, 200, initiateMultipartUploadXml({ Bucket: s3.bucket ?? BUCKET, Key: key, UploadId: uploadId }));
			}
			case "UploadPart": {
				const up = this.upload(s3, user, key);
				const checksum = requestChecksum(req.headers, s3.payload);
				contentMd5(req.headers);
				const store = await this.deps.store(up.ds);
				const max = await this.uploadLimit();
				checkLimit(s3.payload.objectSize, max);
				await checkRoom(store, s3.payload.objectSize);
				const decoded = req.pipe(createBodyDecoder(s3.payload, verified, { checksum }));
				const body = limited(withContentMd5(decoded, req.headers), max);
				const part = await store.putPart(up.s, s3.partNumber ?? 0, body, s3.payload.objectSize);
				res.writeHead(200, { ETag: part.etag, ...checkedChecksumHeader(checksum, decoded) });
				return void res.end();
			}
			case "UploadPartCopy": {
				const up = this.upload(s3, user, key);
				const src = s3.copySource;
				if (!src || !BUCKETS.includes(src.bucket)) throw new S3Error("NoSuchBucket", "Parts can only be copied from the io bucket");
				const from = await this.deps.call("tree.locate", { Path: src.key, need: "read" }, user);
				if (!from.node?.Key || from.node.Type !== "LEAF") throw new S3Error("NoSuchKey", `${src.key} does not exist`);
				// versions: a CopySource with ?versionId= reads that kept version.
				const source = src.versionId && src.versionId !== "null" ? await this.version(from.node.Uuid, src.versionId, user, src.key) : { ds: from.ds, key: from.node.Key, size: from.node.Size };
				const range = s3.copySourceRange ? resolveRange(s3.copySourceRange, source.size) : undefined;
				if (range === "unsatisfiable") throw new S3Error("InvalidRange");
				const srcStore = await this.deps.store(source.ds);
				const store = await this.deps.store(up.ds);
				const part = await store.putPart(up.s, s3.partNumber ?? 0, await srcStore.get(source.key, range), range ? range.end - range.start + 1 : source.size);
				return this.xml(res, 200, copyPartResultXml({ ETag: part.etag, LastModified: Date.now() }));
			}
			case "CompleteMultipartUpload": {
				const up = this.upload(s3, user, key);
				const parts = parseCompleteMultipartUpload(await readSmallBody(req));
				const store = await this.deps.store(up.ds);
				const max = await this.uploadLimit();
				if (max > 0) {
					// The parts the client names, as stored: a file past the limit is refused and its upload dropped.
					const sizes = new Map((await store.listParts(up.s)).map((p) => [p.partNumber, p.size]));
					const total = parts.reduce((n, p) => n + (sizes.get(p.PartNumber) ?? 0), 0);
					if (total > max) {
						await store.abortMultipart(up.s).catch(() => undefined);
						checkLimit(total, max);
					}
				}
				const done = await store.completeMultipart(up.s, parts.map((p) => ({ partNumber: p.PartNumber, etag: p.ETag })));
				await this.deps.call("tree.commitWrite", { ds: up.ds, path: up.path, uuid: up.uuid, key: up.key, size: done.size, etag: done.md5 ?? unquoteETag(done.etag), headers: up.h }, user);
				if (up.t) await storeTags(this.deps, key, user, up.t);
				return this.xml(res, 200, completeMultipartUploadXml({ Location: `/${s3.bucket ?? BUCKET}/${key}`, Bucket: s3.bucket ?? BUCKET, Key: key, ETag: done.etag }));
			}
			case "AbortMultipartUpload": {
				const up = this.upload(s3, user, key);
				await (await this.deps.store(up.ds)).abortMultipart(up.s);
				return void res.writeHead(204).end();
			}
			case "ListParts": {
				const up = this.upload(s3, user, key);
				const parts = await (await this.deps.store(up.ds)).listParts(up.s);
				const after = s3.listParts?.partNumberMarker ?? 0;
				const max = s3.listParts?.maxParts ?? 1000;
				const page = parts.filter((p) => p.partNumber > after).slice(0, max);
				const truncated = parts.filter((p) => p.partNumber > after).length > max;
				return this.xml(
					res,
					200,
					listPartsXml({
						Bucket: s3.bucket ?? BUCKET,
						Key: key,
						UploadId: s3.uploadId ?? "",
						MaxParts: max,
						PartNumberMarker: after,
						NextPartNumberMarker: truncated ? page[page.length - 1]?.partNumber : undefined,
						IsTruncated: truncated,
						Parts: page.map((p) => ({ PartNumber: p.partNumber, ETag: unquoteETag(p.etag), Size: p.size, LastModified: Date.now() })),
					}),
				);
			}
			case "ListMultipartUploads":
				throw new S3Error("NotImplemented", "Listing in-progress multipart uploads is not supported: upload ids carry their own state");
			default:
				throw new S3Error("NotImplemented", `${s3.operation} is not supported`);
		}
	}

	private xml(res: ServerResponse, status: number, body: string): void {
		res.writeHead(status, { "Content-Type": "application/xml", "Content-Length": Buffer.byteLength(body) });
		res.end(body);
	}

	private async list(s3: S3Request, res: ServerResponse, user: Identity): Promise<void> {
		const p = s3.list!;
		const startAfter = p.version === 2 ? (p.continuationToken ? Buffer.from(p.continuationToken, "base64url").toString("utf8") : p.startAfter) : p.marker;
		const r = await this.deps.call(
			"tree.listObjects",
			{ Prefix: p.prefix, Delimiter: p.delimiter, StartAfter: startAfter, MaxKeys: p.maxKeys },
			user,
		);
		const contents = r.Contents.map((c) => ({ Key: c.Key, Size: c.Size, LastModified: c.MTime * 1000, ETag: c.Etag ?? "", Owner: { ID: user.Uuid, DisplayName: user.Login } }));
		if (p.version === 2) {
			return this.xml(
				res,
				200,
				listObjectsV2Xml({
					Name: s3.bucket ?? BUCKET,
					Prefix: p.prefix,
					Delimiter: p.delimiter,
					MaxKeys: p.maxKeys,
					EncodingType: p.encodingType,
					ContinuationToken: p.continuationToken,
					StartAfter: p.startAfter,
					NextContinuationToken: r.NextStartAfter ? Buffer.from(r.NextStartAfter).toString("base64url") : undefined,
					IsTruncated: r.IsTruncated,
					Contents: contents,
					CommonPrefixes: r.CommonPrefixes,
					FetchOwner: p.fetchOwner,
				}),
			);
		}
		return this.xml(
			res,
			200,
			listObjectsV1Xml({ Name: s3.bucket ?? BUCKET, Prefix: p.prefix, Marker: p.marker, NextMarker: p.delimiter ? r.NextStartAfter : undefined, Delimiter: p.delimiter, MaxKeys: p.maxKeys, EncodingType: p.encodingType, IsTruncated: r.IsTruncated, Contents: contents, CommonPrefixes: r.CommonPrefixes }),
		);
	}

	private async get(s3: S3Request, req: IncomingMessage, res: ServerResponse, user: Identity, key: string): Promise<void> {
		const loc = await this.deps.call("tree.locate", { Path: key, need: "read" }, user);
		const node = loc.node;
		const selection = SELECTION_ZIP.exec(key);
		if (!node && selection && s3.operation === "GetObject") return this.zipSelection(selection[1], res, user, key.slice(key.lastIndexOf("/") + 1, selection.index));
		if (node?.Type === "COLLECTION" && key.endsWith("/")) return void res.writeHead(200, { "Content-Length": 0, "Content-Type": "application/x-directory" }).end();
		if (!node && loc.archive && (s3.operation === "GetObject" || s3.operation === "HeadObject")) return this.archiveEntry(loc.ds, loc.archive, s3, res, key);
		if (!node || node.Type !== "LEAF" || node.Key === undefined) throw new S3Error("NoSuchKey", `${key} does not exist`, { Key: key });
		// versions: ?versionId= serves a kept version of this node (read right checked above on the key).
		const versioned = s3.versionId && s3.versionId !== "null" ? await this.version(node.Uuid, s3.versionId, user, key) : null;
		const content = versioned ?? { ds: loc.ds, key: node.Key, size: node.Size, etag: node.Etag ?? "", mtime: node.MTime };
		const range = resolveRange(s3.range, content.size);
		if (range === "unsatisfiable") {
			res.setHeader("Content-Range", contentRange("unsatisfiable", content.size));
			throw new S3Error("InvalidRange");
		}
		// Stored headers belong to the current content: a kept version is answered without them.
		const stored = versioned ? {} : decodeObjectHeaders(node.Headers);
		const headers: Record<string, string | number> = {
			"Content-Type": mimeLookup(key) || "application/octet-stream",
			...stored,
			"Content-Length": range ? range.end - range.start + 1 : content.size,
			ETag: quoteETag(content.etag),
			"Last-Modified": new Date(content.mtime * 1000).toUTCString(),
			"Accept-Ranges": "bytes",
			...s3.responseHeaders,
		};
		if (versioned) headers["x-amz-version-id"] = s3.versionId as string;
		if (range) headers["Content-Range"] = contentRange(range, content.size);
		if (s3.operation === "HeadObject") return void res.writeHead(range ? 206 : 200, headers).end();
		// A public link's visitor: each download counts toward the link's limit (once, by the request that starts
		// at the first byte), atomically in the store, and is refused with a clear 403 once it is reached.
		// A file asked as an attachment ("save as"), or one a browser cannot show (no image, text, pdf or media), is a
		// `save`: refused on a preview-only link (DownloadDisabled), which only shows what a page can preview.
		const saving =
			/^\s*attachment/i.test(headerText(s3.responseHeaders["Content-Disposition"] ?? stored["Content-Disposition"])) ||
			// The file's own type: a response-content-type override does not make a zip previewable.
			!PREVIEWABLE.test(headerText(stored["Content-Type"]) || mimeLookup(key) || "application/octet-stream");
		await this.linkAccess(user, range && range.start > 0 ? "visit" : saving ? "save" : "download");
		const store = await this.deps.store(content.ds);
		const stream = await store.get(content.key, range);
		res.writeHead(range ? 206 : 200, headers);
		await pipeline(stream, res);
	}

	/** A file inside an archive (archive browsing), read out of it as it is streamed; whole, Range is not offered. */
	private async archiveEntry(ds: string, a: NonNullable<Located["archive"]>, s3: S3Request, res: ServerResponse, key: string): Promise<void> {
		const store = await this.deps.store(ds);
		const src = await archiveSource(a.Format, store, a.Key ?? "", a.Size, { maxEntries: MAX_ARCHIVE_ENTRIES }).catch(() => null);
		if (src) {
			for await (const e of src.entries()) {
				if (e.kind !== "file" || safeEntryPathOrNull(e.name) !== a.Inner) continue;
				const headers = { "Content-Type": mimeLookup(key) || "application/octet-stream", "Content-Length": e.size, "Last-Modified": new Date(a.MTime * 1000).toUTCString() };
				if (s3.operation === "HeadObject") return void res.writeHead(200, headers).end();
				const body = await e.open();
				// A corrupt entry (more or other bytes than its header says) found in the part read ahead is an error
				// answer; past it, the reader holds back the last bytes (lib/jobs/zip), so a cut answer is always
				// shorter than its Content-Length and the client knows.
				const { head, ended } = await readAhead(body, ARCHIVE_READ_AHEAD);
				res.writeHead(200, headers);
				if (ended) return void res.end(Buffer.concat(head));
				for (const chunk of head) res.write(chunk);
				return void (await pipeline(body, res));
			}
		}
		throw new S3Error("NoSuchKey", `${key} does not exist`, { Key: key });
	}

	private async put(s3: S3Request, req: IncomingMessage, res: ServerResponse, user: Identity, verified: VerifyOk | null, key: string): Promise<void> {
		// A public link's visitor uploads only while the link is usable (it may have expired since the login).
		await this.linkAccess(user, "upload");
		if (key.endsWith("/")) {
			// A "folder marker" from an S3 client: a folder in the tree, kept until its marker is deleted.
			await this.deps.call("tree.folderMarker", { Path: key }, user);
			req.resume();
			return void res.writeHead(200, { ETag: quoteETag("d41d8cd98f00b204e9800998ecf8427e") }).end();
		}
		const stored = headersFromRequest(req.headers, s3.payload);
		const checksum = requestChecksum(req.headers, s3.payload);
		// A malformed Content-MD5 is refused before anything is written; a wrong one when the body has arrived.
		contentMd5(req.headers);
		const max = await this.uploadLimit();
		checkLimit(s3.payload.objectSize, max);
		// An announced size is checked against the storage's room by prepareWrite, before it makes the missing
		// folders: a refused upload leaves nothing.
		const w = await this.deps.call("tree.prepareWrite", { Path: key, ...(s3.payload.objectSize !== undefined ? { Size: s3.payload.objectSize } : {}) }, user);
		const store = await this.deps.store(w.ds);
		const decoded = req.pipe(createBodyDecoder(s3.payload, verified, { checksum }));
		req.on("error", (e) => decoded.destroy(e));
		const body = limited(withContentMd5(decoded, req.headers), max);
		const written = await store.put(w.key, body, { size: s3.payload.objectSize, contentType: s3.contentType });
		await this.deps.call("tree.commitWrite", { ds: w.ds, path: w.path, uuid: w.uuid, key: w.key, size: written.size, etag: written.md5, headers: stored }, user);
		if (s3.tagging) await storeTags(this.deps, key, user, s3.tagging);
		res.writeHead(200, { ETag: quoteETag(written.md5), ...checkedChecksumHeader(checksum, decoded) });
		res.end();
	}

	// ---- versions (owned by the versions work) ----
	/** Where a kept version of node `uuid` lives (the versions service checks that it belongs to that node). */
	private async version(uuid: string, versionId: string, user: Identity, key: string): Promise<{ ds: string; key: string; size: number; etag: string; mtime: number }> {
		try {
			return await this.deps.call("versions.locate", { uuid, versionId }, user);
		} catch (e) {
			const err = e as { code?: unknown; name?: string };
			if (err.code === 404 || err.code === 422 || err.name === "ServiceNotFoundError") throw new S3Error("NoSuchKey", `Version ${versionId.slice(0, 80)} of ${key} does not exist`, { Key: key, VersionId: versionId.slice(0, 80) });
			throw e;
		}
	}

	/**
	 * CopyObject from `<src>?versionId=`: that version's content becomes the content of `key` (restoring a version
	 * is a copy onto the same key; the write keeps the replaced content as a new version, like any overwrite).
	 */
	private async copyVersion(res: ServerResponse, user: Identity, key: string, srcKey: string, versionId: string, headers: ObjectHeaders | undefined): Promise<void> {
		const from = await this.deps.call("tree.locate", { Path: srcKey, need: "read" }, user);
		if (!from.node || from.node.Type !== "LEAF") throw new S3Error("NoSuchKey", `${srcKey} does not exist`, { Key: srcKey });
		const v = await this.version(from.node.Uuid, versionId, user, srcKey);
		// Opened before the write: capturing the target's current content may prune the very version being copied.
		const body = await (await this.deps.store(v.ds)).get(v.key);
		try {
			const w = await this.deps.call("tree.prepareWrite", { Path: key }, user);
			const written = await (await this.deps.store(w.ds)).put(w.key, body, { size: v.size });
			// A kept version has no stored headers of its own: the copy has the request's (REPLACE) or none.
			const r = await this.deps.call("tree.commitWrite", { ds: w.ds, path: w.path, uuid: w.uuid, key: w.key, size: written.size, etag: written.md5, headers }, user);
			res.setHeader("x-amz-copy-source-version-id", versionId);
			return this.xml(res, 200, copyObjectResultXml({ ETag: written.md5, LastModified: r.MTime * 1000 }));
		} catch (e) {
			(body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
			throw e;
		}
	}
	// ---- end versions ----

	/**
	 * A public link's visitor is its hidden user (`Hidden`, whatever profile it was given): each access is checked
	 * against the link, and a download counted. Everyone else passes without a call.
	 */
	private async linkAccess(user: Identity, op: LinkOp): Promise<void> {
		if (user.Hidden) await this.deps.call("share.linkAccess", { login: user.Login, op }, user);
	}

	/**
	 * A saved selection (POST /a/tree/selection) as one zip, streamed: nothing is staged on disk. The zip is saved
	 * under the name the request gives before `-<uuid>.zip` (`/io/ws/Photos-<uuid>.zip` → Photos.zip).
	 */
	private async zipSelection(uuid: string, res: ServerResponse, user: Identity, name = ""): Promise<void> {
		const { paths } = await this.deps.call("selections.get", { uuid }, user);
		// A public link's visitor: the zip is one download of the link, counted (and refused past the limit) as a file's.
		await this.linkAccess(user, "save");
		const zip = new ZipWriter();
		const file = `${name || `selection-${uuid.slice(0, 8)}`}.zip`;
		const ascii = file.replace(/[^\x20-\x7e]|["\\]/g, "_");
		const disposition = `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
		res.writeHead(200, { "Content-Type": "application/zip", "Content-Disposition": disposition });
		const sent = pipeline(zip.output, res);
		const addFile = async (userPath: string, name: string) => {
			const loc = await this.deps.call("tree.locate", { Path: userPath, need: "read" }, user);
			if (!loc.node?.Key || loc.node.Type !== "LEAF") return;
			const store = await this.deps.store(loc.ds);
			await zip.addFile(name, await store.get(loc.node.Key), { mtime: loc.node.MTime * 1000, size: loc.node.Size });
		};
		for (const path of paths) {
			const top = path.slice(path.lastIndexOf("/") + 1);
			const loc = await this.deps.call("tree.locate", { Path: path, need: "read" }, user);
			if (loc.node?.Type === "LEAF") {
				await addFile(path, top);
				continue;
			}
			if (!loc.node) continue;
			await zip.addDirectory(top);
			let after: string | undefined;
			for (;;) {
				const page = await this.deps.call("tree.listObjects", { Prefix: `${path}/`, StartAfter: after, MaxKeys: 1000 }, user);
				for (const c of page.Contents) await addFile(c.Key, `${top}/${c.Key.slice(path.length + 1)}`);
				if (!page.IsTruncated || !page.NextStartAfter) break;
				after = page.NextStartAfter;
			}
		}
		await zip.finish();
		await sent;
	}

	private signUpload(u: Upload): string {
		const payload = Buffer.from(JSON.stringify(u)).toString("base64url");
		return `${payload}.${createHmac("sha256", this.deps.secret()).update(payload).digest("base64url")}`;
	}

	/** The upload an id stands for, if it was issued here, to this user, for this key. */
	private upload(s3: S3Request, user: Identity, key: string): Upload {
		const [payload, mac] = (s3.uploadId ?? "").split(".");
		const expected = createHmac("sha256", this.deps.secret()).update(payload ?? "").digest();
		const given = Buffer.from(mac ?? "", "base64url");
		if (!payload || given.length !== expected.length || !timingSafeEqual(given, expected)) throw new S3Error("NoSuchUpload");
		const u = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Upload;
		if (u.o !== user.Uuid || u.K !== key) throw new S3Error("NoSuchUpload");
		return u;
	}
}

/** Types a link page previews in the browser (Cells' preview-only links show these, never hand out the rest). */
const PREVIEWABLE = /^\s*(image\/|text\/|audio\/|video\/|application\/pdf\b|application\/json\b)/i;

function headerText(v: unknown): string {
	return typeof v === "string" ? v : Array.isArray(v) ? v.join(",") : "";
}
