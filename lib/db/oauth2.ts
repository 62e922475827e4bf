// OAuth2 clients and connectors. A client's secret hash is read only by `client()` (the one place that may need
// to check it); `clients()` never selects it. Connectors keep their position: a new one goes last, a replaced
// one keeps its place, replacing the collection writes the given order in one transaction.
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { OAuth2ConnectorsTable } from "./schema";
import { fromJson } from "./sql";
import type { OAuth2Client, OAuth2Connector, StoredClient } from "../oauth2/model";

function toConnector(r: Pick<Selectable<OAuth2ConnectorsTable>, "id" | "type" | "config">): OAuth2Connector {
	return { ...fromJson<Omit<OAuth2Connector, "id" | "type">>(r.config, {}), id: r.id, type: r.type };
}

function connectorConfig(c: OAuth2Connector): string {
	const { id: _id, type: _type, ...rest } = c;
	return JSON.stringify(rest);
}

function clientConfig(c: OAuth2Client): string {
	const { client_id: _id, ...rest } = c;
	return JSON.stringify(rest);
}

export class OAuth2Repo {
	constructor(private readonly db: Db) {}

	// ---- clients ----

	/** Every registered client, by id, without secrets. */
	async clients(): Promise<StoredClient[]> {
		const rows = await this.db.kysely.selectFrom("oauth2_clients").select(["client_id", "config"]).orderBy("client_id").execute();
		return rows.map((r) => ({ client: { client_id: r.client_id, ...fromJson<Omit<OAuth2Client, "client_id">>(r.config, {}) } }));
	}

	async client(id: string): Promise<StoredClient | null> {
		const r = await this.db.kysely.selectFrom("oauth2_clients").selectAll().where("client_id", "=", id).executeTakeFirst();
		if (!r) return null;
		return { client: { client_id: r.client_id, ...fromJson<Omit<OAuth2Client, "client_id">>(r.config, {}) }, ...(r.secret_hash ? { secretHash: r.secret_hash } : {}) };
	}

	async putClient(c: StoredClient, now: number): Promise<void> {
		const fields = { config: clientConfig(c.client), secret_hash: c.secretHash ?? null, updated_at: now };
		await this.db.kysely
			.insertInto("oauth2_clients")
			.values({ client_id: c.client.client_id, ...fields })
			.onConflict((oc) => oc.column("client_id").doUpdateSet(fields))
			.execute();
	}

	async deleteClient(id: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("oauth2_clients").where("client_id", "=", id).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}

	// ---- connectors ----

	async connectors(): Promise<OAuth2Connector[]> {
		const rows = await this.db.kysely.selectFrom("oauth2_connectors").select(["id", "type", "config"]).orderBy("position").orderBy("id").execute();
		return rows.map(toConnector);
	}

	async connector(id: string): Promise<OAuth2Connector | null> {
		const r = await this.db.kysely.selectFrom("oauth2_connectors").select(["id", "type", "config"]).where("id", "=", id).executeTakeFirst();
		return r ? toConnector(r) : null;
	}

	/** Creates (last in order) or replaces (in its place) one connector. */
	async putConnector(c: OAuth2Connector, now: number): Promise<void> {
		await this.db.transaction(async (trx) => {
			const last = await trx.selectFrom("oauth2_connectors").select((eb) => eb.fn.max<number | null>("position").as("p")).executeTakeFirst();
			const fields = { type: c.type, config: connectorConfig(c), updated_at: now };
			await trx
				.insertInto("oauth2_connectors")
				.values({ id: c.id, position: Number(last?.p ?? -1) + 1, ...fields })
				.onConflict((oc) => oc.column("id").doUpdateSet(fields))
				.execute();
		});
	}

	/** The whole collection becomes `list`, in its order. */
	async replaceConnectors(list: OAuth2Connector[], now: number): Promise<void> {
		await this.db.transaction(async (trx) => {
			await trx.deleteFrom("oauth2_connectors").execute();
			for (const [position, c] of list.entries()) {
				await trx.insertInto("oauth2_connectors").values({ id: c.id, position, type: c.type, config: connectorConfig(c), updated_at: now }).execute();
			}
		});
	}

	async deleteConnector(id: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("oauth2_connectors").where("id", "=", id).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}
}
