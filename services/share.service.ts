/**
 * share — cells (workspaces of scope ROOM shared with users, groups or roles) and public links (scope LINK, a hash,
 * a hidden user), over lib/share/manager. Owns the link records (lib/db/share-links: hash, limits, download count);
 * cells and links are workspaces (written in the workspaces table) with ACLs kept by the acl service.
 * REST: PUT /share/cell, GET|DELETE /share/cell/:Uuid, PUT /share/link, GET|DELETE /share/link/:Uuid,
 * POST /share/resources, PUT /share/policies; enterprise audit GET /audit/data/reports, POST /audit/data/shares.
 * Internal: share.publicLink (the /public/<hash> page), share.minisiteLogin (auth: hidden users log in only on
 * their link's minisite, with a TargetUsers key when RestrictToTargetUsers), share.linkAccess (the /io gateway:
 * link validity, downloads counted, attachments and zips refused on preview-only links).
 * Calls: tree.shareNode / createCellRoot / setNodeMeta, acl.*, roles.getMany, users.byUuid / authInfo /
 * createHidden / deleteHidden, and `mailer.queue` (not awaited by the answer): a cell's new members get the Cell
 * template, the users a link is sent to (new TargetUsers) PublicFile / PublicFolder with their key (`?u=`).
 * Emits `share.changed` {Uuid, Scope, Action, OwnerUuid, Members, Roots} and `identity.changed` {kind: "workspace"}
 * after every change (gateways and resolvers drop cached rights).
 * Reads `config.get` frontend/plugin/action.share (the server-wide link and sharing policies, which role parameters
 * override), kept until it consumes a `config.changed` that touches it.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { WorkspacesRepo } from "../lib/db/workspaces";
import { ShareLinksRepo } from "../lib/db/share-links";
import { ShareManager, type Invitation } from "../lib/share/manager";
import { invitationMails } from "../lib/share/invitations";
import { SETTINGS_CONFIG_PATH, settingsFromConfig, type CellIn, type PutLinkIn, type ShareSettings } from "../lib/share/model";
import { CachedConfig } from "../lib/config-tree/cached";
import type { ConfigChange } from "../lib/contracts";
import type { Identity, Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser, type ResourcePolicy } from "../lib/identity/resource-policy";
import { broadcast, call, serviceRuns } from "../lib/contracts";
import type { ACL } from "../lib/acl/model";
import type { LinkOp } from "../lib/contracts/share";
import { buildAuditReport, type AuditSharesRequest } from "../lib/share/audit";

interface Vars extends DatabaseVars {
	links: ShareLinksRepo;
	configured: CachedConfig<ShareSettings>;
}
interface Methods {
	manager(ctx: Context<unknown, Meta>): ShareManager;
	invite(invitation: Invitation): Promise<void>;
}
type This = Service & Vars & Methods;

const uuidParam = { type: "string", min: 1, max: 255, pattern: /^[^\u0000-\u001f\u007f\\/]+$/ } as const;
const policies = { type: "array", optional: true, max: 1000, items: { type: "object" } } as const;

const ShareService: ServiceSchema<ServiceSettingSchema, Methods, Vars> = {
	name: "share",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		putCell: {
			rest: "PUT /share/cell",
			params: { Room: { type: "object", optional: true }, CreateEmptyRoot: { type: "boolean", optional: true } },
			async handler(this: This, ctx: Context<{ Room?: CellIn; CreateEmptyRoot?: boolean }, Meta>) {
				return this.manager(ctx).putCell(requireUser(ctx), ctx.params.Room, !!ctx.params.CreateEmptyRoot);
			},
		},
		getCell: {
			read: true,
			rest: "GET /share/cell/:Uuid",
			params: { Uuid: uuidParam },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				return this.manager(ctx).getCell(requireUser(ctx), ctx.params.Uuid);
			},
		},
		deleteCell: {
			rest: "DELETE /share/cell/:Uuid",
			params: { Uuid: uuidParam },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				return this.manager(ctx).deleteCell(requireUser(ctx), ctx.params.Uuid);
			},
		},
		putLink: {
			rest: "PUT /share/link",
			params: {
				ShareLink: { type: "object", optional: true },
				PasswordEnabled: { type: "boolean", optional: true },
				CreatePassword: { type: "string", optional: true, max: 1024 },
				UpdatePassword: { type: "string", optional: true, max: 1024 },
				UpdateCustomHash: { type: "string", optional: true, max: 128 },
			},
			async handler(this: This, ctx: Context<PutLinkIn, Meta>) {
				return this.manager(ctx).putLink(requireUser(ctx), ctx.params);
			},
		},
		getLink: {
			read: true,
			rest: "GET /share/link/:Uuid",
			params: { Uuid: uuidParam },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				return this.manager(ctx).getLink(requireUser(ctx), ctx.params.Uuid);
			},
		},
		deleteLink: {
			rest: "DELETE /share/link/:Uuid",
			params: { Uuid: uuidParam },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				return this.manager(ctx).deleteLink(requireUser(ctx), ctx.params.Uuid);
			},
		},
		resources: {
			read: true,
			rest: "POST /share/resources",
			params: {
				ShareType: { type: "enum", optional: true, values: ["ANY", "CELLS", "LINKS"] },
				OwnedBySubject: { type: "boolean", optional: true },
				Subject: { type: "string", optional: true, max: 512 },
				Offset: { type: "number", optional: true, integer: true, min: 0 },
				Limit: { type: "number", optional: true, integer: true, min: 0, max: 10_000 },
			},
			async handler(this: This, ctx: Context<{ ShareType?: string; OwnedBySubject?: boolean; Subject?: string; Offset?: number; Limit?: number }, Meta>) {
				return this.manager(ctx).resources(requireUser(ctx), ctx.params);
			},
		},
		updatePolicies: {
			rest: "PUT /share/policies",
			params: { Uuid: uuidParam, Policies: policies },
			async handler(this: This, ctx: Context<{ Uuid: string; Policies?: ResourcePolicy[] }, Meta>) {
				return this.manager(ctx).updatePolicies(requireUser(ctx), ctx.params.Uuid, ctx.params.Policies ?? []);
			},
		},

		// ---- enterprise audit of shares (computed live: the one report is now) ----
		auditReports: {
			rest: "GET /audit/data/reports",
			params: {},
			async handler(this: This, ctx: Context<unknown, Meta>) {
				requireAdmin(ctx);
				return { ReportDates: [Math.floor(Date.now() / 1000)] };
			},
		},
		auditShares: {
			rest: "POST /audit/data/shares",
			params: {
				ShareType: { type: "enum", optional: true, values: ["ANY", "WORKSPACE", "CELL", "LINK"] },
				OwnerUUID: { type: "string", optional: true, max: 255 },
				RootPath: { type: "string", optional: true, max: 8192 },
				NodeType: { type: "enum", optional: true, values: ["UNKNOWN", "LEAF", "COLLECTION"] },
				NodeSizeMin: { type: "number", optional: true },
				LastUpdatedSince: { type: "number", optional: true },
				LastUpdatedBefore: { type: "number", optional: true },
				RolesReadUUIDs: { type: "array", optional: true, items: "string", max: 1000 },
				RolesReadAND: { type: "boolean", optional: true },
				UsersReadCountMin: { type: "number", optional: true },
				UsersReadCountMax: { type: "number", optional: true },
				ReportDate: { type: "number", optional: true },
				Offset: { type: "number", optional: true, integer: true, min: 0 },
				Limit: { type: "number", optional: true, integer: true, min: 0, max: 10_000 },
			},
			async handler(this: This, ctx: Context<AuditSharesRequest, Meta>) {
				const admin = requireAdmin(ctx);
				const shares = await this.manager(ctx).auditShares();
				return buildAuditReport(shares, ctx.params, {
					node: (uuid) => call(ctx, "tree.shareNode", { Uuid: uuid, Any: true }, { meta: { user: admin } }).then((n) => n.Node, () => null),
					roles: (uuids) => call(ctx, "roles.getMany", { uuids }),
					user: (uuid) => call(ctx, "users.byUuid", { uuid }),
					now: () => Math.floor(Date.now() / 1000),
				});
			},
		},

		// ---- internal ----
		publicLink: {
			params: { hash: { type: "string", max: 1024 } },
			async handler(this: This, ctx: Context<{ hash: string }, Meta>) {
				return this.manager(ctx).publicLink(ctx.params.hash);
			},
		},
		minisiteLogin: {
			params: { login: { type: "string", max: 255 }, hash: { type: "string", optional: true, max: 1024 }, target: { type: "string", optional: true, max: 255 } },
			async handler(this: This, ctx: Context<{ login: string; hash?: string; target?: string }, Meta>) {
				await this.manager(ctx).minisiteLogin(ctx.params.login, ctx.params.hash, ctx.params.target);
				return { Ok: true as const };
			},
		},
		linkAccess: {
			params: { login: { type: "string", max: 255 }, op: { type: "enum", values: ["download", "save", "upload", "visit"] } },
			async handler(this: This, ctx: Context<{ login: string; op: LinkOp }, Meta>) {
				return this.manager(ctx).linkAccess(ctx.params.login, ctx.params.op);
			},
		},
	},
	methods: {
		manager(this: This, ctx: Context<unknown, Meta>): ShareManager {
			const asUser = (user: Identity) => ({ meta: { user } });
			return new ShareManager({
				workspaces: new WorkspacesRepo(this.db),
				links: this.links,
				acl: {
					find: (p) => ctx.call<ACL[], typeof p>("acl.find", p),
					put: (a) => ctx.call<ACL, ACL>("acl.put", a),
					deleteWhere: (p) => ctx.call<number, typeof p>("acl.deleteWhere", p),
				},
				node: (user, ref) => call(ctx, "tree.shareNode", ref, asUser(user)),
				createCellRoot: (user, label) => call(ctx, "tree.createCellRoot", { Label: label }, asUser(user)),
				removeCellRoot: async (uuid) => {
					await call(ctx, "tree.removeCellRoot", { Uuid: uuid });
				},
				setNodeMeta: async (uuid, key, value) => {
					await call(ctx, "tree.setNodeMeta", { Uuid: uuid, Key: key, Value: value });
				},
				roles: async (uuids) => (uuids.length ? call(ctx, "roles.getMany", { uuids }) : []),
				userByUuid: (uuid) => call(ctx, "users.byUuid", { uuid }),
				identityOf: async (uuid) => {
					const u = await call(ctx, "users.authInfo", { uuid });
					return u ? { Uuid: u.Uuid, Login: u.Login, Profile: u.Profile, GroupPath: u.GroupPath, Roles: u.Roles, TokenKind: "session", ExpiresAt: Math.floor(Date.now() / 1000) + 60, ...(u.Hidden ? { Hidden: true } : {}) } : null;
				},
				createHidden: (owner, login, password) => call(ctx, "users.createHidden", { owner, login, password }),
				deleteHidden: async (uuid) => {
					await call(ctx, "users.deleteHidden", { uuid });
				},
				changed: async (change) => {
					await broadcast(ctx, "identity.changed", { kind: "workspace", uuid: change.Uuid });
					await broadcast(ctx, "share.changed", change);
				},
				invite: (invitation) => {
					void this.invite(invitation).catch((e: unknown) => this.logger.warn(`Share invitation mail not queued: ${(e as Error).message}`));
				},
				publicBase: () => (process.env.PUBLIC_BASEURI ?? "/public").replace(/\/+$/, ""),
				configured: () => this.configured.get(),
				now: () => Math.floor(Date.now() / 1000),
			});
		},
		/** Queues the invitation mails through `mailer.queue` (a recipient without email is skipped there). */
		async invite(this: This, invitation: Invitation): Promise<void> {
			if (!serviceRuns(this.broker, "mailer")) return;
			const inviter = await call(this.broker, "users.byUuid", { uuid: invitation.inviter.Uuid }).catch(() => null);
			for (const mail of invitationMails(invitation, inviter?.Attributes?.displayName || invitation.inviter.Login)) {
				const out = await call(this.broker, "mailer.queue", mail).catch((e: unknown) => {
					// 400: none of the recipients has an email address.
					if ((e as { code?: number }).code === 400) return null;
					throw e;
				});
				if (out?.ids.length) this.logger.info(`${invitation.inviter.Login}: ${out.ids.length} ${mail.templateId} invitation(s) queued`);
			}
		},
	},
	events: {
		"config.changed"(this: This, ctx: Context<ConfigChange>) {
			this.configured.changed(ctx.params.Path);
		},
	},
	created(this: This) {
		// Without a config service in this cluster, Cells' defaults apply.
		const hasConfig = () => serviceRuns(this.broker, "config");
		this.configured = new CachedConfig(SETTINGS_CONFIG_PATH, async (path) => (hasConfig() ? call(this.broker, "config.get", { Path: path }) : null), settingsFromConfig);
	},
	async started(this: This) {
		this.links = new ShareLinksRepo(this.db);
	},
};

export = ShareService;
