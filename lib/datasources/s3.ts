// Bucket administration for S3 datasources: reachability check (HeadBucket), bucket listing and creation, for
// the admin endpoints: bounded in time, and any S3 failure becomes a 400 that says what the storage answered.
// Connection settings come from the storage layer (lib/storage s3ConfigFromDataSource) so both agree.
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";
import { s3Sdk } from "../storage/aws";
import { BadRequestError } from "../errors";
import { s3ConfigFromDataSource, type DataSourceStorage } from "../storage";
import type { DataSource } from "./model";

export const S3_TIMEOUT_MS = 15_000;

/** The endpoint to talk to, as the storage layer computes it (customEndpoint, else ObjectsHost/Port/Secure, else AWS). */
export function s3Endpoint(ds: DataSource): string | undefined {
	return s3ConfigFromDataSource({ ...ds, StorageType: "S3" } as DataSourceStorage).endpoint;
}

/** The SDK client settings: the storage layer's connection settings (same endpoint, region, addressing, checksums). */
export function s3ClientConfig(ds: DataSource): S3ClientConfig {
	if (!ds.ApiKey || !ds.ApiSecret) throw new BadRequestError("ApiKey and ApiSecret are required to reach an S3 storage");
	const c = s3ConfigFromDataSource({ ...ds, StorageType: "S3" } as DataSourceStorage);
	const mode = c.checksumWhenRequired ? "WHEN_REQUIRED" : "WHEN_SUPPORTED";
	return {
		endpoint: c.endpoint,
		region: c.region,
		forcePathStyle: c.forcePathStyle,
		credentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey },
		requestChecksumCalculation: mode,
		responseChecksumValidation: mode,
		maxAttempts: 2,
	};
}

interface S3Failure {
	name?: string;
	message?: string;
	Code?: string;
	$metadata?: { httpStatusCode?: number };
}

/** A readable sentence out of an S3 SDK error (HEAD answers carry no body: the status says what happened). */
export function describeS3Error(err: unknown): string {
	const e = err as S3Failure;
	const status = e?.$metadata?.httpStatusCode;
	const name = e?.Code || e?.name || "Error";
	let msg = e?.message && e.message !== "UnknownError" ? e.message : "";
	if (!msg) {
		if (status === 404) msg = "the bucket does not exist";
		else if (status === 403) msg = "access denied with these keys";
		else if (status === 301 || status === 400) msg = "wrong region or request refused";
	}
	if (name === "AbortError" || name === "TimeoutError") msg = "the storage did not answer in time";
	return `${name}${status ? ` (HTTP ${status})` : ""}${msg ? `: ${msg}` : ""}`;
}

async function withClient<T>(ds: DataSource, fn: (c: S3Client, signal: AbortSignal) => Promise<T>): Promise<T> {
	const client = new (s3Sdk().S3Client)(s3ClientConfig(ds));
	try {
		return await fn(client, AbortSignal.timeout(S3_TIMEOUT_MS));
	} finally {
		client.destroy();
	}
}

// The SDK's AbortSignal type comes from its own typings; the platform one is compatible at run time.
type SendOpts = Parameters<S3Client["send"]>[1];
const opts = (signal: AbortSignal) => ({ abortSignal: signal }) as unknown as SendOpts;

/** Throws a 400 carrying the S3 error when the datasource's bucket cannot be reached with its keys. */
export async function checkBucketReachable(ds: DataSource): Promise<void> {
	const bucket = ds.ObjectsBucket;
	if (!bucket) throw new BadRequestError("ObjectsBucket is required for an S3 datasource");
	try {
		await withClient(ds, (c, signal) => c.send(new (s3Sdk().HeadBucketCommand)({ Bucket: bucket }), opts(signal)));
	} catch (err) {
		if (err instanceof BadRequestError) throw err;
		throw new BadRequestError(`Cannot reach bucket "${bucket}" on ${s3Endpoint(ds) ?? "AWS S3"}: ${describeS3Error(err)}`);
	}
}

export interface BucketInfo {
	name: string;
	/** unix seconds, 0 when unknown */
	created: number;
}

/** POST /config/buckets' BucketsRegexp: a JavaScript regular expression, a 400 when it does not compile. */
export function bucketFilter(regexp: string | undefined): RegExp | undefined {
	if (!regexp) return undefined;
	try {
		return new RegExp(regexp);
	} catch (err) {
		throw new BadRequestError(`Invalid BucketsRegexp: ${(err as Error).message}`);
	}
}

export async function listS3Buckets(ds: DataSource, filter?: RegExp): Promise<BucketInfo[]> {
	let res;
	try {
		res = await withClient(ds, (c, signal) => c.send(new (s3Sdk().ListBucketsCommand)({}), opts(signal)));
	} catch (err) {
		if (err instanceof BadRequestError) throw err;
		throw new BadRequestError(`Cannot list buckets on ${s3Endpoint(ds) ?? "AWS S3"}: ${describeS3Error(err)}`);
	}
	return (res.Buckets ?? [])
		.filter((b) => b.Name && (!filter || filter.test(b.Name)))
		.map((b) => ({ name: b.Name as string, created: b.CreationDate ? Math.floor(new Date(b.CreationDate).getTime() / 1000) : 0 }))
		.sort((a, b) => a.name.localeCompare(b.name));
}

/** Creates a bucket; an existing bucket owned by the same keys is fine (idempotent). */
export async function createS3Bucket(ds: DataSource, name: string): Promise<void> {
	try {
		await withClient(ds, (c, signal) => c.send(new (s3Sdk().CreateBucketCommand)({ Bucket: name }), opts(signal)));
	} catch (err) {
		if (err instanceof BadRequestError) throw err;
		const e = err as S3Failure;
		if ((e.Code || e.name) === "BucketAlreadyOwnedByYou") return;
		throw new BadRequestError(`Cannot create bucket "${name}" on ${s3Endpoint(ds) ?? "AWS S3"}: ${describeS3Error(err)}`);
	}
}

/** An S3 endpoint given by an administrator must be an http(s) URL (absent: AWS itself). */
export function checkEndpointUrl(endpoint: string | undefined): void {
	if (!endpoint) return;
	let url: URL;
	try {
		url = new URL(endpoint);
	} catch {
		throw new BadRequestError(`Invalid S3 endpoint "${endpoint.slice(0, 200)}"`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") throw new BadRequestError("The S3 endpoint must be an http or https URL");
}
