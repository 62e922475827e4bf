// Cells (workspaces of scope ROOM shared with users, groups or roles) and public links (scope LINK, opened by a
// hash, visited as a hidden user): what PUT/GET/DELETE /share/cell and /share/link do, the shared resources of a
// user, share policies, and the checks of a link's visitor (login on its minisite, downloads counted). Storage and
// the other services are injected (services/share.service.ts wires them).
import { randomUUID } from "node:crypto";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "../errors";
import { isAdmin, type Identity } from "../auth/identity";
import { hasPolicy, type ResourcePolicy } from "../identity/resource-policy";
import type { ACL } from "../acl/model";
import type { AclClient } from "../workspaces/roots";
import { checkText, dedupSlug, MAX_DESCRIPTION, MAX_LABEL, rootsFromAcls, slugify, type WorkspaceDoc } from "../workspaces/model";
import type { LinkRecord, ShareLinksRepo } from "../db/share-links";
import type { Role } from "../identity/roles";
import { publicAttributes, type PublicUser } from "../identity/users";
import type { ShareNode } from "../contracts/tree";
import type { LinkOp, PublicLinkInfo, ShareChange } from "../contracts/share";
import { LINK_RESTRICTED_CODE } from "./minisite";
import {
	actionsToPermissions,
	checkCustomHash,
	checkPermissions,
	linkStatus,
	newHash,
	newHiddenLogin,
	ownerOf,
	ownerPolicies,
	permissionsToActions,
	presetPassword,
	settingsFrom,
	STATUS_MESSAGES,
	withMemberReads,
	SETTING_PREFIX,
	type CellAclIn,
	type CellIn,
	type CellOut,
	type NodeIn,
	type PutLinkIn,
	type ShareLinkOut,
	type ShareSettings,
	type SharedNode,
} from "./model";

export interface WorkspaceStore {
	byId(uuid: string): Promise<WorkspaceDoc | null>;
	all(): Promise<WorkspaceDoc[]>;
	slugsLike(base: string): Promise<Set<string>>;
	create(w: WorkspaceDoc): Promise<WorkspaceDoc>;
	update(w: WorkspaceDoc): Promise<WorkspaceDoc | null>;
	delete(uuid: string): Promise<boolean>;
}

export interface ShareDeps {
	workspaces: WorkspaceStore;
	links: ShareLinksRepo;
	acl: AclClient;
	/** A node read with `user`'s rights (404 when they cannot read it). */
	node(user: Identity, ref: NodeIn): Promise<ShareNode>;
	createCellRoot(user: Identity, label: string): Promise<ShareNode>;
	/** Deletes a folder made for a cell (CreateEmptyRoot) once nothing roots on it. */
	removeCellRoot(uuid: string): Promise<void>;
	setNodeMeta(uuid: string, key: string, value: string | null): Promise<void>;
	roles(uuids: string[]): Promise<Role[]>;
	userByUuid(uuid: string): Promise<PublicUser | null>;
	/** An identity for a user uuid (a link's hidden user), null when gone. */
	identityOf(uuid: string): Promise<Identity | null>;
	createHidden(owner: { Login: string; GroupPath: string }, login: string, password: string): Promise<{ Uuid: string; Login: string }>;
	deleteHidden(uuid: string): Promise<void>;
	changed(change: ShareChange): Promise<void>;
	/** Mails the invitations (queued, not awaited: SMTP never holds the answer; failures are logged). */
	invite(invitation: Invitation): void;
	/** The public base of link URLs ("/public" unless configured). */
	publicBase(): string;
	/** The server-wide share settings (configuration tree), which role parameters override; Cells' defaults without. */
	configured?(): Promise<ShareSettings>;
	now(): number;
}

/** Who is told by mail that a share now includes them. */
export type Invitation =
	| { kind: "cell"; inviter: Identity; cell: string; slug: string; users: string[] }
	| { kind: "link"; inviter: Identity; name: string; folder: boolean; url: string; targets: { key: string; display?: string }[]; accessEnd?: number; maxDownloads?: number };

const RIGHTS = ["read", "write"] as const;
/** Where a link's start workspace is set for its hidden user (Cells' DEFAULT_START_REPOSITORY parameter). */
const START_REPOSITORY = "parameter:core.conf:DEFAULT_START_REPOSITORY";
const SCOPE_ALL = "PYDIO_REPO_SCOPE_ALL";
const MAX_ROOTS = 100;
const MAX_MEMBERS = 1000;

function byRole(acls: ACL[]): Map<string, Set<string>> {
	const m = new Map<string, Set<string>>();
	for (const a of acls) {
		if (!a.RoleID || (a.Action?.Name !== "read" && a.Action?.Name !== "write")) continue;
		const s = m.get(a.RoleID) ?? new Set<string>();
		s.add(a.Action.Name);
		m.set(a.RoleID, s);
	}
	return m;
}

function rootsOf(acls: ACL[]): string[] {
	return rootsFromAcls(acls).RootUUIDs;
}

export class ShareManager {
	constructor(private readonly deps: ShareDeps) {}

	// ---------------------------------------------------------------- settings

	async settings(user: Identity): Promise<ShareSettings> {
		const acls = await this.deps.acl.find({ RoleIDs: user.Roles });
		const base = this.deps.configured ? await this.deps.configured() : undefined;
		return settingsFrom(acls.filter((a) => a.Action?.Name?.startsWith(SETTING_PREFIX)), user.Roles, base);
	}

	// ---------------------------------------------------------------- shared helpers

	private async share(uuid: string, scope: "ROOM" | "LINK"): Promise<WorkspaceDoc> {
		const doc = await this.deps.workspaces.byId(uuid);
		if (!doc || doc.Scope !== scope) throw new NotFoundError(scope === "ROOM" ? `Cell ${uuid} not found` : `Link ${uuid} not found`, scope === "ROOM" ? "cell.notfound" : "link.notfound");
		return doc;
	}

	private readable(doc: WorkspaceDoc, user: Identity, acls: ACL[]): boolean {
		if (isAdmin(user) || hasPolicy(doc.Policies, user, "READ")) return true;
		return acls.some((a) => a.RoleID && user.Roles.includes(a.RoleID) && (a.Action?.Name === "read" || a.Action?.Name === "write"));
	}

	private async newSlug(label: string): Promise<string> {
		const base = slugify(label) || "share";
		const taken = await this.deps.workspaces.slugsLike(base);
		return dedupSlug(base, (s) => taken.has(s));
	}

	/** Creates the workspace, choosing another slug when another request took this one meanwhile. */
	private async createWorkspace(doc: Omit<WorkspaceDoc, "Slug">, label: string): Promise<WorkspaceDoc> {
		for (let attempt = 1; ; attempt++) {
			try {
				return await this.deps.workspaces.create({ ...doc, Slug: await this.newSlug(label) });
			} catch (err) {
				if (!(err instanceof ConflictError) || attempt >= 5) throw err;
			}
		}
	}

	/** Puts `wanted` (role|node|action) rights on a workspace and removes the other read/write ACLs it had. */
	private async syncRights(ws: string, current: ACL[], wanted: { role: string; node: string; action: "read" | "write" }[]): Promise<void> {
		const key = (r: string, n: string, a: string) => `${r}|${n}|${a}`;
		const want = new Set(wanted.map((w) => key(w.role, w.node, w.action)));
		const have = new Set(current.filter((a) => a.RoleID && (a.Action?.Name === "read" || a.Action?.Name === "write")).map((a) => key(a.RoleID!, a.NodeID ?? "", a.Action!.Name)));
		for (const w of wanted) if (!have.has(key(w.role, w.node, w.action))) await this.deps.acl.put({ RoleID: w.role, WorkspaceID: ws, NodeID: w.node, Action: { Name: w.action, Value: "1" } });
		for (const a of current) {
			if (!a.RoleID || (a.Action?.Name !== "read" && a.Action?.Name !== "write")) continue;
			if (!want.has(key(a.RoleID, a.NodeID ?? "", a.Action.Name))) await this.deps.acl.deleteWhere({ RoleID: a.RoleID, WorkspaceID: ws, NodeID: a.NodeID ?? "", ActionName: a.Action.Name });
		}
	}

	private async syncRoots(ws: string, current: ACL[], roots: string[], created?: string): Promise<void> {
		const old = rootsOf(current);
		for (const r of roots) if (!old.includes(r)) await this.deps.acl.put({ WorkspaceID: ws, NodeID: r, Action: { Name: "workspace-path", Value: `uuid:${r}` } });
		if (created) await this.deps.acl.put({ WorkspaceID: ws, NodeID: created, Action: { Name: "recycle_root", Value: "1" } });
		for (const r of old) if (!roots.includes(r)) await this.deps.acl.deleteWhere({ WorkspaceID: ws, NodeID: r });
	}

	/**
	 * `workspaces_shares` of a node: the cells and links rooted on it, as the listing's metadata shows them (Cells'
	 * share meta provider). Recomputed from the ACLs after each change of a share on it.
	 */
	async refreshNodeMeta(nodes: string[]): Promise<void> {
		const unique = [...new Set(nodes)];
		const all = unique.length ? (await this.deps.acl.find({ NodeIDs: unique, Actions: ["workspace-path"] })).filter((a) => a.WorkspaceID) : [];
		for (const node of unique) {
			const acls = all.filter((a) => a.NodeID === node);
			const docs = acls.length ? await Promise.all([...new Set(acls.map((a) => a.WorkspaceID as string))].map((id) => this.deps.workspaces.byId(id))) : [];
			const shares = docs.filter((d): d is WorkspaceDoc => !!d && (d.Scope === "ROOM" || d.Scope === "LINK")).map((d) => ({ UUID: d.UUID, Label: d.Label, Description: d.Description || undefined, Slug: d.Slug, Scope: d.Scope }));
			await this.deps.setNodeMeta(node, "workspaces_shares", shares.length ? JSON.stringify(shares) : null);
		}
	}

	/** A node the caller may read: only what one reads can be shared. */
	private async readableNode(user: Identity, ref: NodeIn): Promise<ShareNode> {
		const n = await this.deps.node(user, ref);
		if (!n.readable) throw new ForbiddenError("You can only share what you can read", "node.not.readable");
		return n;
	}

	private async rootNodes(user: Identity, roots: string[]): Promise<SharedNode[]> {
		const out: SharedNode[] = [];
		for (const r of roots) {
			try {
				const n = await this.deps.node(user, { Uuid: r });
				out.push({ ...n.Node, AppearsIn: n.AppearsIn });
			} catch {
				// Not visible to this caller (or deleted): named only.
				out.push({ Uuid: r, Path: "", Type: "COLLECTION" });
			}
		}
		return out;
	}

	// ---------------------------------------------------------------- cells

	async putCell(user: Identity, room: CellIn | undefined, createEmptyRoot: boolean): Promise<CellOut> {
		if (!room || typeof room !== "object") throw new BadRequestError("Room is required");
		if (user.Hidden) throw new ForbiddenError("A public link's visitor cannot share", "cell.forbidden");
		const existing = room.Uuid ? await this.share(room.Uuid, "ROOM") : null;
		if (existing && !hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this cell", "cell.forbidden");
		const label = checkText("Label", room.Label ?? existing?.Label, MAX_LABEL).trim();
		if (!label) throw new BadRequestError("Label is required");
		const description = checkText("Description", room.Description ?? existing?.Description, MAX_DESCRIPTION);
		const current = existing ? await this.deps.acl.find({ WorkspaceIDs: [existing.UUID] }) : [];

		// Roots: read with the caller's rights; none given on an update keeps the current ones.
		const asked = room.RootNodes ?? [];
		if (asked.length > MAX_ROOTS) throw new BadRequestError(`A cell has at most ${MAX_ROOTS} roots`);
		const roots: ShareNode[] = [];
		for (const r of asked) {
			if (!r || (!r.Uuid && !r.Path)) throw new BadRequestError("Every root node needs a Uuid or a Path");
			const n = await this.readableNode(user, r.Uuid ? { Uuid: r.Uuid } : { Path: r.Path });
			if (!roots.some((x) => x.Uuid === n.Uuid)) roots.push(n);
		}
		let createdRoot: ShareNode | undefined;
		if (!existing && createEmptyRoot) {
			createdRoot = await this.deps.createCellRoot(user, label);
			roots.push(createdRoot);
		}
		let rootIds = roots.map((r) => r.Uuid);
		if (!rootIds.length && existing) rootIds = rootsOf(current);
		if (!rootIds.length) throw new BadRequestError("missing RootNodes", "cell.noroot");
		const readonly = roots.some((r) => !r.writable);

		const settings = await this.settings(user);
		for (const r of roots) {
			if (r.Type === "LEAF" && !settings.ENABLE_FILE_INTERNAL_SHARING) throw new ForbiddenError("You are not allowed to share files with other users", "file.share-internal.forbidden");
			if (r.Type === "COLLECTION" && !settings.ENABLE_FOLDER_INTERNAL_SHARING) throw new ForbiddenError("You are not allowed to share folders with other users", "folder.share-internal.forbidden");
		}

		// Members: each ACL entry names a role (a user's own role, a group's, or a role) and read/write. An update
		// without ACLs keeps the members the cell has (an empty map is what removes them all).
		const entries: [string, CellAclIn][] = room.ACLs
			? Object.entries(room.ACLs)
			: [...byRole(current)].map(([role, acts]) => [role, { RoleId: role, Actions: [...acts].map((Name) => ({ Name })) }]);
		if (entries.length > MAX_MEMBERS) throw new BadRequestError(`A cell has at most ${MAX_MEMBERS} members`);
		const members = new Map<string, Set<"read" | "write">>();
		for (const [key, e] of entries) {
			const role = String(e?.RoleId || key || "");
			if (!role || role.length > 255 || /[\u0000-\u001f\u007f\\/]/.test(role)) throw new BadRequestError(`Invalid RoleId "${role.slice(0, 60)}"`);
			const actions = new Set<"read" | "write">();
			for (const a of e?.Actions ?? []) {
				if (a?.Name !== "read" && a?.Name !== "write") throw new BadRequestError(`Unknown cell ACL action "${String(a?.Name).slice(0, 40)}": read or write`);
				actions.add(a.Name);
			}
			if (actions.has("write") && readonly) throw new ForbiddenError("One of the roots is read-only: members cannot get write access", "node.readonly");
			if (actions.size) members.set(role, actions);
		}
		const known = await this.deps.roles([...members.keys()]);
		for (const id of members.keys()) if (!known.some((r) => r.Uuid === id)) throw new BadRequestError(`Unknown user, group or role ${id.slice(0, 60)}`, "role.notfound");

		const ownerUuid = existing ? ownerOf(existing.Policies) || user.Uuid : user.Uuid;
		// The creator always reads (and writes unless a root is read-only).
		const ownerActions = new Set<"read" | "write">(readonly ? ["read"] : ["read", "write"]);
		members.set(ownerUuid, new Set([...(members.get(ownerUuid) ?? []), ...ownerActions]));
		const wanted = rootIds.flatMap((node) => [...members].flatMap(([role, acts]) => [...acts].map((action) => ({ role, node, action }))));

		const uuid = existing?.UUID ?? randomUUID();
		const basePolicies = room.Policies?.length && existing ? room.Policies.map((p) => ({ ...p, Resource: uuid })) : existing?.Policies ?? ownerPolicies(uuid, user.Uuid);
		const policies = withMemberReads(basePolicies, uuid, [...members.keys()].filter((m) => m !== ownerUuid));
		const doc: Omit<WorkspaceDoc, "Slug"> = { UUID: uuid, Label: label, Description: description, Scope: "ROOM", LastUpdated: this.deps.now(), Policies: policies, Attributes: existing?.Attributes ?? "{}" };
		let stored: WorkspaceDoc;
		if (existing) {
			const updated = await this.deps.workspaces.update({ ...doc, Slug: existing.Slug });
			if (!updated) throw new NotFoundError(`Cell ${uuid} not found`, "cell.notfound");
			stored = updated;
		} else stored = await this.createWorkspace(doc, label);
		// Roots before rights: a member never sees the cell without its roots.
		await this.syncRoots(uuid, current, rootIds, createdRoot?.Uuid);
		await this.syncRights(uuid, current, wanted);
		await this.refreshNodeMeta([...rootIds, ...rootsOf(current)]);
		await this.deps.changed({ Uuid: uuid, Scope: "ROOM", Action: existing ? "update" : "create", OwnerUuid: ownerUuid, Members: [...members.keys()], Roots: rootIds });
		// New members that are users (their own role) hear of it by mail; groups and roles are not mailed.
		const before = byRole(current);
		const invited = known.filter((r) => r.UserRole && !before.has(r.Uuid) && r.Uuid !== ownerUuid && r.Uuid !== user.Uuid).map((r) => r.Uuid);
		if (invited.length) this.deps.invite({ kind: "cell", inviter: user, cell: stored.Label, slug: stored.Slug, users: invited });
		return this.presentCell(stored, user);
	}

	async getCell(user: Identity, uuid: string): Promise<CellOut> {
		const doc = await this.share(uuid, "ROOM");
		const acls = await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] });
		if (!this.readable(doc, user, acls)) throw new NotFoundError(`Cell ${uuid} not found`, "cell.notfound");
		return this.presentCell(doc, user, acls);
	}

	async deleteCell(user: Identity, uuid: string): Promise<{ Success: true }> {
		const doc = await this.share(uuid, "ROOM");
		if (!hasPolicy(doc.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to delete this cell", "cell.forbidden");
		const acls = await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] });
		await this.deps.workspaces.delete(doc.UUID);
		await this.deps.acl.deleteWhere({ WorkspaceID: doc.UUID });
		// The folder made for the cell goes with it (Cells deletes it in a background job).
		for (const a of acls) if (a.Action?.Name === "recycle_root" && a.NodeID) await this.deps.removeCellRoot(a.NodeID);
		await this.refreshNodeMeta(rootsOf(acls));
		await this.deps.changed({ Uuid: doc.UUID, Scope: "ROOM", Action: "delete", OwnerUuid: ownerOf(doc.Policies), Members: [...byRole(acls).keys()], Roots: rootsOf(acls) });
		return { Success: true };
	}

	async presentCell(doc: WorkspaceDoc, user: Identity, acls?: ACL[]): Promise<CellOut> {
		const list = acls ?? (await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] }));
		const rights = byRole(list);
		const roles = await this.deps.roles([...rights.keys()]);
		const ACLs: CellOut["ACLs"] = {};
		for (const [role, acts] of rights) {
			const r = roles.find((x) => x.Uuid === role);
			const entry: CellOut["ACLs"][string] = { RoleId: role, Actions: RIGHTS.filter((a) => acts.has(a)).map((Name) => ({ Name, Value: "1" })) };
			if (r?.UserRole) {
				const u = await this.deps.userByUuid(role);
				entry.IsUserRole = true;
				if (u) entry.User = { Uuid: u.Uuid, Login: u.Login, GroupPath: u.GroupPath, Attributes: u.Attributes ? publicAttributes(u.Attributes) : undefined };
			} else if (r?.GroupRole) {
				const g = await this.deps.userByUuid(role);
				if (g) entry.Group = { Uuid: g.Uuid, IsGroup: true, GroupLabel: g.GroupLabel, GroupPath: g.GroupPath, Attributes: g.Attributes ? publicAttributes(g.Attributes) : undefined };
			} else if (r) entry.Role = { Uuid: r.Uuid, Label: r.Label };
			ACLs[role] = entry;
		}
		return {
			Uuid: doc.UUID,
			Label: doc.Label,
			Description: doc.Description || undefined,
			RootNodes: await this.rootNodes(user, rootsOf(list)),
			ACLs,
			Policies: doc.Policies,
			PoliciesContextEditable: hasPolicy(doc.Policies, user, "WRITE"),
		};
	}

	// ---------------------------------------------------------------- links

	async putLink(user: Identity, body: PutLinkIn): Promise<ShareLinkOut> {
		const link = body.ShareLink;
		if (!link || typeof link !== "object") throw new BadRequestError("ShareLink is required");
		if (user.Hidden) throw new ForbiddenError("A public link's visitor cannot create links", "link.forbidden");
		const existing = link.Uuid ? await this.share(link.Uuid, "LINK") : null;
		const record = existing ? await this.deps.links.byWorkspace(existing.UUID) : null;
		if (existing && !record) throw new NotFoundError(`Link ${link.Uuid} not found`, "link.notfound");
		if (existing && !hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this link", "link.forbidden");
		const label = checkText("Label", link.Label ?? existing?.Label, MAX_LABEL).trim();
		if (!label) throw new BadRequestError("Label is required");
		const description = checkText("Description", link.Description ?? existing?.Description, MAX_DESCRIPTION);
		const settings = await this.settings(user);

		// Roots.
		const current = existing ? await this.deps.acl.find({ WorkspaceIDs: [existing.UUID] }) : [];
		const roots: ShareNode[] = [];
		for (const r of link.RootNodes ?? []) {
			if (!r?.Uuid) throw new BadRequestError("Every root node needs a Uuid");
			const n = await this.readableNode(user, { Uuid: r.Uuid });
			if (!roots.some((x) => x.Uuid === n.Uuid)) roots.push(n);
		}
		if (roots.length > MAX_ROOTS) throw new BadRequestError(`A link has at most ${MAX_ROOTS} roots`);
		if (!roots.length && existing) for (const id of rootsOf(current)) roots.push(await this.deps.node(user, { Uuid: id }));
		if (!roots.length) throw new BadRequestError("missing RootNodes", "link.noroot");
		for (const r of roots) {
			if (r.Type === "LEAF" && !settings.ENABLE_FILE_PUBLIC_LINK) throw new ForbiddenError("You are not allowed to create public links on files", "file.public-link.forbidden");
			if (r.Type === "COLLECTION" && !settings.ENABLE_FOLDER_PUBLIC_LINK) throw new ForbiddenError("You are not allowed to create public links on folders", "folder.public-link.forbidden");
		}
		// Not sent on an update: the link keeps the permissions it has.
		const held = record ? byRole(current).get(record.userUuid) ?? new Set<string>() : undefined;
		const perms = checkPermissions(link.Permissions ?? (held && record ? actionsToPermissions(held.has("read"), held.has("write"), "", !!record.extra.DownloadDisabled) : ["Preview", "Download"]));
		if (perms.includes("Upload") && roots.some((r) => !r.writable)) throw new ForbiddenError("One of the roots is read-only: the link cannot allow uploads", "node.readonly");
		if (perms.includes("Upload") && roots.some((r) => r.Type === "LEAF")) throw new BadRequestError("Uploads need a folder: a link on a file cannot allow them");

		// Limits.
		const num = (v: unknown, what: string) => {
			const n = v === undefined || v === null || v === "" ? 0 : Number(v);
			if (!Number.isInteger(n) || n < 0 || n > 2 ** 53) throw new BadRequestError(`${what} must be a non-negative integer`);
			return n;
		};
		const maxDownloads = num(link.MaxDownloads ?? record?.downloadLimit, "MaxDownloads");
		const accessStart = num(link.AccessStart ?? record?.accessStart, "AccessStart");
		const accessEnd = num(link.AccessEnd ?? record?.accessEnd, "AccessEnd");
		if (accessEnd && accessStart && accessEnd <= accessStart) throw new BadRequestError("AccessEnd must come after AccessStart");
		if (settings.FILE_MAX_DOWNLOAD && (!maxDownloads || maxDownloads > settings.FILE_MAX_DOWNLOAD)) throw new ForbiddenError(`Links allow at most ${settings.FILE_MAX_DOWNLOAD} downloads`, "link.max-download");
		if (settings.FILE_MAX_EXPIRATION) {
			const limit = this.deps.now() + settings.FILE_MAX_EXPIRATION * 86400;
			if (!accessEnd || accessEnd > limit) throw new ForbiddenError(`Links must expire within ${settings.FILE_MAX_EXPIRATION} days`, "link.max-expiration");
		}
		const template = checkText("ViewTemplateName", link.ViewTemplateName ?? record?.template ?? "", 128) || (roots[0].Type === "LEAF" ? "pydio_unique_strip" : "pydio_shared_folder");
		if (!/^[A-Za-z0-9_.-]*$/.test(template)) throw new BadRequestError("ViewTemplateName holds forbidden characters");

		// Password.
		const wasProtected = record?.passwordRequired ?? false;
		const enabled = body.PasswordEnabled ?? wasProtected;
		const newPassword = enabled ? (existing ? (wasProtected ? body.UpdatePassword : body.CreatePassword || body.UpdatePassword) : body.CreatePassword || body.UpdatePassword) : undefined;
		if (enabled && !wasProtected && !newPassword) throw new BadRequestError("CreatePassword is required to protect the link with a password");
		if (newPassword !== undefined && newPassword !== "" && (typeof newPassword !== "string" || newPassword.length < 1 || newPassword.length > 1024)) throw new BadRequestError("The password must have 1 to 1024 characters");
		if (settings.SHARE_FORCE_PASSWORD && !enabled) throw new ForbiddenError("A password is required for public links", "link.password.required");

		// Hash.
		let hash = record?.hash ?? "";
		const custom = body.UpdateCustomHash || (!existing && link.LinkHash) || "";
		if (custom && custom !== hash) {
			if (!settings.HASH_USER_EDITABLE) throw new ForbiddenError("Link hashes cannot be chosen", "link.hash.not-editable");
			if (custom.length < settings.HASH_MIN_LENGTH) throw new ForbiddenError(`A link hash needs at least ${settings.HASH_MIN_LENGTH} characters`, "link.hash.min-length");
			hash = checkCustomHash(custom, settings.HASH_MIN_LENGTH);
			const taken = await this.deps.links.byHash(hash);
			if (taken && taken.workspace !== existing?.UUID) throw new ConflictError("hash is already in use", "link.hash.exists");
		}
		if (!hash) hash = newHash(settings.HASH_MIN_LENGTH);

		const uuid = existing?.UUID ?? randomUUID();
		const owner = record ? { uuid: record.ownerUuid, login: record.ownerLogin } : { uuid: user.Uuid, login: user.Login };
		let hidden = record ? { Uuid: record.userUuid, Login: record.userLogin } : undefined;
		const passwordChanged = !!existing && (enabled !== wasProtected || (enabled && !!newPassword));
		const password = enabled ? newPassword : undefined;
		if (!hidden) {
			const login = newHiddenLogin();
			hidden = await this.deps.createHidden({ Login: owner.login, GroupPath: user.GroupPath }, login, password || presetPassword(login));
		} else if (passwordChanged) {
			// As Cells: a password switched on, off or changed deletes the hidden user and makes it again.
			const ownerGroup = (await this.deps.userByUuid(owner.uuid))?.GroupPath ?? user.GroupPath;
			await this.deps.acl.deleteWhere({ RoleID: hidden.Uuid });
			await this.deps.deleteHidden(hidden.Uuid);
			hidden = await this.deps.createHidden({ Login: owner.login, GroupPath: ownerGroup }, hidden.Login, password || presetPassword(hidden.Login));
		}

		const basePolicies = existing?.Policies ?? ownerPolicies(uuid, owner.uuid);
		const policies = [...basePolicies.filter((p) => !(p.Action === "READ" && p.Subject?.startsWith("user:") && p.Subject !== `user:${owner.uuid}`)), { Resource: uuid, Action: "READ" as const, Subject: `user:${hidden.Login}`, Effect: "allow" as const }];
		const doc: Omit<WorkspaceDoc, "Slug"> = { UUID: uuid, Label: label, Description: description, Scope: "LINK", LastUpdated: this.deps.now(), Policies: policies, Attributes: existing?.Attributes ?? "{}" };
		const next: LinkRecord = {
			hash,
			workspace: uuid,
			ownerUuid: owner.uuid,
			ownerLogin: owner.login,
			template,
			accessStart,
			accessEnd,
			downloadLimit: maxDownloads,
			downloadCount: record?.downloadCount ?? 0,
			userUuid: hidden.Uuid,
			userLogin: hidden.Login,
			passwordRequired: enabled,
			createdAt: record?.createdAt ?? this.deps.now(),
			extra: {
				TargetUsers: link.TargetUsers ?? record?.extra.TargetUsers,
				RestrictToTargetUsers: link.RestrictToTargetUsers ?? record?.extra.RestrictToTargetUsers,
				DownloadDisabled: perms.includes("Preview") && !perms.includes("Download") ? true : undefined,
			},
		};
		if (existing) {
			if (!(await this.deps.workspaces.update({ ...doc, Slug: existing.Slug }))) throw new NotFoundError(`Link ${uuid} not found`, "link.notfound");
			if (!(await this.deps.links.update(next, record!.hash))) throw new NotFoundError(`Link ${uuid} not found`, "link.notfound");
		} else {
			await this.createWorkspace(doc, label);
			try {
				await this.deps.links.create(next);
			} catch (err) {
				// The hash was taken meanwhile: nothing of this link is left behind.
				await this.deps.workspaces.delete(uuid);
				await this.deps.deleteHidden(hidden.Uuid);
				throw err;
			}
		}
		const rootIds = roots.map((r) => r.Uuid);
		await this.syncRoots(uuid, current, rootIds);
		const actions = permissionsToActions(perms);
		await this.syncRights(
			uuid,
			passwordChanged ? [] : current,
			rootIds.flatMap((node) => actions.map((action) => ({ role: hidden!.Uuid, node, action }))),
		);
		await this.deps.acl.put({ RoleID: hidden.Uuid, WorkspaceID: SCOPE_ALL, Action: { Name: START_REPOSITORY, Value: uuid } });
		await this.refreshNodeMeta([...rootIds, ...rootsOf(current)]);
		await this.deps.changed({ Uuid: uuid, Scope: "LINK", Action: existing ? "update" : "create", OwnerUuid: owner.uuid, Members: [hidden.Uuid], Roots: rootIds });
		// Cells sends the link to the users chosen in TargetUsers, each with its identification key (`?u=<key>`):
		// those added by this request are mailed.
		const previous = record?.extra.TargetUsers ?? {};
		const targets = Object.entries(link.TargetUsers ?? {}).filter(([key]) => key && !Object.hasOwn(previous, key)).map(([key, t]) => ({ key, display: t?.Display || undefined }));
		if (targets.length) {
			this.deps.invite({
				kind: "link",
				inviter: user,
				name: roots[0].name || label,
				folder: roots[0].Type === "COLLECTION",
				url: `${this.deps.publicBase()}/${hash}`,
				targets,
				accessEnd: accessEnd || undefined,
				maxDownloads: maxDownloads || undefined,
			});
		}
		return this.getLink(user, uuid);
	}

	async getLink(user: Identity, uuid: string): Promise<ShareLinkOut> {
		const doc = await this.share(uuid, "LINK");
		const record = await this.deps.links.byWorkspace(doc.UUID);
		const acls = await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] });
		if (!record || !this.readable(doc, user, acls)) throw new NotFoundError(`Link ${uuid} not found`, "link.notfound");
		return this.presentLink(doc, record, acls, user);
	}

	async presentLink(doc: WorkspaceDoc, record: LinkRecord, acls: ACL[], user: Identity): Promise<ShareLinkOut> {
		const mine = byRole(acls).get(record.userUuid) ?? new Set<string>();
		return {
			Uuid: doc.UUID,
			LinkHash: record.hash,
			LinkUrl: `${this.deps.publicBase()}/${record.hash}`,
			Label: doc.Label,
			Description: doc.Description || undefined,
			UserUuid: record.userUuid,
			UserLogin: record.userLogin,
			PasswordRequired: record.passwordRequired,
			AccessStart: record.accessStart || undefined,
			AccessEnd: record.accessEnd || undefined,
			MaxDownloads: record.downloadLimit || undefined,
			CurrentDownloads: record.downloadCount || undefined,
			ViewTemplateName: record.template || undefined,
			TargetUsers: record.extra.TargetUsers,
			RestrictToTargetUsers: record.extra.RestrictToTargetUsers,
			RootNodes: await this.rootNodes(user, rootsOf(acls)),
			Permissions: actionsToPermissions(mine.has("read"), mine.has("write"), record.template, !!record.extra.DownloadDisabled),
			Policies: doc.Policies,
			PoliciesContextEditable: hasPolicy(doc.Policies, user, "WRITE"),
		};
	}

	async deleteLink(user: Identity, uuid: string): Promise<{ Success: true }> {
		const doc = await this.share(uuid, "LINK");
		if (!hasPolicy(doc.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to delete this link", "link.forbidden");
		const record = await this.deps.links.byWorkspace(doc.UUID);
		const acls = await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] });
		// The hash first: from now on the link opens nothing, whatever the rest of the clean-up meets.
		if (record) await this.deps.links.delete(record.hash);
		await this.deps.workspaces.delete(doc.UUID);
		await this.deps.acl.deleteWhere({ WorkspaceID: doc.UUID });
		if (record) {
			await this.deps.acl.deleteWhere({ RoleID: record.userUuid });
			await this.deps.deleteHidden(record.userUuid);
		}
		await this.refreshNodeMeta(rootsOf(acls));
		await this.deps.changed({ Uuid: doc.UUID, Scope: "LINK", Action: "delete", OwnerUuid: record?.ownerUuid ?? ownerOf(doc.Policies), Members: record ? [record.userUuid] : [], Roots: rootsOf(acls) });
		return { Success: true };
	}

	// ---------------------------------------------------------------- visitors

	/** What /public/<hash> shows before a visitor logs in. */
	async publicLink(hash: string): Promise<PublicLinkInfo> {
		const record = hash && hash.length <= 128 ? await this.deps.links.byHash(hash) : null;
		const doc = record ? await this.deps.workspaces.byId(record.workspace) : null;
		if (!record || !doc) return { Status: "unknown", Hash: hash };
		const acls = await this.deps.acl.find({ WorkspaceIDs: [doc.UUID] });
		const mine = byRole(acls).get(record.userUuid) ?? new Set<string>();
		const info: PublicLinkInfo = {
			Status: linkStatus(record, this.deps.now()),
			Hash: hash,
			Label: doc.Label,
			Description: doc.Description || undefined,
			Login: record.userLogin,
			PasswordRequired: record.passwordRequired,
			TemplateName: record.template || undefined,
			Permissions: actionsToPermissions(mine.has("read"), mine.has("write"), record.template, !!record.extra.DownloadDisabled),
			MaxDownloads: record.downloadLimit || undefined,
			CurrentDownloads: record.downloadLimit ? record.downloadCount : undefined,
			AccessEnd: record.accessEnd || undefined,
		};
		// Where the visitor finds the shared node: as the hidden user sees it, in the link's workspace.
		const visitor = await this.deps.identityOf(record.userUuid);
		const root = rootsOf(acls)[0];
		if (visitor && root) {
			const n = await this.deps.node(visitor, { Uuid: root }).catch(() => null);
			const place = n?.AppearsIn.find((a) => a.WsUuid === doc.UUID);
			if (n && place) {
				info.RootPath = place.Path;
				info.RootIsFile = n.Type === "LEAF";
			} else if (info.Status === "ok") {
				// The shared node is gone (deleted, or in a recycle bin): the page says the link no longer opens.
				return { Status: "unknown", Hash: hash };
			}
		}
		return info;
	}

	/** A hidden user logs in only on its own link's minisite, and only while the link can be used. */
	async minisiteLogin(login: string, hash: string | undefined, target?: string): Promise<void> {
		const forbidden = () => new UnauthorizedError("You are not allowed to log in to this interface", "login.forbidden");
		if (!hash) throw forbidden();
		const record = await this.deps.links.byUserLogin(login);
		if (!record || record.hash !== hash) throw forbidden();
		const status = linkStatus(record, this.deps.now());
		if (status !== "ok") throw new UnauthorizedError(STATUS_MESSAGES[status], `link.${status}`);
		// As Cells' minisite: a link sent to chosen users carries their identification key (`?u=<key>`, a key of
		// TargetUsers); restricted to them, it opens only with one of those keys.
		const targets = record.extra.TargetUsers ?? {};
		if (record.extra.RestrictToTargetUsers && Object.keys(targets).length && !(target && Object.hasOwn(targets, target))) {
			throw new UnauthorizedError("This link is restricted to the users it was sent to: open it from the address you received", LINK_RESTRICTED_CODE);
		}
	}

	/**
	 * A link user's access at the /io gateway: refused once the link expired (or before it starts); a download is
	 * counted, atomically, and refused once the limit is reached. Other users pass, nothing counted.
	 */
	async linkAccess(login: string, op: LinkOp): Promise<{ Link: boolean; CurrentDownloads?: number }> {
		const record = await this.deps.links.byUserLogin(login);
		if (!record) return { Link: false };
		const status = linkStatus({ ...record, downloadLimit: 0 }, this.deps.now());
		if (status !== "ok") throw new ForbiddenError(STATUS_MESSAGES[status], `link.${status}`);
		// A preview-only link (Permissions without Download) shows its files inline, never as a file to save or a zip.
		if (op === "save" && record.extra.DownloadDisabled) throw new ForbiddenError("This link allows previews only: its files cannot be downloaded", "link.download.disabled");
		if (op !== "download" && op !== "save") return { Link: true };
		const outcome = await this.deps.links.countDownload(login);
		if (outcome === "exhausted") throw new ForbiddenError(STATUS_MESSAGES.exhausted, "link.exhausted");
		if (outcome === "unknown") throw new ForbiddenError(STATUS_MESSAGES.unknown, "link.unknown");
		return { Link: true, CurrentDownloads: record.downloadCount + 1 };
	}

	// ---------------------------------------------------------------- listings and policies

	/** POST /share/resources: the caller's cells and links (an admin's: anyone's, or a subject's), by root node. */
	async resources(user: Identity, p: { ShareType?: string; OwnedBySubject?: boolean; Subject?: string; Offset?: number; Limit?: number }) {
		if (p.Subject && !isAdmin(user)) throw new ForbiddenError("Only administrators can list the shares of another subject", "share.subject.forbidden");
		const type = p.ShareType ?? "ANY";
		const scopes = type === "CELLS" ? ["ROOM"] : type === "LINKS" ? ["LINK"] : ["ROOM", "LINK"];
		const subjectMatches = (doc: WorkspaceDoc, action: "READ" | "OWNER") =>
			doc.Policies.some((pol: ResourcePolicy) => (pol.Effect ?? "allow") === "allow" && pol.Subject === p.Subject && (pol.Action === action || (action === "READ" && (pol.Action === "OWNER" || pol.Action === "WRITE"))));
		const docs = (await this.deps.workspaces.all()).filter((d) => {
			if (!scopes.includes(d.Scope)) return false;
			if (p.Subject) return subjectMatches(d, p.OwnedBySubject ? "OWNER" : "READ");
			if (p.OwnedBySubject) return ownerOf(d.Policies) === user.Uuid;
			// An admin without a subject sees every share; anyone else those they own or may read.
			return isAdmin(user) || ownerOf(d.Policies) === user.Uuid || hasPolicy(d.Policies, user, "READ");
		});
		const byNode = new Map<string, { Node: SharedNode; Link?: Partial<ShareLinkOut>; Cells: Partial<CellOut>[] }>();
		const { aclsOf, linkOf } = await this.sharesData(docs);
		for (const d of docs) {
			const acls = aclsOf(d.UUID);
			const record = d.Scope === "LINK" ? linkOf(d.UUID) : null;
			if (d.Scope === "LINK" && !record) continue;
			for (const root of rootsOf(acls)) {
				let entry = byNode.get(root);
				if (!entry) {
					const n = await this.deps.node(user, { Uuid: root }).catch(() => null);
					// A deleted root is skipped; one the caller does not reach (an admin's view) is named only.
					if (!n && !isAdmin(user)) continue;
					entry = { Node: n ? { ...n.Node, AppearsIn: n.AppearsIn } : { Uuid: root, Path: "", Type: "COLLECTION" }, Cells: [] };
					byNode.set(root, entry);
				}
				const light = { Uuid: d.UUID, Label: d.Label, Description: d.Description || undefined, Policies: d.Policies, PoliciesContextEditable: hasPolicy(d.Policies, user, "WRITE") };
				if (record) entry.Link = { ...light, LinkHash: record.hash, LinkUrl: `${this.deps.publicBase()}/${record.hash}`, UserUuid: record.userUuid, UserLogin: record.userLogin };
				else entry.Cells.push(light);
			}
		}
		const all = [...byNode.values()].map((r) => ({ Node: r.Node, Link: r.Link, Cells: r.Cells.length ? r.Cells : undefined }));
		const offset = p.Offset ?? 0;
		const Resources = p.Limit ? all.slice(offset, offset + p.Limit) : all.slice(offset);
		return { Resources, Offset: offset || undefined, Limit: p.Limit || undefined, Total: all.length };
	}

	/** PUT /share/policies: a cell's or link's policies replaced by whoever may write it. */
	async updatePolicies(user: Identity, uuid: string, policies: ResourcePolicy[]) {
		const doc = await this.deps.workspaces.byId(uuid);
		if (!doc) throw new NotFoundError(`Share ${uuid} not found`, "share.notfound");
		if (doc.Scope !== "ROOM" && doc.Scope !== "LINK") throw new ForbiddenError("Only the policies of cells and links can be changed here", "share.forbidden");
		if (!hasPolicy(doc.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this share", "share.forbidden");
		const next = policies.map((p) => ({ ...p, Resource: uuid }));
		// The caller keeps the right to edit what they just edited, unless they are an admin.
		if (!next.length) throw new BadRequestError("Policies must not be empty");
		const updated = await this.deps.workspaces.update({ ...doc, Policies: next, LastUpdated: this.deps.now() });
		if (!updated) throw new NotFoundError(`Share ${uuid} not found`, "share.notfound");
		await this.deps.changed({ Uuid: uuid, Scope: doc.Scope, Action: "update", OwnerUuid: ownerOf(updated.Policies) });
		return { Success: true, Policies: updated.Policies, PoliciesContextEditable: hasPolicy(updated.Policies, user, "WRITE") };
	}

	/** Every share with its roots and rights, for the administrators' audit. */
	async auditShares(): Promise<{ doc: WorkspaceDoc; acls: ACL[]; link: LinkRecord | null }[]> {
		const docs = await this.deps.workspaces.all();
		const { aclsOf, linkOf } = await this.sharesData(docs);
		return docs.map((d) => ({ doc: d, acls: aclsOf(d.UUID), link: d.Scope === "LINK" ? linkOf(d.UUID) : null }));
	}

	/** The ACLs and link records of many workspaces in two queries, not two per workspace. */
	private async sharesData(docs: WorkspaceDoc[]): Promise<{ aclsOf(uuid: string): ACL[]; linkOf(uuid: string): LinkRecord | null }> {
		const acls = docs.length ? await this.deps.acl.find({ WorkspaceIDs: docs.map((d) => d.UUID) }) : [];
		const byWs = new Map<string, ACL[]>();
		for (const a of acls) {
			if (!a.WorkspaceID) continue;
			const list = byWs.get(a.WorkspaceID);
			if (list) list.push(a);
			else byWs.set(a.WorkspaceID, [a]);
		}
		const links = docs.some((d) => d.Scope === "LINK") ? await this.deps.links.all() : [];
		const byLinkWs = new Map(links.map((l) => [l.workspace, l]));
		return { aclsOf: (uuid) => byWs.get(uuid) ?? [], linkOf: (uuid) => byLinkWs.get(uuid) ?? null };
	}
}

