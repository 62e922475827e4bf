// roles — internal actions the users service (role stacks, personal and group roles) and install call.
import type { Role } from "../identity/roles";

export interface RolesActions {
	"roles.ensureDefaults": { params: Record<string, never>; result: { created: number } };
	"roles.ensure": { params: Role; result: Role };
	"roles.getMany": { params: { uuids: string[] }; result: Role[] };
	"roles.autoApplied": { params: { profile: string }; result: string[] };
	"roles.delete": { params: { uuids: string[] }; result: { deleted: number } };
}
