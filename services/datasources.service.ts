/**
 * datasources — owns the storage configuration: datasources (object.DataSource, LOCAL folders under DATA_DIR or
 * S3 buckets) and virtual nodes (tree.Node roots such as `my-files` whose path is computed per user from a
 * resolution script). REST (administrators): /config/datasource*, /config/buckets*, /config/virtualnodes*.
 * Internal: datasources.get / list (full records, secrets included: never publish them), virtualNodes,
 * resolveVirtual {uuid, user}, ensureDefaults (Cells' install defaults, idempotent, also run at start).
 * Emits `datasources.changed` {name} after a datasource change, {virtualNode} after a virtual node change.
 * Consumes: acl.find (workspace roots, to refuse deleting what a workspace uses), encryption.exists (MASTER keys).
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DbMixin, type Store } from "../mixins/db.mixin";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../lib/errors";
import { loadConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import {
	DEFAULT_DATASOURCE,
	DEFAULT_DATASOURCES,
	DEFAULT_VIRTUAL_NODES,
	PROTECTED_VIRTUAL_NODES,
	checkBucketName,
	checkDataSourceName,
	checkVirtualNodeId,
	defaultDataSource,
	defaultVirtualNode,
	dsId,
	internalDataSource,
	isInternal,
	normalizeDataSource,
	normalizeVirtualNode,
	presentDataSource,
	presentVirtualNode,
	resolutionOf,
	vnId,
	workspacesRootedAt,
	workspacesUsing,
	type DataSource,
	type DataSourceDoc,
	type RootAcl,
	type TreeNode,
	type VirtualNodeDoc,
} from "../lib/datasources/model";
import { checkLocalDataSource, prepareLocalFolder, resolveLocalFolder } from "../lib/datasources/local";
import { checkBucketReachable, checkEndpointUrl, createS3Bucket, listS3Buckets, s3Endpoint } from "../lib/datasources/s3";
import { dataSourceParam, dataSourceProps, str } from "../lib/datasources/params";
import { checkRelocation } from "../lib/datasources/relocation";
import { evaluateResolution, parseResolution, splitResolved, type ParsedResolution, type ResolutionUser } from "../lib/datasources/resolution";

type AnyDoc = DataSourceDoc | VirtualNodeDoc;
type DsParams = Partial<DataSource> & { Name: string };
type ResolveParams = { uuid: string; user: ResolutionUser };


interface DsMethods {
	hasTree(): boolean;
	serialized<T>(fn: () => Promise<T>): Promise<T>;
	loadDataSource(name: string): Promise<DataSourceDoc | null>;
	allDataSources(): Promise<DataSourceDoc[]>;
	allVirtualNodes(): Promise<VirtualNodeDoc[]>;
	checkStorage(ds: DataSource, others: DataSource[]): Promise<void>;
	putDataSource(ctx: Context<DsParams, Meta>): Promise<DataSource>;
	withStoredSecret(ds: Partial<DataSource>): Promise<DataSource>;
	rootAcls(ctx: Context<unknown, Meta>): Promise<RootAcl[]>;
	ensureDefaultsNow(): Promise<string[]>;
	parsedVirtualNodes(): Promise<Map<string, { doc: VirtualNodeDoc; parsed: ParsedResolution }>>;
	changed(payload: Record<string, string>): Promise<void>;
}
interface DsVars {
	store: Store<AnyDoc>;
	writeQueue: Promise<unknown>;
	vnCache?: Promise<Map<string, { doc: VirtualNodeDoc; parsed: ParsedResolution }>>;
}
type DsThis = Service & DsMethods & DsVars;

const byName = (a: { Name: string }, b: { Name: string }) => a.Name.localeCompare(b.Name);

const DataSourcesService: ServiceSchema<ServiceSettingSchema, DsMethods, DsVars> = {
	name: "datasources",
	mixins: [DbMixin("datasources")],
	settings: { rest: "/" },
	actions: {
		listDataSources: {
			rest: "GET /config/datasource",
			params: {},
			async handler(this: DsThis, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				const all = (await this.allDataSources()).map((d) => presentDataSource(internalDataSource(d)));
				return { DataSources: all, Total: all.length };
			},
		},
		getDataSource: {
			rest: "GET /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				const doc = await this.loadDataSource(checkDataSourceName(ctx.params.Name));
				if (!doc) throw new NotFoundError(`Datasource ${ctx.params.Name} not found`, "datasource.notfound");
				return presentDataSource(internalDataSource(doc));
			},
		},
		putDataSource: {
			rest: "POST /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 }, ...dataSourceProps },
			async handler(this: DsThis, ctx: Context<DsParams, Meta>) {
				requireAdmin(ctx);
				return this.putDataSource(ctx);
			},
		},
		deleteDataSource: {
			rest: "DELETE /config/datasource/:Name",
			params: { Name: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				const name = checkDataSourceName(ctx.params.Name);
				if (name === DEFAULT_DATASOURCE) throw new ForbiddenError(`Datasource ${name} is the default datasource and cannot be deleted`, "datasource.protected");
				const doc = await this.loadDataSource(name);
				if (!doc) throw new NotFoundError(`Datasource ${name} not found`, "datasource.notfound");
				if (isInternal(doc)) throw new ForbiddenError(`Datasource ${name} is used internally and cannot be deleted`, "datasource.protected");
				const vns = (await this.allVirtualNodes()).filter((v) => {
					try {
						return parseResolution(resolutionOf(v) ?? "").dataSources.includes(name);
					} catch {
						return false;
					}
				});
				if (vns.length) throw new ConflictError(`Datasource ${name} is used by virtual node ${vns.map((v) => v.Uuid).join(", ")}`, "datasource.used");
				const ws = workspacesUsing(name, await this.rootAcls(ctx));
				if (ws.length) throw new ConflictError(`Datasource ${name} is used by workspace ${ws.join(", ")}`, "datasource.used");
				// The configuration goes; the data stays where it is. The tree forgets the datasource's index first,
				// or refuses (409) when that index is the only record of its files (flat).
				if (this.hasTree()) await ctx.call("tree.dropDatasource", { ds: name });
				await this.serialized(() => this.store.remove(dsId(name)));
				await this.changed({ name });
				return { Success: true };
			},
		},
		listBuckets: {
			rest: "POST /config/buckets",
			params: { DataSource: dataSourceParam, BucketsRegexp: str(256) },
			async handler(this: DsThis, ctx: Context<{ DataSource?: Partial<DataSource>; BucketsRegexp?: string }, Meta>) {
				requireAdmin(ctx);
				const ds = await this.withStoredSecret(ctx.params.DataSource ?? {});
				let filter: RegExp | undefined;
				if (ctx.params.BucketsRegexp) {
					try {
						filter = new RegExp(ctx.params.BucketsRegexp);
					} catch (err) {
						throw new BadRequestError(`Invalid BucketsRegexp: ${(err as Error).message}`);
					}
				}
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
				const ds = await this.withStoredSecret(ctx.params.DataSource ?? {});
				await createS3Bucket(ds, bucket);
				return { Success: true, BucketName: bucket };
			},
		},
		listVirtualNodes: {
			rest: "GET /config/virtualnodes",
			params: {},
			async handler(this: DsThis, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { Children: (await this.allVirtualNodes()).map(presentVirtualNode) };
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
				const uuid = checkVirtualNodeId(ctx.params.Uuid);
				if (ctx.params.Type === "LEAF") throw new BadRequestError("A virtual node is a folder (Type COLLECTION)");
				const { node, parsed } = normalizeVirtualNode(ctx.params, uuid);
				const known = new Set((await this.allDataSources()).map((d) => d.Name));
				const missing = parsed.dataSources.filter((n) => !known.has(n));
				if (missing.length) throw new BadRequestError(`The resolution script refers to unknown datasource(s): ${missing.join(", ")}`);
				const doc: VirtualNodeDoc = { _id: vnId(uuid), kind: "virtualnode", Uuid: uuid, Path: node.Path, MetaStore: node.MetaStore, MTime: Math.floor(Date.now() / 1000) };
				await this.serialized(() => this.store.replace(doc));
				await this.changed({ virtualNode: uuid });
				return presentVirtualNode(doc);
			},
		},
		deleteVirtualNode: {
			rest: "DELETE /config/virtualnodes/:Uuid",
			params: { Uuid: { type: "string", max: 1024 } },
			async handler(this: DsThis, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const uuid = checkVirtualNodeId(ctx.params.Uuid);
				if (PROTECTED_VIRTUAL_NODES.includes(uuid)) throw new ForbiddenError(`Virtual node ${uuid} is a default one and cannot be deleted`, "virtualnode.protected");
				if (!(await this.store.get(vnId(uuid)))) throw new NotFoundError(`Virtual node ${uuid} not found`, "virtualnode.notfound");
				const ws = workspacesRootedAt(uuid, await this.rootAcls(ctx));
				if (ws.length) throw new ConflictError(`Virtual node ${uuid} is used by workspace ${ws.join(", ")}`, "virtualnode.used");
				await this.serialized(() => this.store.remove(vnId(uuid)));
				await this.changed({ virtualNode: uuid });
				return { Success: true };
			},
		},

		// ---- internal actions (no rest: never published on HTTP) ----
		setFlat: {
			// The first step of "Upgrade DataSource Format": new writes go to uuid keys; the tree converts the rest.
			params: { name: { type: "string", max: 64 } },
			async handler(this: DsThis, ctx: Context<{ name: string }>): Promise<{ changed: boolean }> {
				const doc = await this.loadDataSource(ctx.params.name);
				if (!doc) throw new NotFoundError(`Datasource ${ctx.params.name.slice(0, 80)} not found`, "datasource.notfound");
				if (doc.FlatStorage) return { changed: false };
				await this.serialized(() => this.store.replace({ ...doc, FlatStorage: true }));
				await this.changed({ name: doc.Name });
				return { changed: true };
			},
		},
		get: {
			retryPolicy: { enabled: true },
			params: { name: { type: "string", max: 255 } },
			async handler(this: DsThis, ctx: Context<{ name: string }>): Promise<DataSource> {
				const doc = await this.loadDataSource(ctx.params.name);
				if (!doc) throw new NotFoundError(`Datasource ${ctx.params.name.slice(0, 80)} not found`, "datasource.notfound");
				return internalDataSource(doc);
			},
		},
		list: {
			retryPolicy: { enabled: true },
			params: {},
			async handler(this: DsThis): Promise<DataSource[]> {
				return (await this.allDataSources()).map(internalDataSource);
			},
		},
		virtualNodes: {
			retryPolicy: { enabled: true },
			params: {},
			async handler(this: DsThis): Promise<TreeNode[]> {
				return (await this.allVirtualNodes()).map(presentVirtualNode);
			},
		},
		resolveVirtual: {
			retryPolicy: { enabled: true },
			params: {
				uuid: { type: "string", max: 255 },
				user: { type: "object", props: { Login: { type: "string", min: 1, max: 255 }, Uuid: str(255), GroupPath: str(4096) } },
			},
			async handler(this: DsThis, ctx: Context<ResolveParams>): Promise<{ datasource: string; path: string }> {
				const entry = (await this.parsedVirtualNodes()).get(ctx.params.uuid);
				if (!entry) throw new NotFoundError(`Virtual node ${ctx.params.uuid.slice(0, 80)} not found`, "virtualnode.notfound");
				const resolved = splitResolved(evaluateResolution(entry.parsed, ctx.params.user));
				if (!(await this.loadDataSource(resolved.datasource))) {
					throw new NotFoundError(`Datasource ${resolved.datasource} of virtual node ${ctx.params.uuid} does not exist`, "datasource.notfound");
				}
				return resolved;
			},
		},
		ensureDefaults: {
			params: {},
			async handler(this: DsThis): Promise<{ Created: string[] }> {
				return { Created: await this.ensureDefaultsNow() };
			},
		},
	},
	events: {
		"datasources.changed"(this: DsThis) {
			this.vnCache = undefined;
		},
	},
	methods: {
		hasTree(this: DsThis): boolean {
			return (this.broker.registry as unknown as { hasService(n: string): boolean }).hasService("tree");
		},
		/** Writes run one at a time on this node: checks then writes. */
		serialized<T>(this: DsThis, fn: () => Promise<T>): Promise<T> {
			const run = this.writeQueue.then(fn, fn);
			this.writeQueue = run.catch(() => undefined);
			return run;
		},
		async loadDataSource(this: DsThis, name: string): Promise<DataSourceDoc | null> {
			const doc = await this.store.get(dsId(name));
			return doc && doc.kind === "datasource" ? (doc as DataSourceDoc) : null;
		},
		async allDataSources(this: DsThis): Promise<DataSourceDoc[]> {
			return ((await this.store.find({ query: { kind: "datasource" } })) as DataSourceDoc[]).sort(byName);
		},
		async allVirtualNodes(this: DsThis): Promise<VirtualNodeDoc[]> {
			return ((await this.store.find({ query: { kind: "virtualnode" } })) as VirtualNodeDoc[]).sort((a, b) => a.Uuid.localeCompare(b.Uuid));
		},
		async parsedVirtualNodes(this: DsThis) {
			if (!this.vnCache) {
				const load = (async () => {
					const out = new Map<string, { doc: VirtualNodeDoc; parsed: ParsedResolution }>();
					for (const doc of await this.allVirtualNodes()) {
						try {
							out.set(doc.Uuid, { doc, parsed: parseResolution(resolutionOf(doc) ?? "") });
						} catch (err) {
							this.logger.warn(`Virtual node ${doc.Uuid} has an unusable resolution script: ${(err as Error).message}`);
						}
					}
					return out;
				})();
				this.vnCache = load;
				load.catch(() => {
					if (this.vnCache === load) this.vnCache = undefined;
				});
			}
			return this.vnCache;
		},
		/** LOCAL: the folder is allowed, does not overlap another datasource, exists and is writable. S3: HeadBucket. */
		async checkStorage(this: DsThis, ds: DataSource, others: DataSource[]): Promise<void> {
			if (ds.StorageType === "S3") return checkBucketReachable(ds);
			checkLocalDataSource(ds, others, loadConfig().dataDir);
		},
		async putDataSource(this: DsThis, ctx: Context<DsParams, Meta>): Promise<DataSource> {
			const name = checkDataSourceName(ctx.params.Name);
			const { Name: _ignored, ...input } = ctx.params;
			const saved = await this.serialized(async () => {
				const existing = await this.loadDataSource(name);
				const ds = normalizeDataSource(input, name, existing ? internalDataSource(existing) : null);
				// [encryption] a MASTER datasource needs a key that exists in the encryption service.
				if (ds.EncryptionMode === "MASTER" && !(await ctx.call<boolean, { id: string }>("encryption.exists", { id: ds.EncryptionKey ?? "" }))) {
					throw new BadRequestError(`Encryption key ${ds.EncryptionKey} does not exist: create it first with /config/encryption/create`);
				}
				const others = (await this.allDataSources()).filter((d) => d.Name !== name).map(internalDataSource);
				await this.checkStorage(ds, others);
				if (existing && this.hasTree()) await checkRelocation(name, internalDataSource(existing), ds, () => ctx.call("tree.sampleKeys", { ds: name, limit: 5 }), loadConfig().dataDir);
				const doc = { ...ds, _id: dsId(name), kind: "datasource" } as DataSourceDoc;
				await this.store.replace(doc);
				return ds;
			});
			await this.changed({ name });
			return presentDataSource(saved);
		},
		/**
		 * A datasource sent with a bucket request. Responses never carry secrets, so the admin console sends an
		 * existing datasource back without its ApiSecret: the stored one is used when name, key and endpoint match.
		 */
		async withStoredSecret(this: DsThis, input: Partial<DataSource>): Promise<DataSource> {
			const type = input.StorageType ?? "LOCAL";
			if (type !== "S3") throw new BadRequestError(`Buckets can only be listed or created on S3 storage (got ${type})`);
			const ds = { ...input, Name: input.Name || "bucket-request" } as DataSource;
			if (!ds.ApiSecret && input.Name && /^[0-9a-z]{1,64}$/.test(input.Name)) {
				const stored = await this.loadDataSource(input.Name);
				if (stored?.StorageType === "S3" && stored.ApiKey === ds.ApiKey && s3Endpoint(stored) === s3Endpoint(ds)) ds.ApiSecret = stored.ApiSecret;
			}
			if (!ds.ApiKey || !ds.ApiSecret) throw new BadRequestError("DataSource.ApiKey and DataSource.ApiSecret are required");
			checkEndpointUrl(s3Endpoint(ds));
			return ds;
		},
		async rootAcls(this: DsThis, ctx: Context<unknown, Meta>): Promise<RootAcl[]> {
			return ctx.call<RootAcl[], { Actions: string[] }>("acl.find", { Actions: ["workspace-path"] });
		},
		async ensureDefaultsNow(this: DsThis): Promise<string[]> {
			const created = await this.serialized(async () => {
				const out: string[] = [];
				const dataDir = loadConfig().dataDir;
				for (const def of DEFAULT_DATASOURCES) {
					// The folders are (re)created on every start: cheap, and a wiped folder comes back empty, not missing.
					try {
						prepareLocalFolder(resolveLocalFolder(def.folder, dataDir, []), dataDir, []);
					} catch (err) {
						this.logger.warn(`Default datasource folder ${def.folder}: ${(err as Error).message}`);
					}
					if (await this.loadDataSource(def.name)) continue;
					const doc = { ...defaultDataSource(def), _id: dsId(def.name), kind: "datasource" } as DataSourceDoc;
					// Another node may create it at the same time (shared MongoDB): a duplicate is not an error.
					await this.store.insert(doc).catch(async (err) => {
						if (!(await this.loadDataSource(def.name))) throw err;
					});
					out.push(def.name);
				}
				for (const def of DEFAULT_VIRTUAL_NODES) {
					if (await this.store.get(vnId(def.Uuid))) continue;
					const node = defaultVirtualNode(def);
					const doc: VirtualNodeDoc = { _id: vnId(def.Uuid), kind: "virtualnode", Uuid: def.Uuid, Path: node.Path!, MetaStore: node.MetaStore! };
					await this.store.insert(doc).catch(async (err) => {
						if (!(await this.store.get(vnId(def.Uuid)))) throw err;
					});
					out.push(def.Uuid);
				}
				return out;
			});
			for (const c of created) await this.changed(DEFAULT_VIRTUAL_NODES.some((v) => v.Uuid === c) ? { virtualNode: c } : { name: c });
			return created;
		},
		async changed(this: DsThis, payload: Record<string, string>): Promise<void> {
			this.vnCache = undefined;
			await this.broker.broadcast("datasources.changed", payload);
		},
	},
	created(this: DsThis) {
		this.writeQueue = Promise.resolve();
	},
	async started(this: DsThis) {
		await this.ensureDefaultsNow();
	},
};

export = DataSourcesService;
