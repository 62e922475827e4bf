// Roles (idm.Role): one row each, the id unique by the primary key. A role that is created (a team by its id, a
// user's personal role by the user's uuid) is an insert: of two nodes creating the same id, one gets ConflictError.
// `ensure` is the idempotent form the defaults and the personal roles need: insert unless present, one statement.
import type { Insertable, Selectable, Transaction } from "kysely";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { Role } from "../identity/roles";
import type { Db } from "./index";
import type { Database, RolesTable } from "./schema";
import type { NedbDoc } from "./nedb-import";
import { flag, fromJson } from "./sql";

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

type Row = Selectable<RolesTable>;

function toRole(r: Row): Role {
	const role: Role = { Uuid: r.uuid, Label: r.label };
	// Flags that are off are absent, as Cells' JSON leaves out false values.
	if (r.is_team) role.IsTeam = true;
	if (r.group_role) role.GroupRole = true;
	if (r.user_role) role.UserRole = true;
	const auto = fromJson<string[]>(r.auto_applies, []);
	if (auto.length) role.AutoApplies = auto;
	if (r.force_override) role.ForceOverride = true;
	role.Policies = fromJson<ResourcePolicy[]>(r.policies, []);
	role.LastUpdated = Number(r.last_updated);
	return role;
}

function toRow(r: Role): Insertable<RolesTable> {
	return {
		uuid: r.Uuid,
		label: r.Label,
		is_team: flag(r.IsTeam),
		group_role: flag(r.GroupRole),
		user_role: flag(r.UserRole),
		auto_applies: JSON.stringify(r.AutoApplies ?? []),
		force_override: flag(r.ForceOverride),
		policies: JSON.stringify(r.Policies ?? []),
		policies_context_editable: 0,
		last_updated: r.LastUpdated ?? 0,
	};
}

export class RolesRepo {
	constructor(private readonly db: Db) {}

	/** Every role, by id. Roles are few (teams, groups, users): the roles service keeps this list cached. */
	async all(): Promise<Role[]> {
		return (await this.db.kysely.selectFrom("roles").selectAll().orderBy("uuid").execute()).map(toRole);
	}

	async byId(uuid: string): Promise<Role | null> {
		const row = await this.db.kysely.selectFrom("roles").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return row ? toRole(row) : null;
	}

	/** Adds a role; ConflictError (role.exists) when its id is taken. */
	async create(role: Role): Promise<Role> {
		return toRole(await this.db.kysely.insertInto("roles").values(toRow(role)).returningAll().executeTakeFirstOrThrow());
	}

	/** Adds the role unless one with its id exists; the stored role either way, and whether this call created it. */
	async ensure(role: Role): Promise<{ role: Role; created: boolean }> {
		const row = await this.db.kysely
			.insertInto("roles")
			.values(toRow(role))
			.onConflict((oc) => oc.column("uuid").doNothing())
			.returningAll()
			.executeTakeFirst();
		if (row) return { role: toRole(row), created: true };
		const stored = await this.byId(role.Uuid);
		// Deleted between the two statements: nothing to hand back but what was asked for, which is not stored.
		if (!stored) return this.ensure(role);
		return { role: stored, created: false };
	}

	/** Writes every field of `role` over the stored role of the same id; null when there is none. */
	async update(role: Role): Promise<Role | null> {
		const { uuid, ...fields } = toRow(role);
		const row = await this.db.kysely.updateTable("roles").set(fields).where("uuid", "=", uuid).returningAll().executeTakeFirst();
		return row ? toRole(row) : null;
	}

	/** How many of these roles existed. */
	async delete(uuids: readonly string[]): Promise<number> {
		if (!uuids.length) return 0;
		const r = await this.db.kysely.deleteFrom("roles").where("uuid", "in", [...uuids]).executeTakeFirst();
		return Number(r.numDeletedRows);
	}
}

/** A role document of the NeDB versions (the Role itself, `_id` = Uuid). */
export function roleFromNedb(d: NedbDoc): Role {
	const uuid = str(d.Uuid) ?? d._id;
	return {
		Uuid: uuid,
		Label: str(d.Label) ?? uuid,
		IsTeam: d.IsTeam === true,
		GroupRole: d.GroupRole === true,
		UserRole: d.UserRole === true,
		AutoApplies: strings(d.AutoApplies),
		ForceOverride: d.ForceOverride === true,
		Policies: Array.isArray(d.Policies) ? (d.Policies as ResourcePolicy[]) : [],
		LastUpdated: typeof d.LastUpdated === "number" ? d.LastUpdated : 0,
	};
}

/** The roles collection of an NeDB DATA_DIR, written in the import's transaction (importNedbOnce). */
export async function importNedbRoles(trx: Transaction<Database>, docs: NedbDoc[]): Promise<void> {
	for (const d of docs) await trx.insertInto("roles").values(toRow(roleFromNedb(d))).onConflict((oc) => oc.column("uuid").doNothing()).execute();
}
