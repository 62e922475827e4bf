// The enterprise scheduler (PUT /a/scheduler/jobs): admin-defined jobs, kept whole as their Cells JSON definition,
// and the previous definitions each PUT replaced (versions, restorable). `next_run` is the schedule's claim: the
// node whose conditional update moves it forward runs that occurrence, so a cluster runs each one once. A task
// started by an event or a hook carries its input (the node paths, the run parameters) in `tasks.input`.
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function scheduler(dialect: DialectName): Migration {
	const key = dialect === "postgres" ? sql`text collate "C"` : sql`text`;
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			await db.schema
				.createTable("scheduler_jobs")
				.addColumn("id", key, (c) => c.primaryKey())
				.addColumn("definition", "text", (c) => c.notNull())
				.addColumn("inactive", "integer", (c) => c.notNull().defaultTo(0))
				// Unix ms of the next scheduled run; null without a schedule (or once its repetitions are spent).
				.addColumn("next_run", "bigint")
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.addColumn("modified_at", "bigint", (c) => c.notNull())
				.execute();
			await db.schema.createIndex("scheduler_jobs_next_run").on("scheduler_jobs").column("next_run").execute();
			await db.schema
				.createTable("scheduler_job_versions")
				.addColumn("id", key, (c) => c.primaryKey())
				.addColumn("job_id", key, (c) => c.notNull())
				.addColumn("label", "text", (c) => c.notNull().defaultTo(""))
				.addColumn("definition", "text", (c) => c.notNull())
				// Unix ms: versions saved within a second keep their order.
				.addColumn("created_at", "bigint", (c) => c.notNull())
				.execute();
			await db.schema.createIndex("scheduler_job_versions_job").on("scheduler_job_versions").columns(["job_id", "created_at"]).execute();
			await db.schema.alterTable("tasks").addColumn("input", "text").execute();
		},
		async down(db: Kysely<unknown>): Promise<void> {
			await db.schema.alterTable("tasks").dropColumn("input").execute();
			await db.schema.dropTable("scheduler_job_versions").ifExists().execute();
			await db.schema.dropTable("scheduler_jobs").ifExists().execute();
		},
	};
}
