// The versions service's rules, apart from Moleculer: which policy governs a datasource, when content is captured,
// what pruning and deletes remove, how versions follow moves, the first-run policies. Storage comes in as a
// VersionStore (lib/db's VersionsRepo), the datasources and their object stores as functions.
//
// Captures, prunes and deletes of one node run one at a time on this node. Records go before bytes: a crash leaves
// at worst an unreferenced object, never a version without content.
import { randomUUID } from "node:crypto";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";
import type { DataSource } from "../datasources/model";
import type { ObjectStore } from "../storage";
import { DEFAULT_POLICIES, DEFAULT_POLICY_ID, activeLimit, type VersioningPolicy } from "./policy";
import { newestFirst, pruneBySize, pruneNode, pruneOnDelete, shouldCapture, type VersionEntry, type VersionRecord } from "./prune";

export interface VersionStore {
	policy(uuid: string): Promise<VersioningPolicy | null>;
	policies(): Promise<VersioningPolicy[]>;
	putPolicy(p: VersioningPolicy): Promise<void>;
	/** false when one of this uuid exists. */
	createPolicy(p: VersioningPolicy): Promise<boolean>;
	deletePolicy(uuid: string): Promise<boolean>;
	seededPolicies(): Promise<string[]>;
	setSeededPolicies(uuids: string[]): Promise<void>;
	add(v: VersionRecord): Promise<void>;
	version(id: string): Promise<VersionRecord | null>;
	ofNode(nodeUuid: string): Promise<VersionRecord[]>;
	underPolicy(policyUuid: string): Promise<VersionRecord[]>;
	nodesWithVersions(): AsyncIterable<string>;
	ofNodeOrUnder(nodeUuid: string, ds: string, folderPath?: string): Promise<VersionRecord[]>;
	remove(id: string): Promise<boolean>;
	markDeleted(ids: string[], at: number): Promise<void>;
	moveNode(nodeUuid: string, ds: string, path: string): Promise<number>;
	moveUnder(fromDs: string, fromPath: string, toDs: string, toPath: string): Promise<number>;
}

export interface KeeperDeps {
	/** The datasource of this name, or null when there is none. */
	dataSource(name: string): Promise<DataSource | null>;
	/** The opened object store of a datasource. */
	objectStore(name: string): Promise<ObjectStore>;
	/** Versions of these nodes were dropped (cached version lists go stale). */
	dropped(nodeUuids: string[]): void;
	warn(message: string): void;
	error(message: string): void;
	/** Unix ms. */
	now?: () => number;
}

export interface CaptureRequest {
	ds: string;
	uuid: string;
	path: string;
	/** The content's object key in `ds`. */
	key: string;
	size: number;
	etag: string;
	mtime: number;
	owner: string;
	reason?: "overwrite" | "delete";
}

export interface ChangedNode {
	Uuid: string;
	ds: string;
	path: string;
	type: "LEAF" | "COLLECTION";
}

export class VersionKeeper {
	private readonly locks = new Map<string, Promise<unknown>>();
	private readonly now: () => number;

	constructor(
		private readonly store: VersionStore,
		private readonly deps: KeeperDeps,
	) {
		this.now = deps.now ?? Date.now;
	}

	/** The default policy first, then by name. */
	async policies(): Promise<VersioningPolicy[]> {
		return (await this.store.policies()).sort((a, b) => (a.Uuid === DEFAULT_POLICY_ID ? -1 : b.Uuid === DEFAULT_POLICY_ID ? 1 : a.Name.localeCompare(b.Name) || a.Uuid.localeCompare(b.Uuid)));
	}

	async policy(uuid: string): Promise<VersioningPolicy> {
		const p = await this.store.policy(uuid);
		if (!p) throw new NotFoundError(`Versioning policy ${uuid} not found`, "versioning.policy.notfound");
		return p;
	}

	/** Saves a (normalized) policy whose versions datasource exists and is not versioned itself. */
	async putPolicy(policy: VersioningPolicy, dataSource: (name: string) => Promise<DataSource | null>): Promise<VersioningPolicy> {
		const ds = await dataSource(policy.VersionsDataSourceName);
		if (!ds) throw new BadRequestError(`VersionsDataSourceName: datasource ${policy.VersionsDataSourceName} does not exist`);
		if (ds.VersioningPolicyName) throw new BadRequestError(`Datasource ${ds.Name} holds versioned files itself and cannot store versions`);
		await this.store.putPolicy(policy);
		return policy;
	}

	/** Deletes a policy no datasource uses (the default one never). */
	async deletePolicy(uuid: string, dataSources: () => Promise<DataSource[]>): Promise<void> {
		if (uuid === DEFAULT_POLICY_ID) throw new ForbiddenError("The default versioning policy cannot be deleted", "versioning.policy.protected");
		await this.policy(uuid);
		const users = (await dataSources()).filter((d) => d.VersioningPolicyName === uuid).map((d) => d.Name);
		if (users.length) throw new ConflictError(`Versioning policy ${uuid} is used by datasource ${users.join(", ")}`, "versioning.policy.used");
		await this.store.deletePolicy(uuid);
	}

	/** Cells' first-run policies, each created once: a policy the administrator deleted does not come back. */
	async seedPolicies(): Promise<void> {
		const seeded = new Set(await this.store.seededPolicies());
		for (const p of DEFAULT_POLICIES) {
			if (seeded.has(p.Uuid) && p.Uuid !== DEFAULT_POLICY_ID) continue;
			await this.store.createPolicy(p);
			seeded.add(p.Uuid);
		}
		await this.store.setSeededPolicies([...seeded]);
	}

	/**
	 * Keeps the content about to be replaced. Never fails the write it precedes: a versions storage problem is
	 * logged and the write goes on without a version.
	 */
	capture(p: CaptureRequest): Promise<{ Captured: boolean; VersionId?: string; Reason?: string }> {
		return this.perNode(p.uuid, () => this.captureNow(p));
	}

	/** A node's versions as the tree lists them, newest first. */
	async list(nodeUuid: string): Promise<VersionEntry[]> {
		return newestFirst(await this.store.ofNode(nodeUuid)).map((v) => ({
			Uuid: v._id,
			MTime: v.mtime,
			Size: v.size,
			Etag: v.etag,
			OwnerUuid: v.owner,
			Description: `${v.reason === "delete" ? "Content at deletion" : "Previous content"}, kept on ${new Date(v.createdAt).toISOString()}`,
		}));
	}

	/** Where a version's bytes are. */
	async locate(nodeUuid: string, versionId: string): Promise<{ ds: string; key: string; size: number; etag: string; mtime: number }> {
		const v = await this.store.version(versionId);
		if (!v || v.nodeUuid !== nodeUuid) throw new NotFoundError(`Version ${versionId.slice(0, 80)} not found`, "version.notfound");
		return { ds: v.vds, key: v.key, size: v.size, etag: v.etag, mtime: v.mtime };
	}

	/** Applies every policy to every node that has versions (time windows move on even without writes). */
	async sweep(now: number): Promise<number> {
		const policies = new Map((await this.store.policies()).map((p) => [p.Uuid, p]));
		let removed = 0;
		for await (const uuid of this.store.nodesWithVersions()) {
			removed += await this.perNode(uuid, async () => {
				const list = await this.store.ofNode(uuid);
				const policy = list.length ? policies.get(newestFirst(list)[0].policy) : undefined;
				return policy ? this.drop(pruneNode(list, policy, now)) : 0;
			});
		}
		for (const p of policies.values()) removed += await this.pruneTotal(p);
		return removed;
	}

	/** A file or a folder (its whole subtree) is gone: NodeDeletedStrategy of the datasource's policy. */
	async onDeleted(node: ChangedNode): Promise<void> {
		const found = await this.store.ofNodeOrUnder(node.Uuid, node.ds, node.type === "COLLECTION" ? node.path : undefined);
		if (!found.length) return;
		const current = await this.policyOfDatasource(node.ds).catch(() => null);
		const byNode = new Map<string, VersionRecord[]>();
		for (const v of found) byNode.set(v.nodeUuid, [...(byNode.get(v.nodeUuid) ?? []), v]);
		const at = this.now();
		for (const [uuid, list] of byNode) {
			await this.perNode(uuid, async () => {
				const policy = current ?? (await this.store.policy(newestFirst(list)[0].policy));
				const gone = pruneOnDelete(list, policy?.NodeDeletedStrategy ?? "KeepAll");
				await this.drop(gone);
				const goneIds = new Set(gone.map((v) => v._id));
				await this.store.markDeleted(
					list.filter((v) => !goneIds.has(v._id)).map((v) => v._id),
					at,
				);
			});
		}
	}

	/** Versions follow their node (and a folder's subtree) so that a later folder delete finds them. */
	async onMoved(node: ChangedNode, from: { ds: string; path: string }): Promise<void> {
		if (node.type !== "COLLECTION") await this.store.moveNode(node.Uuid, node.ds, node.path);
		else await this.store.moveUnder(from.ds, from.path, node.ds, node.path);
	}

	private async captureNow(p: CaptureRequest): Promise<{ Captured: boolean; VersionId?: string; Reason?: string }> {
		let policy: VersioningPolicy | null;
		try {
			policy = await this.policyOfDatasource(p.ds);
		} catch (err) {
			this.deps.error(`No version of ${p.ds}/${p.path}: its policy could not be read: ${(err as Error).message}`);
			return { Captured: false, Reason: "policy unavailable" };
		}
		if (!policy) return { Captured: false, Reason: "no versioning policy" };
		if (!shouldCapture(policy, p.size)) return { Captured: false, Reason: "size limits" };
		const existing = newestFirst(await this.store.ofNode(p.uuid));
		// A retried write captures the same content again: the newest version already holds it.
		if (existing[0] && p.etag && existing[0].etag === p.etag && existing[0].size === p.size) return { Captured: false, VersionId: existing[0]._id, Reason: "already kept" };
		const versionId = randomUUID();
		const key = `${p.uuid}/${versionId}`;
		let written: { size: number; md5: string };
		try {
			const src = await this.deps.objectStore(p.ds);
			const dst = await this.deps.objectStore(policy.VersionsDataSourceName);
			written = await dst.put(key, await src.get(p.key));
		} catch (err) {
			this.deps.error(`No version of ${p.ds}/${p.path}: copying ${p.key} to ${policy.VersionsDataSourceName} failed: ${(err as Error).message}`);
			return { Captured: false, Reason: "copy failed" };
		}
		const record: VersionRecord = {
			_id: versionId,
			kind: "version",
			nodeUuid: p.uuid,
			ds: p.ds,
			path: p.path,
			size: written.size,
			etag: p.etag || written.md5,
			mtime: p.mtime,
			owner: p.owner,
			createdAt: this.now(),
			vds: policy.VersionsDataSourceName,
			key,
			policy: policy.Uuid,
		};
		if (p.reason === "delete") record.reason = "delete";
		await this.store.add(record);
		try {
			await this.drop(pruneNode([record, ...existing], policy, this.now()));
			await this.pruneTotal(policy);
		} catch (err) {
			this.deps.warn(`Pruning the versions of ${p.ds}/${p.path} failed: ${(err as Error).message}`);
		}
		return { Captured: true, VersionId: versionId };
	}

	private async policyOfDatasource(name: string): Promise<VersioningPolicy | null> {
		const ds = await this.deps.dataSource(name);
		return ds?.VersioningPolicyName ? this.store.policy(ds.VersioningPolicyName) : null;
	}

	/** MaxTotalSize: every version kept under the policy, newest first, within the limit; the oldest go. */
	private async pruneTotal(policy: VersioningPolicy): Promise<number> {
		if (activeLimit(policy.MaxTotalSize) === undefined) return 0;
		return this.drop(pruneBySize(await this.store.underPolicy(policy.Uuid), policy.MaxTotalSize));
	}

	private async drop(list: VersionRecord[]): Promise<number> {
		let n = 0;
		for (const v of list) {
			// Whoever removed the record (this node or another) deletes the bytes, once.
			if (!(await this.store.remove(v._id))) continue;
			n++;
			try {
				await (await this.deps.objectStore(v.vds)).delete(v.key);
			} catch (err) {
				this.deps.warn(`Version object ${v.vds}/${v.key} not deleted: ${(err as Error).message}`);
			}
		}
		if (n) this.deps.dropped([...new Set(list.map((v) => v.nodeUuid))]);
		return n;
	}

	private perNode<T>(uuid: string, fn: () => Promise<T>): Promise<T> {
		const prev = this.locks.get(uuid) ?? Promise.resolve();
		const run = prev.then(fn, fn);
		const tail = run.catch(() => undefined);
		this.locks.set(uuid, tail);
		void tail.then(() => {
			if (this.locks.get(uuid) === tail) this.locks.delete(uuid);
		});
		return run;
	}
}
