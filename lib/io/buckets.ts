// What S3 tools ask about the bucket and its objects besides their bytes, answered as S3 answers for a bucket
// nobody configured: the owner holds every right (ACLs), no policy, CORS, lifecycle or bucket tags, the bucket
// owner pays, and a creation date that does not move. Object tags are kept: in the node's metadata (S3_TAGS).
import { statSync } from "node:fs";
import type { Identity } from "../auth/identity";
import { loadConfig } from "../config";
import { readRecord } from "../install/record";
import { S3_TAGS } from "../tree/meta";
import { S3Error, accessControlPolicyXml, checkTags, taggingXml, type S3ErrorCode, type S3Tag } from "./xml";
import type { UserCaller } from "../contracts";

/** The tree service, called as the user (IoDeps.call). */
type Caller = UserCaller<Identity>;
interface StatNode {
	Type: "LEAF" | "COLLECTION";
	MetaStore?: Record<string, string>;
}

const created = new Map<string, number>();

/**
 * The bucket's creation date: when Cellar was installed (DATA_DIR/install.json), or, on a node whose DATA_DIR has
 * no install record (a gateway of a cluster), when that folder was made. Never 1970: tools sort and show it.
 */
export function bucketCreationDate(dataDir = loadConfig().dataDir): number {
	const known = created.get(dataDir);
	if (known !== undefined) return known;
	const installedAt = Date.parse(readRecord(dataDir).record?.installedAt ?? "");
	if (Number.isFinite(installedAt)) {
		created.set(dataDir, installedAt);
		return installedAt;
	}
	try {
		const st = statSync(dataDir);
		return Math.floor(st.birthtimeMs > 0 ? st.birthtimeMs : st.ctimeMs);
	} catch {
		return Date.now();
	}
}

/** The answer for a bucket configuration nobody set (GetBucketPolicy, -Cors, -Lifecycle, -Tagging). */
export function notConfigured(operation: string): S3Error {
	const codes: Record<string, S3ErrorCode> = {
		GetBucketPolicy: "NoSuchBucketPolicy",
		GetBucketCors: "NoSuchCORSConfiguration",
		GetBucketLifecycle: "NoSuchLifecycleConfiguration",
		GetBucketTagging: "NoSuchTagSet",
	};
	return new S3Error(codes[operation] ?? "NotImplemented");
}

/** A file, or with `markers` also a folder named `dir/` (its marker object): anything else is NoSuchKey. */
async function objectAt(deps: Caller, key: string, user: Identity, markers: boolean): Promise<StatNode> {
	const { Node } = await deps.call("tree.stat", { Node: key }, user);
	if (Node.Type === "LEAF" ? key.endsWith("/") : !markers || !key.endsWith("/")) throw new S3Error("NoSuchKey", `${key} does not exist`, { Key: key });
	return Node;
}

/** GetObjectAcl: the caller as owner, with every right where it may write, READ where it may only read. */
export async function objectAclXml(deps: Caller, key: string, user: Identity): Promise<string> {
	const node = await objectAt(deps, key, user, true);
	return accessControlPolicyXml({ ID: user.Uuid, DisplayName: user.Login }, node.MetaStore?.node_readonly === "true" ? "READ" : "FULL_CONTROL");
}

/** Tags as stored (a JSON object); anything else stored there (an older or foreign value) reads as no tags. */
export function decodeTags(stored: string | undefined): S3Tag[] {
	if (!stored) return [];
	try {
		const parsed: unknown = JSON.parse(stored);
		if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return [];
		return Object.entries(parsed as Record<string, unknown>)
			.filter((e): e is [string, string] => typeof e[1] === "string")
			.map(([Key, Value]) => ({ Key, Value }));
	} catch {
		return [];
	}
}

/** A file's tags (NoSuchKey for anything but a file). */
export async function tagsOf(deps: Caller, key: string, user: Identity): Promise<S3Tag[]> {
	return decodeTags((await objectAt(deps, key, user, false)).MetaStore?.[S3_TAGS]);
}

export async function getTaggingXml(deps: Caller, key: string, user: Identity): Promise<string> {
	return taggingXml(await tagsOf(deps, key, user));
}

/** Makes `tags` the whole tag set of the file at `key` (none: removed), as a write or a copy that carries tags does. */
export async function storeTags(deps: Caller, key: string, user: Identity, tags: S3Tag[]): Promise<void> {
	checkTags(tags);
	const params = tags.length ? { set: { [S3_TAGS]: JSON.stringify(Object.fromEntries(tags.map((t) => [t.Key, t.Value]))) } } : { remove: [S3_TAGS] };
	await deps.call("tree.setMeta", { Path: key, ...params }, user);
}

/** PutObjectTagging replaces the whole set; an empty set removes it (as DeleteObjectTagging). */
export async function putTagging(deps: Caller, key: string, user: Identity, tags: S3Tag[]): Promise<void> {
	await objectAt(deps, key, user, false);
	await storeTags(deps, key, user, tags);
}
