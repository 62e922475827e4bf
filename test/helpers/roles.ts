// An in-memory RoleStore for unit tests of the identity lib, with the SQL store's rule (a create of a taken id is
// a ConflictError), a count of full loads (to see what a cache spares) and a hook to play a race on create.
import { ConflictError } from "../../lib/errors";
import type { RoleDirectory, RoleStore } from "../../lib/identity/role-directory";
import type { RoleClient } from "../../lib/identity/user-admin";
import type { Role } from "../../lib/identity/roles";

export class MemRoles implements RoleStore {
	loads = 0;
	roles = new Map<string, Role>();
	/** Runs once before the next create (another node creating the same role first). */
	beforeCreate?: () => void;
	async all() {
		this.loads++;
		return [...this.roles.values()];
	}
	async create(r: Role) {
		const race = this.beforeCreate;
		this.beforeCreate = undefined;
		race?.();
		if (this.roles.has(r.Uuid)) throw new ConflictError(`Role ${r.Uuid} exists`);
		this.roles.set(r.Uuid, r);
		return r;
	}
	async ensure(r: Role) {
		const had = this.roles.get(r.Uuid);
		if (had) return { role: had, created: false };
		this.roles.set(r.Uuid, r);
		return { role: r, created: true };
	}
	async update(r: Role) {
		if (!this.roles.has(r.Uuid)) return null;
		this.roles.set(r.Uuid, r);
		return r;
	}
	async delete(uuids: readonly string[]) {
		let n = 0;
		for (const u of uuids) if (this.roles.delete(u)) n++;
		return n;
	}
}

/** The roles service as UserAdmin calls it, answered by a RoleDirectory in the test process. */
export function roleClientOf(roles: RoleDirectory): RoleClient {
	return {
		ensure: (r) => roles.ensure(r),
		delete: (uuids) => roles.delete(uuids),
		getMany: (uuids) => roles.many(uuids),
		autoApplied: (profile) => roles.autoApplied(profile),
	};
}
