// Users and groups (one table, as Cells' idm.User): field names as the users service already handles them, so a
// record replaces a UserDoc without renaming. A login is unique among users and a full path among groups, both by
// unique indexes: `create` of a taken login fails with ConflictError however many nodes try at once.
import type { Selectable } from "kysely";
import type { Transaction } from "kysely";
import type { LoginGuard } from "../auth/login-guard";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { UserDoc } from "../identity/users";
import type { NedbDoc } from "./nedb-import";
import type { Db } from "./index";
import type { Database, UsersTable } from "./schema";
import { asciiLower, flag, fromJson, orNull, orUndefined, prefixEnd } from "./sql";

/** The stored user or group: lib/identity's UserDoc, field for field. */
export type UserRecord = UserDoc;

/** What a login attempt writes on its account (recordLogin). */
export interface LoginBookkeeping {
	/** Cells' `failedConnections` attribute; null removes it. */
	failedConnections: number | null;
	loginGuard: LoginGuard | undefined;
	/** Unix seconds of a successful login; absent leaves the last one. */
	lastConnected?: number;
}

export interface UserSearch {
	/** Logins starting with this, ignoring ASCII case. */
	loginPrefix?: string;
	/** Members of this group path ("/" is the root). */
	groupPath?: string;
	/** With `groupPath`: members of its sub-groups too. */
	recursive?: boolean;
	kind?: "user" | "group";
	offset?: number;
	limit?: number;
}

type Row = Selectable<UsersTable>;

function toRecord(r: Row): UserRecord {
	const u: UserRecord = {
		Uuid: r.uuid,
		GroupPath: r.group_path,
		Attributes: fromJson<Record<string, string>>(r.attributes, {}),
		Roles: fromJson<string[]>(r.roles, []),
		Policies: fromJson<ResourcePolicy[]>(r.policies, []),
	};
	if (r.is_group) {
		u.IsGroup = true;
		u.GroupLabel = orUndefined(r.group_label);
	} else u.Login = orUndefined(r.login);
	if (r.password_hash !== null) u.PasswordHash = r.password_hash;
	if (r.last_connected !== null) u.LastConnected = r.last_connected;
	if (r.created_at !== null) u.CreatedAt = r.created_at;
	if (r.login_guard !== null) u.LoginGuard = fromJson<LoginGuard | undefined>(r.login_guard, undefined);
	return u;
}

function toRow(u: UserRecord): Row {
	return {
		uuid: u.Uuid,
		login: u.IsGroup ? null : orNull(u.Login),
		group_path: u.GroupPath,
		is_group: flag(u.IsGroup),
		group_label: u.IsGroup ? orNull(u.GroupLabel) : null,
		attributes: JSON.stringify(u.Attributes ?? {}),
		password_hash: orNull(u.PasswordHash),
		roles: JSON.stringify(u.Roles ?? []),
		policies: JSON.stringify(u.Policies ?? []),
		last_connected: orNull(u.LastConnected),
		created_at: orNull(u.CreatedAt),
		login_guard: u.LoginGuard ? JSON.stringify(u.LoginGuard) : null,
	};
}

export class UsersRepo {
	constructor(private readonly db: Db) {}

	/** Adds a user or group; ConflictError when its login (or group path, or uuid) is taken. */
	async create(u: UserRecord): Promise<UserRecord> {
		const row = await this.db.kysely.insertInto("users").values(toRow(u)).returningAll().executeTakeFirstOrThrow();
		return toRecord(row);
	}

	/**
	 * Every user and group. The users service keeps this list cached: the identity of every uncached request is
	 * resolved from it, and searches match Cells' wildcards and attribute queries over it.
	 */
	async all(): Promise<UserRecord[]> {
		return (await this.db.kysely.selectFrom("users").selectAll().orderBy("uuid").execute()).map(toRecord);
	}

	/**
	 * Adds a user or group under existing groups: null, and nothing added, when a group of its path is missing.
	 * The groups are read in the insert's transaction (locked for share on PostgreSQL, as deleteGroupTree locks
	 * the group it deletes), so a group deleted at the same time takes the new member with it or refuses it,
	 * never leaving it in a path that no longer exists. ConflictError as `create`.
	 */
	async createInGroup(u: UserRecord): Promise<UserRecord | null> {
		const paths = u.GroupPath.split("/").filter(Boolean).map((_, i, all) => "/" + all.slice(0, i + 1).join("/"));
		return this.db.transaction(async (trx) => {
			for (const path of paths) {
				const i = path.lastIndexOf("/");
				const found = await trx
					.selectFrom("users")
					.select("uuid")
					.where("group_path", "=", i === 0 ? "/" : path.slice(0, i))
					.where("group_label", "=", path.slice(i + 1))
					.$if(this.db.dialect === "postgres", (q) => q.forShare())
					.executeTakeFirst();
				if (!found) return null;
			}
			return toRecord(await trx.insertInto("users").values(toRow(u)).returningAll().executeTakeFirstOrThrow());
		});
	}

	async byUuid(uuid: string): Promise<UserRecord | null> {
		const row = await this.db.kysely.selectFrom("users").selectAll().where("uuid", "=", uuid).executeTakeFirst();
		return row ? toRecord(row) : null;
	}

	/** A user (never a group) by its exact login. */
	async byLogin(login: string): Promise<UserRecord | null> {
		const row = await this.db.kysely.selectFrom("users").selectAll().where("login", "=", login).executeTakeFirst();
		return row ? toRecord(row) : null;
	}

	/** A group by its full path (`/sales/emea`). */
	async groupByPath(fullPath: string): Promise<UserRecord | null> {
		const i = fullPath.lastIndexOf("/");
		if (i < 0 || fullPath === "/") return null;
		const parent = i === 0 ? "/" : fullPath.slice(0, i);
		const row = await this.db.kysely.selectFrom("users").selectAll().where("group_path", "=", parent).where("group_label", "=", fullPath.slice(i + 1)).executeTakeFirst();
		return row ? toRecord(row) : null;
	}

	/**
	 * Writes every field of `u` over the stored record of the same uuid; the updated record, or null when there is
	 * none. A login or group path changed to a taken one is a ConflictError and leaves the record as it was.
	 */
	async update(u: UserRecord): Promise<UserRecord | null> {
		const { uuid, ...fields } = toRow(u);
		const row = await this.db.kysely.updateTable("users").set(fields).where("uuid", "=", uuid).returningAll().executeTakeFirst();
		return row ? toRecord(row) : null;
	}

	/**
	 * Login bookkeeping: the failure counter (Cells' `failedConnections` attribute; null removes it), the login
	 * guard and, on a success, the last connection. Only these are written, over the stored row read in the same
	 * transaction (locked on PostgreSQL): a password or profile changed meanwhile, by a request or another node,
	 * is kept, never overwritten with the copy the login was checked against. Given a function, the change is
	 * computed from the stored record in that transaction (concurrent failures each count; it may run again when
	 * PostgreSQL retries the transaction, and must have no other effect). The updated record, or null.
	 */
	async recordLogin(uuid: string, change: LoginBookkeeping | ((current: UserRecord) => LoginBookkeeping)): Promise<UserRecord | null> {
		return this.db.transaction(async (trx) => {
			const current = await trx
				.selectFrom("users")
				.selectAll()
				.where("uuid", "=", uuid)
				.$if(this.db.dialect === "postgres", (q) => q.forUpdate())
				.executeTakeFirst();
			if (!current) return null;
			const c = typeof change === "function" ? change(toRecord(current)) : change;
			const attributes = fromJson<Record<string, string>>(current.attributes, {});
			if (c.failedConnections === null) delete attributes.failedConnections;
			else attributes.failedConnections = String(c.failedConnections);
			const row = await trx
				.updateTable("users")
				.set({
					attributes: JSON.stringify(attributes),
					login_guard: c.loginGuard ? JSON.stringify(c.loginGuard) : null,
					...(c.lastConnected !== undefined ? { last_connected: c.lastConnected } : {}),
				})
				.where("uuid", "=", uuid)
				.returningAll()
				.executeTakeFirst();
			return row ? toRecord(row) : null;
		});
	}

	/** Records a successful login without rewriting the rest of the record (a login storm writes only this). */
	async touchLastConnected(uuid: string, at: number): Promise<boolean> {
		const r = await this.db.kysely.updateTable("users").set({ last_connected: at }).where("uuid", "=", uuid).executeTakeFirst();
		return r.numUpdatedRows > 0n;
	}

	/**
	 * Deletes the group at `fullPath` with every user and group under it, in one transaction: a user created in
	 * the group meanwhile goes with it or, created after, finds no group. The records deleted.
	 */
	async deleteGroupTree(fullPath: string): Promise<UserRecord[]> {
		const base = fullPath.replace(/\/+$/, "");
		const i = base.lastIndexOf("/");
		if (i < 0 || base === "") return [];
		const parent = i === 0 ? "/" : base.slice(0, i);
		const label = base.slice(i + 1);
		const below = `${base}/`;
		const end = prefixEnd(below) as string;
		return this.db.transaction(async (trx) => {
			// Locked first (PostgreSQL), so that a member being added (createInGroup holds the group for share) is
			// committed before the delete below reads what to delete, and goes with it.
			if (this.db.dialect === "postgres") {
				await trx.selectFrom("users").select("uuid").where("group_path", "=", parent).where("group_label", "=", label).forUpdate().execute();
			}
			const rows = await trx
				.deleteFrom("users")
				.where((eb) =>
					eb.or([
						eb.and([eb("group_path", "=", parent), eb("group_label", "=", label)]),
						eb("group_path", "=", base),
						eb.and([eb("group_path", ">=", below), eb("group_path", "<", end)]),
					]),
				)
				.returningAll()
				.execute();
			return rows.map(toRecord);
		});
	}

	async delete(uuid: string): Promise<boolean> {
		const r = await this.db.kysely.deleteFrom("users").where("uuid", "=", uuid).executeTakeFirst();
		return r.numDeletedRows > 0n;
	}

	/** Groups first, then users, each by name (label or login). */
	async search(q: UserSearch = {}): Promise<UserRecord[]> {
		let query = this.filtered(q)
			.selectAll()
			.orderBy("is_group", "desc")
			.orderBy((eb) => eb.fn.coalesce("group_label", "login"))
			.orderBy("uuid");
		// SQLite accepts OFFSET only after a LIMIT.
		if (q.limit !== undefined || q.offset) query = query.limit(q.limit ?? Number.MAX_SAFE_INTEGER);
		if (q.offset) query = query.offset(q.offset);
		return (await query.execute()).map(toRecord);
	}

	async count(q: UserSearch = {}): Promise<number> {
		const r = await this.filtered(q).select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
		return Number(r.n);
	}

	private filtered(q: UserSearch) {
		let query = this.db.kysely.selectFrom("users");
		if (q.kind) query = query.where("is_group", "=", q.kind === "group" ? 1 : 0);
		if (q.loginPrefix) {
			// A range on the lower(login) index: the same on both dialects, unlike LIKE.
			const from = asciiLower(q.loginPrefix);
			const to = prefixEnd(from);
			query = query.where((eb) => eb.fn<string>("lower", ["login"]), ">=", from);
			if (to !== undefined) query = query.where((eb) => eb.fn<string>("lower", ["login"]), "<", to);
		}
		if (q.groupPath !== undefined && q.groupPath !== "") {
			const base = q.groupPath.length > 1 ? q.groupPath.replace(/\/+$/, "") : "/";
			if (!q.recursive) query = query.where("group_path", "=", base);
			else if (base !== "/") {
				const below = `${base}/`;
				const end = prefixEnd(below) as string;
				query = query.where((eb) => eb.or([eb("group_path", "=", base), eb.and([eb("group_path", ">=", below), eb("group_path", "<", end)])]));
			}
		}
		return query;
	}
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** A user or group document of the NeDB versions (`_id` = Uuid), as a record. */
export function userFromNedb(d: NedbDoc): UserRecord {
	const attrs: Record<string, string> = {};
	if (d.Attributes && typeof d.Attributes === "object") for (const [k, v] of Object.entries(d.Attributes as Record<string, unknown>)) if (typeof v === "string") attrs[k] = v;
	const u: UserRecord = {
		Uuid: str(d.Uuid) ?? d._id,
		GroupPath: str(d.GroupPath) ?? "/",
		Attributes: attrs,
		Roles: Array.isArray(d.Roles) ? d.Roles.filter((r): r is string => typeof r === "string") : [],
		Policies: Array.isArray(d.Policies) ? (d.Policies as ResourcePolicy[]) : [],
	};
	if (d.IsGroup === true) {
		u.IsGroup = true;
		u.GroupLabel = str(d.GroupLabel) ?? "";
	} else u.Login = str(d.Login);
	if (str(d.PasswordHash)) u.PasswordHash = str(d.PasswordHash);
	if (num(d.LastConnected) !== undefined) u.LastConnected = num(d.LastConnected);
	if (num(d.CreatedAt) !== undefined) u.CreatedAt = num(d.CreatedAt);
	if (d.LoginGuard && typeof d.LoginGuard === "object") u.LoginGuard = d.LoginGuard as LoginGuard;
	return u;
}

/**
 * The users collection of an NeDB DATA_DIR, written in the import's transaction (importNedbOnce). A document
 * the schema refuses (no login, a second user with one login) is left out and reported, not the whole import.
 */
export async function importNedbUsers(trx: Transaction<Database>, docs: NedbDoc[], skipped: (doc: NedbDoc, why: string) => void = () => undefined): Promise<void> {
	for (const d of docs) {
		const u = userFromNedb(d);
		if (!u.IsGroup && !u.Login) {
			skipped(d, "a user without a login");
			continue;
		}
		const r = await trx.insertInto("users").values(toRow(u)).onConflict((oc) => oc.doNothing()).returning("uuid").executeTakeFirst();
		if (!r) skipped(d, "its login, group path or uuid is taken by another document");
	}
}
