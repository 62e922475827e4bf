/**
 * datasources — owns the storage configuration: datasources (object.DataSource, LOCAL folders under DATA_DIR or
 * S3 buckets) and virtual nodes (tree.Node roots such as `my-files` whose path is computed per user from a
 * resolution script). REST (administrators): /config/datasource*, /config/buckets*, /config/virtualnodes*.
 * Internal: datasources.get / list (full records, secrets included: never publish them), virtualNodes,
 * resolveVirtual {uuid, user}, claimHolder {name, node} (a LOCAL datasource without holder gets `node`, once: see
 * lib/peers/holder), ensureDefaults (Cells' install defaults, idempotent, also run at start).
 * Emits `datasources.changed` {name} after a datasource change, {virtualNode} after a virtual node change.
 * Consumes: acl.find (workspace roots, to refuse deleting what a workspace uses), encryption.exists (MASTER keys).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import type { Db } from "../lib/db";
import { DataSourcesRepo } from "../lib/db/datasources";
import { importNedbOnce } from "../lib/db/nedb-import";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { checkBucketName, checkDataSourceName, checkVirtualNodeId, presentDataSource, presentVirtualNode, type DataSource, type TreeNode } from "../lib/datasources/model";
import { BadRequestError } from "../lib/errors";
import { remoteHolder } from "../lib/peers/holder";
import { DataSourceRegistry, type DataSourceCalls } from "../lib/datasources/registry";
import { bucketFilter, createS3Bucket, listS3Buckets } from "../lib/datasources/s3";
import { dataSourceParam, dataSourceProps, str } from "../lib/datasources/params";
import type { ResolutionUser } from "../lib/datasources/resolution";
import { broadcast, call, serviceRuns } from "../lib/contracts";

type DsParams = Partial<DataSource> & { Name: string };
type ResolveParams = { uuid: string; user: ResolutionUser };

interface DsMethods {
	calls(ctx: Context<unknown, Meta>): DataSourceCalls;
}
interface DsVars {
	db: Db;
	registry: DataSourceRegistry;
}
type DsThis = Service & DsMethods & DsVars;

const DataSourcesService: ServiceSchema<ServiceSettingSchema, DsMethods, DsVars> = {
	name: "datasources",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		listDataSources: {
			read: true,
			rest: "GET /config/datasource",
			params: {},
			async handler(this: DsThis, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				const all = (await this.registry.list()).map(presentDataSource);
				return { DataSources: all, Total: all.length };
			},
		},
		getDataSource: {
			read: true,
			rest: "GET /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				return presentDataSource(await this.registry.require(checkDataSourceName(ctx.params.Name)));
			},
		},
		putDataSource: {
			rest: "POST /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 }, ...dataSourceProps },
			async handler(this: DsThis, ctx: Context<DsParams, Meta>) {
				requireAdmin(ctx);
				const { Name, ...input } = ctx.params;
				// [peers] A LOCAL datasource in a cluster is held by one node: the one named, or the one kept, or
				// else the node the administrator created it through.
				if ((input.StorageType ?? "LOCAL") === "LOCAL" && loadConfig().transporter) {
					const existing = await this.registry.get(checkDataSourceName(Name));
					if (!input.PeerAddress) input.PeerAddress = existing ? existing.PeerAddress : (ctx.nodeID ?? this.broker.nodeID);
					// A new holder must be a node of the cluster now (a typo would make the datasource unreachable).
					const nodes = (this.broker.registry as unknown as { nodes: { get(id: string): { available?: boolean } | undefined } }).nodes;
					if (input.PeerAddress && input.PeerAddress !== existing?.PeerAddress && !nodes.get(input.PeerAddress)?.available) {
						throw new BadRequestError(`PeerAddress ${input.PeerAddress.slice(0, 255)} is not a node of the cluster now (GET /a/config/peers lists them)`);
					}
				}
				return presentDataSource(await this.registry.put(checkDataSourceName(Name), input, this.calls(ctx)));
			},
		},
		deleteDataSource: {
			rest: "DELETE /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				await this.registry.delete(checkDataSourceName(ctx.params.Name), this.calls(ctx));
				return { Success: true };
			},
		},
		listBuckets: {
			rest: "POST /config/buckets",
			params: { DataSource: dataSourceParam, BucketsRegexp: str(256) },
			async handler(this: DsThis, ctx: Context<{ DataSource?: Partial<DataSource>; BucketsRegexp?: string }, Meta>) {
				requireAdmin(ctx);
				const filter = bucketFilter(ctx.params.BucketsRegexp);
				const ds = await this.registry.withStoredSecret(ctx.params.DataSource ?? {});
				const buckets = await listS3Buckets(ds, filter);
				return { Children: buckets.map((b) => ({ Path: b.name, Type: "COLLECTION", MTime: b.created })) };
			},
		},
		createBucket: {
			rest: "PUT /config/buckets/:BucketName",
			params: { BucketName: { type: "string", max: 1024 }, DataSource: dataSourceParam },
			async handler(this: DsThis, ctx: Context<{ BucketName: string; DataSource?: Partial<DataSource> }, Meta>) {
				requireAdmin(ctx);
				const bucket = checkBucketName(ctx.params.BucketName);
				const ds = await this.registry.withStoredSecret(ctx.params.DataSource ?? {});
				await createS3Bucket(ds, bucket);
				return { Success: true, BucketName: bucket };
			},
		},
		listVirtualNodes: {
			read: true,
			rest: "GET /config/virtualnodes",
			params: {},
			async handler(this: DsThis, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { Children: (await this.registry.virtualNodes()).map(presentVirtualNode) };
			},
		},
		putVirtualNode: {
			rest: "POST /config/virtualnodes/:Uuid",
			params: {
				Uuid: { type: "string", max: 1024 },
				Path: str(1024),
				Type: { type: "enum", optional: true, values: ["UNKNOWN", "LEAF", "COLLECTION"] },
				MetaStore: { type: "record", optional: true, key: { type: "string", max: 128 }, value: { type: "string", max: 8192 } },
			},
			async handler(this: DsThis, ctx: Context<TreeNode & { Uuid: string }, Meta>) {
				requireAdmin(ctx);
				return presentVirtualNode(await this.registry.putVirtualNode(checkVirtualNodeId(ctx.params.Uuid), ctx.params));
			},
		},
		deleteVirtualNode: {
			rest: "DELETE /config/virtualnodes/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				await this.registry.deleteVirtualNode(checkVirtualNodeId(ctx.params.Uuid), this.calls(ctx));
				return { Success: true };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		setFlat: {
			// The first step of "Upgrade DataSource Format": new writes go to uuid keys; the tree converts the rest.
			params: { name: { type: "string", max: 64 } },
			async handler(this: DsThis, ctx: Context<{ name: string }>): Promise<{ changed: boolean }> {
				return { changed: await this.registry.setFlat(ctx.params.name) };
			},
		},
		get: {
			read: true,
			params: { name: { type: "string", max: 255 } },
			async handler(this: DsThis, ctx: Context<{ name: string }>): Promise<DataSource> {
				return this.registry.require(ctx.params.name);
			},
		},
		list: {
			read: true,
			params: {},
			async handler(this: DsThis): Promise<DataSource[]> {
				return this.registry.list();
			},
		},
		virtualNodes: {
			read: true,
			params: {},
			async handler(this: DsThis): Promise<TreeNode[]> {
				return (await this.registry.virtualNodes()).map(presentVirtualNode);
			},
		},
		resolveVirtual: {
			read: true,
			params: {
				uuid: { type: "string", max: 255 },
				user: { type: "object", props: { Login: { type: "string", min: 1, max: 255 }, Uuid: str(255), GroupPath: str(4096) } },
			},
			async handler(this: DsThis, ctx: Context<ResolveParams>): Promise<{ datasource: string; path: string }> {
				return this.registry.resolveVirtual(ctx.params.uuid, ctx.params.user);
			},
		},
		claimHolder: {
			params: { name: { type: "string", max: 64 }, node: { type: "string", min: 1, max: 255 } },
			async handler(this: DsThis, ctx: Context<{ name: string; node: string }>): Promise<DataSource> {
				return this.registry.claimHolder(ctx.params.name, ctx.params.node);
			},
		},
		ensureDefaults: {
			params: {},
			async handler(this: DsThis): Promise<{ Created: string[] }> {
				return { Created: await this.registry.ensureDefaults() };
			},
		},
	},
	events: {
		"datasources.changed"(this: DsThis) {
			this.registry?.invalidate();
		},
	},
	methods: {
		calls(this: DsThis, ctx: Context<unknown, Meta>): DataSourceCalls {
			const hasTree = serviceRuns(this.broker, "tree");
			return {
				encryptionKeyExists: (id) => call(ctx, "encryption.exists", { id }),
				rootAcls: () => call(ctx, "acl.find", { Actions: ["workspace-path"] }),
				tree: hasTree
					? {
							sampleKeys: (ds, limit) => call(ctx, "tree.sampleKeys", { ds, limit }),
							dropDatasource: async (ds) => void (await call(ctx, "tree.dropDatasource", { ds })),
						}
					: null,
			};
		},
	},
	async started(this: DsThis) {
		const cfg = loadConfig();
		const repo = new DataSourcesRepo(this.db);
		const imported = await importNedbOnce(this.db, cfg.dataDir, "datasources", async (trx, docs) => void (await DataSourcesRepo.importNedb(trx, docs)));
		if (imported.imported) this.logger.info(`Imported ${imported.documents} datasources and virtual nodes from ${imported.backup}`);
		this.registry = new DataSourceRegistry(repo, {
			dataDir: () => cfg.dataDir,
			changed: async (payload) => void (await broadcast(this.broker, "datasources.changed", payload)),
			warn: (m) => this.logger.warn(m),
			remoteHolder: (ds) => remoteHolder(ds, this.broker.nodeID, !!cfg.transporter),
		});
		await this.registry.ensureDefaults();
	},
};

export = DataSourcesService;
