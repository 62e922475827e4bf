// versions — internal actions (the tree's listings with Versions:true, the /io gateway's versioned reads).
import type { VersionEntry } from "../versions/prune";
import type { VersionKeeper } from "../versions/keeper";

export interface VersionsActions {
	"versions.list": { params: { uuid: string }; result: VersionEntry[] };
	"versions.locate": { params: { uuid: string; versionId: string }; result: Awaited<ReturnType<VersionKeeper["locate"]>> };
}

/** `versions.changed`: versions of these nodes were dropped (cached listings with Versions:true go stale). */
export interface VersionsChange {
	uuids: string[];
}

export interface VersionsEvents {
	"versions.changed": VersionsChange;
}
