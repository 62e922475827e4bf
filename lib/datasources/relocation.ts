// A flat datasource names its objects by uuid and keeps their names and folders only in its index: pointed at
// another place (folder, bucket, endpoint, base folder) that does not hold its objects, every one of its files
// would become unreadable at once. Such a change is refused until the objects are there.
import { ConflictError } from "../errors";
import { openStore, s3ConfigFromDataSource, type DataSourceStorage } from "../storage";

/** A datasource's configuration as far as its storage goes (any StorageType: openStore refuses unknown ones). */
export type StorageConfig = Omit<DataSourceStorage, "StorageType"> & { StorageType?: string; FlatStorage?: boolean };

/** Where a datasource's objects live, comparable between two configurations. */
export function storagePlace(ds: StorageConfig): string {
	if (ds.StorageType === "S3") {
		const c = s3ConfigFromDataSource(ds as DataSourceStorage);
		return `s3 ${c.endpoint ?? ""} ${c.bucket} ${c.baseFolder ?? ""}`;
	}
	return `local ${ds.StorageConfiguration?.folder ?? ""}`;
}

/**
 * Refuses to move a flat datasource holding files to a place where none of a few of its objects can be found.
 * `sampleKeys` gives keys of some of its files (none: nothing to check).
 */
export async function checkRelocation(name: string, before: StorageConfig, after: StorageConfig, sampleKeys: () => Promise<string[]>, dataDir: string): Promise<void> {
	if (before.FlatStorage === false || storagePlace(before) === storagePlace(after)) return;
	const keys = await sampleKeys();
	if (!keys.length) return;
	const store = openStore(after as DataSourceStorage, dataDir);
	for (const key of keys) if (await store.head(key).catch(() => null)) return;
	throw new ConflictError(`Datasource ${name} is flat and its files are not at the new place: move its objects there first, then change its storage`, "datasource.relocated");
}
