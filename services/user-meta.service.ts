/**
 * user-meta — user metadata on nodes (Cells' `/user-meta/*`): namespaces declared by administrators, values users
 * put on nodes (with the namespace's policies, bookmarks owned by their user), tag lists of `tags` namespaces,
 * bookmarks. Logic in lib/usermeta, store in lib/db/user-meta.
 * Calls: `tree.statUuids` (nodes by uuid as the caller sees them: existence, read and write rights).
 * Serves: `user-meta.valuesFor` (the tree adds readable values to the MetaStore of each stat and listing page),
 *         `user-meta.nodesMatching` (search by metadata), `user-meta.bookmarkedUuids` (graph).
 * Broadcasts: `usermeta.changed` {NodeUuids, Namespaces, Indexable} after values change (gateways drop cached
 *         listings; a search index reindexes the nodes of indexable namespaces).
 * Consumes: `tree.changed` type delete (the node's values go with it; a folder's delete, and an hourly sweep on one
 *         node of the cluster, remove the values of nodes that no longer exist); `usermeta.changed` (its own
 *         included: each replica keeps which nodes have values, lib/usermeta/valued, and asks the store only for those).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { LeasesRepo, UserMetaRepo, type Db } from "../lib/db";
import { PeriodicLease } from "../lib/cluster/periodic";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { policiesParam as policies } from "../lib/identity/policy-params";
import { UserMetadata, type NamespaceIn, type SearchQuery, type UserMetaIn } from "../lib/usermeta/metadata";
import { MAX_RESULTS } from "../lib/usermeta/metadata";
import { broadcast, call, type TreeChange, type UserMetaChange } from "../lib/contracts";
import { ValuedNodes } from "../lib/usermeta/valued";

const operation = { type: "enum", optional: true, values: ["PUT", "DELETE"] } as const;
const uuid = { type: "string", max: 255 } as const;
const namespace = { type: "string", min: 1, max: 128 } as const;
const uuidList = { type: "array", optional: true, items: uuid, max: 1000 } as const;

/** An hourly sweep of values whose node is gone; after a folder's delete, one sweep this long after. */
const SWEEP_EVERY_MS = 3600_000;
const SWEEP_AFTER_DELETE_MS = 5000;
/** How often each replica reads again which nodes have values (announcements lost, values swept). */
const VALUED_REFRESH_MS = 10 * 60_000;

interface UserMetaVars {
	db: Db;
	repo: UserMetaRepo;
	meta: UserMetadata;
	/** Which nodes have any values (lib/usermeta/valued). */
	valued: ValuedNodes;
	sweepLease: PeriodicLease;
	sweeper?: NodeJS.Timeout;
	pendingSweep?: NodeJS.Timeout;
}
interface UserMetaMethods {
	sweep(): Promise<number>;
	sweepSoon(): void;
}
type UserMetaThis = Service & UserMetaVars & UserMetaMethods;

const UserMetaService: ServiceSchema<ServiceSettingSchema, UserMetaMethods, UserMetaVars> = {
	name: "user-meta",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		listNamespaces: {
			read: true,
			rest: "GET /user-meta/namespace",
			params: {},
			async handler(this: UserMetaThis, ctx: Context<unknown, Meta>) {
				return { Namespaces: await this.meta.namespaces(requireUser(ctx)) };
			},
		},
		updateNamespaces: {
			rest: "PUT /user-meta/namespace",
			params: {
				Operation: operation,
				Namespaces: {
					type: "array",
					max: 100,
					items: {
						type: "object",
						props: {
							Namespace: { type: "string", max: 128 },
							Label: { type: "string", optional: true, max: 500 },
							Order: { type: "number", optional: true, integer: true },
							Indexable: { type: "boolean", optional: true },
							JsonDefinition: { type: "string", optional: true, max: 65536 },
							Policies: policies,
							PoliciesContextEditable: { type: "boolean", optional: true },
						},
					},
				},
			},
			async handler(this: UserMetaThis, ctx: Context<{ Operation?: "PUT" | "DELETE"; Namespaces: NamespaceIn[] }, Meta>) {
				return { Namespaces: await this.meta.updateNamespaces(requireUser(ctx), ctx.params.Operation ?? "PUT", ctx.params.Namespaces) };
			},
		},
		update: {
			rest: "PUT /user-meta/update",
			params: {
				Operation: operation,
				MetaDatas: {
					type: "array",
					max: 1000,
					items: {
						type: "object",
						props: {
							Uuid: { ...uuid, optional: true },
							NodeUuid: { ...uuid, optional: true },
							Namespace: { type: "string", optional: true, max: 128 },
							JsonValue: { type: "string", optional: true, max: 65536 },
							Policies: policies,
							PoliciesContextEditable: { type: "boolean", optional: true },
							ResolvedNode: { type: "object", optional: true },
						},
					},
				},
			},
			async handler(this: UserMetaThis, ctx: Context<{ Operation?: "PUT" | "DELETE"; MetaDatas: UserMetaIn[] }, Meta>) {
				return { MetaDatas: await this.meta.update(requireUser(ctx), ctx.params.Operation ?? "PUT", ctx.params.MetaDatas) };
			},
		},
		search: {
			rest: "POST /user-meta/search",
			params: {
				MetaUuids: uuidList,
				NodeUuids: uuidList,
				Namespace: { type: "string", optional: true, max: 128 },
				ResourceSubjectOwner: { type: "string", optional: true, max: 255 },
				ResourceQuery: { type: "object", optional: true, props: { Any: { type: "boolean", optional: true }, Empty: { type: "boolean", optional: true }, Subjects: { type: "array", optional: true, items: "string", max: 100 } } },
			},
			async handler(this: UserMetaThis, ctx: Context<SearchQuery, Meta>) {
				return { Metadatas: await this.meta.search(requireUser(ctx), ctx.params) };
			},
		},
		bookmarks: {
			rest: "POST /user-meta/bookmarks",
			// `All` (bookmarks of every workspace) is what this server always answers.
			params: { All: { type: "boolean", optional: true } },
			async handler(this: UserMetaThis, ctx: Context<{ All?: boolean }, Meta>) {
				return { Nodes: await this.meta.bookmarks(requireUser(ctx)) };
			},
		},
		listTags: {
			rest: "GET /user-meta/tags/:Namespace",
			params: { Namespace: namespace },
			async handler(this: UserMetaThis, ctx: Context<{ Namespace: string }, Meta>) {
				requireUser(ctx);
				return { Tags: await this.meta.tags(ctx.params.Namespace) };
			},
		},
		putTag: {
			rest: "POST /user-meta/tags/:Namespace",
			params: { Namespace: namespace, Tag: { type: "string", max: 255 } },
			async handler(this: UserMetaThis, ctx: Context<{ Namespace: string; Tag: string }, Meta>) {
				await this.meta.addTag(requireUser(ctx), ctx.params.Namespace, ctx.params.Tag);
				return { Success: true };
			},
		},
		deleteTags: {
			rest: "DELETE /user-meta/tags/:Namespace/:Tags",
			params: { Namespace: namespace, Tags: { type: "string", min: 1, max: 255 } },
			async handler(this: UserMetaThis, ctx: Context<{ Namespace: string; Tags: string }, Meta>) {
				await this.meta.clearTags(requireUser(ctx), ctx.params.Namespace, ctx.params.Tags);
				return { Success: true };
			},
		},

		// ---- internal (lib/contracts/usermeta) ----
		valuesFor: {
			read: true,
			params: { NodeUuids: { type: "array", items: "string", max: 10_000 } },
			async handler(this: UserMetaThis, ctx: Context<{ NodeUuids: string[] }, Meta>) {
				return this.meta.valuesFor(requireUser(ctx), ctx.params.NodeUuids);
			},
		},
		nodesMatching: {
			read: true,
			params: { Namespace: namespace, Equals: { type: "string", optional: true, max: 65536 }, Contains: { type: "string", optional: true, min: 1, max: 1024 }, Limit: { type: "number", optional: true, integer: true, min: 1, max: 10_000 } },
			async handler(this: UserMetaThis, ctx: Context<{ Namespace: string; Equals?: string; Contains?: string; Limit?: number }, Meta>) {
				const { Namespace, Equals, Contains, Limit } = ctx.params;
				return { NodeUuids: await this.meta.nodesMatching(requireUser(ctx), Namespace, { equals: Equals, contains: Contains }, Limit ?? MAX_RESULTS) };
			},
		},
		bookmarkedUuids: {
			read: true,
			params: { Limit: { type: "number", optional: true, integer: true, min: 1, max: MAX_RESULTS } },
			async handler(this: UserMetaThis, ctx: Context<{ Limit?: number }, Meta>) {
				return { NodeUuids: await this.meta.bookmarkedUuids(requireUser(ctx), ctx.params.Limit) };
			},
		},
	},
	events: {
		// Values set on any replica (this one's included): their nodes are looked up from now on.
		"usermeta.changed"(this: UserMetaThis, ctx: Context<UserMetaChange>) {
			this.valued?.add(ctx.params.NodeUuids);
		},
		"tree.changed": {
			async handler(this: UserMetaThis, ctx: Context<TreeChange>) {
				// A folder's delete is one event: values of what was inside stay unreachable (no node has their uuid).
				// Not started yet: nothing of it can be deleted here.
				if (ctx.params.type !== "delete" || !ctx.params.node?.Uuid || !this.repo) return;
				if (ctx.params.node.type === "COLLECTION") this.sweepSoon();
				try {
					const n = await this.repo.deleteOfNodes([ctx.params.node.Uuid]);
					if (n) await broadcast(this.broker, "usermeta.changed", { NodeUuids: [ctx.params.node.Uuid], Namespaces: [], Indexable: false });
				} catch (err) {
					this.logger.warn(`User metadata of deleted node ${ctx.params.node.Uuid} not removed: ${(err as Error).message}`);
				}
			},
		},
	},
	methods: {
		/** Values of nodes that no longer exist are removed; how many. */
		async sweep(this: UserMetaThis): Promise<number> {
			try {
				const n = await this.repo.deleteOrphans();
				if (n) this.logger.info(`Removed ${n} user metadata values of deleted nodes`);
				return n;
			} catch (e) {
				this.logger.warn(`User metadata sweep failed: ${(e as Error).message}`);
				return 0;
			}
		},
		/** One sweep shortly after, however many folders are deleted meanwhile. */
		sweepSoon(this: UserMetaThis) {
			if (this.pendingSweep) return;
			this.pendingSweep = setTimeout(() => {
				this.pendingSweep = undefined;
				void this.sweep();
			}, SWEEP_AFTER_DELETE_MS);
			this.pendingSweep.unref();
		},
	},
	async started(this: UserMetaThis) {
		this.repo = new UserMetaRepo(this.db);
		this.valued = new ValuedNodes(this.repo);
		await this.valued.load();
		this.valued.start(VALUED_REFRESH_MS, (e) => this.logger.warn(`Reading which nodes have user metadata failed: ${e.message}`));
		this.meta = new UserMetadata({
			repo: this.repo,
			// The caller's rights on the nodes come from the tree (workspaces, node ACLs, token scopes).
			nodes: async (uuids, user) => (uuids.length ? (await call(this.broker, "tree.statUuids", { Uuids: uuids }, { meta: { user } })).Nodes : []),
			changed: (change) => {
				// This replica's answers show the values at once; the others' when the broadcast reaches them.
				this.valued.add(change.NodeUuids);
				return broadcast(this.broker, "usermeta.changed", change);
			},
			valued: (uuids) => this.valued.among(uuids),
		});
		// Once per cluster: the lease's holder sweeps every hour; another node takes over within two if it stops.
		this.sweepLease = new PeriodicLease(new LeasesRepo(this.db), "user-meta.sweep", this.broker.nodeID, 2 * SWEEP_EVERY_MS, (e) => this.logger.warn(`User metadata sweep lease renewal failed: ${(e as Error).message}`));
		this.sweeper = setInterval(() => void this.sweepLease.run(() => this.sweep()).catch(() => undefined), SWEEP_EVERY_MS);
		this.sweeper.unref();
	},
	async stopped(this: UserMetaThis) {
		this.valued?.stop();
		clearInterval(this.sweeper);
		clearTimeout(this.pendingSweep);
		await this.sweepLease?.release().catch(() => undefined);
	},
};

export = UserMetaService;
