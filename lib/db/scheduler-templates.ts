// The scheduler's templates (lib/scheduler-templates): Cells JSON by kind and name. A put is one upsert on the
// (kind, name) key, so two admins writing the same name end with one row, the last write's.
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { SchedulerTemplatesTable } from "./schema";
import { fromJson } from "./sql";

export type SchedulerTemplateKind = SchedulerTemplatesTable["kind"];

export interface StoredSchedulerTemplate<T> {
	name: string;
	body: T;
	updatedBy: string;
	updatedAt: number;
}

function toStored<T>(r: Selectable<SchedulerTemplatesTable>): StoredSchedulerTemplate<T> | null {
	const body = fromJson<T | null>(r.body, null);
	return body === null ? null : { name: r.name, body, updatedBy: r.updated_by, updatedAt: Number(r.updated_at) };
}

export class SchedulerTemplatesRepo {
	constructor(private readonly db: Db) {}

	/** Creates or replaces the template of that kind and name. */
	async put<T>(kind: SchedulerTemplateKind, name: string, body: T, by: string, now: number): Promise<void> {
		const fields = { body: JSON.stringify(body), updated_by: by, updated_at: now };
		await this.db.kysely
			.insertInto("scheduler_templates")
			.values({ kind, name, ...fields })
			.onConflict((oc) => oc.columns(["kind", "name"]).doUpdateSet(fields))
			.execute();
	}

	/** The templates of a kind, by name. */
	async list<T>(kind: SchedulerTemplateKind): Promise<StoredSchedulerTemplate<T>[]> {
		const rows = await this.db.kysely.selectFrom("scheduler_templates").selectAll().where("kind", "=", kind).orderBy("name").execute();
		return rows.flatMap((r) => toStored<T>(r) ?? []);
	}

	async get<T>(kind: SchedulerTemplateKind, name: string): Promise<StoredSchedulerTemplate<T> | null> {
		const r = await this.db.kysely.selectFrom("scheduler_templates").selectAll().where("kind", "=", kind).where("name", "=", name).executeTakeFirst();
		return r ? toStored<T>(r) : null;
	}

	/** Whether it existed. */
	async delete(kind: SchedulerTemplateKind, name: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("scheduler_templates").where("kind", "=", kind).where("name", "=", name).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}
}
