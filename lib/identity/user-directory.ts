// Users and groups as the users service serves them. Every uncached request resolves its identity here
// (auth.resolve -> users.authInfo: the user by uuid, then each ancestor group by path), so the stored list is
// kept in memory with its indexes, dropped after each write and on `identity.changed` from other nodes.
// Uniqueness is not checked here: creating a taken login or group path fails in the store's unique index
// (ConflictError), whichever node or request came second.
import type { LoginGuard } from "../auth/login-guard";
import { BadRequestError } from "../errors";
import { fullPathOf, type UserDoc } from "./users";

/** What a login attempt changes on its account: the failure counter (null: none), the guard, the last success. */
export interface LoginChange {
	failedConnections: number | null;
	loginGuard: LoginGuard | undefined;
	lastConnected?: number;
}

export interface UserStore {
	all(): Promise<UserDoc[]>;
	createInGroup(u: UserDoc): Promise<UserDoc | null>;
	update(u: UserDoc): Promise<UserDoc | null>;
	recordLogin(uuid: string, change: LoginChange | ((current: UserDoc) => LoginChange)): Promise<UserDoc | null>;
	delete(uuid: string): Promise<boolean>;
	deleteGroupTree(fullPath: string): Promise<UserDoc[]>;
}

/**
 * The users a change deleted (a user, or those of a group's tree), named both ways, since the records are gone
 * once the event arrives: `deleted` their logins (services keeping data by login: activity feeds), `deletedUuids`
 * their uuids (services keeping data by uuid: second factors, avatars).
 */
export interface DeletedUsers {
	deleted?: string[];
	deletedUuids?: string[];
}

/** What changed, for the `identity.changed` broadcast. */
export type UserChange = ({ kind: "user"; uuid: string } & DeletedUsers) | ({ kind: "group"; path: string } & DeletedUsers);

/** The users (not the groups) among deleted records. */
function deletedUsers(docs: UserDoc[]): Required<DeletedUsers> {
	const users = docs.flatMap((d) => (!d.IsGroup && d.Login !== undefined ? [{ login: d.Login, uuid: d.Uuid }] : []));
	return { deleted: users.map((u) => u.login), deletedUuids: users.map((u) => u.uuid) };
}

interface Snapshot {
	list: UserDoc[];
	byUuid: Map<string, UserDoc>;
	byLogin: Map<string, UserDoc>;
	groups: Map<string, UserDoc>;
}

function snapshot(list: UserDoc[]): Snapshot {
	const s: Snapshot = { list, byUuid: new Map(), byLogin: new Map(), groups: new Map() };
	for (const u of list) {
		s.byUuid.set(u.Uuid, u);
		if (u.IsGroup) s.groups.set(fullPathOf(u), u);
		else if (u.Login !== undefined) s.byLogin.set(u.Login, u);
	}
	return s;
}

export class UserDirectory {
	private cache: Promise<Snapshot> | undefined;

	constructor(
		private readonly store: UserStore,
		private readonly changed: (c: UserChange) => Promise<void>,
	) {}

	private load(): Promise<Snapshot> {
		if (!this.cache) {
			const loading = this.store.all().then(snapshot);
			this.cache = loading;
			// A failed read is not kept: the next call reads again.
			loading.catch(() => this.cache === loading && (this.cache = undefined));
		}
		return this.cache;
	}

	/** Every user and group; the cached objects, not to be modified. */
	async all(): Promise<readonly UserDoc[]> {
		return (await this.load()).list;
	}

	async byUuid(uuid: string): Promise<UserDoc | undefined> {
		return (await this.load()).byUuid.get(uuid);
	}

	/** A user (never a group) by its exact login. */
	async byLogin(login: string): Promise<UserDoc | undefined> {
		return (await this.load()).byLogin.get(login);
	}

	/** A group by its full path (`/sales/emea`). */
	async groupByPath(path: string): Promise<UserDoc | undefined> {
		return (await this.load()).groups.get(path);
	}

	/** A user by e-mail address, ignoring case. */
	async byEmail(email: string): Promise<UserDoc | undefined> {
		const wanted = email.toLowerCase();
		return (await this.load()).list.find((u) => !u.IsGroup && u.Attributes.email?.toLowerCase() === wanted);
	}

	invalidate(): void {
		this.cache = undefined;
	}

	/**
	 * Whether an `identity.changed` payload may concern users or groups. ACL, workspace and role changes do not
	 * (a user holds role uuids, not roles): they leave the list cached, which every uncached request reads.
	 */
	static affectedBy(change: unknown): boolean {
		const kind = change && typeof change === "object" ? (change as { kind?: unknown }).kind : undefined;
		return !(kind === "acl" || kind === "workspace" || kind === "role");
	}

	/**
	 * A new user or group; ConflictError when its login, group path or uuid is taken, BadRequestError when a
	 * group of its path does not exist (or is being deleted).
	 */
	async create(u: UserDoc): Promise<UserDoc> {
		const saved = await this.store.createInGroup(u);
		if (!saved) {
			this.invalidate();
			throw new BadRequestError(`Group ${u.GroupPath} does not exist`);
		}
		this.invalidate();
		await this.changed({ kind: "user", uuid: u.Uuid });
		return saved;
	}

	/** Writes a changed user or group; null when it was deleted meanwhile. */
	async save(u: UserDoc): Promise<UserDoc | null> {
		const saved = await this.store.update(u);
		this.invalidate();
		await this.changed({ kind: "user", uuid: u.Uuid });
		return saved;
	}

	/**
	 * Login bookkeeping (failure counter, last connection, throttling), written alone over the stored record (a
	 * change made meanwhile elsewhere stays). Nothing anyone caches changes, so it is not announced unless asked
	 * (a lock starting is): a login storm does not empty every gateway's caches; this node's list is patched
	 * instead of reloaded. A function computes the change from the stored record (see UsersRepo.recordLogin), and
	 * `announce` may then be asked after it ran.
	 */
	async recordLogin(uuid: string, change: LoginChange | ((current: UserDoc) => LoginChange), announce: boolean | (() => boolean) = false): Promise<void> {
		const saved = await this.store.recordLogin(uuid, change);
		if (typeof announce === "function" ? announce() : announce) {
			this.invalidate();
			if (saved) await this.changed({ kind: "user", uuid });
			return;
		}
		const current = this.cache;
		const s = current ? await current.catch(() => undefined) : undefined;
		const i = s ? s.list.findIndex((x) => x.Uuid === uuid) : -1;
		if (!saved || !s || i < 0 || this.cache !== current) {
			this.invalidate();
			return;
		}
		s.list[i] = saved;
		s.byUuid.set(saved.Uuid, saved);
		if (!saved.IsGroup && saved.Login !== undefined) s.byLogin.set(saved.Login, saved);
	}

	async delete(u: UserDoc): Promise<boolean> {
		const deleted = await this.store.delete(u.Uuid);
		this.invalidate();
		if (deleted) await this.changed({ kind: "user", uuid: u.Uuid, ...deletedUsers([u]) });
		return deleted;
	}

	/** The group and everything under it, in one transaction; the records deleted. */
	async deleteGroupTree(path: string): Promise<UserDoc[]> {
		const victims = await this.store.deleteGroupTree(path);
		this.invalidate();
		await this.changed({ kind: "group", path, ...deletedUsers(victims) });
		return victims;
	}
}
