// The administrators' audit of shares (enterprise POST /audit/data/shares): who shared what with whom, by node.
// Computed from the live workspaces, ACLs and link records: the report is always "now".
import type { ACL } from "../acl/model";
import { rootsFromAcls, type WorkspaceDoc } from "../workspaces/model";
import type { LinkRecord } from "../db/share-links";
import type { Role } from "../identity/roles";
import type { PublicUser } from "../identity/users";
import type { TreeNode } from "../tree/model";
import { linkStatus, ownerOf } from "./model";

export interface AuditSharesRequest {
	ShareType?: "ANY" | "WORKSPACE" | "CELL" | "LINK";
	OwnerUUID?: string;
	RootPath?: string;
	NodeType?: "UNKNOWN" | "LEAF" | "COLLECTION";
	NodeSizeMin?: number;
	LastUpdatedSince?: number;
	LastUpdatedBefore?: number;
	RolesReadUUIDs?: string[];
	RolesReadAND?: boolean;
	UsersReadCountMin?: number;
	UsersReadCountMax?: number;
	ReportDate?: number;
	Offset?: number;
	Limit?: number;
}

export interface AuditDeps {
	node(uuid: string): Promise<TreeNode | null>;
	roles(uuids: string[]): Promise<Role[]>;
	user(uuid: string): Promise<PublicUser | null>;
	now(): number;
}

const TYPE_OF: Record<string, "WORKSPACE" | "CELL" | "LINK"> = { ADMIN: "WORKSPACE", ROOM: "CELL", LINK: "LINK" };

interface Audited {
	Workspace: Record<string, unknown>;
	OwnerUser?: Record<string, unknown>;
	RolesRead?: Role[];
	RolesWrite?: Role[];
	UsersReadCount?: number;
	UsersWriteCount?: number;
	BrokenLink?: boolean;
	BrokenWorkspace?: boolean;
}

export async function buildAuditReport(shares: { doc: WorkspaceDoc; acls: ACL[]; link: LinkRecord | null }[], p: AuditSharesRequest, deps: AuditDeps) {
	const now = deps.now();
	const wanted = p.ShareType && p.ShareType !== "ANY" ? p.ShareType : undefined;
	const facets: Record<string, number> = {};
	const byNode = new Map<string, { node: TreeNode | null; workspaces: Audited[] }>();
	for (const { doc, acls, link } of shares) {
		const type = TYPE_OF[doc.Scope];
		if (!type || (wanted && type !== wanted)) continue;
		const owner = ownerOf(doc.Policies);
		if (p.OwnerUUID && owner !== p.OwnerUUID) continue;
		if (p.LastUpdatedSince && doc.LastUpdated < p.LastUpdatedSince) continue;
		if (p.LastUpdatedBefore && doc.LastUpdated > p.LastUpdatedBefore) continue;
		const readers = [...new Set(acls.filter((a) => a.RoleID && a.Action?.Name === "read").map((a) => a.RoleID as string))];
		const writers = [...new Set(acls.filter((a) => a.RoleID && a.Action?.Name === "write").map((a) => a.RoleID as string))];
		if (p.RolesReadUUIDs?.length) {
			const hit = p.RolesReadAND ? p.RolesReadUUIDs.every((r) => readers.includes(r)) : p.RolesReadUUIDs.some((r) => readers.includes(r));
			if (!hit) continue;
		}
		const roles = await deps.roles([...new Set([...readers, ...writers])]);
		const usersRead = roles.filter((r) => r.UserRole && readers.includes(r.Uuid)).length;
		const usersWrite = roles.filter((r) => r.UserRole && writers.includes(r.Uuid)).length;
		if (p.UsersReadCountMin !== undefined && p.UsersReadCountMin > 0 && usersRead < p.UsersReadCountMin) continue;
		if (p.UsersReadCountMax !== undefined && p.UsersReadCountMax > 0 && usersRead > p.UsersReadCountMax) continue;
		const ownerUser = owner ? await deps.user(owner) : null;
		const roots = rootsFromAcls(acls).RootUUIDs;
		const expired = !!link && linkStatus({ ...link, accessStart: 0 }, now) !== "ok";
		const audited: Audited = {
			Workspace: { UUID: doc.UUID, Label: doc.Label, Description: doc.Description || undefined, Slug: doc.Slug, Scope: doc.Scope, LastUpdated: doc.LastUpdated, Policies: doc.Policies },
			OwnerUser: ownerUser ? { Uuid: ownerUser.Uuid, Login: ownerUser.Login, GroupPath: ownerUser.GroupPath } : undefined,
			RolesRead: roles.filter((r) => readers.includes(r.Uuid)).map((r) => ({ Uuid: r.Uuid, Label: r.Label, UserRole: r.UserRole, GroupRole: r.GroupRole })),
			RolesWrite: roles.filter((r) => writers.includes(r.Uuid)).map((r) => ({ Uuid: r.Uuid, Label: r.Label, UserRole: r.UserRole, GroupRole: r.GroupRole })),
			UsersReadCount: usersRead,
			UsersWriteCount: usersWrite,
			BrokenLink: expired || undefined,
		};
		for (const root of roots.length ? roots : [""]) {
			let entry = byNode.get(root);
			if (!entry) {
				const node = root && !root.startsWith("DATASOURCE:") ? await deps.node(root) : null;
				entry = { node, workspaces: [] };
				byNode.set(root, entry);
			}
			const broken = !entry.node && !!root && !root.startsWith("DATASOURCE:") && type !== "WORKSPACE";
			entry.workspaces.push(broken ? { ...audited, BrokenWorkspace: true } : audited);
		}
		facets[type] = (facets[type] ?? 0) + 1;
	}
	let resources = [...byNode.entries()].map(([uuid, e]) => ({
		Node: e.node ?? (uuid ? { Uuid: uuid } : undefined),
		Workspaces: e.workspaces,
		ReportDate: now,
	}));
	resources = resources.filter((r) => {
		const n = r.Node as TreeNode | undefined;
		if (p.NodeType && p.NodeType !== "UNKNOWN" && n?.Type !== p.NodeType) return false;
		if (p.NodeSizeMin && (n?.Size ?? 0) < p.NodeSizeMin) return false;
		if (p.RootPath && !(n?.Path ?? "").startsWith(p.RootPath.replace(/^\/+/, ""))) return false;
		return true;
	});
	const offset = p.Offset ?? 0;
	const page = p.Limit ? resources.slice(offset, offset + p.Limit) : resources.slice(offset);
	return { Resources: page, Facets: facets, Offset: offset || undefined, Limit: p.Limit || undefined, Total: resources.length };
}
