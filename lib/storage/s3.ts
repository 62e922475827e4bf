// S3Store: a datasource kept in an S3 bucket (AWS, MinIO, s3rver...), keys prefixed by an optional base folder.
// Upload ids handed out by createMultipart() carry the object key (`<base64url key>.<native upload id>`), so that
// putPart/complete/abort, which only get the upload id, work on any node and after a restart.
import { mkdtemp, rm, stat } from "node:fs/promises";
import { createReadStream, createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { CompletedPart, S3Client } from "@aws-sdk/client-s3";
import { s3Sdk, s3Upload } from "./aws";
import { BadRequestError, ConflictError, CellarError, NotFoundError, NotSupportedError, ServiceUnavailableError } from "../errors";
import { checkCompletionParts, checkFolderKey, checkKey, checkPartNumber, checkPrefix, checkRange, HashingStream, quoteEtag } from "./keys";
import { RangeNotSatisfiableError, type MultipartPart, type ObjectInfo, type ObjectStore } from "./types";

/** Connection settings: enough for bucket-level calls (listBuckets, createBucket). */
export interface S3ConnectionConfig {
	/** e.g. "http://127.0.0.1:9000"; undefined = AWS */
	endpoint?: string;
	region: string;
	accessKeyId: string;
	secretAccessKey: string;
	forcePathStyle: boolean;
	/** Only send/verify checksums when an operation requires them (needed by s3rver and some S3 clones; fine on AWS). */
	checksumWhenRequired: boolean;
}

export interface S3StoreConfig extends S3ConnectionConfig {
	bucket: string;
	/** Key prefix inside the bucket, without leading/trailing "/". */
	baseFolder?: string;
	/** ListObjectsV2 page size (1..1000, default 1000). */
	listPageSize?: number;
}

const MiB = 1024 * 1024;
/** Known sizes up to this are buffered and sent with a single PutObject. */
const SINGLE_PUT_MAX = 5 * MiB;
/** lib-storage part size for streams of unknown size (10000 parts => up to ~78 GiB). */
const DEFAULT_PART_SIZE = 8 * MiB;
/** CopyObject handles up to 5 GiB; above, UploadPartCopy in parts of this size. */
const COPY_OBJECT_MAX = 5 * 1024 * MiB;
const COPY_PART_SIZE = 512 * MiB;

interface AwsError {
	name?: string;
	Code?: string;
	message?: string;
	$metadata?: { httpStatusCode?: number };
}
function awsName(err: unknown): string {
	const e = err as AwsError | undefined;
	return e?.name ?? e?.Code ?? "";
}
function awsStatus(err: unknown): number | undefined {
	return (err as AwsError | undefined)?.$metadata?.httpStatusCode;
}
function isNotFound(err: unknown): boolean {
	const n = awsName(err);
	return n === "NoSuchKey" || n === "NotFound" || (awsStatus(err) === 404 && n !== "NoSuchBucket" && n !== "NoSuchUpload");
}
function isNotImplemented(err: unknown): boolean {
	const n = awsName(err);
	const s = awsStatus(err);
	return n === "NotImplemented" || n === "MethodNotAllowed" || s === 501 || s === 405;
}

/** Maps an SDK error to one of ours; CellarErrors (e.g. a size mismatch from our own stream) pass through. */
function mapError(err: unknown, what: string): Error {
	if (err instanceof CellarError) return err;
	const n = awsName(err);
	const s = awsStatus(err);
	const msg = (err as AwsError | undefined)?.message ?? String(err);
	if (n === "NoSuchBucket") return new NotFoundError(`Bucket not found (${what})`, "bucket.not.found");
	if (n === "NoSuchUpload") return new NotFoundError(`NoSuchUpload: the upload does not exist or was completed/aborted`);
	if (isNotFound(err)) return new NotFoundError(`Object not found: ${what}`);
	if (n === "InvalidRange" || s === 416) return new RangeNotSatisfiableError();
	if (n === "InvalidPart" || n === "InvalidPartOrder" || n === "EntityTooSmall" || n === "InvalidArgument" || n === "InvalidBucketName" || n === "KeyTooLongError") {
		return new BadRequestError(`${n}: ${msg}`);
	}
	if (n === "BucketAlreadyExists") return new ConflictError(`Bucket already exists: ${what}`);
	if (n === "AccessDenied" || n === "InvalidAccessKeyId" || n === "SignatureDoesNotMatch") {
		return new ServiceUnavailableError(`Object storage refused the request (${n})`);
	}
	if (isNotImplemented(err)) return new NotSupportedError(`Object storage does not support this operation (${n || s})`);
	return err instanceof Error ? err : new Error(msg);
}

function makeClient(config: S3ConnectionConfig): S3Client {
	const mode = config.checksumWhenRequired ? "WHEN_REQUIRED" : "WHEN_SUPPORTED";
	return new (s3Sdk().S3Client)({
		endpoint: config.endpoint || undefined,
		region: config.region || "us-east-1",
		forcePathStyle: config.forcePathStyle,
		credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
		requestChecksumCalculation: mode,
		responseChecksumValidation: mode,
		// Errors are thrown to the caller; the SDK would also print some of them (e.g. aborted streaming requests).
		logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {} },
	});
}

/** `a/b c` -> `a/b%20c` for x-amz-copy-source. */
function encodeKeyPath(key: string): string {
	return key.split("/").map(encodeURIComponent).join("/");
}

export class S3Store implements ObjectStore {
	readonly kind = "S3" as const;
	readonly client: S3Client;
	readonly bucket: string;
	private readonly base: string;
	private readonly pageSize: number;
	/** Parts uploaded through this instance, used only when the server has no ListParts (s3rver). */
	/** Set once ListObjectsV2 paging failed on this server (s3rver): ListObjects V1 is used from then on. */
	private listV1 = false;
	private readonly knownParts = new Map<string, Map<number, { etag: string; size: number }>>();

	constructor(config: S3StoreConfig) {
		if (!config.bucket) throw new BadRequestError("S3 datasource needs a bucket");
		this.bucket = config.bucket;
		const base = (config.baseFolder ?? "").replace(/^\/+|\/+$/g, "");
		if (base !== "") checkKey(base, "base folder");
		this.base = base === "" ? "" : `${base}/`;
		this.pageSize = Math.min(1000, Math.max(1, config.listPageSize ?? 1000));
		this.client = makeClient(config);
	}

	/** Closes the HTTP agent of the client. */
	close(): void {
		this.client.destroy();
	}

	private full(key: string, folder = false): string {
		return this.base + (folder ? checkFolderKey(key) : checkKey(key)).join("/");
	}

	/**
	 * Atomic on any S3 server, including those that keep a truncated PutObject body (s3rver does): nothing is
	 * sent before the body is complete. Known sizes up to 5 MiB are read into memory and sent with one PutObject
	 * carrying Content-MD5; anything else goes through lib-storage's Upload (which holds at most a few parts in
	 * memory and only completes the multipart upload once the whole stream was read).
	 */
	async put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		const Key = this.full(key);
		const hasher = new HashingStream(opts?.size);
		if (opts?.size !== undefined && opts.size <= SINGLE_PUT_MAX) {
			const chunks: Buffer[] = [];
			await pipeline(body, hasher, async function (source: AsyncIterable<Buffer>) {
				for await (const chunk of source) chunks.push(chunk);
			}).catch((err: unknown) => {
				throw mapError(err, key);
			});
			const ContentMD5 = Buffer.from(hasher.md5, "hex").toString("base64");
			try {
				await this.client.send(
					new (s3Sdk().PutObjectCommand)({ Bucket: this.bucket, Key, Body: Buffer.concat(chunks), ContentLength: hasher.bytes, ContentMD5, ContentType: opts.contentType }),
				);
			} catch (err) {
				throw mapError(err, key);
			}
			return { size: hasher.bytes, md5: hasher.md5 };
		}
		let sourceError: unknown;
		const ac = new AbortController();
		const piping = pipeline(body, hasher).catch((err: unknown) => {
			sourceError ??= err;
			ac.abort();
		});
		const upload = new (s3Upload().Upload)({
			client: this.client,
			params: { Bucket: this.bucket, Key, Body: hasher, ContentType: opts?.contentType },
			partSize: Math.max(DEFAULT_PART_SIZE, opts?.size ? Math.ceil(opts.size / 10000) : 0),
			queueSize: 2,
			// We abort ourselves, tolerating servers without AbortMultipartUpload.
			leavePartsOnError: true,
			abortController: ac,
		});
		try {
			await upload.done();
		} catch (err) {
			// If our stream failed, that is the real cause; the SDK error is a consequence. Otherwise stop reading the source.
			const streamFailed = hasher.destroyed;
			if (!streamFailed) hasher.destroy();
			await piping;
			if (upload.uploadId) await this.abortNative(Key, upload.uploadId);
			throw mapError(streamFailed && sourceError ? sourceError : err, key);
		}
		await piping;
		if (sourceError) throw mapError(sourceError, key); // cannot happen: Upload only completes at the end of the stream
		return { size: hasher.bytes, md5: hasher.md5 };
	}

	/** AbortMultipartUpload, tolerating servers without it (s3rver) and uploads already gone. */
	private async abortNative(Key: string, UploadId: string): Promise<void> {
		try {
			await this.client.send(new (s3Sdk().AbortMultipartUploadCommand)({ Bucket: this.bucket, Key, UploadId }));
		} catch (err) {
			if (awsName(err) === "NoSuchUpload" || isNotImplemented(err)) return;
			throw mapError(err, Key);
		}
	}

	async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		const Key = this.full(key);
		if (range) checkRange(range);
		try {
			const out = await this.client.send(
				new (s3Sdk().GetObjectCommand)({ Bucket: this.bucket, Key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
			);
			if (!out.Body) throw new NotFoundError(`Object not found: ${key}`);
			return out.Body as unknown as Readable;
		} catch (err) {
			throw mapError(err, key);
		}
	}

	async head(key: string): Promise<ObjectInfo | null> {
		const Key = this.full(key);
		try {
			const out = await this.client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: this.bucket, Key }));
			return { key, size: out.ContentLength ?? 0, mtime: out.LastModified?.getTime() ?? 0, etag: out.ETag };
		} catch (err) {
			if (isNotFound(err)) return null;
			throw mapError(err, key);
		}
	}

	async delete(key: string): Promise<void> {
		const Key = this.full(key);
		try {
			await this.client.send(new (s3Sdk().DeleteObjectCommand)({ Bucket: this.bucket, Key }));
		} catch (err) {
			if (isNotFound(err)) return;
			throw mapError(err, key);
		}
	}

	async copy(from: string, to: string): Promise<{ size: number }> {
		const src = this.full(from);
		const dst = this.full(to);
		const info = await this.head(from);
		if (!info) throw new NotFoundError(`Object not found: ${from}`);
		if (src === dst) return { size: info.size };
		const CopySource = `${this.bucket}/${encodeKeyPath(src)}`;
		try {
			if (info.size <= COPY_OBJECT_MAX) {
				await this.client.send(new (s3Sdk().CopyObjectCommand)({ Bucket: this.bucket, Key: dst, CopySource }));
			} else {
				await this.copyMultipart(CopySource, dst, info.size);
			}
		} catch (err) {
			throw mapError(err, from);
		}
		return { size: info.size };
	}

	/** Server-side copy of objects over 5 GiB: UploadPartCopy ranges, then complete (abort on failure). */
	private async copyMultipart(CopySource: string, Key: string, size: number): Promise<void> {
		const { UploadId } = await this.client.send(new (s3Sdk().CreateMultipartUploadCommand)({ Bucket: this.bucket, Key }));
		const partSize = Math.max(COPY_PART_SIZE, Math.ceil(size / 10000));
		const ranges: { PartNumber: number; range: string }[] = [];
		for (let start = 0, n = 1; start < size; start += partSize, n++) {
			ranges.push({ PartNumber: n, range: `bytes=${start}-${Math.min(size, start + partSize) - 1}` });
		}
		try {
			const parts: CompletedPart[] = [];
			const queue = [...ranges];
			const worker = async (): Promise<void> => {
				for (let r = queue.shift(); r; r = queue.shift()) {
					const out = await this.client.send(
						new (s3Sdk().UploadPartCopyCommand)({ Bucket: this.bucket, Key, UploadId, PartNumber: r.PartNumber, CopySource, CopySourceRange: r.range }),
					);
					parts.push({ PartNumber: r.PartNumber, ETag: out.CopyPartResult?.ETag });
				}
			};
			await Promise.all([worker(), worker(), worker(), worker()]);
			parts.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
			await this.client.send(new (s3Sdk().CompleteMultipartUploadCommand)({ Bucket: this.bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
		} catch (err) {
			await this.client.send(new (s3Sdk().AbortMultipartUploadCommand)({ Bucket: this.bucket, Key, UploadId })).catch(() => undefined);
			throw err;
		}
	}

	async *list(prefix: string): AsyncIterable<ObjectInfo> {
		checkPrefix(prefix);
		const Prefix = this.base + (prefix ?? "");
		let after: string | undefined;
		for (;;) {
			const page = await this.listPage(Prefix, after, this.pageSize).catch((err: unknown) => {
				throw mapError(err, prefix);
			});
			const contents = page.contents.filter((c) => c.key.startsWith(this.base));
			// Some S3 clones (s3rver) return a page in folder-walk order: S3 key order is bytewise.
			contents.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
			for (const c of contents) {
				const key = c.key.slice(this.base.length);
				if (key === "" || key.endsWith("/")) continue; // folder markers
				yield { key, size: c.size, mtime: c.mtime, etag: c.etag };
			}
			if (!page.truncated || contents.length === 0) return;
			after = contents[contents.length - 1].key;
		}
	}

	/**
	 * One page of keys after `after`: ListObjectsV2 with StartAfter; if the server fails on it (s3rver answers
	 * InternalError for any truncated V2 page, its continuation tokens need a cipher OpenSSL 3 dropped), this
	 * store switches to ListObjects V1 with Marker, which every S3 implementation has.
	 */
	private async listPage(Prefix: string, after: string | undefined, MaxKeys: number): Promise<{ contents: ObjectInfo[]; truncated: boolean }> {
		const conv = (c: { Key?: string; Size?: number; LastModified?: Date; ETag?: string }): ObjectInfo => ({
			key: c.Key ?? "",
			size: c.Size ?? 0,
			mtime: c.LastModified?.getTime() ?? 0,
			etag: c.ETag,
		});
		if (!this.listV1) {
			try {
				const out = await this.client.send(new (s3Sdk().ListObjectsV2Command)({ Bucket: this.bucket, Prefix, StartAfter: after, MaxKeys }));
				return { contents: (out.Contents ?? []).filter((c) => c.Key).map(conv), truncated: out.IsTruncated === true };
			} catch (err) {
				if (awsName(err) !== "InternalError" && awsStatus(err) !== 500 && !isNotImplemented(err)) throw err;
				this.listV1 = true;
			}
		}
		const out = await this.client.send(new (s3Sdk().ListObjectsCommand)({ Bucket: this.bucket, Prefix, Marker: after, MaxKeys }));
		return { contents: (out.Contents ?? []).filter((c) => c.Key).map(conv), truncated: out.IsTruncated === true };
	}

	async mkdir(key: string): Promise<void> {
		this.full(key, true); // folders are implied by keys
	}

	async rmdir(key: string): Promise<void> {
		const folder = this.full(key, true);
		const prefix = `${folder}/`;
		for (;;) {
			let keys: string[];
			try {
				keys = (await this.listPage(prefix, undefined, 1000)).contents.map((c) => c.key).filter((k) => k.startsWith(prefix));
			} catch (err) {
				throw mapError(err, key);
			}
			if (keys.length === 0) return;
			try {
				const res = await this.client.send(
					new (s3Sdk().DeleteObjectsCommand)({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
				);
				const failed = (res.Errors ?? []).filter((e) => e.Code !== "NoSuchKey");
				if (failed.length) throw new Error(`Could not delete ${failed.length} object(s) under ${key}: ${failed[0].Code} ${failed[0].Message ?? ""}`);
			} catch (err) {
				throw mapError(err, key);
			}
		}
	}

	// ---- multipart ----

	private decodeUpload(uploadId: string): { key: string; Key: string; UploadId: string } {
		const dot = typeof uploadId === "string" ? uploadId.indexOf(".") : -1;
		if (dot <= 0 || dot === uploadId.length - 1) throw new NotFoundError("NoSuchUpload: unknown upload id");
		const key = Buffer.from(uploadId.slice(0, dot), "base64url").toString("utf8");
		try {
			return { key, Key: this.full(key), UploadId: uploadId.slice(dot + 1) };
		} catch {
			throw new NotFoundError("NoSuchUpload: unknown upload id");
		}
	}

	async createMultipart(key: string): Promise<string> {
		const Key = this.full(key);
		try {
			const out = await this.client.send(new (s3Sdk().CreateMultipartUploadCommand)({ Bucket: this.bucket, Key }));
			if (!out.UploadId) throw new Error("Object storage returned no UploadId");
			const uploadId = `${Buffer.from(key, "utf8").toString("base64url")}.${out.UploadId}`;
			this.knownParts.set(uploadId, new Map());
			return uploadId;
		} catch (err) {
			throw mapError(err, key);
		}
	}

	async putPart(uploadId: string, partNumber: number, body: NodeJS.ReadableStream, size?: number): Promise<{ etag: string; size: number }> {
		checkPartNumber(partNumber);
		const { key, Key, UploadId } = this.decodeUpload(uploadId);
		let spoolDir: string | undefined;
		try {
			let Body: NodeJS.ReadableStream;
			let ContentLength: number;
			let finished: Promise<void> = Promise.resolve();
			let sourceError: unknown;
			const ac = new AbortController();
			if (size !== undefined) {
				const hasher = new HashingStream(size);
				finished = pipeline(body, hasher).catch((err: unknown) => {
					sourceError ??= err;
					ac.abort();
				});
				Body = hasher;
				ContentLength = size;
			} else {
				// UploadPart needs a length: spool a part of unknown size to a temp file (memory stays flat).
				spoolDir = await mkdtemp(join(tmpdir(), "cellar-part-"));
				const file = join(spoolDir, "part");
				await pipeline(body, createWriteStream(file));
				ContentLength = (await stat(file)).size;
				Body = createReadStream(file);
			}
			let out;
			try {
				out = await this.client.send(
					new (s3Sdk().UploadPartCommand)({ Bucket: this.bucket, Key, UploadId, PartNumber: partNumber, Body: Body as Readable, ContentLength }),
					{ abortSignal: ac.signal },
				);
			} catch (err) {
				const streamFailed = (Body as Readable).destroyed;
				if (!streamFailed) (Body as Readable).destroy();
				await finished;
				throw streamFailed && sourceError ? sourceError : err;
			}
			await finished;
			if (sourceError) throw sourceError;
			if (!out.ETag) throw new Error("Object storage returned no ETag for the part");
			const part = { etag: quoteEtag(out.ETag), size: ContentLength };
			let parts = this.knownParts.get(uploadId);
			if (!parts) this.knownParts.set(uploadId, (parts = new Map()));
			parts.set(partNumber, part);
			return part;
		} catch (err) {
			throw mapError(err, key);
		} finally {
			if (spoolDir) await rm(spoolDir, { recursive: true, force: true }).catch(() => undefined);
		}
	}

	async listParts(uploadId: string): Promise<MultipartPart[]> {
		const { key, Key, UploadId } = this.decodeUpload(uploadId);
		const parts: MultipartPart[] = [];
		let PartNumberMarker: string | undefined;
		try {
			for (;;) {
				const out = await this.client.send(new (s3Sdk().ListPartsCommand)({ Bucket: this.bucket, Key, UploadId, PartNumberMarker }));
				for (const p of out.Parts ?? []) {
					if (p.PartNumber && p.ETag) parts.push({ partNumber: p.PartNumber, etag: quoteEtag(p.ETag), size: p.Size ?? 0 });
				}
				if (!out.IsTruncated || !out.NextPartNumberMarker) break;
				PartNumberMarker = out.NextPartNumberMarker;
			}
		} catch (err) {
			if (isNotImplemented(err)) {
				// s3rver has no ListParts: answer from what this instance uploaded (not shared across nodes/restarts).
				const known = this.knownParts.get(uploadId);
				if (known) return [...known].map(([partNumber, p]) => ({ partNumber, ...p })).sort((a, b) => a.partNumber - b.partNumber);
			}
			throw mapError(err, key);
		}
		return parts.sort((a, b) => a.partNumber - b.partNumber);
	}

	async completeMultipart(uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number; md5?: string; etag: string }> {
		const list = checkCompletionParts(parts);
		const { key, Key, UploadId } = this.decodeUpload(uploadId);
		let etag: string | undefined;
		try {
			const out = await this.client.send(
				new (s3Sdk().CompleteMultipartUploadCommand)({
					Bucket: this.bucket,
					Key,
					UploadId,
					MultipartUpload: { Parts: list.map((p) => ({ PartNumber: p.partNumber, ETag: quoteEtag(p.etag) })) },
				}),
			);
			etag = out.ETag;
		} catch (err) {
			throw mapError(err, key);
		}
		this.knownParts.delete(uploadId);
		const info = await this.head(key);
		if (!info) throw new NotFoundError(`Object not found after completing the upload: ${key}`);
		return { size: info.size, etag: quoteEtag(etag ?? info.etag ?? "") };
	}

	async abortMultipart(uploadId: string): Promise<void> {
		const { Key, UploadId } = this.decodeUpload(uploadId);
		this.knownParts.delete(uploadId);
		// s3rver has no AbortMultipartUpload: its staged parts then stay on its disk.
		await this.abortNative(Key, UploadId);
	}
}

/** Buckets visible with these credentials (POST /a/config/buckets). */
export async function listBuckets(config: S3ConnectionConfig): Promise<{ Name: string; CreationDate?: number }[]> {
	const client = makeClient(config);
	try {
		const out = await client.send(new (s3Sdk().ListBucketsCommand)({}));
		return (out.Buckets ?? []).filter((b) => b.Name).map((b) => ({ Name: b.Name as string, CreationDate: b.CreationDate?.getTime() }));
	} catch (err) {
		throw mapError(err, "buckets");
	} finally {
		client.destroy();
	}
}

/** Creates a bucket (PUT /a/config/buckets/{BucketName}); an existing bucket of ours is fine. */
export async function createBucket(config: S3ConnectionConfig, name: string): Promise<void> {
	if (typeof name !== "string" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) || name.includes("..")) {
		throw new BadRequestError("Invalid bucket name: 3 to 63 lower-case letters, digits, dots or hyphens");
	}
	const client = makeClient(config);
	try {
		await client.send(new (s3Sdk().CreateBucketCommand)({ Bucket: name }));
	} catch (err) {
		if (awsName(err) === "BucketAlreadyOwnedByYou") return;
		if (awsName(err) === "BucketAlreadyExists") {
			// Some servers (s3rver, MinIO) say so for a bucket of ours too: fine if we can use it.
			const ours = await client.send(new (s3Sdk().HeadBucketCommand)({ Bucket: name })).then(
				() => true,
				() => false,
			);
			if (ours) return;
		}
		throw mapError(err, name);
	} finally {
		client.destroy();
	}
}
