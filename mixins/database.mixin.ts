// The SQL store for a service (lib/db): SQLite in DATA_DIR/cellar.db by default, PostgreSQL when DATABASE_URL is
// set. The handle is opened before the service's own `started` runs (mixins start first) and shared by the
// services of the node (lib/db/shared); it is reachable as `this.db`. Services build their repositories on it.
import type { ServiceSchema } from "moleculer";
import { loadConfig } from "../lib/config";
import { acquireDatabase, type SharedDb } from "../lib/db/shared";
import type { Db } from "../lib/db";

export interface DatabaseVars {
	db: Db;
	dbHandle?: SharedDb;
}

const schema: ServiceSchema<Record<string, never>, Record<string, never>, DatabaseVars> = {
	name: "database-mixin",
	async started(this: DatabaseVars) {
		const cfg = loadConfig();
		this.dbHandle = await acquireDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir });
		this.db = this.dbHandle.db;
	},
	async stopped(this: DatabaseVars) {
		await this.dbHandle?.release();
		this.dbHandle = undefined;
	},
};

// As any service's partial schema: a mixin typed with its own settings and vars is not assignable to the `mixins`
// of a service that has others.
export const DatabaseMixin = schema as unknown as Partial<ServiceSchema>;
