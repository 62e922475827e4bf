/**
 * activity — Cells' activity feeds (lib/activity): `POST /activity/stream` (a node's feed, a user's inbox or
 * outbox, unread counts, digests), `POST /activity/subscribe` and `POST /activity/subscriptions` (following
 * folders). Activities are kept in the SQL store (ActivityRepo), pruned every hour (ACTIVITY_RETENTION_DAYS,
 * ACTIVITY_MAX_PER_FEED) on one node of the cluster (lease `activity.prune`). Every ACTIVITY_DIGEST_HOURS (0: never),
 * one node (lease `activity.digest`) mails users with an email their unread activities since their last digest
 * (lib/activity/digest, template Digest through `mailer.queue`); internal `activity.digest` runs it now.
 * Consumes: `tree.read` (emitted: followers of "read" get a Read activity), `identity.changed` (an ACL given on a
 * workspace to a user: a Share activity in their inbox; deleted users: their boxes, markers and subscriptions, and
 * the activities they authored in nodes' feeds, go), `share.changed` (a cell's members get a Share activity, once
 * per cell), `tree.changed` (broadcast; collected for 500 ms or 200 changes and written in one transaction by one
 * replica — the one on the node that made the change, or every replica when that node runs none, the rows'
 * idempotency keys then keeping one copy), `$services.changed` (which nodes run this service is asked again).
 * `activity.subscribed` (broadcast, its own included: each replica forgets what it kept of that user's subscriptions);
 * `identity.changed` for deleted users also empties that cache.
 * Emits: `activity.posted` (broadcast) {items: [{ownerId, activity}]} for new inbox activities (websocket pushes),
 * `activity.subscribed` (broadcast) {UserId} after a subscription changes (gateways drop cached listings, replicas
 * their followed caches).
 * Internal: `activity.followed` {UserId, ObjectIds} (the tree's `user_subscriptions` meta; lib/activity/followed
 * keeps each user's few subscriptions in memory, 30 s at most).
 * Calls: `tree.visible`, `tree.uuidsAt`, `users.byLogin`, `users.authInfo`, `workspaces.accessible`, `mailer.queue`.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { ActivityRepo, LeasesRepo, type Db } from "../lib/db";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig } from "../lib/config";
import type { Identity, Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { Feeds, type SearchSubscriptionsRequest, type ShareNotice, type StreamRequest } from "../lib/activity/feeds";
import { Batcher } from "../lib/activity/batcher";
import { FollowedNodes } from "../lib/activity/followed";
import { sendDigests } from "../lib/activity/digest";
import type { SubscriptionRecord } from "../lib/db/activity";
import { broadcast, call, serviceRunsOn, type IdentityChange, type PublicUser, type TreeChange, type TreeRead } from "../lib/contracts";

const PRUNE_EVERY_MS = 3600_000;

const ActivityService: ServiceSchema<ServiceSettingSchema, ActivityMethods, ActivityVars> = {
	name: "activity",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		stream: {
			rest: "POST /activity/stream",
			params: {
				Context: { type: "enum", values: ["MYFEED", "USER_ID", "NODE_ID"], optional: true },
				ContextData: { type: "string", optional: true, max: 255 },
				StreamFilter: { type: "string", optional: true, max: 2000 },
				BoxName: { type: "enum", values: ["inbox", "outbox", ""], optional: true },
				UnreadCountOnly: { type: "boolean", optional: true },
				Offset: { type: "number", optional: true, integer: true, min: 0, max: 1_000_000 },
				Limit: { type: "number", optional: true, integer: true, min: 0, max: 1_000_000 },
				AsDigest: { type: "boolean", optional: true },
				PointOfView: { type: "enum", values: ["GENERIC", "ACTOR", "SUBJECT"], optional: true },
				Language: { type: "string", optional: true, max: 32 },
			},
			handler(this: ActivityThis, ctx: Context<StreamRequest, Meta>) {
				return this.feeds.stream(requireUser(ctx), ctx.params);
			},
		},
		subscribe: {
			rest: "POST /activity/subscribe",
			params: {
				UserId: { type: "string", optional: true, max: 255 },
				ObjectType: { type: "enum", values: ["NODE", "USER"], optional: true },
				ObjectId: { type: "string", optional: true, max: 255 },
				Events: { type: "array", optional: true, items: { type: "string", max: 32 }, max: 8 },
			},
			async handler(this: ActivityThis, ctx: Context<Partial<SubscriptionRecord>, Meta>) {
				const out = await this.feeds.subscribe(requireUser(ctx), ctx.params);
				// Here at once; the other replicas when the broadcast reaches them.
				this.followed.forget(out.UserId);
				await broadcast(this.broker, "activity.subscribed", { UserId: out.UserId });
				return out;
			},
		},
		subscriptions: {
			read: true,
			rest: "POST /activity/subscriptions",
			params: {
				UserIds: { type: "array", optional: true, items: { type: "string", max: 255 }, max: 100 },
				ObjectIds: { type: "array", optional: true, items: { type: "string", max: 255 }, max: 1000 },
				ObjectTypes: { type: "array", optional: true, items: { type: "enum", values: ["NODE", "USER"] }, max: 2 },
			},
			async handler(this: ActivityThis, ctx: Context<SearchSubscriptionsRequest, Meta>) {
				return { subscriptions: await this.feeds.searchSubscriptions(requireUser(ctx), ctx.params) };
			},
		},
		// Internal (tree listings: Cells' `user_subscriptions` meta).
		followed: {
			read: true,
			params: { UserId: { type: "string", max: 255 }, ObjectIds: { type: "array", items: { type: "string", max: 255 }, max: 1000 } },
			async handler(this: ActivityThis, ctx: Context<{ UserId: string; ObjectIds: string[] }>) {
				return this.followed.of(ctx.params.UserId, ctx.params.ObjectIds);
			},
		},
		// Internal (tests, operations): writes what waits now, and prunes now.
		flush: {
			params: {},
			async handler(this: ActivityThis) {
				await this.batcher.flush();
				await this.reads.flush();
				return { Dropped: this.batcher.dropped };
			},
		},
		// Internal: a digest run now, on this node (as the timer's, without the lease): how many users were mailed.
		digest: {
			params: {},
			async handler(this: ActivityThis) {
				return { Mailed: await this.digestRun() };
			},
		},
		prune: {
			params: {},
			async handler(this: ActivityThis) {
				return { Removed: await this.feeds.prune() };
			},
		},
	},
	events: {
		"tree.changed"(this: ActivityThis, ctx: Context<TreeChange>) {
			if (ctx.params.by && this.handles(ctx)) this.batcher.add(ctx.params);
		},
		// Emitted (one replica gets it): followers of "read" are told.
		"tree.read"(this: ActivityThis, ctx: Context<TreeRead>) {
			this.reads.add(ctx.params);
		},
		// An ACL on a workspace for a user, set by someone (the author travels in the event's meta): they are told.
		// Deleted users (one, or a group's): what they leave goes, as Cells clears a deleted user's activities.
		"identity.changed"(this: ActivityThis, ctx: Context<IdentityChange, Meta>) {
			const c = ctx.params;
			if ((c.kind === "user" || c.kind === "group") && c.deleted?.length) {
				// Every replica forgets what it kept of them (only their own requests read it, and they are refused from
				// now on); the one that clears the store forgets again once it is done.
				this.followed.clear();
				if (!this.handles(ctx)) return;
				this.repo
					.deleteUsers(c.deleted)
					.then(() => this.followed.clear())
					.catch((e: Error) => this.logger.warn(`Clearing the activities of deleted users failed: ${e.message}`));
				return;
			}
			const actor = ctx.meta.user?.Login;
			if (c.kind !== "acl" || !c.RoleID || !c.WorkspaceID || !actor || !this.handles(ctx)) return;
			this.feeds.recordAccess(actor, c.RoleID, c.WorkspaceID).catch((e: Error) => this.logger.warn(`Recording an access activity failed: ${e.message}`));
		},
		// A user's subscriptions changed, on this node or another: what this replica kept of them goes.
		"activity.subscribed"(this: ActivityThis, ctx: Context<{ UserId: string }>) {
			this.followed.forget(ctx.params.UserId);
		},
		// Which nodes run this service: asked again after the registry changed, not at every event.
		"$services.changed"(this: ActivityThis) {
			this.senders.clear();
		},
		// Cells shared with users (the share service, when the node runs one): their members are told once.
		"share.changed"(this: ActivityThis, ctx: Context<ShareNotice>) {
			if (!this.handles(ctx)) return;
			this.feeds.recordShare(ctx.params).catch((e: Error) => this.logger.warn(`Recording a share activity failed: ${e.message}`));
		},
	},
	methods: {
		/**
		 * A broadcast reaches every replica: the one on the node that made the change records it; when that node
		 * runs no activity service, every replica does (the rows' keys keep one copy).
		 */
		handles(ctx: Context): boolean {
			// An emitted event reaches one replica: that one records it.
			if ((ctx as unknown as { eventType?: string }).eventType === "emit") return true;
			const sender = ctx.nodeID;
			if (!sender || sender === this.broker.nodeID) return true;
			let theirs = this.senders.get(sender);
			if (theirs === undefined) this.senders.set(sender, (theirs = serviceRunsOn(this.broker, "activity", sender)));
			return !theirs;
		},
		async identityOf(login: string): Promise<Identity | null> {
			const user = await call(this.broker, "users.byLogin", { login }).catch(() => null);
			return user ? this.identityByUuid(user.Uuid) : null;
		},
		async identityByUuid(uuid: string): Promise<Identity | null> {
			const info = await call(this.broker, "users.authInfo", { uuid }).catch(() => null);
			if (!info || info.Locked) return null;
			return { Uuid: info.Uuid, Login: info.Login, Profile: info.Profile, GroupPath: info.GroupPath, Roles: info.Roles, TokenKind: "session", ExpiresAt: Math.floor(Date.now() / 1000) + 60 };
		},
		digestRun(this: ActivityThis): Promise<number> {
			// One account lookup per user and run, for both the email check and the identity.
			const accounts = new Map<string, Promise<PublicUser | null>>();
			const account = (login: string): Promise<PublicUser | null> => {
				let p = accounts.get(login);
				if (!p) accounts.set(login, (p = call(this.broker, "users.byLogin", { login }).catch(() => null)));
				return p;
			};
			return sendDigests(
				{
					owners: () => this.repo.digestOwners(),
					identityOf: async (login) => {
						const user = await account(login);
						return user ? this.identityByUuid(user.Uuid) : null;
					},
					hasEmail: async (login) => !!(await account(login))?.Attributes?.email,
					pending: (user) => this.feeds.pendingDigest(user),
					queue: async (login, text, count) => {
						await call(this.broker, "mailer.queue", { to: [{ login }], templateId: "Digest", templateData: { Count: String(count) }, text });
					},
					markSent: (login, seq) => this.repo.setMarker(login, "lastsent", seq),
				},
				(m) => this.logger.warn(m),
			);
		},
		async leasedDigest(this: ActivityThis): Promise<void> {
			const lease = this.digestLease;
			if (!lease) return;
			try {
				const out = await lease.run(() => this.digestRun());
				if (out.ran && out.value) this.logger.info(`Activity digests mailed to ${out.value} user(s)`);
			} catch (e) {
				this.logger.warn(`Activity digest run failed: ${(e as Error).message}`);
			}
		},
		async leasedPrune(): Promise<void> {
			try {
				const out = await this.pruneLease.run(() => this.feeds.prune());
				if (out.ran && out.value) this.logger.info(`Pruned ${out.value} activities`);
			} catch (e) {
				this.logger.warn(`Activity prune failed: ${(e as Error).message}`);
			}
		},
	},
	created(this: ActivityThis) {
		this.senders = new Map();
	},
	async started(this: ActivityThis) {
		const cfg = loadConfig();
		this.repo = new ActivityRepo(this.db);
		this.followed = new FollowedNodes({ byUser: (user, max) => this.repo.followedByUser(user, max), among: (user, ids) => this.repo.followedAmong(user, ids) });
		this.feeds = new Feeds({
			repo: this.repo,
			visible: (user, nodes) => call(this.broker, "tree.visible", { Nodes: nodes }, { meta: { user } }),
			uuidsAt: (ds, paths) => call(this.broker, "tree.uuidsAt", { ds, paths }),
			identityOf: (login) => this.identityOf(login),
			identityByUuid: (uuid) => this.identityByUuid(uuid),
			workspaceFor: async (user, uuid) => (await call(this.broker, "workspaces.accessible", { roles: user.Roles })).find((w) => w.UUID === uuid),
			posted: (items) => void broadcast(this.broker, "activity.posted", { items }).catch(() => undefined),
			now: () => Date.now(),
			retentionDays: cfg.activityRetentionDays,
			maxPerBox: cfg.activityMaxPerFeed,
		});
		this.batcher = new Batcher<TreeChange>((changes) => this.feeds.recordTreeChanges(changes).then(() => undefined), {
			delayMs: 500,
			max: 200,
			cap: 50_000,
			onError: (e) => this.logger.warn(`Recording activities failed: ${(e as Error).message}`),
		});
		this.reads = new Batcher<TreeRead>((reads) => this.feeds.recordReads(reads).then(() => undefined), {
			delayMs: 500,
			max: 200,
			cap: 10_000,
			onError: (e) => this.logger.warn(`Recording reads failed: ${(e as Error).message}`),
		});
		this.pruneLease = new PeriodicLease(new LeasesRepo(this.db), "activity.prune", this.broker.nodeID, 2 * PRUNE_EVERY_MS, (e) => this.logger.warn(`Activity prune lease renewal failed: ${(e as Error).message}`));
		this.pruneTimer = setInterval(() => void this.leasedPrune(), PRUNE_EVERY_MS);
		this.pruneTimer.unref?.();
		if (cfg.activityDigestHours > 0) {
			const every = Math.max(60_000, Math.round(cfg.activityDigestHours * 3600_000));
			// The holder takes the lease again each period; it outlives one silent period so another node takes over.
			this.digestLease = new PeriodicLease(new LeasesRepo(this.db), "activity.digest", this.broker.nodeID, 2 * every, (e) => this.logger.warn(`Activity digest lease renewal failed: ${(e as Error).message}`));
			this.digestTimer = setInterval(() => void this.leasedDigest(), every);
			this.digestTimer.unref?.();
		}
	},
	async stopped(this: ActivityThis) {
		clearInterval(this.pruneTimer);
		clearInterval(this.digestTimer);
		await this.batcher?.flush();
		await this.reads?.flush();
		await this.pruneLease?.release().catch(() => undefined);
		await this.digestLease?.release().catch(() => undefined);
	},
};

interface ActivityVars {
	db: Db;
	/** Whether each node that sent a broadcast runs this service (see `handles`), until the registry changes. */
	senders: Map<string, boolean>;
	repo: ActivityRepo;
	/** What each user follows, for stats and listings (lib/activity/followed). */
	followed: FollowedNodes;
	feeds: Feeds;
	batcher: Batcher<TreeChange>;
	reads: Batcher<TreeRead>;
	pruneLease: PeriodicLease;
	pruneTimer?: NodeJS.Timeout;
	digestLease?: PeriodicLease;
	digestTimer?: NodeJS.Timeout;
}
interface ActivityMethods {
	handles(ctx: Context): boolean;
	identityOf(login: string): Promise<Identity | null>;
	identityByUuid(uuid: string): Promise<Identity | null>;
	leasedPrune(): Promise<void>;
	digestRun(): Promise<number>;
	leasedDigest(): Promise<void>;
}
type ActivityThis = Service & ActivityVars & ActivityMethods;

export = ActivityService;
