// The shared backend for clusters: PostgreSQL from DATABASE_URL (postgres://user:pass@host:5432/db), through a
// pg Pool. Every node of a cluster points at the same database; each query outside a transaction takes any free
// connection of the pool, a transaction keeps one until it ends.
import { Pool, types as pgTypes } from "pg";
import { PostgresDialect, type Dialect } from "kysely";

export interface PostgresSettings {
	/** Connections this process may open. */
	poolSize?: number;
	/** Called when an idle connection fails (the server restarted, the network dropped): the pool replaces it. */
	onIdleError?: (err: Error) => void;
}

const INT8 = 20;
const int8 = (v: string): number => Number(v);

/**
 * A pool whose bigint columns (sizes, times) and counts come back as numbers, as SQLite gives them, instead of pg's
 * default strings. Exact up to 2^53: byte counts and millisecond times stay far below. Set on this pool only: the
 * global parsers of pg are left as they are for any other user of the module.
 */
export function openPool(url: string, s: PostgresSettings = {}): Pool {
	const pool = new Pool({
		connectionString: url,
		max: s.poolSize ?? 10,
		application_name: "cellar",
		types: {
			getTypeParser: ((oid: number, format?: "text" | "binary") => (oid === INT8 && format !== "binary" ? int8 : pgTypes.getTypeParser(oid, format ?? "text"))) as typeof pgTypes.getTypeParser,
		},
	});
	// Without a listener, an idle connection's error would be thrown as an uncaught 'error' event.
	pool.on("error", (err) => s.onIdleError?.(err));
	return pool;
}

export function postgresDialect(pool: Pool): Dialect {
	return new PostgresDialect({ pool });
}
