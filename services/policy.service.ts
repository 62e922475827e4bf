/**
 * policy — security policy groups (the REST access rules the gateway enforces, plus ACL/OIDC groups that are only
 * stored), named IP lists and IP bans after repeated failed logins. One store "policies" holds every kind of doc:
 * `group:<Uuid>` (kind "group"), `iplist:<Name>` (kind "iplist"), `ip:<address>` (kind "ipstate": ban and
 * recent attempts), `meta:seeded` (which default groups were already created once).
 * Emits (broadcast): `policy.changed` {kind: "groups"|"iplists"|"bans"} after any change the gateway caches.
 * Consumes: `auth.login.failed` / `auth.login.succeeded` {ip, login} to count failures per address.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { DbMixin, type Doc, type Store } from "../mixins/db.mixin";
import { subjectsOf, type Meta } from "../lib/auth/identity";
import { loadConfig } from "../lib/config";
import { BadRequestError, ForbiddenError, NotFoundError } from "../lib/errors";
import { requireAdmin } from "../lib/identity/resource-policy";
import { isAllowed, type Policy } from "../lib/policy/engine";
import { ADMIN_GROUP_UUID, defaultPolicyGroups, type PolicyGroup } from "../lib/policy/defaults";
import { checkId, checkIpList, checkPolicyGroup, matchesFilter } from "../lib/policy/validate";
import { activeBans, inList, isBanned, KeyedSerializer, normalizeIp, recordAttempt, type BanSettings, type IpState } from "../lib/policy/ipban";

/** Entries of a list with this name can never be banned. */
const WHITELIST = "whitelist";
/** Entries of a list with this name are refused by the gateway (lib/gateway/access), every route, without end. */
const BLACKLIST = "blacklist";
const RG_ORDER: Record<string, number> = { rest: 0, acl: 1, oidc: 2 };

type GroupDoc = Doc & PolicyGroup & { kind: "group" };
type ListDoc = Doc & { kind: "iplist"; Name: string; IPs: string[] };
type IpDoc = Doc & IpState & { kind: "ipstate" };
type SeedDoc = Doc & { kind: "meta"; Uuids: string[] };

interface Snapshot {
	policies: Policy[];
	ipLists: Record<string, string[]>;
	bans: { IP: string; BanExpire: number }[];
}

interface Vars {
	store: Store<Doc>;
	banSettings: BanSettings;
	serializer: KeyedSerializer;
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

function toGroup(d: Doc): PolicyGroup {
	const { _id, kind, ...g } = d as GroupDoc;
	return g;
}

function loginDetails(payload: Record<string, unknown>): Record<string, string> | undefined {
	return typeof payload.login === "string" && payload.login ? { login: payload.login.slice(0, 255) } : undefined;
}

const PolicyService: ServiceSchema<{ rest: string }, Methods, Vars> = {
	name: "policy",
	mixins: [DbMixin("policies")],
	settings: { rest: "/" },
	actions: {
		list: {
			rest: "POST /policy",
			retryPolicy: { enabled: true },
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
				const doc: GroupDoc = { _id: `group:${group.Uuid}`, kind: "group", ...group };
				await this.store.replace(doc);
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
				if (!(await this.store.get(`group:${uuid}`))) throw new NotFoundError(`Policy group ${uuid} not found`);
				await this.store.remove(`group:${uuid}`);
				this.changed("groups");
				return { Success: true, NumRows: 1 };
			},
		},

		listBans: {
			rest: "GET /policy/ipbans",
			retryPolicy: { enabled: true },
			params: {},
			async handler(this: This, ctx: Context<Record<string, never>, Meta>) {
				requireAdmin(ctx);
				const now = Date.now();
				const states = (await this.store.find({ query: { kind: "ipstate" } })) as IpDoc[];
				const Bans = states
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
				const removed = await this.serializer.run(ip, () => this.store.remove(`ip:${ip}`));
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
				const doc: ListDoc = { _id: `iplist:${name}`, kind: "iplist", Name: name, IPs: ips };
				await this.store.replace(doc);
				this.changed("iplists");
				return { Name: name, IPs: ips };
			},
		},

		listIPs: {
			rest: "GET /policy/iplists/:Name",
			retryPolicy: { enabled: true },
			params: { Name: { type: "string" } },
			async handler(this: This, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				const name = checkId(ctx.params.Name, "Name");
				const doc = (await this.store.get(`iplist:${name}`)) as ListDoc | null;
				// A list that was never written is an empty list: "whitelist" and "blacklist" always exist.
				return { Name: name, IPs: doc?.IPs ?? [] };
			},
		},

		/** Internal: what the gateway enforces. REST policies flattened, IP lists, bans in force. */
		snapshot: {
			retryPolicy: { enabled: true },
			params: {},
			async handler(this: This): Promise<Snapshot> {
				const [groups, ipLists, states] = await Promise.all([this.groups(), this.ipLists(), this.store.find({ query: { kind: "ipstate" } })]);
				const policies = groups.filter((g) => g.ResourceGroup === "rest").flatMap((g) => g.Policies ?? []);
				// The blacklist travels in ipLists: it refuses everything, where a ban only refuses credentials.
				const bans = activeBans(states as IpDoc[], Date.now());
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
			const docs = await this.store.find({ query: { kind: "group" } });
			return docs
				.map(toGroup)
				.sort((a, b) => (RG_ORDER[a.ResourceGroup] ?? 9) - (RG_ORDER[b.ResourceGroup] ?? 9) || a.Name.localeCompare(b.Name) || a.Uuid.localeCompare(b.Uuid));
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
			const docs = (await this.store.find({ query: { kind: "iplist" } })) as ListDoc[];
			return Object.fromEntries(docs.map((d) => [d.Name, d.IPs ?? []]));
		},

		/** Creates each default group once; a group an admin deleted stays deleted, except the admins' own. */
		async seedDefaults(this: This) {
			const marker = (await this.store.get("meta:seeded")) as SeedDoc | null;
			const seeded = new Set(marker?.Uuids ?? []);
			const now = Math.floor(Date.now() / 1000);
			let created = 0;
			for (const g of defaultPolicyGroups()) {
				if (seeded.has(g.Uuid) && g.Uuid !== ADMIN_GROUP_UUID) continue;
				seeded.add(g.Uuid);
				if (await this.store.get(`group:${g.Uuid}`)) continue;
				try {
					await this.store.insert({ _id: `group:${g.Uuid}`, kind: "group", ...g, LastUpdated: now });
					created++;
				} catch (err) {
					// Another node seeding at the same time: the group exists, which is all we want.
					if (!(await this.store.get(`group:${g.Uuid}`))) throw err;
				}
			}
			const doc: SeedDoc = { _id: "meta:seeded", kind: "meta", Uuids: [...seeded].sort() };
			await this.store.replace(doc);
			return created;
		},

		async onLoginAttempt(this: This, payload: unknown, success: boolean) {
			const p = (payload && typeof payload === "object" ? payload : {}) as Record<string, unknown>;
			const ip = normalizeIp(p.ip);
			if (!ip) return;
			// Everything inside the per-address queue, so attempts apply in the order they arrived.
			const banStarted = await this.serializer.run(ip, async () => {
				const whitelist = (await this.store.get(`iplist:${WHITELIST}`)) as ListDoc | null;
				if (inList(ip, whitelist?.IPs)) return false;
				const previous = (await this.store.get(`ip:${ip}`)) as IpDoc | null;
				if (success && !previous) return false; // nothing to reset; successes alone are not stored
				const { state, banStarted } = recordAttempt(previous, ip, success, Date.now(), this.banSettings, loginDetails(p));
				const doc: IpDoc = { _id: `ip:${ip}`, kind: "ipstate", ...state };
				await this.store.replace(doc);
				return banStarted;
			});
			if (banStarted) {
				this.logger.warn(`Address ${ip} banned for ${this.banSettings.duration}s after ${this.banSettings.threshold} failed logins`);
				this.changed("bans");
			}
		},

		/** Drops address states that hold neither a ban in force nor failures still inside the window. */
		async cleanupIpStates(this: This) {
			const now = Date.now();
			const since = now - this.banSettings.window * 1000;
			const states = (await this.store.find({ query: { kind: "ipstate" } })) as IpDoc[];
			let removed = 0;
			for (const s of states) {
				if (isBanned(s, now) || (s.Failures ?? []).some((t) => t > since)) continue;
				await this.serializer.run(s.IP, async () => {
					const fresh = (await this.store.get(s._id)) as IpDoc | null;
					if (fresh && !isBanned(fresh, Date.now()) && !(fresh.Failures ?? []).some((t) => t > since)) {
						if (await this.store.remove(s._id)) removed++;
					}
				});
			}
			return removed;
		},

		changed(this: This, kind: "groups" | "iplists" | "bans") {
			void this.broker.broadcast("policy.changed", { kind });
		},
	},

	created(this: This) {
		const cfg = loadConfig();
		this.banSettings = { threshold: cfg.ipBanThreshold, window: cfg.ipBanWindow, duration: cfg.ipBanDuration };
		this.serializer = new KeyedSerializer();
	},

	async started(this: This) {
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
