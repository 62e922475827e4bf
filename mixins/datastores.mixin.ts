// Opening a datasource's storage: the datasource's configuration (`datasources.get`), its encryption key if it
// has one, and the store itself, cached per datasource until `datasources.changed` or `encryption.changed`.
// Every service that moves bytes (the /io gateway, tree, jobs, versions, search) opens stores through this.
// A LOCAL datasource whose folder another node holds (PeerAddress, lib/peers/holder) is opened as a
// PeerObjectStore: direct HTTP to that node's gateway, at the address it announces in its node metadata. One
// that has no holder yet in a cluster is claimed first when this node runs `api` (lib/peers/holder).
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { loadConfig } from "../lib/config";
import { openDataStore, openStore, type ObjectStore } from "../lib/storage";
import { PeerObjectStore } from "../lib/peers/client";
import { PEER_SECRET_LABEL, remoteHolder, withHolder, type HolderClaim } from "../lib/peers/holder";
import { derivedKey } from "../lib/auth/jwt";
import { KeyMaterialCache } from "../lib/encryption/material";
import { call } from "../lib/contracts";

export type DataSourceConfig = Parameters<typeof openDataStore>[0] & { Name: string; FlatStorage?: boolean; PeerAddress?: string };

/** The internal gateway address a node announces (`peerUrl` in its metadata), while it is in the cluster. */
export function peerUrlOf(broker: ServiceBroker, nodeId: string): string | undefined {
	const node = (broker.registry as unknown as { nodes: { get(id: string): { available?: boolean; metadata?: { peerUrl?: unknown } } | undefined } }).nodes.get(nodeId);
	const url = node?.available ? node.metadata?.peerUrl : undefined;
	return typeof url === "string" ? url : undefined;
}

/** How this node claims the holder of a LOCAL datasource that has none (lib/peers/holder's withHolder). */
export function holderClaim(broker: ServiceBroker): HolderClaim<DataSourceConfig> {
	return {
		clustered: !!loadConfig().transporter,
		canHold: !!broker.getLocalService("api"),
		claim: (name) => call(broker, "datasources.claimHolder", { name, node: broker.nodeID }),
	};
}

export interface DataStoreHandle {
	name: string;
	config: DataSourceConfig;
	store: ObjectStore;
	flat: boolean;
}

/** The mixin's methods, for the `Methods` of a service that uses it. */
export interface DataStoresMethods {
	dataStore(name: string): Promise<DataStoreHandle>;
	forgetDataStore(name: string): void;
}

interface This {
	broker: ServiceBroker;
	$dataStores: Map<string, Promise<DataStoreHandle>>;
	$keys: KeyMaterialCache;
}

export const DataStoresMixin = {
	events: {
		"datasources.changed"(this: This) {
			this.$dataStores.clear();
		},
		"encryption.changed"(this: This) {
			this.$keys.clear();
			this.$dataStores.clear();
		},
	},
	methods: {
		dataStore(this: This, name: string): Promise<DataStoreHandle> {
			let h = this.$dataStores.get(name);
			if (!h) {
				const claim = holderClaim(this.broker);
				h = call(this.broker, "datasources.get", { name }).then(async (stored: DataSourceConfig) => {
					const config = await withHolder(stored, claim);
					return {
						name,
						config,
						flat: config.FlatStorage !== false,
						store: await openDataStore(config, loadConfig().dataDir, this.$keys.resolver, (ds, dataDir) => {
							const holder = remoteHolder(config, this.broker.nodeID, claim.clustered);
							if (!holder) return openStore(ds, dataDir);
							return new PeerObjectStore({ datasource: name, holder, baseUrl: () => peerUrlOf(this.broker, holder), secret: () => derivedKey(PEER_SECRET_LABEL) });
						}),
					};
				});
				h.catch(() => this.$dataStores.delete(name));
				this.$dataStores.set(name, h);
			}
			return h;
		},
		forgetDataStore(this: This, name: string): void {
			this.$dataStores.delete(name);
		},
	},
	created(this: This) {
		this.$dataStores = new Map();
		this.$keys = new KeyMaterialCache((id) => call(this.broker, "encryption.keyMaterial", { id }));
	},
} as unknown as Partial<ServiceSchema>;
