// versions — internal actions (the tree's listings with Versions:true, the /io gateway's versioned reads).
import type { VersionEntry } from "../versions/prune";
import type { CaptureRequest, VersionKeeper } from "../versions/keeper";

export type { CaptureRequest };

export interface VersionsActions {
	/** The tree, before it replaces or deletes a file's content: copies the old object as a version. */
	"versions.capture": { params: CaptureRequest; result: Awaited<ReturnType<VersionKeeper["capture"]>> };
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
