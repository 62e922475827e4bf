// A user's rights from the ACLs of their role stack, as Cells flattens it: roles apply in order (root group,
// groups along the path, profile roles, assigned roles, the user's own role), a later role overriding an earlier
// one for the actions it sets; roles flagged ForceOverride are applied after all the others. Within one role a
// `deny` wins over its own read/write. Pure functions.
import type { ACL } from "./model";

export interface Rights {
	read: boolean;
	write: boolean;
	deny: boolean;
}

export const RIGHT_ACTIONS = ["read", "write", "deny"] as const;

/** ACL values are usually "1"; an empty (omitted) value grants too; "0"/"false" explicitly revoke. */
export function granted(value: string | undefined): boolean {
	if (value === undefined) return true;
	const v = value.trim().toLowerCase();
	return v !== "0" && v !== "false";
}

/** Role order with ForceOverride roles moved to the end (each keeping its relative position). */
export function effectiveOrder(orderedRoleIds: string[], forceOverrideIds: string[] = []): string[] {
	const force = new Set(forceOverrideIds);
	const seen = new Set<string>();
	const normal: string[] = [];
	const last: string[] = [];
	for (const r of orderedRoleIds) {
		if (seen.has(r)) continue;
		seen.add(r);
		(force.has(r) ? last : normal).push(r);
	}
	return [...normal, ...last];
}

/**
 * Rights given by `acls` (already narrowed to one workspace or one node) to a user whose roles are
 * `orderedRoleIds`. ACLs of roles not in the list are ignored.
 */
export function rightsFor(acls: ACL[], orderedRoleIds: string[], forceOverrideIds?: string[]): Rights {
	const byRole = new Map<string, { read?: boolean; write?: boolean; deny?: boolean }>();
	for (const acl of acls) {
		const name = acl.Action?.Name;
		if (!acl.RoleID || (name !== "read" && name !== "write" && name !== "deny")) continue;
		const entry = byRole.get(acl.RoleID) ?? {};
		// Several ACLs of one role for the same action (e.g. on several roots): one grant is enough.
		entry[name] = (entry[name] ?? false) || granted(acl.Action?.Value);
		byRole.set(acl.RoleID, entry);
	}
	const out: Rights = { read: false, write: false, deny: false };
	for (const role of effectiveOrder(orderedRoleIds, forceOverrideIds)) {
		const r = byRole.get(role);
		if (!r) continue;
		if (r.deny) {
			// Deny wins over this role's own read/write, and over everything granted before.
			out.read = false;
			out.write = false;
			out.deny = true;
			continue;
		}
		if (r.deny === false) out.deny = false; // an explicit deny "0" lifts an earlier deny
		if (r.read !== undefined) out.read = r.read;
		if (r.write !== undefined) out.write = r.write;
		// A later grant overrides an earlier role's deny.
		if (r.read || r.write) out.deny = false;
	}
	if (out.deny) {
		out.read = false;
		out.write = false;
	}
	return out;
}

/** Cells' `acl` attribute for a workspace: "rw", "r", "w" or "" (no access). */
export function accessString(r: Rights): "" | "r" | "w" | "rw" {
	if (r.deny) return "";
	return r.read && r.write ? "rw" : r.read ? "r" : r.write ? "w" : "";
}

function groupBy(acls: ACL[], key: (a: ACL) => string | undefined): Map<string, ACL[]> {
	const m = new Map<string, ACL[]>();
	for (const a of acls) {
		const k = key(a);
		if (!k) continue;
		const list = m.get(k);
		if (list) list.push(a);
		else m.set(k, [a]);
	}
	return m;
}

/** Rights per workspace id (read/write/deny ACLs grouped by WorkspaceID). */
export function rightsByWorkspace(acls: ACL[], orderedRoleIds: string[], forceOverrideIds?: string[]): Map<string, Rights> {
	const out = new Map<string, Rights>();
	for (const [ws, list] of groupBy(acls, (a) => a.WorkspaceID)) out.set(ws, rightsFor(list, orderedRoleIds, forceOverrideIds));
	return out;
}

/** Rights per node id (read/write/deny ACLs grouped by NodeID). */
export function rightsByNode(acls: ACL[], orderedRoleIds: string[], forceOverrideIds?: string[]): Map<string, Rights> {
	const out = new Map<string, Rights>();
	for (const [node, list] of groupBy(acls, (a) => a.NodeID)) out.set(node, rightsFor(list, orderedRoleIds, forceOverrideIds));
	return out;
}
