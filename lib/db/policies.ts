// Security policies: policy groups (the REST rules the gateway enforces, ACL and OIDC groups), named IP lists and
// the per-address login state behind IP bans. Groups and lists are keyed by their uuid / name (primary keys): a
// write is one upsert, a default group is seeded with an insert-or-nothing, so nodes starting together seed once.
import type { Insertable, Selectable, Transaction } from "kysely";
import type { PolicyGroup, ResourceGroup } from "../policy/defaults";
import type { Policy } from "../policy/engine";
import type { ConnectionAttempt, IpState } from "../policy/ipban";
import type { Db } from "./index";
import type { NedbDoc } from "./nedb-import";
import type { Database, IpStatesTable, PolicyGroupsTable } from "./schema";
import { fromJson, orNull, orUndefined } from "./sql";

/** Which default groups were created once (an administrator may delete one: it is not created again). */
const SEEDED = "policy:seeded-groups";

function toGroup(r: Selectable<PolicyGroupsTable>): PolicyGroup {
	const g: PolicyGroup = {
		Uuid: r.uuid,
		Name: r.name,
		Description: r.description,
		ResourceGroup: r.resource_group as ResourceGroup,
		LastUpdated: Number(r.last_updated),
		Policies: fromJson<Policy[]>(r.policies, []),
	};
	const owner = orUndefined(r.owner_uuid);
	if (owner) g.OwnerUuid = owner;
	return g;
}

function groupRow(g: PolicyGroup): Insertable<PolicyGroupsTable> {
	return {
		uuid: g.Uuid,
		name: g.Name,
		description: g.Description ?? "",
		owner_uuid: orNull(g.OwnerUuid),
		resource_group: g.ResourceGroup,
		last_updated: g.LastUpdated ?? 0,
		policies: JSON.stringify(g.Policies ?? []),
	};
}

function toIpState(r: Selectable<IpStatesTable>): IpState {
	return { IP: r.ip, BanExpire: Number(r.ban_expire), Failures: fromJson<number[]>(r.failures, []), History: fromJson<ConnectionAttempt[]>(r.history, []) };
}

function ipRow(s: IpState): Insertable<IpStatesTable> {
	return { ip: s.IP, ban_expire: s.BanExpire ?? 0, failures: JSON.stringify(s.Failures ?? []), history: JSON.stringify(s.History ?? []) };
}

export class PoliciesRepo {
	constructor(private readonly db: Db) {}

	// ---- policy groups ----

	async groups(): Promise<PolicyGroup[]> {
		return (await this.db.kysely.selectFrom("policy_groups").selectAll().orderBy("uuid").execute()).map(toGroup);
	}

	async group(uuid: string): Promise<PolicyGroup | null> {
		const row = await this.db.kysely.selectFrom("policy_groups").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return row ? toGroup(row) : null;
	}

	/** Creates or replaces the group with this uuid. */
	async saveGroup(g: PolicyGroup): Promise<PolicyGroup> {
		const { uuid, ...fields } = groupRow(g);
		const row = await this.db.kysely
			.insertInto("policy_groups")
			.values({ uuid, ...fields })
			.onConflict((oc) => oc.column("uuid").doUpdateSet(fields))
			.returningAll()
			.executeTakeFirstOrThrow();
		return toGroup(row);
	}

	/** Adds the group unless one with its uuid exists; whether it was added. */
	async addGroupIfAbsent(g: PolicyGroup): Promise<boolean> {
		const row = await this.db.kysely
			.insertInto("policy_groups")
			.values(groupRow(g))
			.onConflict((oc) => oc.column("uuid").doNothing())
			.returning("uuid")
			.executeTakeFirst();
		return !!row;
	}

	async deleteGroup(uuid: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("policy_groups").where("uuid", "=", uuid).executeTakeFirst();
		return r.numDeletedRows > 0n;
	}

	/** The default groups created once already. */
	async seededGroups(): Promise<string[]> {
		const row = await this.db.kysely.selectFrom("markers").select("value").where("name", "=", SEEDED).executeTakeFirst();
		return fromJson<string[]>(row?.value, []);
	}

	async recordSeededGroups(uuids: readonly string[]): Promise<void> {
		const value = JSON.stringify([...new Set(uuids)].sort());
		await this.db.kysely
			.insertInto("markers")
			.values({ name: SEEDED, value })
			.onConflict((oc) => oc.column("name").doUpdateSet({ value }))
			.execute();
	}

	// ---- IP lists ----

	async ipLists(): Promise<Record<string, string[]>> {
		const rows = await this.db.kysely.selectFrom("ip_lists").selectAll().orderBy("name").execute();
		return Object.fromEntries(rows.map((r) => [r.name, fromJson<string[]>(r.ips, [])]));
	}

	/** The list's entries; null when it was never written. */
	async ipList(name: string): Promise<string[] | null> {
		const row = await this.db.kysely.selectFrom("ip_lists").select("ips").where("name", "=", name).executeTakeFirst();
		return row ? fromJson<string[]>(row.ips, []) : null;
	}

	async saveIpList(name: string, ips: readonly string[]): Promise<void> {
		const text = JSON.stringify(ips);
		await this.db.kysely
			.insertInto("ip_lists")
			.values({ name, ips: text })
			.onConflict((oc) => oc.column("name").doUpdateSet({ ips: text }))
			.execute();
	}

	// ---- per-address login state ----

	async ipState(ip: string): Promise<IpState | null> {
		const row = await this.db.kysely.selectFrom("ip_states").selectAll().where("ip", "=", ip).executeTakeFirst();
		return row ? toIpState(row) : null;
	}

	async ipStates(): Promise<IpState[]> {
		return (await this.db.kysely.selectFrom("ip_states").selectAll().orderBy("ip").execute()).map(toIpState);
	}

	/** The addresses banned at `nowMs` (on the ban_expire index: an attack's thousands of addresses are not all read). */
	async bannedAt(nowMs: number): Promise<IpState[]> {
		return (await this.db.kysely.selectFrom("ip_states").selectAll().where("ban_expire", ">", Math.floor(nowMs / 1000)).orderBy("ip").execute())
			.map(toIpState)
			.filter((s) => s.BanExpire * 1000 > nowMs);
	}

	async saveIpState(s: IpState): Promise<void> {
		const { ip, ...fields } = ipRow(s);
		await this.db.kysely
			.insertInto("ip_states")
			.values({ ip, ...fields })
			.onConflict((oc) => oc.column("ip").doUpdateSet(fields))
			.execute();
	}

	/**
	 * Read-modify-write of one address's state in one transaction, the row locked on PostgreSQL (a row is put in
	 * place first when there is none, so that two nodes counting the first failures of an address wait for each
	 * other instead of both writing from nothing). `next` gets the stored state (null: none) and answers the one
	 * to store, or null to store nothing; it may run again (a retried transaction) and must have no other effect.
	 */
	async updateIpState(ip: string, next: (previous: IpState | null) => IpState | null): Promise<void> {
		await this.db.transaction(async (trx) => {
			const placed = await trx
				.insertInto("ip_states")
				.values({ ip, ban_expire: 0, failures: "[]", history: "[]" })
				.onConflict((oc) => oc.column("ip").doNothing())
				.returning("ip")
				.executeTakeFirst();
			const row = await trx
				.selectFrom("ip_states")
				.selectAll()
				.where("ip", "=", ip)
				.$if(this.db.dialect === "postgres", (q) => q.forUpdate())
				.executeTakeFirstOrThrow();
			const state = next(placed ? null : toIpState(row));
			if (!state) {
				if (placed) await trx.deleteFrom("ip_states").where("ip", "=", ip).execute();
				return;
			}
			const { ip: _ip, ...fields } = ipRow({ ...state, IP: ip });
			await trx.updateTable("ip_states").set(fields).where("ip", "=", ip).execute();
		});
	}

	async deleteIpState(ip: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("ip_states").where("ip", "=", ip).executeTakeFirst();
		return r.numDeletedRows > 0n;
	}
}

const str = (v: unknown, fallback = ""): string => (typeof v === "string" ? v : fallback);
const nums = (v: unknown): number[] => (Array.isArray(v) ? v.filter((x): x is number => typeof x === "number") : []);

/**
 * The policies collection of an NeDB DATA_DIR, written in the import's transaction: one collection held every
 * kind, told apart by `kind` (and the `_id` prefix): groups, IP lists, address states and the seeded marker.
 */
export async function importNedbPolicies(trx: Transaction<Database>, docs: NedbDoc[]): Promise<void> {
	for (const d of docs) {
		const kind = str(d.kind) || d._id.slice(0, d._id.indexOf(":"));
		if (kind === "group") {
			const uuid = str(d.Uuid, d._id.slice("group:".length));
			const g: PolicyGroup = {
				Uuid: uuid,
				Name: str(d.Name, uuid),
				Description: str(d.Description),
				ResourceGroup: str(d.ResourceGroup, "rest") as ResourceGroup,
				LastUpdated: typeof d.LastUpdated === "number" ? d.LastUpdated : 0,
				Policies: Array.isArray(d.Policies) ? (d.Policies as Policy[]) : [],
			};
			if (str(d.OwnerUuid)) g.OwnerUuid = str(d.OwnerUuid);
			await trx.insertInto("policy_groups").values(groupRow(g)).onConflict((oc) => oc.doNothing()).execute();
		} else if (kind === "iplist") {
			const name = str(d.Name, d._id.slice("iplist:".length));
			const ips = Array.isArray(d.IPs) ? d.IPs.filter((x): x is string => typeof x === "string") : [];
			await trx.insertInto("ip_lists").values({ name, ips: JSON.stringify(ips) }).onConflict((oc) => oc.doNothing()).execute();
		} else if (kind === "ipstate") {
			const s: IpState = {
				IP: str(d.IP, d._id.slice("ip:".length)),
				BanExpire: typeof d.BanExpire === "number" ? d.BanExpire : 0,
				Failures: nums(d.Failures),
				History: Array.isArray(d.History) ? (d.History as ConnectionAttempt[]) : [],
			};
			await trx.insertInto("ip_states").values(ipRow(s)).onConflict((oc) => oc.doNothing()).execute();
		} else if (kind === "meta" && d._id === "meta:seeded") {
			const uuids = Array.isArray(d.Uuids) ? d.Uuids.filter((x): x is string => typeof x === "string") : [];
			await trx.insertInto("markers").values({ name: SEEDED, value: JSON.stringify(uuids.sort()) }).onConflict((oc) => oc.doNothing()).execute();
		}
	}
}
