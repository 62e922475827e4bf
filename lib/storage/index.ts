// Opens the ObjectStore of a Cells-style DataSource (object.DataSource fields).
import { isAbsolute, resolve } from "node:path";
import { BadRequestError, NotSupportedError } from "../errors";
import { LocalStore } from "./local";
import { S3Store, type S3StoreConfig } from "./s3";
import { EncryptedStore } from "./encrypted";
import type { ObjectStore } from "./types";

export * from "./types";
export { LocalStore } from "./local";
export { S3Store, listBuckets, createBucket, type S3StoreConfig, type S3ConnectionConfig } from "./s3";
export { EncryptedStore, IntegrityError } from "./encrypted";

export interface DataSourceStorage {
	/** LOCAL or S3 open; any other type (Cells knows AZURE, GCS…) is refused by openStore. */
	StorageType?: string;
	StorageConfiguration?: Record<string, string>;
	ObjectsHost?: string;
	ObjectsPort?: number | string;
	ObjectsSecure?: boolean;
	ObjectsBucket?: string;
	ObjectsBaseFolder?: string;
	ApiKey?: string;
	ApiSecret?: string;
	/** CLEAR (default) or MASTER (content encrypted with the key EncryptionKey of the encryption service). */
	EncryptionMode?: string;
	EncryptionKey?: string;
	/** Flat: object keys are chosen by the server (node uuids), the tree lives in the index. */
	FlatStorage?: boolean;
}

function isTrue(v: string | undefined): boolean {
	return v === "true" || v === "1";
}

/**
 * S3 settings of a datasource: endpoint from StorageConfiguration.customEndpoint, else ObjectsHost/Port/Secure
 * (an amazonaws.com host, or none, means AWS itself); region StorageConfiguration.customRegion (default us-east-1).
 * Path-style addressing for custom endpoints, virtual-host style on AWS. Checksums only when required, unless
 * StorageConfiguration.checksumWhenRequired is "false".
 */
export function s3ConfigFromDataSource(ds: DataSourceStorage): S3StoreConfig {
	const conf = ds.StorageConfiguration ?? {};
	let endpoint = conf.customEndpoint?.trim() || undefined;
	const host = ds.ObjectsHost?.trim();
	if (!endpoint && host && !/(^|\.)amazonaws\.com$/i.test(host)) {
		const secure = ds.ObjectsSecure === true;
		const port = ds.ObjectsPort !== undefined && ds.ObjectsPort !== "" && Number(ds.ObjectsPort) !== 0 ? Number(ds.ObjectsPort) : undefined;
		if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw new BadRequestError(`Invalid ObjectsPort ${ds.ObjectsPort}`);
		const defaultPort = secure ? 443 : 80;
		endpoint = `${secure ? "https" : "http"}://${host}${port && port !== defaultPort ? `:${port}` : ""}`;
	}
	if (endpoint && !/^https?:\/\/[^/]+/i.test(endpoint)) throw new BadRequestError(`Invalid S3 endpoint ${endpoint}`);
	return {
		endpoint,
		region: conf.customRegion?.trim() || "us-east-1",
		bucket: ds.ObjectsBucket ?? "",
		baseFolder: ds.ObjectsBaseFolder || undefined,
		accessKeyId: ds.ApiKey ?? "",
		secretAccessKey: ds.ApiSecret ?? "",
		forcePathStyle: endpoint !== undefined || isTrue(conf.forcePathStyle),
		checksumWhenRequired: conf.checksumWhenRequired !== "false",
	};
}

/**
 * LOCAL: StorageConfiguration.folder (relative folders resolved against dataDir). A flat CLEAR datasource keeps
 * completed multipart uploads as composite objects (lib/storage/composite.ts): no user path can take their shape
 * there, and bytes are stored as sent. Structured ones must keep plain files (the folder is the users' tree), and
 * encrypted ones store their own format through the inner store. S3: see s3ConfigFromDataSource.
 */
export function openStore(ds: DataSourceStorage, dataDir: string): ObjectStore {
	switch (ds.StorageType) {
		case "LOCAL": {
			const folder = ds.StorageConfiguration?.folder;
			if (!folder) throw new BadRequestError("LOCAL datasource needs StorageConfiguration.folder");
			if (folder.includes("\0")) throw new BadRequestError("Invalid folder");
			const composite = ds.FlatStorage === true && (ds.EncryptionMode ?? "CLEAR") === "CLEAR";
			return new LocalStore(isAbsolute(folder) ? folder : resolve(dataDir, folder), { composite });
		}
		case "S3": {
			const config = s3ConfigFromDataSource(ds);
			if (!config.bucket) throw new BadRequestError("S3 datasource needs ObjectsBucket");
			return new S3Store(config);
		}
		default:
			throw new NotSupportedError(`Storage type ${String(ds.StorageType)} is not supported`);
	}
}

/**
 * The store of a datasource as its content must be read and written: openStore() for CLEAR datasources, an
 * EncryptedStore over it for MASTER ones (`keyMaterial(EncryptionKey)` gives the 32-byte key, e.g. from the
 * `encryption.keyMaterial` action). USER / USER_PWD modes are refused.
 */
export async function openDataStore(
	ds: DataSourceStorage,
	dataDir: string,
	keyMaterial: (id: string) => Promise<Buffer>,
	/** The raw store (a PeerObjectStore when another node holds the folder); openStore by default. */
	open: (ds: DataSourceStorage, dataDir: string) => ObjectStore = openStore,
): Promise<ObjectStore> {
	const mode = ds.EncryptionMode ?? "CLEAR";
	if (mode === "CLEAR") return open(ds, dataDir);
	if (mode !== "MASTER") throw new NotSupportedError(`EncryptionMode ${mode} is not supported (use CLEAR or MASTER)`);
	if (!ds.EncryptionKey) throw new BadRequestError("A datasource with EncryptionMode MASTER needs an EncryptionKey");
	const inner = open(ds, dataDir);
	return new EncryptedStore(inner, await keyMaterial(ds.EncryptionKey));
}
