// acl — internal actions over the ACL store (acl service): the tree resolver's node rights, the workspaces'
// roots and role rights, the datasources' check of which workspaces use them, the S3 delete's "kept" test.
import type { ACL, ACLFilter } from "../acl/model";
import type { AclFind } from "../db/acls";

export type { ACL, AclFind };

/** A delete by example (at least one field, checked by the acl service). */
export type AclDeleteWhere = Pick<ACLFilter, "RoleID" | "WorkspaceID" | "NodeID" | "ActionName">;

export interface AclActions {
	/**
	 * One shape for every caller: each list given constrains (even empty, which matches nothing), lists left
	 * out do not — by roles and actions (node rights), by nodes, by workspaces, or by actions alone (roots).
	 */
	"acl.find": { params: AclFind; result: ACL[] };
	/** Insert, or replace the value of the ACL with the same role, workspace, node and action name. */
	"acl.put": { params: ACL; result: ACL };
	/** The number of ACLs deleted. */
	"acl.deleteWhere": { params: AclDeleteWhere; result: number };
}
