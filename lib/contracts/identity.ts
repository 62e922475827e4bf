// identity.changed — users, groups, roles, ACLs or workspaces changed: gateways drop cached identities and
// access, each directory decides whether the change concerns it (UserDirectory/RoleDirectory.affectedBy). A user or
// group change that deleted users names their logins (`deleted`) and their uuids (`deletedUuids`): the activity
// feeds, kept by login, and the second factors and avatars, kept by uuid, forget them (lib/identity/user-gone).
import type { UserChange } from "../identity/user-directory";

export type IdentityChange =
	| UserChange
	| { kind: "role"; uuid: string }
	| { kind: "acl"; RoleID?: string; WorkspaceID?: string }
	| { kind: "workspace"; uuid?: string };

export interface IdentityEvents {
	"identity.changed": IdentityChange;
}
