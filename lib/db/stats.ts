// Counts over the whole store for the license/usage page (GET /license/stats): read-only aggregate queries, one
// statement each, across tables other repositories own. Nothing here writes.
import type { Db } from "./index";

export interface StoreStats {
	users: number;
	groups: number;
	/** Workspaces an admin created (scope ADMIN). */
	workspaces: number;
	/** Cells (shared rooms, scope ROOM). */
	cells: number;
	files: number;
	folders: number;
	/** Bytes of the current files, in every datasource. */
	filesBytes: number;
	/** Bytes kept as versions of files. */
	versionsBytes: number;
}

export class StatsRepo {
	constructor(private readonly db: Db) {}

	async collect(): Promise<StoreStats> {
		const k = this.db.kysely;
		const [people, spaces, nodes, versions] = await Promise.all([
			k.selectFrom("users").select(["is_group", (eb) => eb.fn.countAll<string | number>().as("n")]).groupBy("is_group").execute(),
			k.selectFrom("workspaces").select(["scope", (eb) => eb.fn.countAll<string | number>().as("n")]).groupBy("scope").execute(),
			k
				.selectFrom("nodes")
				.where("parent", "is not", null)
				.select(["type", (eb) => eb.fn.countAll<string | number>().as("n"), (eb) => eb.fn.sum<string | number | null>("size").as("bytes")])
				.groupBy("type")
				.execute(),
			k.selectFrom("versions").select((eb) => eb.fn.sum<string | number | null>("size").as("bytes")).executeTakeFirst(),
		]);
		const count = <T extends { n: string | number }>(rows: T[], pick: (r: T) => boolean) => rows.filter(pick).reduce((a, r) => a + Number(r.n), 0);
		const leaf = nodes.find((r) => r.type === "LEAF");
		return {
			users: count(people, (r) => Number(r.is_group) === 0),
			groups: count(people, (r) => Number(r.is_group) === 1),
			workspaces: count(spaces, (r) => r.scope === "ADMIN"),
			cells: count(spaces, (r) => r.scope === "ROOM"),
			files: Number(leaf?.n ?? 0),
			folders: count(nodes, (r) => r.type === "COLLECTION"),
			filesBytes: Number(leaf?.bytes ?? 0),
			versionsBytes: Number(versions?.bytes ?? 0),
		};
	}
}
