// The scheduler's templates (Cells enterprise, /a/scheduler/templates): job, action and selector templates kept
// as Cells' JSON (a jobsJob, an entActionTemplate, an entSelectorTemplate), one table keyed by kind and name so a
// name is unique within its kind by constraint and a PUT replaces the row in one statement.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function schedulerTemplates(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("scheduler_templates")
				.addColumn("kind", "text", (c) => c.notNull())
				.addColumn("name", key, (c) => c.notNull())
				.addColumn("body", "text", (c) => c.notNull())
				.addColumn("updated_by", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("updated_at", "bigint", (c) => c.notNull())
				.addPrimaryKeyConstraint("scheduler_templates_pk", ["kind", "name"])
				.addCheckConstraint("scheduler_templates_kind_check", sql`kind in ('job', 'action', 'selector')`)
				.execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.dropTable("scheduler_templates").ifExists().execute();
		},
	};
}
