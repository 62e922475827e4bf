// share_links_owner (0003) served no query: links are found by hash, by hidden user or by workspace, never by
// owner, so the index only cost every link's insert and update. Put back on the way down.
import type { Kysely, Migration } from "kysely";

export function dropShareLinksOwner(): Migration {
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropIndex("share_links_owner").ifExists().execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.createIndex("share_links_owner").ifNotExists().on("share_links").column("owner_uuid").execute();
		},
	};
}
