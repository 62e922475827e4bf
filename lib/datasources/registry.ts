// The datasources service's rules, apart from Moleculer: what may be created, changed or deleted, and the
// install defaults. Storage comes in as a DataSourceStore (lib/db's DataSourcesRepo), other services as
// DataSourceCalls made in the caller's context, and the change notification as a callback.
//
// Writes run one at a time on a node (checks, then the write). Between nodes, the unique names in the store keep
// defaults from being created twice, and a conditional write records a holder once (claimHolder); the rest is
// administration, rare enough not to race in practice.
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";
import {
	DEFAULT_DATASOURCE,
	DEFAULT_DATASOURCES,
	DEFAULT_VIRTUAL_NODES,
	PROTECTED_VIRTUAL_NODES,
	checkDataSourceName,
	checkVirtualNodeId,
	defaultDataSource,
	defaultVirtualNode,
	isInternal,
	normalizeDataSource,
	normalizeVirtualNode,
	resolutionOf,
	workspacesRootedAt,
	workspacesUsing,
	type DataSource,
	type RootAcl,
	type TreeNode,
} from "./model";
import { checkLocalDataSource, prepareLocalFolder, resolveLocalFolder } from "./local";
import { checkBucketReachable, checkEndpointUrl, s3Endpoint } from "./s3";
import { checkRelocation } from "./relocation";
import { evaluateResolution, parseResolution, splitResolved, type ParsedResolution, type ResolutionUser } from "./resolution";

export interface VirtualNode extends TreeNode {
	Uuid: string;
	Path: string;
	MetaStore: Record<string, string>;
}

export interface DataSourceStore {
	dataSource(name: string): Promise<DataSource | null>;
	/** By name. */
	dataSources(): Promise<DataSource[]>;
	putDataSource(ds: DataSource): Promise<void>;
	/** false when one of this name exists. */
	createDataSource(ds: DataSource): Promise<boolean>;
	deleteDataSource(name: string): Promise<boolean>;
	/** `node` becomes the holder of the LOCAL datasource unless it has one, atomically between nodes; null: none. */
	claimHolder(name: string, node: string): Promise<{ dataSource: DataSource; claimed: boolean } | null>;
	virtualNode(uuid: string): Promise<VirtualNode | null>;
	/** By uuid. */
	virtualNodes(): Promise<VirtualNode[]>;
	putVirtualNode(vn: VirtualNode): Promise<void>;
	/** false when one of this uuid exists. */
	createVirtualNode(vn: VirtualNode): Promise<boolean>;
	deleteVirtualNode(uuid: string): Promise<boolean>;
}

/** What an operation asks of other services, made in the caller's context. */
export interface DataSourceCalls {
	encryptionKeyExists(id: string): Promise<boolean>;
	/** The workspace-root ACLs of every workspace. */
	rootAcls(): Promise<RootAcl[]>;
	/** The tree service, or null when none runs. */
	tree: null | {
		/** A few content keys of the datasource's files (to tell whether a relocation would lose them). */
		sampleKeys(ds: string, limit: number): Promise<string[]>;
		/** Forgets the datasource's index; refuses when the index is the only record of its files. */
		dropDatasource(ds: string): Promise<void>;
	};
}

export interface RegistryDeps {
	dataDir: () => string;
	/** Tells the cluster (caches of datasources and virtual nodes). */
	changed(payload: { name: string } | { virtualNode: string }): Promise<void>;
	warn(message: string): void;
	/** Whether another node holds this LOCAL datasource's folder (lib/peers/holder); none by default. */
	remoteHolder?(ds: DataSource): string | undefined;
}

type Parsed = Map<string, { node: VirtualNode; parsed: ParsedResolution }>;

export class DataSourceRegistry {
	private writeQueue: Promise<unknown> = Promise.resolve();
	private vnCache?: Promise<Parsed>;

	constructor(
		private readonly store: DataSourceStore,
		private readonly deps: RegistryDeps,
	) {}

	get(name: string): Promise<DataSource | null> {
		return this.store.dataSource(name);
	}

	/** The datasource, or 404. */
	async require(name: string): Promise<DataSource> {
		const ds = await this.store.dataSource(name);
		if (!ds) throw new NotFoundError(`Datasource ${name.slice(0, 80)} not found`, "datasource.notfound");
		return ds;
	}

	list(): Promise<DataSource[]> {
		return this.store.dataSources();
	}

	virtualNodes(): Promise<VirtualNode[]> {
		return this.store.virtualNodes();
	}

	/** Forgets the parsed virtual nodes (another node changed them). */
	invalidate(): void {
		this.vnCache = undefined;
	}

	/** Creates or changes a datasource after checking its storage, its key and what a move would leave behind. */
	async put(name: string, input: Partial<DataSource>, calls: DataSourceCalls): Promise<DataSource> {
		checkDataSourceName(name);
		const saved = await this.serialized(async () => {
			const existing = await this.store.dataSource(name);
			const ds = normalizeDataSource(input, name, existing);
			if (ds.EncryptionMode === "MASTER" && !(await calls.encryptionKeyExists(ds.EncryptionKey ?? ""))) {
				throw new BadRequestError(`Encryption key ${ds.EncryptionKey} does not exist: create it first with /config/encryption/create`);
			}
			const others = (await this.store.dataSources()).filter((d) => d.Name !== name);
			await this.checkStorage(ds, others);
			const tree = calls.tree;
			if (existing && tree) await checkRelocation(name, existing, ds, () => tree.sampleKeys(name, 5), this.deps.dataDir());
			await this.store.putDataSource(ds);
			return ds;
		});
		await this.changed({ name });
		return saved;
	}

	/**
	 * The datasource with a holder: `node` when it had none (lib/peers/holder says who may claim), else the one it
	 * has. Only the claim that recorded it tells the cluster.
	 */
	async claimHolder(name: string, node: string): Promise<DataSource> {
		const r = await this.store.claimHolder(checkDataSourceName(name), node);
		if (!r) throw new NotFoundError(`Datasource ${name.slice(0, 80)} not found`, "datasource.notfound");
		if (r.claimed) await this.changed({ name });
		return r.dataSource;
	}

	/** Deletes a datasource's configuration (its data stays), unless something still uses it. */
	async delete(name: string, calls: DataSourceCalls): Promise<void> {
		checkDataSourceName(name);
		if (name === DEFAULT_DATASOURCE) throw new ForbiddenError(`Datasource ${name} is the default datasource and cannot be deleted`, "datasource.protected");
		const ds = await this.require(name);
		if (isInternal(ds)) throw new ForbiddenError(`Datasource ${name} is used internally and cannot be deleted`, "datasource.protected");
		const vns = (await this.store.virtualNodes()).filter((v) => {
			try {
				return parseResolution(resolutionOf(v) ?? "").dataSources.includes(name);
			} catch {
				return false;
			}
		});
		if (vns.length) throw new ConflictError(`Datasource ${name} is used by virtual node ${vns.map((v) => v.Uuid).join(", ")}`, "datasource.used");
		const ws = workspacesUsing(name, await calls.rootAcls());
		if (ws.length) throw new ConflictError(`Datasource ${name} is used by workspace ${ws.join(", ")}`, "datasource.used");
		// The tree forgets the datasource's index first, or refuses (409) when that index is the only record of its
		// files (flat).
		if (calls.tree) await calls.tree.dropDatasource(name);
		await this.serialized(() => this.store.deleteDataSource(name));
		await this.changed({ name });
	}

	/** The first step of "Upgrade DataSource Format": new writes go to uuid keys. Whether it changed. */
	async setFlat(name: string): Promise<boolean> {
		const changed = await this.serialized(async () => {
			const ds = await this.require(name);
			if (ds.FlatStorage) return false;
			await this.store.putDataSource({ ...ds, FlatStorage: true });
			return true;
		});
		if (changed) await this.changed({ name });
		return changed;
	}

	async putVirtualNode(uuid: string, input: TreeNode): Promise<VirtualNode> {
		checkVirtualNodeId(uuid);
		if (input.Type === "LEAF") throw new BadRequestError("A virtual node is a folder (Type COLLECTION)");
		const { node, parsed } = normalizeVirtualNode(input, uuid);
		const known = new Set((await this.store.dataSources()).map((d) => d.Name));
		const missing = parsed.dataSources.filter((n) => !known.has(n));
		if (missing.length) throw new BadRequestError(`The resolution script refers to unknown datasource(s): ${missing.join(", ")}`);
		const vn: VirtualNode = { Uuid: uuid, Path: node.Path, MetaStore: node.MetaStore, MTime: Math.floor(Date.now() / 1000) };
		await this.serialized(() => this.store.putVirtualNode(vn));
		await this.changed({ virtualNode: uuid });
		return vn;
	}

	async deleteVirtualNode(uuid: string, calls: DataSourceCalls): Promise<void> {
		checkVirtualNodeId(uuid);
		if (PROTECTED_VIRTUAL_NODES.includes(uuid)) throw new ForbiddenError(`Virtual node ${uuid} is a default one and cannot be deleted`, "virtualnode.protected");
		if (!(await this.store.virtualNode(uuid))) throw new NotFoundError(`Virtual node ${uuid} not found`, "virtualnode.notfound");
		const ws = workspacesRootedAt(uuid, await calls.rootAcls());
		if (ws.length) throw new ConflictError(`Virtual node ${uuid} is used by workspace ${ws.join(", ")}`, "virtualnode.used");
		await this.serialized(() => this.store.deleteVirtualNode(uuid));
		await this.changed({ virtualNode: uuid });
	}

	/** Where a virtual node points for this user: a datasource that exists and a path in it. */
	async resolveVirtual(uuid: string, user: ResolutionUser): Promise<{ datasource: string; path: string }> {
		const entry = (await this.parsedVirtualNodes()).get(uuid);
		if (!entry) throw new NotFoundError(`Virtual node ${uuid.slice(0, 80)} not found`, "virtualnode.notfound");
		const resolved = splitResolved(evaluateResolution(entry.parsed, user));
		if (!(await this.store.dataSource(resolved.datasource))) {
			throw new NotFoundError(`Datasource ${resolved.datasource} of virtual node ${uuid} does not exist`, "datasource.notfound");
		}
		return resolved;
	}

	/**
	 * A datasource sent with a bucket request. Responses never carry secrets, so the admin console sends an
	 * existing datasource back without its ApiSecret: the stored one is used when name, key and endpoint match.
	 */
	async withStoredSecret(input: Partial<DataSource>): Promise<DataSource> {
		const type = input.StorageType ?? "LOCAL";
		if (type !== "S3") throw new BadRequestError(`Buckets can only be listed or created on S3 storage (got ${type})`);
		const ds = { ...input, Name: input.Name || "bucket-request" } as DataSource;
		if (!ds.ApiSecret && input.Name && /^[0-9a-z]{1,64}$/.test(input.Name)) {
			const stored = await this.store.dataSource(input.Name);
			if (stored?.StorageType === "S3" && stored.ApiKey === ds.ApiKey && s3Endpoint(stored) === s3Endpoint(ds)) ds.ApiSecret = stored.ApiSecret;
		}
		if (!ds.ApiKey || !ds.ApiSecret) throw new BadRequestError("DataSource.ApiKey and DataSource.ApiSecret are required");
		checkEndpointUrl(s3Endpoint(ds));
		return ds;
	}

	/** Cells' install defaults, idempotent (several nodes starting together create each once); the names created. */
	async ensureDefaults(): Promise<string[]> {
		const created = await this.serialized(async () => {
			const out: string[] = [];
			const dataDir = this.deps.dataDir();
			for (const def of DEFAULT_DATASOURCES) {
				// The folders are (re)created on every start: cheap, and a wiped folder comes back empty, not missing.
				try {
					prepareLocalFolder(resolveLocalFolder(def.folder, dataDir, []), dataDir, []);
				} catch (err) {
					this.deps.warn(`Default datasource folder ${def.folder}: ${(err as Error).message}`);
				}
				if (await this.store.dataSource(def.name)) continue;
				if (await this.store.createDataSource(defaultDataSource(def))) out.push(def.name);
			}
			for (const def of DEFAULT_VIRTUAL_NODES) {
				if (await this.store.virtualNode(def.Uuid)) continue;
				const node = defaultVirtualNode(def);
				if (await this.store.createVirtualNode({ Uuid: def.Uuid, Path: node.Path ?? def.Uuid, MetaStore: node.MetaStore ?? {} })) out.push(def.Uuid);
			}
			return out;
		});
		for (const c of created) await this.changed(DEFAULT_VIRTUAL_NODES.some((v) => v.Uuid === c) ? { virtualNode: c } : { name: c });
		return created;
	}

	/** LOCAL: the folder is allowed, does not overlap another datasource, exists and is writable. S3: HeadBucket. */
	private async checkStorage(ds: DataSource, others: DataSource[]): Promise<void> {
		if (ds.StorageType === "S3") return checkBucketReachable(ds);
		checkLocalDataSource(ds, others, this.deps.dataDir(), !!this.deps.remoteHolder?.(ds));
	}

	private async parsedVirtualNodes(): Promise<Parsed> {
		if (!this.vnCache) {
			const load = (async () => {
				const out: Parsed = new Map();
				for (const node of await this.store.virtualNodes()) {
					try {
						out.set(node.Uuid, { node, parsed: parseResolution(resolutionOf(node) ?? "") });
					} catch (err) {
						this.deps.warn(`Virtual node ${node.Uuid} has an unusable resolution script: ${(err as Error).message}`);
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
	}

	private serialized<T>(fn: () => Promise<T>): Promise<T> {
		const run = this.writeQueue.then(fn, fn);
		this.writeQueue = run.catch(() => undefined);
		return run;
	}

	private async changed(payload: { name: string } | { virtualNode: string }): Promise<void> {
		this.vnCache = undefined;
		await this.deps.changed(payload);
	}
}
