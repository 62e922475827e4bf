// Keeps a workspace's ACLs in line with what a PUT /workspace asked for: root ACLs (workspace-path,
// recycle_root), role ACLs moved from removed roots to the new ones, and the ROOT_GROUP rights that stand for
// the DEFAULT_RIGHTS / QUOTA attributes. The ACL store belongs to the acl service: calls go through `AclClient`.
import type { ACL } from "../acl/model";
import { ROOT_GROUP } from "./model";

export interface AclClient {
	find(p: { RoleIDs?: string[]; WorkspaceIDs?: string[]; NodeIDs?: string[]; Actions?: string[] }): Promise<ACL[]>;
	put(acl: ACL): Promise<ACL>;
	deleteWhere(p: { RoleID?: string; WorkspaceID?: string; NodeID?: string; ActionName?: string }): Promise<number>;
}

export interface RootsChange {
	workspaceId: string;
	/** New roots; undefined keeps the current ones. */
	roots?: { Uuid: string; Path: string }[];
	defaultRights?: "" | "r" | "w" | "rw";
	quota?: string;
}

const ROOT_ACTIONS = ["workspace-path", "recycle_root"];

/** Applies the change; returns the workspace's roots afterwards. */
export async function syncWorkspaceAcls(acl: AclClient, change: RootsChange): Promise<string[]> {
	const ws = change.workspaceId;
	const current = await acl.find({ WorkspaceIDs: [ws] });
	const oldRoots = [...new Set(current.filter((a) => a.Action?.Name === "workspace-path" && a.NodeID).map((a) => a.NodeID as string))];
	let roots = oldRoots;

	if (change.roots) {
		const newIds = change.roots.map((r) => r.Uuid);
		const removed = oldRoots.filter((r) => !newIds.includes(r));
		// Root ACLs first, so that a reader never sees a workspace without roots while it is being edited.
		for (const r of change.roots) {
			await acl.put({ WorkspaceID: ws, NodeID: r.Uuid, Action: { Name: "workspace-path", Value: r.Path || r.Uuid } });
			await acl.put({ WorkspaceID: ws, NodeID: r.Uuid, Action: { Name: "recycle_root", Value: "1" } });
		}
		// Rights that roles held on a removed root follow the workspace to its new roots.
		for (const old of removed) {
			const moved = current.filter((a) => a.NodeID === old && a.RoleID && a.Action && !ROOT_ACTIONS.includes(a.Action.Name));
			for (const a of moved) {
				for (const target of newIds) {
					await acl.put({ RoleID: a.RoleID, WorkspaceID: ws, NodeID: target, Action: { Name: a.Action!.Name, Value: a.Action!.Value } });
				}
			}
			await acl.deleteWhere({ WorkspaceID: ws, NodeID: old });
		}
		roots = newIds;
	}

	if (change.defaultRights !== undefined) {
		for (const root of roots) {
			for (const name of ["read", "write"] as const) {
				const wanted = name === "read" ? change.defaultRights.includes("r") : change.defaultRights.includes("w");
				if (wanted) await acl.put({ RoleID: ROOT_GROUP, WorkspaceID: ws, NodeID: root, Action: { Name: name, Value: "1" } });
				else await acl.deleteWhere({ RoleID: ROOT_GROUP, WorkspaceID: ws, NodeID: root, ActionName: name });
			}
		}
	}
	if (change.quota !== undefined) {
		for (const root of roots) {
			if (change.quota) await acl.put({ RoleID: ROOT_GROUP, WorkspaceID: ws, NodeID: root, Action: { Name: "quota", Value: change.quota } });
			else await acl.deleteWhere({ RoleID: ROOT_GROUP, WorkspaceID: ws, NodeID: root, ActionName: "quota" });
		}
	}
	return roots;
}
