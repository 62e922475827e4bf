/**
 * versions — file versioning: the versioning policies (tree.VersioningPolicy, REST /config/versioning*,
 * administrators only, Cells' three first-run policies seeded once) and the versions themselves: before the tree
 * replaces a file's content it calls `versions.capture`, which copies the old object into the policy's versions
 * datasource (key `<nodeUuid>/<versionId>`), records it and prunes per policy. Internal: capture, list, locate,
 * prune (also run hourly). Consumes `tree.changed` (moves keep version paths current; deletes apply the policy's
 * NodeDeletedStrategy), `datasources.changed` / `encryption.changed` (opened stores, via the datastores mixin).
 * Emits `versions.changed` {uuids} when versions were dropped (cached version lists go stale). Bytes never travel
 * through the transporter: this service opens the stores itself.
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DbMixin, type Store } from "../mixins/db.mixin";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import type { ObjectStore } from "../lib/storage";
import { DataStoresMixin, type DataStoreHandle } from "../mixins/datastores.mixin";
import type { DataSource } from "../lib/datasources/model";
import { DEFAULT_POLICIES, DEFAULT_POLICY_ID, NODE_DELETED_STRATEGIES, activeLimit, checkPolicyId, normalizePolicy, type PolicyInput, type VersioningPolicy } from "../lib/versions/policy";
import { newestFirst, pruneBySize, pruneNode, pruneOnDelete, shouldCapture, type VersionEntry, type VersionRecord } from "../lib/versions/prune";
import { escapeRegExp } from "../lib/strings";

type PolicyDoc = VersioningPolicy & { _id: string; kind: "policy"; [key: string]: unknown };
type MetaDoc = { _id: string; kind: "meta"; seeded: string[]; [key: string]: unknown };
type AnyDoc = PolicyDoc | VersionRecord | MetaDoc;

interface CaptureParams {
	ds: string;
	uuid: string;
	path: string;
	key: string;
	size: number;
	etag: string;
	mtime: number;
	owner: string;
	reason?: "overwrite" | "delete";
}
interface ChangedNode {
	Uuid: string;
	ds: string;
	path: string;
	type: "LEAF" | "COLLECTION";
}
interface TreeChanged {
	type: string;
	node?: ChangedNode;
	from?: { ds: string; path: string };
}

const policyId = (uuid: string) => `policy:${uuid}`;
const SEEDED_ID = "meta:seeded";
const SWEEP_EVERY_MS = 3_600_000;
const byteLimit = { type: "number", optional: true, integer: true } as const;

interface Methods {
	loadPolicy(uuid: string): Promise<VersioningPolicy | null>;
	allPolicies(): Promise<VersioningPolicy[]>;
	policyOfDatasource(ds: string): Promise<VersioningPolicy | null>;
	storeOf(ds: string): Promise<ObjectStore>;
	perNode<T>(uuid: string, fn: () => Promise<T>): Promise<T>;
	capture(p: CaptureParams): Promise<{ Captured: boolean; VersionId?: string; Reason?: string }>;
	versionsOf(uuid: string): Promise<VersionRecord[]>;
	dropVersions(list: VersionRecord[]): Promise<number>;
	pruneTotal(policy: VersioningPolicy): Promise<number>;
	sweep(now: number): Promise<number>;
	onDeleted(node: ChangedNode): Promise<void>;
	onMoved(node: ChangedNode, from: { ds: string; path: string }): Promise<void>;
	seedPolicies(): Promise<void>;
}
interface Vars {
	store: Store<AnyDoc>;
	dataStore(name: string): Promise<DataStoreHandle>;
	locks: Map<string, Promise<unknown>>;
	timer?: NodeJS.Timeout;
}
type This = Service & Methods & Vars;

function present(doc: PolicyDoc | VersioningPolicy): VersioningPolicy {
	const { _id, kind, ...p } = doc as PolicyDoc;
	return p as VersioningPolicy;
}

const VersionsService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "versions",
	mixins: [DbMixin("versions", { indexes: [{ field: "nodeUuid" }, { field: "kind" }] }), DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		listPolicies: {
			rest: "GET /config/versioning",
			params: {},
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { Policies: await this.allPolicies() };
			},
		},
		getPolicy: {
			rest: "GET /config/versioning/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const p = await this.loadPolicy(checkPolicyId(ctx.params.Uuid));
				if (!p) throw new NotFoundError(`Versioning policy ${ctx.params.Uuid} not found`, "versioning.policy.notfound");
				return p;
			},
		},
		putPolicy: {
			rest: "POST /config/versioning/:Uuid",
			params: {
				Uuid: { type: "string", max: 1024 },
				Name: { type: "string", optional: true, max: 1024 },
				Description: { type: "string", optional: true, max: 8192 },
				VersionsDataSourceName: { type: "string", optional: true, max: 1024 },
				VersionsDataSourceBucket: { type: "string", optional: true, max: 1024 },
				MaxTotalSize: byteLimit,
				MaxSizePerFile: byteLimit,
				IgnoreFilesGreaterThan: byteLimit,
				KeepPeriods: { type: "array", optional: true, max: 64, items: { type: "object", props: { IntervalStart: { type: "string", optional: true, max: 64 }, MaxNumber: { type: "number", optional: true, integer: true } } } },
				NodeDeletedStrategy: { type: "enum", optional: true, values: [...NODE_DELETED_STRATEGIES] },
			},
			async handler(this: This, ctx: Context<PolicyInput & { Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const { Uuid, ...input } = ctx.params;
				const policy = normalizePolicy(Uuid, input);
				const ds = await ctx.call<DataSource, { name: string }>("datasources.get", { name: policy.VersionsDataSourceName }).catch((e: { code?: number }) => {
					if (e.code === 404) throw new BadRequestError(`VersionsDataSourceName: datasource ${policy.VersionsDataSourceName} does not exist`);
					throw e;
				});
				if (ds.VersioningPolicyName) throw new BadRequestError(`Datasource ${ds.Name} holds versioned files itself and cannot store versions`);
				await this.store.replace({ ...policy, _id: policyId(policy.Uuid), kind: "policy" } as PolicyDoc);
				return policy;
			},
		},
		deletePolicy: {
			rest: "DELETE /config/versioning/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const uuid = checkPolicyId(ctx.params.Uuid);
				if (uuid === DEFAULT_POLICY_ID) throw new ForbiddenError("The default versioning policy cannot be deleted", "versioning.policy.protected");
				if (!(await this.loadPolicy(uuid))) throw new NotFoundError(`Versioning policy ${uuid} not found`, "versioning.policy.notfound");
				const users = (await ctx.call<DataSource[], Record<string, never>>("datasources.list", {})).filter((d) => d.VersioningPolicyName === uuid).map((d) => d.Name);
				if (users.length) throw new ConflictError(`Versioning policy ${uuid} is used by datasource ${users.join(", ")}`, "versioning.policy.used");
				await this.store.remove(policyId(uuid));
				return { Success: true };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		capture: {
			params: {
				ds: { type: "string", max: 255 },
				uuid: { type: "string", min: 1, max: 255 },
				path: { type: "string", max: 8192 },
				key: { type: "string", min: 1, max: 8192 },
				size: { type: "number", min: 0 },
				etag: { type: "string", max: 255 },
				mtime: { type: "number" },
				owner: { type: "string", max: 255 },
				reason: { type: "enum", optional: true, values: ["overwrite", "delete"] },
			},
			async handler(this: This, ctx: Context<CaptureParams>) {
				return this.perNode(ctx.params.uuid, () => this.capture(ctx.params));
			},
		},
		list: {
			retryPolicy: { enabled: true },
			params: { uuid: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string }>): Promise<VersionEntry[]> {
				return newestFirst(await this.versionsOf(ctx.params.uuid)).map((v) => ({
					Uuid: v._id,
					MTime: v.mtime,
					Size: v.size,
					Etag: v.etag,
					OwnerUuid: v.owner,
					Description: `${v.reason === "delete" ? "Content at deletion" : "Previous content"}, kept on ${new Date(v.createdAt).toISOString()}`,
				}));
			},
		},
		locate: {
			retryPolicy: { enabled: true },
			params: { uuid: { type: "string", max: 255 }, versionId: { type: "string", max: 255 } },
			async handler(this: This, ctx: Context<{ uuid: string; versionId: string }>) {
				const v = (await this.store.get(ctx.params.versionId)) as VersionRecord | null;
				if (!v || v.kind !== "version" || v.nodeUuid !== ctx.params.uuid) throw new NotFoundError(`Version ${ctx.params.versionId.slice(0, 80)} not found`, "version.notfound");
				return { ds: v.vds, key: v.key, size: v.size, etag: v.etag, mtime: v.mtime };
			},
		},
		prune: {
			params: { now: { type: "number", optional: true } },
			async handler(this: This, ctx: Context<{ now?: number }>) {
				return { Removed: await this.sweep(ctx.params.now ?? Date.now()) };
			},
		},
	},
	events: {
		"tree.changed": {
			async handler(this: This, ctx: Context<TreeChanged>) {
				const { type, node, from } = ctx.params;
				if (!node?.Uuid) return;
				try {
					if (type === "delete") await this.onDeleted(node);
					else if (type === "move" && from) await this.onMoved(node, from);
				} catch (err) {
					this.logger.warn(`Versions of ${node.ds}/${node.path} (${type}) not updated: ${(err as Error).message}`);
				}
			},
		},
	},
	methods: {
		async loadPolicy(this: This, uuid: string) {
			const doc = await this.store.get(policyId(uuid));
			return doc && doc.kind === "policy" ? present(doc as PolicyDoc) : null;
		},
		async allPolicies(this: This) {
			const docs = (await this.store.find({ query: { kind: "policy" } })) as PolicyDoc[];
			return docs.map(present).sort((a, b) => (a.Uuid === DEFAULT_POLICY_ID ? -1 : b.Uuid === DEFAULT_POLICY_ID ? 1 : a.Name.localeCompare(b.Name) || a.Uuid.localeCompare(b.Uuid)));
		},
		async policyOfDatasource(this: This, name: string) {
			const ds = await this.broker.call<DataSource, { name: string }>("datasources.get", { name }).catch((e: { code?: number }) => (e.code === 404 ? null : Promise.reject(e)));
			return ds?.VersioningPolicyName ? this.loadPolicy(ds.VersioningPolicyName) : null;
		},
		async storeOf(this: This, name: string): Promise<ObjectStore> {
			return (await this.dataStore(name)).store;
		},
		/** Captures, prunes and deletes of one node run one at a time on this node. */
		perNode<T>(this: This, uuid: string, fn: () => Promise<T>): Promise<T> {
			const prev = this.locks.get(uuid) ?? Promise.resolve();
			const run = prev.then(fn, fn);
			const tail = run.catch(() => undefined);
			this.locks.set(uuid, tail);
			void tail.then(() => {
				if (this.locks.get(uuid) === tail) this.locks.delete(uuid);
			});
			return run;
		},
		/**
		 * Keeps the content about to be replaced. Never fails the write it precedes: a versions storage problem is
		 * logged and the write goes on without a version.
		 */
		async capture(this: This, p: CaptureParams) {
			let policy: VersioningPolicy | null;
			try {
				policy = await this.policyOfDatasource(p.ds);
			} catch (err) {
				this.logger.error(`No version of ${p.ds}/${p.path}: its policy could not be read: ${(err as Error).message}`);
				return { Captured: false, Reason: "policy unavailable" };
			}
			if (!policy) return { Captured: false, Reason: "no versioning policy" };
			if (!shouldCapture(policy, p.size)) return { Captured: false, Reason: "size limits" };
			const existing = newestFirst(await this.versionsOf(p.uuid));
			// A retried write captures the same content again: the newest version already holds it.
			if (existing[0] && p.etag && existing[0].etag === p.etag && existing[0].size === p.size) return { Captured: false, VersionId: existing[0]._id, Reason: "already kept" };
			const versionId = randomUUID();
			const key = `${p.uuid}/${versionId}`;
			let written: { size: number; md5: string };
			try {
				const src = await this.storeOf(p.ds);
				const dst = await this.storeOf(policy.VersionsDataSourceName);
				written = await dst.put(key, await src.get(p.key));
			} catch (err) {
				this.logger.error(`No version of ${p.ds}/${p.path}: copying ${p.key} to ${policy.VersionsDataSourceName} failed: ${(err as Error).message}`);
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
				createdAt: Date.now(),
				vds: policy.VersionsDataSourceName,
				key,
				policy: policy.Uuid,
			};
			if (p.reason === "delete") record.reason = "delete";
			await this.store.insert(record);
			try {
				await this.dropVersions(pruneNode([record, ...existing], policy, Date.now()));
				await this.pruneTotal(policy);
			} catch (err) {
				this.logger.warn(`Pruning the versions of ${p.ds}/${p.path} failed: ${(err as Error).message}`);
			}
			return { Captured: true, VersionId: versionId };
		},
		async versionsOf(this: This, uuid: string) {
			return (await this.store.find({ query: { kind: "version", nodeUuid: uuid } })) as VersionRecord[];
		},
		/** Record first, then bytes: a crash leaves at worst an unreferenced object, never a version without content. */
		async dropVersions(this: This, list: VersionRecord[]) {
			let n = 0;
			for (const v of list) {
				if (!(await this.store.remove(v._id))) continue;
				n++;
				try {
					await (await this.storeOf(v.vds)).delete(v.key);
				} catch (err) {
					this.logger.warn(`Version object ${v.vds}/${v.key} not deleted: ${(err as Error).message}`);
				}
			}
			if (n) this.broker.broadcast("versions.changed", { uuids: [...new Set(list.map((v) => v.nodeUuid))] });
			return n;
		},
		/** MaxTotalSize: every version kept under the policy, newest first, within the limit; the oldest go. */
		async pruneTotal(this: This, policy: VersioningPolicy) {
			if (activeLimit(policy.MaxTotalSize) === undefined) return 0;
			const all = (await this.store.find({ query: { kind: "version", policy: policy.Uuid } })) as VersionRecord[];
			return this.dropVersions(pruneBySize(all, policy.MaxTotalSize));
		},
		/** Applies every policy to every node that has versions (time windows move on even without writes). */
		async sweep(this: This, now: number) {
			const all = (await this.store.find({ query: { kind: "version" } })) as VersionRecord[];
			const byNode = new Map<string, VersionRecord[]>();
			for (const v of all) byNode.set(v.nodeUuid, [...(byNode.get(v.nodeUuid) ?? []), v]);
			const policies = new Map((await this.allPolicies()).map((p) => [p.Uuid, p]));
			let removed = 0;
			for (const [uuid, list] of byNode) {
				const policy = policies.get(newestFirst(list)[0].policy);
				if (!policy) continue;
				removed += await this.perNode(uuid, () => this.dropVersions(pruneNode(list, policy, now)));
			}
			for (const p of policies.values()) removed += await this.pruneTotal(p);
			return removed;
		},
		/** A file or a folder (its whole subtree) is gone: NodeDeletedStrategy of the datasource's policy. */
		async onDeleted(this: This, node: ChangedNode) {
			const or: Record<string, unknown>[] = [{ nodeUuid: node.Uuid }];
			if (node.type === "COLLECTION") or.push({ ds: node.ds, path: new RegExp(`^${escapeRegExp(node.path)}/`) });
			const found = (await this.store.find({ query: { kind: "version", $or: or } })) as VersionRecord[];
			if (!found.length) return;
			const current = await this.policyOfDatasource(node.ds).catch(() => null);
			const byNode = new Map<string, VersionRecord[]>();
			for (const v of found) byNode.set(v.nodeUuid, [...(byNode.get(v.nodeUuid) ?? []), v]);
			const now = Date.now();
			for (const [uuid, list] of byNode) {
				await this.perNode(uuid, async () => {
					const policy = current ?? (await this.loadPolicy(newestFirst(list)[0].policy));
					const gone = pruneOnDelete(list, policy?.NodeDeletedStrategy ?? "KeepAll");
					await this.dropVersions(gone);
					const goneIds = new Set(gone.map((v) => v._id));
					for (const v of list) if (!goneIds.has(v._id) && !v.deletedAt) await this.store.patch(v._id, { deletedAt: now });
				});
			}
		},
		/** Versions follow their node (and a folder's subtree) so that a later folder delete finds them. */
		async onMoved(this: This, node: ChangedNode, from: { ds: string; path: string }) {
			if (node.type !== "COLLECTION") {
				await this.store.updateMany({ kind: "version", nodeUuid: node.Uuid }, { $set: { ds: node.ds, path: node.path } });
				return;
			}
			const under = (await this.store.find({ query: { kind: "version", ds: from.ds, path: new RegExp(`^${escapeRegExp(from.path)}/`) } })) as VersionRecord[];
			for (const v of under) await this.store.patch(v._id, { ds: node.ds, path: node.path + v.path.slice(from.path.length) });
		},
		/** Cells' first-run policies, each inserted once: a policy the administrator deleted does not come back. */
		async seedPolicies(this: This) {
			const meta = (await this.store.get(SEEDED_ID)) as MetaDoc | null;
			const seeded = new Set(meta?.seeded ?? []);
			for (const p of DEFAULT_POLICIES) {
				if (seeded.has(p.Uuid) && p.Uuid !== DEFAULT_POLICY_ID) continue;
				if (!(await this.store.get(policyId(p.Uuid)))) {
					// Another node may insert it at the same time (shared MongoDB): a duplicate is not an error.
					await this.store.insert({ ...p, _id: policyId(p.Uuid), kind: "policy" } as PolicyDoc).catch(async (err) => {
						if (!(await this.store.get(policyId(p.Uuid)))) throw err;
					});
				}
				seeded.add(p.Uuid);
			}
			await this.store.replace({ _id: SEEDED_ID, kind: "meta", seeded: [...seeded] } as MetaDoc);
		},
	},
	created(this: This) {
		this.locks = new Map();
	},
	async started(this: This) {
		await this.seedPolicies();
		this.timer = setInterval(() => {
			this.sweep(Date.now()).catch((err) => this.logger.warn(`Version pruning failed: ${(err as Error).message}`));
		}, SWEEP_EVERY_MS);
		this.timer.unref();
	},
	stopped(this: This) {
		if (this.timer) clearInterval(this.timer);
	},
};

export = VersionsService;
