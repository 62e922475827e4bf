// External (LDAP) directory configurations, one JSON document per ConfigId (lib/directories/model).
import type { Db } from "./index";
import { fromJson } from "./sql";
import type { DirectoryConfig } from "../directories/model";

export class DirectoriesRepo {
	constructor(private readonly db: Db) {}

	/** Every directory, by ConfigId: the order logins try them in. */
	async all(): Promise<DirectoryConfig[]> {
		const rows = await this.db.kysely.selectFrom("directories").select(["config_id", "config"]).orderBy("config_id").execute();
		return rows.map((r) => ({ ...fromJson<DirectoryConfig>(r.config, {}), ConfigId: r.config_id }));
	}

	async get(configId: string): Promise<DirectoryConfig | null> {
		const r = await this.db.kysely.selectFrom("directories").select("config").where("config_id", "=", configId).executeTakeFirst();
		return r ? { ...fromJson<DirectoryConfig>(r.config, {}), ConfigId: configId } : null;
	}

	/** Creates or replaces. */
	async put(config: DirectoryConfig & { ConfigId: string }, now: number): Promise<void> {
		const fields = { config: JSON.stringify(config), updated_at: now };
		await this.db.kysely
			.insertInto("directories")
			.values({ config_id: config.ConfigId, ...fields })
			.onConflict((oc) => oc.column("config_id").doUpdateSet(fields))
			.execute();
	}

	/** Whether it existed. */
	async delete(configId: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("directories").where("config_id", "=", configId).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}
}
