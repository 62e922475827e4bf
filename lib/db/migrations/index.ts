// The migrations, in code: a provider instead of Kysely's folder scan, so that the compiled build, tsx and the
// tests all see the same list without reading the file system. Names sort in the order they apply; a released
// migration is never edited, only followed by a new one.
import type { Migration, MigrationProvider } from "kysely";
import type { DialectName } from "../sql";
import { initial } from "./0001-initial";
import { userMeta } from "./0004-user-meta";
import { configTree } from "./0010-config";

export function migrations(dialect: DialectName): Record<string, Migration> {
	return {
		"0001-initial": initial(dialect),
		"0004-user-meta": userMeta(dialect),
		"0010-config": configTree(dialect),
	};
}

export function migrationProvider(dialect: DialectName): MigrationProvider {
	return { getMigrations: async () => migrations(dialect) };
}
