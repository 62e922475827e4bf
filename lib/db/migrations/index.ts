// The migrations, in code: a provider instead of Kysely's folder scan, so that the compiled build, tsx and the
// tests all see the same list without reading the file system. Names sort in the order they apply; a released
// migration is never edited, only followed by a new one.
import type { Migration, MigrationProvider } from "kysely";
import type { DialectName } from "../sql";
import { initial } from "./0001-initial";
import { search } from "./0002-search";
import { shares } from "./0003-shares";
import { userMeta } from "./0004-user-meta";
import { mail } from "./0005-mail";
import { activity } from "./0006-activity";
import { frontend } from "./0008-frontend";
import { logs } from "./0011-logs";
import { configTree } from "./0010-config";
import { templates } from "./0012-templates";
import { dropShareLinksOwner } from "./0017-share-links-owner";
import { oauth2 } from "./0023-oauth2";
import { schedulerTemplates } from "./0021-scheduler-templates";
import { scheduler } from "./0020-scheduler";
import { directories } from "./0022-directories";

export function migrations(dialect: DialectName): Record<string, Migration> {
	const all: Record<string, Migration> = {
		"0001-initial": initial(dialect),
		"0002-search": search(dialect),
		"0003-shares": shares(dialect),
		"0004-user-meta": userMeta(dialect),
		"0005-mail": mail(dialect),
		"0006-activity": activity(dialect),
		"0008-frontend": frontend(dialect),
		"0011-logs": logs(dialect),
		"0010-config": configTree(dialect),
		"0012-templates": templates(dialect),
		"0017-share-links-owner": dropShareLinksOwner(),
		"0023-oauth2": oauth2(dialect),
		"0021-scheduler-templates": schedulerTemplates(dialect),
		"0020-scheduler": scheduler(dialect),
		"0022-directories": directories(),
	};
	// In name order whatever the order above (Kysely applies them by name; callers list them as Kysely does).
	return Object.fromEntries(Object.entries(all).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function migrationProvider(dialect: DialectName): MigrationProvider {
	return { getMigrations: async () => migrations(dialect) };
}
