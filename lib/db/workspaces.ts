// Workspaces (idm.Workspace records; their roots and rights are ACLs). A slug names one workspace: the unique
// index on it decides between two creates of the same slug, on one node or several, and the loser gets
// ConflictError (workspace.exists) from `create`, never a second workspace with that slug.
import type { Insertable, Selectable, Transaction } from "kysely";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { WorkspaceDoc } from "../workspaces/model";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, WorkspacesTable } from "./schema";
import { fromJson, prefixEnd } from "./sql";

type Row = Selectable<WorkspacesTable>;

function toDoc(r: Row): WorkspaceDoc {
	return {
		UUID: r.uuid,
		Slug: r.slug,
		Label: r.label,
		Description: r.description,
		Scope: r.scope as WorkspaceDoc["Scope"],
		LastUpdated: Number(r.last_updated),
		Policies: fromJson<ResourcePolicy[]>(r.policies, []),
		Attributes: r.attributes,
	};
}

function toRow(w: WorkspaceDoc): Insertable<WorkspacesTable> {
	return {
		uuid: w.UUID,
		slug: w.Slug,
		label: w.Label,
		description: w.Description,
		scope: w.Scope,
		last_updated: w.LastUpdated,
		policies: JSON.stringify(w.Policies ?? []),
		policies_context_editable: 0,
		attributes: w.Attributes || "{}",
	};
}

export class WorkspacesRepo {
	constructor(private readonly db: Db) {}

	async all(): Promise<WorkspaceDoc[]> {
		return (await this.db.kysely.selectFrom("workspaces").selectAll().orderBy("uuid").execute()).map(toDoc);
	}

	async byIds(uuids: readonly string[]): Promise<WorkspaceDoc[]> {
		if (!uuids.length) return [];
		return (await this.db.kysely.selectFrom("workspaces").selectAll().where("uuid", "in", [...uuids]).orderBy("uuid").execute()).map(toDoc);
	}

	async byId(uuid: string): Promise<WorkspaceDoc | null> {
		const row = await this.db.kysely.selectFrom("workspaces").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return row ? toDoc(row) : null;
	}

	async bySlug(slug: string): Promise<WorkspaceDoc | null> {
		const row = await this.db.kysely.selectFrom("workspaces").selectAll().where("slug", "=", slug).executeTakeFirst();
		return row ? toDoc(row) : null;
	}

	/** The slugs in use among `base` and its de-duplicated forms `base-1`, `base-2`… (a hint: the index decides). */
	async slugsLike(base: string): Promise<Set<string>> {
		const below = `${base}-`;
		const rows = await this.db.kysely
			.selectFrom("workspaces")
			.select("slug")
			.where((eb) => eb.or([eb("slug", "=", base), eb.and([eb("slug", ">=", below), eb("slug", "<", prefixEnd(below) as string)])]))
			.execute();
		const form = /^-\d+$/;
		return new Set(rows.map((r) => r.slug).filter((s) => s === base || form.test(s.slice(base.length))));
	}

	/** Adds a workspace; ConflictError (workspace.exists) when its slug or uuid is taken. */
	async create(w: WorkspaceDoc): Promise<WorkspaceDoc> {
		return toDoc(await this.db.kysely.insertInto("workspaces").values(toRow(w)).returningAll().executeTakeFirstOrThrow());
	}

	/** Writes every field over the workspace of the same uuid; null when there is none, ConflictError for a taken slug. */
	async update(w: WorkspaceDoc): Promise<WorkspaceDoc | null> {
		const { uuid, ...fields } = toRow(w);
		const row = await this.db.kysely.updateTable("workspaces").set(fields).where("uuid", "=", uuid).returningAll().executeTakeFirst();
		return row ? toDoc(row) : null;
	}

	async delete(uuid: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("workspaces").where("uuid", "=", uuid).executeTakeFirst();
		return r.numDeletedRows > 0n;
	}
}

const str = (v: unknown, fallback: string): string => (typeof v === "string" ? v : fallback);

/** A workspace document of the NeDB versions (`_id` = UUID). */
export function workspaceFromNedb(d: NedbDoc): WorkspaceDoc {
	const uuid = str(d.UUID, d._id);
	const scope = str(d.Scope, "ADMIN");
	return {
		UUID: uuid,
		Slug: str(d.Slug, uuid),
		Label: str(d.Label, str(d.Slug, uuid)),
		Description: str(d.Description, ""),
		Scope: (["ADMIN", "ROOM", "LINK"].includes(scope) ? scope : "ADMIN") as WorkspaceDoc["Scope"],
		LastUpdated: typeof d.LastUpdated === "number" ? d.LastUpdated : 0,
		Policies: Array.isArray(d.Policies) ? (d.Policies as ResourcePolicy[]) : [],
		Attributes: str(d.Attributes, "{}"),
	};
}

/** The workspaces collection of an NeDB DATA_DIR, written in the import's transaction (importNedbOnce). */
export async function importNedbWorkspaces(trx: Transaction<Database>, docs: NedbDoc[]): Promise<void> {
	for (const d of docs) await trx.insertInto("workspaces").values(toRow(workspaceFromNedb(d))).onConflict((oc) => oc.doNothing()).execute();
}
