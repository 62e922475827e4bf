// The roles as the roles service serves them: the stored list cached (every request's identity resolution reads
// roles by uuid and by profile), dropped after each write and on `identity.changed` from other nodes. Who may
// do what stays in the service; this holds the storage rules: creation is an insert that the primary key keeps
// unique, so two creates of one id give one role and a ConflictError.
import type { Role } from "./roles";

export interface RoleStore {
	all(): Promise<Role[]>;
	create(role: Role): Promise<Role>;
	ensure(role: Role): Promise<{ role: Role; created: boolean }>;
	update(role: Role): Promise<Role | null>;
	delete(uuids: readonly string[]): Promise<number>;
}

export type RoleChange = (uuids: string[]) => Promise<void>;

export class RoleDirectory {
	private cache: Promise<Role[]> | undefined;

	constructor(
		private readonly store: RoleStore,
		/** Announces a change (the service broadcasts identity.changed). */
		private readonly changed: RoleChange,
		private readonly now: () => number = () => Math.floor(Date.now() / 1000),
	) {}

	all(): Promise<Role[]> {
		if (!this.cache) {
			const loading = this.store.all();
			this.cache = loading;
			// A failed read is not kept: the next call reads again.
			loading.catch(() => this.cache === loading && (this.cache = undefined));
		}
		return this.cache;
	}

	async find(uuid: string): Promise<Role | undefined> {
		return (await this.all()).find((r) => r.Uuid === uuid);
	}

	async many(uuids: readonly string[]): Promise<Role[]> {
		const byId = new Map((await this.all()).map((r) => [r.Uuid, r]));
		return uuids.map((u) => byId.get(u)).filter((r): r is Role => !!r);
	}

	async autoApplied(profile: string): Promise<string[]> {
		return (await this.all()).filter((r) => r.AutoApplies?.includes(profile)).map((r) => r.Uuid);
	}

	invalidate(): void {
		this.cache = undefined;
	}

	/**
	 * Whether an `identity.changed` payload may concern roles: ACL, workspace, user and group changes do not (a
	 * user's or group's own role is created and deleted through this service, which announces it as a role).
	 */
	static affectedBy(change: unknown): boolean {
		const kind = change && typeof change === "object" ? (change as { kind?: unknown }).kind : undefined;
		return !(kind === "acl" || kind === "workspace" || kind === "user" || kind === "group");
	}

	/** A new role; ConflictError when its id is taken (by a concurrent create too). */
	async create(role: Role): Promise<Role> {
		return this.wrote([role.Uuid], await this.store.create(this.stamped(role)));
	}

	/** The role with this id, created as given when there is none. */
	async ensure(role: Role): Promise<{ role: Role; created: boolean }> {
		const out = await this.store.ensure(this.stamped(role));
		if (out.created) await this.wrote([role.Uuid], out.role);
		return out;
	}

	/** Replaces a stored role; null when it no longer exists. */
	async update(role: Role): Promise<Role | null> {
		const saved = await this.store.update(this.stamped(role));
		return saved ? this.wrote([role.Uuid], saved) : null;
	}

	async delete(uuids: string[]): Promise<number> {
		const n = await this.store.delete(uuids);
		this.invalidate();
		if (uuids.length) await this.changed(uuids);
		return n;
	}

	private stamped(role: Role): Role {
		const { PoliciesContextEditable, ...stored } = role;
		return { ...stored, LastUpdated: this.now() };
	}

	private async wrote(uuids: string[], role: Role): Promise<Role> {
		this.invalidate();
		await this.changed(uuids);
		return role;
	}
}
