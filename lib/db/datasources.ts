// Datasources (object.DataSource, kept whole as JSON: nothing queries inside a configuration) and virtual nodes
// (tree roots computed per user by a resolution script). A name or uuid is a primary key: of two nodes creating the
// same default datasource at start-up, the second finds it there (`createIfAbsent` is false), never a duplicate.
// A holder is claimed with one conditional UPDATE on the configuration read (compare-and-set on its text): of two
// nodes claiming at once, the second's condition no longer holds, and it reads the first one's holder.
import type { Selectable, Transaction } from "kysely";
import type { DataSource } from "../datasources/model";
import type { DataSourceStore, VirtualNode } from "../datasources/registry";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, DatasourcesTable, VirtualNodesTable } from "./schema";
import { fromJson, orNull } from "./sql";
import { ConflictError } from "../errors";

export type VirtualNodeRecord = VirtualNode;

function dataSourceOf(r: Selectable<DatasourcesTable>): DataSource {
	return { ...fromJson<Partial<DataSource>>(r.config, {}), Name: r.name };
}

function dataSourceRow(ds: DataSource): Selectable<DatasourcesTable> {
	// Documents of the NeDB store carried their store keys: they are not configuration.
	const { _id, kind, ...config } = ds as DataSource & { _id?: unknown; kind?: unknown };
	return { name: ds.Name, config: JSON.stringify(config) };
}

function virtualNodeOf(r: Selectable<VirtualNodesTable>): VirtualNodeRecord {
	const vn: VirtualNodeRecord = { Uuid: r.uuid, Path: r.path, MetaStore: fromJson<Record<string, string>>(r.meta, {}) };
	if (r.mtime !== null) vn.MTime = Number(r.mtime);
	return vn;
}

function virtualNodeRow(vn: VirtualNodeRecord): Selectable<VirtualNodesTable> {
	return { uuid: vn.Uuid, path: vn.Path, meta: JSON.stringify(vn.MetaStore ?? {}), mtime: orNull(vn.MTime) };
}

export class DataSourcesRepo implements DataSourceStore {
	constructor(private readonly db: Db) {}

	async dataSource(name: string): Promise<DataSource | null> {
		const r = await this.db.kysely.selectFrom("datasources").selectAll().where("name", "=", name).executeTakeFirst();
		return r ? dataSourceOf(r) : null;
	}

	/** By name. */
	async dataSources(): Promise<DataSource[]> {
		return (await this.db.kysely.selectFrom("datasources").selectAll().orderBy("name").execute()).map(dataSourceOf);
	}

	/** Creates or replaces the datasource of this name. */
	async putDataSource(ds: DataSource): Promise<void> {
		const row = dataSourceRow(ds);
		await this.db.kysely
			.insertInto("datasources")
			.values(row)
			.onConflict((oc) => oc.column("name").doUpdateSet({ config: row.config }))
			.execute();
	}

	/** Creates it unless a datasource of this name exists; whether it was created. */
	async createDataSource(ds: DataSource): Promise<boolean> {
		const r = await this.db.kysely
			.insertInto("datasources")
			.values(dataSourceRow(ds))
			.onConflict((oc) => oc.column("name").doNothing())
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
	}

	/**
	 * Records `node` as the holder (PeerAddress) of the LOCAL datasource `name` unless it has one; the datasource as
	 * stored afterwards and whether this call recorded it, or null when there is no such datasource.
	 */
	async claimHolder(name: string, node: string): Promise<{ dataSource: DataSource; claimed: boolean } | null> {
		// Each failed condition means another writer changed the row in between: read it again.
		for (let attempt = 0; attempt < 5; attempt++) {
			const r = await this.db.kysely.selectFrom("datasources").selectAll().where("name", "=", name).executeTakeFirst();
			if (!r) return null;
			const ds = dataSourceOf(r);
			if ((ds.StorageType ?? "LOCAL") !== "LOCAL" || ds.PeerAddress) return { dataSource: ds, claimed: false };
			const held: DataSource = { ...ds, PeerAddress: node };
			const u = await this.db.kysely.updateTable("datasources").set({ config: dataSourceRow(held).config }).where("name", "=", name).where("config", "=", r.config).executeTakeFirst();
			if (u.numUpdatedRows > 0n) return { dataSource: held, claimed: true };
		}
		throw new ConflictError(`Datasource ${name} kept changing while its holder was being recorded: retry`, "datasource.busy");
	}

	async deleteDataSource(name: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("datasources").where("name", "=", name).executeTakeFirst()).numDeletedRows > 0n;
	}

	async virtualNode(uuid: string): Promise<VirtualNodeRecord | null> {
		const r = await this.db.kysely.selectFrom("virtual_nodes").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? virtualNodeOf(r) : null;
	}

	/** By uuid. */
	async virtualNodes(): Promise<VirtualNodeRecord[]> {
		return (await this.db.kysely.selectFrom("virtual_nodes").selectAll().orderBy("uuid").execute()).map(virtualNodeOf);
	}

	async putVirtualNode(vn: VirtualNodeRecord): Promise<void> {
		const { uuid, ...fields } = virtualNodeRow(vn);
		await this.db.kysely
			.insertInto("virtual_nodes")
			.values({ uuid, ...fields })
			.onConflict((oc) => oc.column("uuid").doUpdateSet(fields))
			.execute();
	}

	/** Creates it unless a virtual node of this uuid exists; whether it was created. */
	async createVirtualNode(vn: VirtualNodeRecord): Promise<boolean> {
		const r = await this.db.kysely
			.insertInto("virtual_nodes")
			.values(virtualNodeRow(vn))
			.onConflict((oc) => oc.column("uuid").doNothing())
			.executeTakeFirst();
		return Number(r.numInsertedOrUpdatedRows ?? 0n) === 1;
	}

	async deleteVirtualNode(uuid: string): Promise<boolean> {
		return (await this.db.kysely.deleteFrom("virtual_nodes").where("uuid", "=", uuid).executeTakeFirst()).numDeletedRows > 0n;
	}

	/**
	 * The NeDB `datasources` collection (datasources `ds:<name>` and virtual nodes `vn:<uuid>` in one, told apart by
	 * `kind`), inside the import's transaction.
	 */
	static async importNedb(trx: Transaction<Database>, docs: NedbDoc[]): Promise<{ dataSources: number; virtualNodes: number }> {
		let dataSources = 0;
		let virtualNodes = 0;
		for (const d of docs) {
			if (d.kind === "datasource" && typeof d.Name === "string") {
				await trx.insertInto("datasources").values(dataSourceRow(d as unknown as DataSource)).execute();
				dataSources++;
			} else if (d.kind === "virtualnode" && typeof d.Uuid === "string") {
				const meta = d.MetaStore && typeof d.MetaStore === "object" ? (d.MetaStore as Record<string, string>) : {};
				const vn: VirtualNodeRecord = { Uuid: d.Uuid, Path: typeof d.Path === "string" ? d.Path : d.Uuid, MetaStore: meta };
				if (typeof d.MTime === "number") vn.MTime = d.MTime;
				await trx.insertInto("virtual_nodes").values(virtualNodeRow(vn)).execute();
				virtualNodes++;
			}
		}
		return { dataSources, virtualNodes };
	}
}
