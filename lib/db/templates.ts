// Admin-managed templates: node templates with their copied bytes (one transaction writes a template and all its
// entries, so a template is whole or absent; deleting it cascades to its entries) and metadata templates (unique
// label by index: two admins racing to create the same name end with one).
import type { Selectable } from "kysely";
import type { Db } from "./index";
import type { MetaTemplatesTable, NodeTemplatesTable } from "./schema";
import { fromJson } from "./sql";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { MetaTemplate, NodeTemplate, NodeTemplateEntry } from "../templates/model";

function toNodeTemplate(r: Selectable<NodeTemplatesTable>): NodeTemplate {
	return { uuid: r.uuid, label: r.label, type: r.type, name: r.name, size: Number(r.size), policies: fromJson<ResourcePolicy[]>(r.policies, []), createdBy: r.created_by, createdAt: Number(r.created_at) };
}

function toMetaTemplate(r: Selectable<MetaTemplatesTable>): MetaTemplate {
	return { Uuid: r.uuid, Label: r.label, Namespace: r.namespace, Meta: r.meta, Policies: fromJson<ResourcePolicy[]>(r.policies, []) };
}

export class TemplatesRepo {
	constructor(private readonly db: Db) {}

	// ---- node templates ----

	async createNodeTemplate(t: NodeTemplate, entries: NodeTemplateEntry[]): Promise<NodeTemplate> {
		await this.db.transaction(async (trx) => {
			await trx
				.insertInto("node_templates")
				.values({ uuid: t.uuid, label: t.label, type: t.type, name: t.name, size: t.size, policies: JSON.stringify(t.policies), created_by: t.createdBy, created_at: t.createdAt })
				.execute();
			for (const e of entries) {
				await trx
					.insertInto("node_template_entries")
					.values({ template_uuid: t.uuid, path: e.path, type: e.type, size: e.size, etag: e.etag, data: e.type === "LEAF" ? (e.data ?? Buffer.alloc(0)) : null })
					.execute();
			}
		});
		return t;
	}

	async nodeTemplates(): Promise<NodeTemplate[]> {
		return (await this.db.kysely.selectFrom("node_templates").selectAll().orderBy("label").orderBy("uuid").execute()).map(toNodeTemplate);
	}

	async nodeTemplate(uuid: string): Promise<NodeTemplate | null> {
		const r = await this.db.kysely.selectFrom("node_templates").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? toNodeTemplate(r) : null;
	}

	/** The template's entries, parents before children; with their bytes when `withData`. */
	async nodeTemplateEntries(uuid: string, withData: boolean): Promise<NodeTemplateEntry[]> {
		const rows = await this.db.kysely
			.selectFrom("node_template_entries")
			.select(["path", "type", "size", "etag"])
			.$if(withData, (q) => q.select("data"))
			.where("template_uuid", "=", uuid)
			.orderBy("path")
			.execute();
		return rows.map((r) => {
			const data = (r as { data?: Buffer | Uint8Array | null }).data;
			return { path: r.path, type: r.type, size: Number(r.size), etag: r.etag, ...(data ? { data: Buffer.from(data) } : {}) };
		});
	}

	/** Whether it existed. */
	async deleteNodeTemplate(uuid: string): Promise<boolean> {
		return this.db.transaction(async (trx) => {
			// Explicitly too: SQLite only cascades with foreign_keys on, which a foreign handle may not set.
			await trx.deleteFrom("node_template_entries").where("template_uuid", "=", uuid).execute();
			const r = await trx.deleteFrom("node_templates").where("uuid", "=", uuid).executeTakeFirst();
			return Number(r.numDeletedRows) > 0;
		});
	}

	// ---- metadata templates ----

	async metaTemplates(namespace?: string): Promise<MetaTemplate[]> {
		return (
			await this.db.kysely
				.selectFrom("meta_templates")
				.selectAll()
				.$if(!!namespace, (q) => q.where("namespace", "=", namespace ?? ""))
				.orderBy("label")
				.execute()
		).map(toMetaTemplate);
	}

	async metaTemplate(uuid: string): Promise<MetaTemplate | null> {
		const r = await this.db.kysely.selectFrom("meta_templates").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return r ? toMetaTemplate(r) : null;
	}

	/** Creates or replaces the template of that uuid (a label used by another one is a ConflictError). */
	async putMetaTemplate(t: MetaTemplate, now: number): Promise<MetaTemplate> {
		const fields = { label: t.Label, namespace: t.Namespace, meta: t.Meta, policies: JSON.stringify(t.Policies), updated_at: now };
		const r = await this.db.kysely
			.insertInto("meta_templates")
			.values({ uuid: t.Uuid, ...fields })
			.onConflict((oc) => oc.column("uuid").doUpdateSet(fields))
			.returningAll()
			.executeTakeFirstOrThrow();
		return toMetaTemplate(r);
	}

	async deleteMetaTemplate(uuid: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("meta_templates").where("uuid", "=", uuid).executeTakeFirst();
		return Number(r.numDeletedRows) > 0;
	}
}
