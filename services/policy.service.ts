/**
 * policy — security policy groups (the REST access rules the gateway enforces, plus ACL/OIDC groups that are only
 * stored), named IP lists and IP bans after repeated failed logins, in the SQL store (lib/db/policies: tables
 * policy_groups, ip_lists, ip_states, and a marker of the default groups already created once).
 * Emits (broadcast): `policy.changed` {kind: "groups"|"iplists"|"bans"} after any change the gateway caches.
 * Consumes: `auth.login.failed` / `auth.login.succeeded` {ip, login} to count failures per address.
 */

import type { Context, Service, ServiceSchema } from "moleculer";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { PoliciesRepo, importNedbPolicies } from "../lib/db/policies";
import { importNedbOnce } from "../lib/db/nedb-import";
import { subjectsOf, type Meta } from "../lib/auth/identity";
import { loadConfig } from "../lib/config";
import { BadRequestError, ForbiddenError, NotFoundError } from "../lib/errors";
import { requireAdmin } from "../lib/identity/resource-policy";
import { isAllowed } from "../lib/policy/engine";
import { ADMIN_GROUP_UUID, defaultPolicyGroups, type PolicyGroup } from "../lib/policy/defaults";
import { checkId, checkIpList, checkPolicyGroup, matchesFilter } from "../lib/policy/validate";
import { activeBans, inList, isBanned, normalizeIp } from "../lib/policy/ipban";
import { IpBans } from "../lib/policy/ip-bans";
import { broadcast, type AccessSnapshot } from "../lib/contracts";
/** Entries of a list with this name are refused by the gateway (lib/gateway/access), every route, without end. */
const BLACKLIST = "blacklist";
const RG_ORDER: Record<string, number> = { rest: 0, acl: 1, oidc: 2 };

interface Vars extends DatabaseVars {
	repo: PoliciesRepo;
	bans: IpBans;
	cleanupTimer?: NodeJS.Timeout;
}
interface Methods {
	groups(): Promise<PolicyGroup[]>;
	checkNoLockout(ctx: Context<unknown, Meta>, group: PolicyGroup): Promise<void>;
	ipLists(): Promise<Record<string, string[]>>;
	seedDefaults(): Promise<number>;
	onLoginAttempt(payload: unknown, success: boolean): Promise<void>;
	cleanupIpStates(): Promise<number>;
	changed(kind: "groups" | "iplists" | "bans"): void;
}
type This = Service<{ rest: string }> & Vars & Methods;

function loginDetails(payload: Record<string, unknown>): Record<string, string> | undefined {
	return typeof payload.login === "string" && payload.login ? { login: payload.login.slice(0, 255) } : undefined;
}

const PolicyService: ServiceSchema<{ rest: string }, Methods, Vars> = {
	name: "policy",
	mixins: [DatabaseMixin as unknown as Partial<ServiceSchema>],
	settings: { rest: "/" },
	actions: {
		list: {
			rest: "POST /policy",
			read: true,
			params: { Filter: { type: "string", optional: true, max: 1024 } },
			async handler(this: This, ctx: Context<{ Filter?: string }, Meta>) {
				requireAdmin(ctx);
				const groups = (await this.groups()).filter((g) => matchesFilter(g, ctx.params.Filter));
				return { PolicyGroups: groups, Total: groups.length };
			},
		},

		put: {
			rest: "PUT /policy",
			params: {
				Uuid: { type: "string", optional: true },
				Name: { type: "string", optional: true },
				Description: { type: "string", optional: true },
				OwnerUuid: { type: "string", optional: true },
				ResourceGroup: { type: "string", optional: true },
				LastUpdated: { type: "number", optional: true },
				Policies: { type: "array", optional: true, items: "object" },
			},
			async handler(this: This, ctx: Context<Partial<PolicyGroup>, Meta>) {
				requireAdmin(ctx);
				const { Uuid, Name, Description, OwnerUuid, ResourceGroup, Policies } = ctx.params;
				const group: PolicyGroup = { ...checkPolicyGroup({ Uuid, Name, Description, OwnerUuid, ResourceGroup, Policies }), LastUpdated: Math.floor(Date.now() / 1000) };
				await this.checkNoLockout(ctx, group);
				await this.repo.saveGroup(group);
				this.changed("groups");
				return group;
			},
		},

		delete: {
			rest: "DELETE /policy/:Uuid",
			params: { Uuid: { type: "string" } },
			async handler(this: This, ctx: Context<{ Uuid: string }, Meta>) {
				requireAdmin(ctx);
				const uuid = checkId(ctx.params.Uuid, "Uuid");
				if (uuid === ADMIN_GROUP_UUID) throw new ForbiddenError("The administrators' access group cannot be deleted (edit it instead)", "policy.protected");
				if (!(await this.repo.deleteGroup(uuid))) throw new NotFoundError(`Policy group ${uuid} not found`);
				this.changed("groups");
				return { Success: true, NumRows: 1 };
			},
		},

		listBans: {
			rest: "GET /policy/ipbans",
			read: true,
			params: {},
			async handler(this: This, ctx: Context<Record<string, never>, Meta>) {
				requireAdmin(ctx);
				const now = Date.now();
				const Bans = (await this.repo.bannedAt(now))
					.filter((s) => isBanned(s, now))
					.sort((a, b) => b.BanExpire - a.BanExpire || a.IP.localeCompare(b.IP))
					.map((s) => ({ IP: s.IP, BanExpire: s.BanExpire, History: s.History ?? [] }));
				return { Bans };
			},
		},

		unban: {
			rest: "POST /policy/ipbans",
			params: { IP: { type: "string" } },
			async handler(this: This, ctx: Context<{ IP: string }, Meta>) {
				requireAdmin(ctx);
				const ip = normalizeIp(ctx.params.IP);
				if (!ip) throw new BadRequestError(`"${String(ctx.params.IP).slice(0, 80)}" is not an IP address`);
				const removed = await this.bans.unban(ip);
				if (removed) this.changed("bans");
				return { Success: true };
			},
		},

		updateIPs: {
			rest: "POST /policy/iplists",
			params: { Name: { type: "string" }, IPs: { type: "array", optional: true, items: "any" } },
			async handler(this: This, ctx: Context<{ Name: string; IPs?: unknown[] }, Meta>) {
				requireAdmin(ctx);
				const name = checkId(ctx.params.Name, "Name");
				const ips = checkIpList(ctx.params.IPs);
				if (name === BLACKLIST && inList(normalizeIp(ctx.meta.ip), ips)) {
					throw new BadRequestError(`The blacklist would contain your own address ${ctx.meta.ip}: you would lock yourself out`);
				}
				await this.repo.saveIpList(name, ips);
				this.changed("iplists");
				return { Name: name, IPs: ips };
			},
		},

		listIPs: {
			rest: "GET /policy/iplists/:Name",
			read: true,
			params: { Name: { type: "string" } },
			async handler(this: This, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				const name = checkId(ctx.params.Name, "Name");
				// A list that was never written is an empty list: "whitelist" and "blacklist" always exist.
				return { Name: name, IPs: (await this.repo.ipList(name)) ?? [] };
			},
		},

		/** Internal: what the gateway enforces. REST policies flattened, IP lists, bans in force. */
		snapshot: {
			read: true,
			params: {},
			async handler(this: This): Promise<AccessSnapshot> {
				const [groups, ipLists, states] = await Promise.all([this.groups(), this.ipLists(), this.repo.bannedAt(Date.now())]);
				const policies = groups.filter((g) => g.ResourceGroup === "rest").flatMap((g) => g.Policies ?? []);
				// The blacklist travels in ipLists: it refuses everything, where a ban only refuses credentials.
				const bans = activeBans(states, Date.now());
				return { policies, ipLists, bans };
			},
		},
	},

	events: {
		"auth.login.failed": {
			async handler(this: This, ctx: Context<unknown>) {
				await this.onLoginAttempt(ctx.params, false);
			},
		},
		"auth.login.succeeded": {
			async handler(this: This, ctx: Context<unknown>) {
				await this.onLoginAttempt(ctx.params, true);
			},
		},
	},

	methods: {
		async groups(this: This) {
			return (await this.repo.groups()).sort((a, b) => (RG_ORDER[a.ResourceGroup] ?? 9) - (RG_ORDER[b.ResourceGroup] ?? 9) || a.Name.localeCompare(b.Name) || a.Uuid.localeCompare(b.Uuid));
		},

		/** Refuses a REST group that would stop the calling admin from editing policies again (from where they are now). */
		async checkNoLockout(this: This, ctx: Context<unknown, Meta>, group: PolicyGroup) {
			const others = (await this.groups()).filter((g) => g.ResourceGroup === "rest" && g.Uuid !== group.Uuid);
			// A group moved out of "rest" no longer grants anything at the gateway.
			const policies = [...others, ...(group.ResourceGroup === "rest" ? [group] : [])].flatMap((g) => g.Policies ?? []);
			const context = { remoteAddress: ctx.meta.ip, time: new Date(), ipLists: await this.ipLists() };
			const subjects = subjectsOf(ctx.meta.user);
			for (const action of ["POST", "PUT"]) {
				if (!isAllowed(policies, { subjects, resource: "rest:/policy", action, context })) {
					throw new BadRequestError(`This policy group would forbid you ${action} /a/policy: you would lock yourself out of the security policies`);
				}
			}
		},

		async ipLists(this: This) {
			return this.repo.ipLists();
		},

		/** Creates each default group once; a group an admin deleted stays deleted, except the admins' own. */
		async seedDefaults(this: This) {
			const seeded = new Set(await this.repo.seededGroups());
			const now = Math.floor(Date.now() / 1000);
			let created = 0;
			for (const g of defaultPolicyGroups()) {
				if (seeded.has(g.Uuid) && g.Uuid !== ADMIN_GROUP_UUID) continue;
				seeded.add(g.Uuid);
				// Insert-or-nothing: a group that exists (another node seeding now, an admin's edit) stands.
				if (await this.repo.addGroupIfAbsent({ ...g, LastUpdated: now })) created++;
			}
			await this.repo.recordSeededGroups([...seeded]);
			return created;
		},

		async onLoginAttempt(this: This, payload: unknown, success: boolean) {
			const p = (payload && typeof payload === "object" ? payload : {}) as Record<string, unknown>;
			const ip = normalizeIp(p.ip);
			if (!ip) return;
			if (await this.bans.record(ip, success, loginDetails(p))) {
				this.logger.warn(`Address ${ip} banned for ${this.bans.settings.duration}s after ${this.bans.settings.threshold} failed logins`);
				this.changed("bans");
			}
		},

		/** Drops address states that hold neither a ban in force nor failures still inside the window. */
		async cleanupIpStates(this: This) {
			return this.bans.cleanup();
		},

		changed(this: This, kind: "groups" | "iplists" | "bans") {
			void broadcast(this.broker, "policy.changed", { kind });
		},
	},

	async started(this: This) {
		const cfg = loadConfig();
		const report = await importNedbOnce(this.db, cfg.dataDir, "policies", importNedbPolicies);
		if (report.imported) this.logger.info(`Imported ${report.documents} policy groups, IP lists and address states from the NeDB store (kept as ${report.backup})`);
		this.repo = new PoliciesRepo(this.db);
		this.bans = new IpBans(this.repo, { threshold: cfg.ipBanThreshold, window: cfg.ipBanWindow, duration: cfg.ipBanDuration });
		const created = await this.seedDefaults();
		if (created) this.changed("groups");
		this.cleanupTimer = setInterval(() => {
			this.cleanupIpStates().catch((err) => this.logger.warn("IP state cleanup failed:", err));
		}, 10 * 60_000);
		this.cleanupTimer.unref();
	},

	async stopped(this: This) {
		if (this.cleanupTimer) clearInterval(this.cleanupTimer);
	},
};

export = PolicyService;
