// Cells and public links as Cells' REST layer shows them (rest.Cell, rest.ShareLink), and the pure rules between
// that view and what is stored: workspaces (scope ROOM / LINK), ACLs on their roots, the link record.
import { randomBytes, randomUUID } from "node:crypto";
import { BadRequestError } from "../errors";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { TreeNode } from "../tree/model";
import type { LinkRecord } from "../db/share-links";
import type { PublicLinkStatus } from "../contracts/share";

export type LinkPermission = "Preview" | "Download" | "Upload";
export const LINK_PERMISSIONS: LinkPermission[] = ["Preview", "Download", "Upload"];

export interface ACLActionIn {
	Name?: string;
	Value?: string;
}

export interface CellAclIn {
	RoleId?: string;
	Actions?: ACLActionIn[];
	IsUserRole?: boolean;
	User?: { Uuid?: string; Login?: string };
	Group?: { Uuid?: string };
	Role?: { Uuid?: string };
}

export interface NodeIn {
	Uuid?: string;
	Path?: string;
}

export interface CellIn {
	Uuid?: string;
	Label?: string;
	Description?: string;
	RootNodes?: NodeIn[];
	ACLs?: Record<string, CellAclIn>;
	Policies?: ResourcePolicy[];
	AccessEnd?: number;
}

export interface ShareLinkIn {
	Uuid?: string;
	LinkHash?: string;
	Label?: string;
	Description?: string;
	AccessStart?: number;
	AccessEnd?: number;
	MaxDownloads?: number;
	ViewTemplateName?: string;
	TargetUsers?: Record<string, { Display?: string; DownloadCount?: number }>;
	RestrictToTargetUsers?: boolean;
	RootNodes?: NodeIn[];
	Permissions?: string[];
	Policies?: ResourcePolicy[];
}

export interface PutLinkIn {
	ShareLink: ShareLinkIn;
	PasswordEnabled?: boolean;
	CreatePassword?: string;
	UpdatePassword?: string;
	UpdateCustomHash?: string;
}

/** A node with the places it appears for the caller (treeNode.AppearsIn). */
export type SharedNode = TreeNode & { AppearsIn?: { WsUuid: string; WsLabel: string; WsSlug: string; WsScope: string; Path: string }[] };

export interface CellOut {
	Uuid: string;
	Label: string;
	Description?: string;
	RootNodes: SharedNode[];
	ACLs: Record<string, { RoleId: string; Actions: { Name: string; Value: string }[]; IsUserRole?: boolean; User?: unknown; Group?: unknown; Role?: unknown }>;
	Policies: ResourcePolicy[];
	PoliciesContextEditable: boolean;
}

export interface ShareLinkOut {
	Uuid: string;
	LinkHash: string;
	LinkUrl: string;
	Label: string;
	Description?: string;
	UserUuid: string;
	UserLogin: string;
	PasswordRequired: boolean;
	AccessStart?: number;
	AccessEnd?: number;
	MaxDownloads?: number;
	CurrentDownloads?: number;
	ViewTemplateName?: string;
	TargetUsers?: Record<string, { Display?: string; DownloadCount?: number }>;
	RestrictToTargetUsers?: boolean;
	RootNodes: SharedNode[];
	Permissions: LinkPermission[];
	Policies: ResourcePolicy[];
	PoliciesContextEditable: boolean;
}

// The page (web/src/public) applies the same rule and cannot import this file (node:crypto).
export { presetPassword } from "./minisite";

/** A link hash: the first `length` hex digits of a random uuid (more digits from random bytes beyond 32). */
export function newHash(length: number): string {
	const hex = randomUUID().replace(/-/g, "") + randomBytes(32).toString("hex");
	return hex.slice(0, Math.max(1, Math.min(length, 64)));
}

/** A hidden user's login: 16 hex digits. */
export function newHiddenLogin(): string {
	return randomBytes(8).toString("hex");
}

const HASH_RE = /^[A-Za-z0-9_-]+$/;

/** A hash chosen by a user: a URL-safe token of at least `min` characters. */
export function checkCustomHash(hash: string, min: number): string {
	if (hash.length > 128 || !HASH_RE.test(hash)) throw new BadRequestError("A link hash may only hold letters, digits, '-' and '_' (at most 128)", "link.hash.invalid");
	return hash;
}

/** Permissions as ACL actions on the roots: Preview/Download read, Upload write. */
export function permissionsToActions(perms: LinkPermission[]): ("read" | "write")[] {
	const out: ("read" | "write")[] = [];
	if (perms.includes("Preview") || perms.includes("Download")) out.push("read");
	if (perms.includes("Upload")) out.push("write");
	return out;
}

/** Permissions rebuilt from ACLs as Cells does: read => Preview (unless direct download) and Download (unless disabled). */
export function actionsToPermissions(read: boolean, write: boolean, template: string, downloadDisabled: boolean): LinkPermission[] {
	const out: LinkPermission[] = [];
	if (read && template !== "pydio_unique_dl") out.push("Preview");
	if (read && !downloadDisabled) out.push("Download");
	if (write) out.push("Upload");
	return out;
}

export function checkPermissions(list: string[] | undefined): LinkPermission[] {
	const out: LinkPermission[] = [];
	for (const p of list ?? []) {
		if (p === "NoAccess") continue;
		if (!LINK_PERMISSIONS.includes(p as LinkPermission)) throw new BadRequestError(`Unknown link permission "${String(p).slice(0, 40)}": Preview, Download or Upload`);
		if (!out.includes(p as LinkPermission)) out.push(p as LinkPermission);
	}
	return out;
}

/** Whether a link can be used at `now` (unix seconds). */
export function linkStatus(l: Pick<LinkRecord, "accessStart" | "accessEnd" | "downloadLimit" | "downloadCount">, now: number): PublicLinkStatus {
	if (l.accessStart && now < l.accessStart) return "not-started";
	if (l.accessEnd && now >= l.accessEnd) return "expired";
	if (l.downloadLimit && l.downloadCount >= l.downloadLimit) return "exhausted";
	return "ok";
}

export const STATUS_MESSAGES: Record<Exclude<PublicLinkStatus, "ok">, string> = {
	unknown: "This link does not exist or was removed",
	"not-started": "This link is not active yet",
	expired: "This link has expired",
	exhausted: "This link has reached its maximum number of downloads",
};

/** Share settings (plugin action.share), as Cells' defaults have them; roles may override them. */
export interface ShareSettings {
	ENABLE_FILE_INTERNAL_SHARING: boolean;
	ENABLE_FOLDER_INTERNAL_SHARING: boolean;
	ENABLE_FILE_PUBLIC_LINK: boolean;
	ENABLE_FOLDER_PUBLIC_LINK: boolean;
	/** 0 = no limit. */
	FILE_MAX_DOWNLOAD: number;
	/** Days; 0 = no limit. */
	FILE_MAX_EXPIRATION: number;
	SHARE_FORCE_PASSWORD: boolean;
	HASH_MIN_LENGTH: number;
	HASH_USER_EDITABLE: boolean;
}

export const DEFAULT_SETTINGS: ShareSettings = {
	ENABLE_FILE_INTERNAL_SHARING: true,
	ENABLE_FOLDER_INTERNAL_SHARING: true,
	ENABLE_FILE_PUBLIC_LINK: true,
	ENABLE_FOLDER_PUBLIC_LINK: true,
	FILE_MAX_DOWNLOAD: 0,
	FILE_MAX_EXPIRATION: 0,
	SHARE_FORCE_PASSWORD: false,
	HASH_MIN_LENGTH: 12,
	HASH_USER_EDITABLE: true,
};

export const SETTING_PREFIX = "parameter:action.share:";

/**
 * Settings from `parameter:action.share:<NAME>` ACLs of a role stack (roles in order, the last one setting a
 * name wins), over the defaults. Values are as Cells' role editor writes them: JSON (`true`, `3`, `"x"`) or bare.
 */
export function settingsFrom(acls: { RoleID?: string; Action?: { Name?: string; Value?: string } }[], roles: string[], base: ShareSettings = DEFAULT_SETTINGS): ShareSettings {
	const out: ShareSettings = { ...base };
	for (const role of roles) {
		for (const a of acls) {
			if (a.RoleID !== role || !a.Action?.Name?.startsWith(SETTING_PREFIX)) continue;
			let v: unknown = a.Action.Value ?? "";
			try {
				v = JSON.parse(String(v));
			} catch {
				// a bare string
			}
			setSetting(out, a.Action.Name.slice(SETTING_PREFIX.length), v);
		}
	}
	return out;
}

function setSetting(out: ShareSettings, name: string, v: unknown): void {
	if (!(name in DEFAULT_SETTINGS)) return;
	const mutable = out as unknown as Record<string, boolean | number>;
	if (typeof DEFAULT_SETTINGS[name as keyof ShareSettings] === "boolean") mutable[name] = v === true || v === "true" || v === 1 || v === "1";
	else {
		const n = Number(v);
		if (Number.isFinite(n) && n >= 0) mutable[name] = Math.floor(n);
	}
}

/** Where the configuration tree keeps the server-wide share settings (Cells' plugin configuration). */
export const SETTINGS_CONFIG_PATH = "frontend/plugin/action.share";

/**
 * The server-wide defaults: the configuration tree's `frontend/plugin/action.share` over Cells' defaults. Role
 * parameters then override these, as in Cells where the plugin configuration is the default of a role parameter.
 */
export function settingsFromConfig(value: unknown): ShareSettings {
	const out: ShareSettings = { ...DEFAULT_SETTINGS };
	if (value && typeof value === "object" && !Array.isArray(value)) for (const [k, v] of Object.entries(value)) setSetting(out, k, v);
	return out;
}

/** Owner policies of a new share: the owner reads, writes and owns it, administrators edit it. */
export function ownerPolicies(resource: string, ownerUuid: string): ResourcePolicy[] {
	return [
		{ Resource: resource, Action: "OWNER", Subject: `user:${ownerUuid}`, Effect: "allow" },
		{ Resource: resource, Action: "READ", Subject: `user:${ownerUuid}`, Effect: "allow" },
		{ Resource: resource, Action: "WRITE", Subject: `user:${ownerUuid}`, Effect: "allow" },
		{ Resource: resource, Action: "WRITE", Subject: "profile:admin", Effect: "allow" },
	];
}

/** The owner's uuid of a share, from its OWNER policy. */
export function ownerOf(policies: ResourcePolicy[]): string {
	const p = policies.find((x) => x.Action === "OWNER" && x.Subject?.startsWith("user:") && (x.Effect ?? "allow") === "allow");
	return p ? p.Subject!.slice("user:".length) : "";
}

/** Policies with READ `role:<id>` for exactly these members (others kept as they are). */
export function withMemberReads(policies: ResourcePolicy[], resource: string, members: string[]): ResourcePolicy[] {
	const kept = policies.filter((p) => !(p.Action === "READ" && p.Subject?.startsWith("role:")));
	return [...kept, ...members.map((m) => ({ Resource: resource, Action: "READ" as const, Subject: `role:${m}`, Effect: "allow" as const }))];
}
