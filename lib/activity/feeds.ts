// The activity feeds, as Cells' activity service keeps them: every change a user makes goes to the outbox of
// the node, of each of its parent folders and of its author; users who subscribed to one of those folders (or to
// the node itself, for changes other than its creation) with the "change" event get it in their inbox, if they
// can read the node. Reading one's inbox marks it read; the unread count is what came after.
// Reads map the datasource paths stored with each activity to the reader's workspace paths, and drop what the
// reader cannot see (Cells' FilterActivity): a node's feed shows only what its reader may read.
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import { isAdmin, type Identity } from "../auth/identity";
import type { ActivityEntry, ActivityRepo, BoxName, OwnerType, SubscriptionRecord } from "../db/activity";
import { sequence } from "../db/activity";
import type { TreeChange, TreeRead, VisibleNode } from "../contracts/tree";
import type { ShareChange } from "../contracts/share";
import { collection, countCollection, shareActivity, summary, treeActivity, AS_CONTEXT, type ActivityObject, type NodeRef, type StoredActivity } from "./model";
import { compileFilter } from "./filter";

export interface StreamRequest {
	Context?: "MYFEED" | "USER_ID" | "NODE_ID";
	ContextData?: string;
	StreamFilter?: string;
	BoxName?: string;
	UnreadCountOnly?: boolean;
	Offset?: number;
	Limit?: number;
	AsDigest?: boolean;
	PointOfView?: "GENERIC" | "ACTOR" | "SUBJECT";
	Language?: string;
}

export interface SearchSubscriptionsRequest {
	UserIds?: string[];
	ObjectIds?: string[];
	ObjectTypes?: OwnerType[];
}

type NodeQuery = { Uuid: string } | { ds: string; path: string };

/**
 * A cell created or changed (the share service's `share.changed`): its members get a Share activity in their
 * inbox, once per cell (the row key names the cell and the member, so an update re-announcing the same members
 * writes nothing), the owner in their outbox, the cell's root nodes in theirs. Links (hidden users) are not told.
 */
export type ShareNotice = ShareChange;

export interface FeedsDeps {
	repo: ActivityRepo;
	/** Where nodes show for a user (the tree's `tree.visible`, as that user). */
	visible(user: Identity, nodes: NodeQuery[]): Promise<VisibleNode[]>;
	/** Uuids of datasource paths (null where none). */
	uuidsAt(ds: string, paths: string[]): Promise<(string | null)[]>;
	/** A user by login, as the tree sees callers; null for an unknown or locked account. */
	identityOf(login: string): Promise<Identity | null>;
	/** The same by user uuid (a user's own role id); null for anything else. */
	identityByUuid(uuid: string): Promise<Identity | null>;
	/** A workspace (or cell) as this user has it; undefined when they have no access. */
	workspaceFor(user: Identity, uuid: string): Promise<{ UUID: string; Label: string; Scope?: string } | undefined>;
	/** New inbox activities (the websocket tells their owners). */
	posted(items: { ownerId: string; activity: ActivityObject }[]): void;
	now(): number;
	retentionDays: number;
	maxPerBox: number;
}

/** Default page of a stream, as Cells' (20), and the largest one served. */
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 500;
/** Rows examined for one filtered page at most (a filter matching nothing does not read a whole feed). */
const MAX_SCAN = 5000;
/** Rows read at once while scanning a feed. */
const SCAN_PAGE = 200;
/** Unread activities a digest gathers at most. */
const MAX_DIGEST = 500;
/** Paths one `tree.uuidsAt` call takes at most (its parameter's bound). */
const UUIDS_AT_MAX = 256;
/** Node uuids one subscriptions query names at most. */
const SUBSCRIPTIONS_AT_ONCE = 500;

function parents(path: string): string[] {
	const out: string[] = [];
	let p = path;
	while (p.includes("/")) {
		p = p.slice(0, p.lastIndexOf("/"));
		out.push(p);
	}
	if (path !== "") out.push("");
	return out;
}

/** Cells' activitiesAreSimilar: the same kind of activity by the same actor on the same object. */
function similar(a: ActivityObject, b: ActivityObject): boolean {
	return !!a.actor && !!a.object && !!b.actor && !!b.object && a.type === b.type && a.actor.id === b.actor.id && a.object.id === b.object.id;
}

function refKey(r: NodeRef): string {
	return `${r.ds}\u0000${r.path}`;
}

/** A new inbox activity to tell its owner about, with its row's key. */
type Announce = { key: string; ownerId: string; activity: ActivityObject };

/** An inbox row a subscriber gets if they can read its node. */
type Candidate = { entry: ActivityEntry; stored: StoredActivity };

function want(wants: Map<string, Candidate[]>, login: string, c: Candidate): void {
	let list = wants.get(login);
	if (!list) wants.set(login, (list = []));
	list.push(c);
}

export class Feeds {
	constructor(private readonly deps: FeedsDeps) {}

	/** Tells about the inbox rows this batch wrote (a replica that found them written already says nothing). */
	private announce(inbox: Announce[], written: ActivityEntry[]): void {
		const fresh = new Set(written.map((e) => e.key));
		const items = inbox.filter((i) => fresh.has(i.key)).map(({ ownerId, activity }) => ({ ownerId, activity }));
		if (items.length) this.deps.posted(items);
	}

	/** The uuids of each node's parent folders, nearest first: one tree call per datasource for a whole batch. */
	private async parentsOf(nodes: NodeRef[]): Promise<string[][]> {
		const wanted = new Map<string, Set<string>>();
		for (const n of nodes) {
			let paths = wanted.get(n.ds);
			if (!paths) wanted.set(n.ds, (paths = new Set()));
			for (const p of parents(n.path)) paths.add(p);
		}
		const found = new Map<string, string | null>();
		for (const [ds, set] of wanted) {
			const paths = [...set];
			for (let i = 0; i < paths.length; i += UUIDS_AT_MAX) {
				const chunk = paths.slice(i, i + UUIDS_AT_MAX);
				const uuids = await this.deps.uuidsAt(ds, chunk);
				chunk.forEach((p, j) => found.set(refKey({ ds, path: p }), uuids[j] ?? null));
			}
		}
		return nodes.map((n) => parents(n.path).map((p) => found.get(refKey({ ds: n.ds, path: p }))).filter((u): u is string => !!u));
	}

	/**
	 * The subscriptions to these nodes, by node: one query for a batch (a few for a very large one). All of them:
	 * a listing's bound would drop the followers of the batch's last nodes.
	 */
	private async followersOf(nodeUuids: string[]): Promise<Map<string, SubscriptionRecord[]>> {
		const ids = [...new Set(nodeUuids)];
		const out = new Map<string, SubscriptionRecord[]>();
		for (let i = 0; i < ids.length; i += SUBSCRIPTIONS_AT_ONCE) {
			for (const s of await this.deps.repo.subscriptions({ objectType: "NODE", objectIds: ids.slice(i, i + SUBSCRIPTIONS_AT_ONCE), limit: null })) {
				let list = out.get(s.ObjectId);
				if (!list) out.set(s.ObjectId, (list = []));
				list.push(s);
			}
		}
		return out;
	}

	/**
	 * The inbox rows of a batch that their owners may read: each subscriber is looked up once and asked once (one
	 * tree call for all the batch's activities they follow) where the nodes show for them; `entries` and `inbox`
	 * get the rows they can read, presented as they see them.
	 */
	private async deliver(wants: Map<string, Candidate[]>, entries: ActivityEntry[], inbox: Announce[]): Promise<void> {
		for (const [login, candidates] of wants) {
			const user = await this.deps.identityOf(login).catch(() => null);
			if (!user) continue;
			const where = await this.locate(user, candidates.map((c) => c.stored)).catch(() => undefined);
			if (!where) continue;
			const at = (r?: NodeRef) => (r ? where.get(refKey(r)) : undefined);
			for (const { entry, stored } of candidates) {
				const activity = this.present(stored, at(stored.refs.object), at(stored.refs.origin), at(stored.refs.target));
				if (!activity) continue;
				entries.push(entry);
				inbox.push({ key: entry.key, ownerId: login, activity });
			}
		}
	}

	/** Writes the activities of a batch of tree changes in one transaction. */
	async recordTreeChanges(changes: TreeChange[]): Promise<number> {
		const at = this.deps.now();
		const todo: { change: TreeChange; stored: StoredActivity; id: string; actor: string }[] = [];
		const handled = new Set<string>();
		for (const change of changes) {
			if (change.id && handled.has(change.id)) continue;
			if (change.id) handled.add(change.id);
			const stored = treeActivity(change, new Date(at));
			if (!stored || !change.node.Uuid) continue;
			todo.push({ change, stored, id: change.id ?? `${change.node.Uuid}-${sequence(at)}`, actor: change.by as string });
		}
		const parentsOf = await this.parentsOf(todo.map((t) => t.change.node));
		// Followers: of the parents, and of the node itself unless it is new (nobody follows it yet).
		const followed = todo.map((t, i) => (t.change.type === "create" ? parentsOf[i] : [...parentsOf[i], t.change.node.Uuid]));
		const subs = await this.followersOf(followed.flat());

		const entries: ActivityEntry[] = [];
		const deleted: string[] = [];
		const wants = new Map<string, Candidate[]>();
		todo.forEach(({ change, stored, id, actor }, i) => {
			const { node } = change;
			const body = JSON.stringify(stored);
			const entry = (ownerType: OwnerType, ownerId: string, box: BoxName): ActivityEntry => ({ key: `${id}|${ownerType}|${ownerId}|${box}`, ownerType, ownerId, box, seq: sequence(at), actor, published: at, body });
			if (change.type === "delete") deleted.push(node.Uuid);
			else entries.push(entry("NODE", node.Uuid, "outbox"));
			for (const u of parentsOf[i]) entries.push(entry("NODE", u, "outbox"));
			entries.push(entry("USER", actor, "outbox"));
			const told = new Set<string>();
			for (const s of followed[i].flatMap((u) => subs.get(u) ?? [])) {
				if (s.UserId === actor || told.has(s.UserId) || !s.Events.includes("change")) continue;
				told.add(s.UserId);
				want(wants, s.UserId, { entry: entry("USER", s.UserId, "inbox"), stored });
			}
		});
		const inbox: Announce[] = [];
		await this.deliver(wants, entries, inbox);
		const written = await this.deps.repo.post(entries, deleted);
		this.announce(inbox, written);
		return written.length;
	}

	/**
	 * Folders listed by users (`tree.read`): followers who asked for "read" get a Read activity in their inbox.
	 * Reads go nowhere else (Cells also writes them to the outboxes, which would fill the feeds with listings).
	 */
	async recordReads(reads: TreeRead[]): Promise<number> {
		const at = this.deps.now();
		const once = new Set<string>();
		// One listing after another of the same folder by the same user, in a batch: one read.
		const todo = reads.filter((r) => {
			const key = `${r.by}|${r.node.Uuid}`;
			if (once.has(key)) return false;
			once.add(key);
			return true;
		});
		const parentsOf = await this.parentsOf(todo.map((r) => r.node));
		const followed = todo.map((r, i) => [r.node.Uuid, ...parentsOf[i]]);
		const subs = await this.followersOf(followed.flat());
		const wants = new Map<string, Candidate[]>();
		todo.forEach((r, i) => {
			const readers = new Set(followed[i].flatMap((u) => subs.get(u) ?? []).filter((s) => s.Events.includes("read") && s.UserId !== r.by).map((s) => s.UserId));
			if (!readers.size) return;
			const stored: StoredActivity = {
				activity: {
					"@context": AS_CONTEXT,
					type: "Read",
					actor: { type: "Person", id: r.by, name: r.by },
					object: { type: r.node.type === "LEAF" ? "Document" : "Folder", id: r.node.Uuid, name: r.node.path },
					updated: new Date(at).toISOString(),
				},
				refs: { object: { ds: r.node.ds, path: r.node.path } },
			};
			const body = JSON.stringify(stored);
			for (const login of readers) {
				const key = `${r.id}|USER|${login}|inbox`;
				want(wants, login, { entry: { key, ownerType: "USER", ownerId: login, box: "inbox", seq: sequence(at), actor: r.by, published: at, body }, stored });
			}
		});
		const entries: ActivityEntry[] = [];
		const inbox: Announce[] = [];
		await this.deliver(wants, entries, inbox);
		const written = await this.deps.repo.post(entries);
		this.announce(inbox, written);
		return written.length;
	}

	/** Share activities of a cell's members (see ShareNotice). */
	async recordShare(n: ShareNotice): Promise<number> {
		if (n.Scope !== "ROOM" || n.Action === "delete" || !n.Members?.length) return 0;
		const owner = await this.deps.identityByUuid(n.OwnerUuid);
		if (!owner) return 0;
		const members = [...new Set(n.Members)].filter((m) => m !== n.OwnerUuid).slice(0, 500);
		return this.announceAccess(owner.Login, members, n.Uuid, n.Roots ?? []);
	}

	/**
	 * An ACL given on a workspace to a user's own role by someone else (Cells' AclActivity): the user is told they
	 * now have access, once per workspace (the same key as a cell's Share activity: a cell announced both ways is
	 * announced once).
	 */
	recordAccess(actor: string, roleId: string, workspaceId: string): Promise<number> {
		return this.announceAccess(actor, [roleId], workspaceId, []);
	}

	private async announceAccess(actor: string, roleIds: string[], workspaceId: string, roots: string[]): Promise<number> {
		const at = this.deps.now();
		const entries: ActivityEntry[] = [];
		const inbox: Announce[] = [];
		for (const roleId of roleIds) {
			const user = await this.deps.identityByUuid(roleId).catch(() => null);
			if (!user || user.Login === actor) continue;
			const ws = await this.deps.workspaceFor(user, workspaceId).catch(() => undefined);
			if (!ws) continue;
			const stored = shareActivity(actor, { UUID: ws.UUID, Label: ws.Label, cell: ws.Scope === "ROOM" }, new Date(at));
			const body = JSON.stringify(stored);
			const key = `share|${ws.UUID}|${user.Login}`;
			const entry = (ownerType: OwnerType, ownerId: string, box: BoxName): ActivityEntry => ({ key: `${key}|${ownerType}|${ownerId}|${box}`, ownerType, ownerId, box, seq: sequence(at), actor, published: at, body });
			const mine = entry("USER", user.Login, "inbox");
			entries.push(mine, entry("USER", actor, "outbox"));
			for (const root of roots) entries.push(entry("NODE", root, "outbox"));
			inbox.push({ key: mine.key, ownerId: user.Login, activity: stored.activity });
		}
		const written = await this.deps.repo.post(entries);
		this.announce(inbox, written);
		return written.length;
	}

	/** POST /activity/stream */
	async stream(user: Identity, req: StreamRequest): Promise<ActivityObject> {
		const context = req.Context ?? "MYFEED";
		const box: BoxName = req.BoxName === "inbox" ? "inbox" : "outbox";
		if (req.UnreadCountOnly) {
			if (context !== "USER_ID" || !req.ContextData) throw new BadRequestError("wrong arguments, please use only User context to get unread activities", "activity.unread.context");
			this.checkUserBox(user, req.ContextData, "inbox");
			const marker = await this.deps.repo.marker(req.ContextData, "lastread");
			return countCollection(await this.deps.repo.count("USER", req.ContextData, "inbox", marker));
		}
		let ownerType: OwnerType;
		let ownerId: string;
		if (context === "NODE_ID") {
			if (!req.ContextData) throw new BadRequestError("ContextData must be a node uuid for the NODE_ID context", "activity.context");
			ownerType = "NODE";
			ownerId = req.ContextData;
		} else if (context === "USER_ID") {
			if (!req.ContextData) throw new BadRequestError("ContextData must be a user login for the USER_ID context", "activity.context");
			this.checkUserBox(user, req.ContextData, box);
			ownerType = "USER";
			ownerId = req.ContextData;
		} else {
			ownerType = "USER";
			ownerId = user.Login;
		}
		const filter = compileFilter(req.StreamFilter);

		if (req.AsDigest) {
			const after = ownerType === "USER" ? await this.deps.repo.marker(ownerId, "lastsent") : undefined;
			const rows = await this.deps.repo.list(ownerType, ownerId, box, { limit: MAX_DIGEST, after });
			return this.digest(user, rows.filter((r) => !filter || filter(this.parse(r).activity, r.published)));
		}

		const limit = Math.min(req.Limit && req.Limit > 0 ? req.Limit : DEFAULT_LIMIT, MAX_LIMIT);
		const offset = Math.max(0, req.Offset ?? 0);
		// Newest first; the filter applies, then a run of similar activities (same type, actor and object: a file
		// saved ten times) shows as its newest with `totalItems` the run's length, as Cells stacks them; then the page.
		const rows: ActivityEntry[] = [];
		const counts: number[] = [];
		let newest: string | undefined;
		let prev: ActivityObject | undefined;
		let prevAt = -1;
		let skipped = 0;
		scan: for (let at = 0; at < MAX_SCAN; at += SCAN_PAGE) {
			const page = await this.deps.repo.list(ownerType, ownerId, box, { offset: at, limit: SCAN_PAGE });
			if (at === 0) newest = page[0]?.seq;
			for (const r of page) {
				const a = this.parse(r).activity;
				if (filter && !filter(a, r.published)) continue;
				if (prev && similar(prev, a)) {
					if (prevAt >= 0) counts[prevAt]++;
					continue;
				}
				if (rows.length >= limit) break scan;
				prev = a;
				if (skipped < offset) {
					skipped++;
					prevAt = -1;
					continue;
				}
				rows.push(r);
				counts.push(1);
				prevAt = rows.length - 1;
			}
			if (page.length < SCAN_PAGE) break;
		}
		// Reading one's inbox marks everything in it read (Cells stores the newest key as "lastread").
		if (ownerType === "USER" && box === "inbox" && ownerId === user.Login && newest) await this.deps.repo.setMarker(ownerId, "lastread", newest);
		return collection(await this.visibleItems(user, rows, req.PointOfView, counts));
	}

	/** A user's inbox is theirs (and administrators'); outboxes are read by anyone, filtered by what they can see. */
	private checkUserBox(user: Identity, login: string, box: BoxName): void {
		if (box === "inbox" && login !== user.Login && !isAdmin(user)) throw new ForbiddenError("You can only read your own notifications", "activity.inbox.forbidden");
	}

	private parse(r: ActivityEntry): StoredActivity {
		const s = JSON.parse(r.body) as StoredActivity;
		s.activity.id = `/activity-${r.seq}`;
		return s;
	}

	/** Where each stored node ref shows for the user, in one tree call. */
	private async locate(user: Identity, stored: StoredActivity[]): Promise<Map<string, VisibleNode>> {
		const refs = new Map<string, NodeRef>();
		for (const s of stored) for (const r of [s.refs.object, s.refs.origin, s.refs.target]) if (r) refs.set(refKey(r), r);
		const list = [...refs.values()];
		const out = new Map<string, VisibleNode>();
		for (let i = 0; i < list.length; i += 500) {
			const chunk = list.slice(i, i + 500);
			const seen = await this.deps.visible(user, chunk.map((r) => ({ ds: r.ds, path: r.path })));
			chunk.forEach((r, j) => out.set(refKey(r), seen[j] ?? { In: [] }));
		}
		return out;
	}

	/** The activity as this reader sees it: node names in their workspaces, or undefined when they cannot see it. */
	private present(s: StoredActivity, object: VisibleNode | undefined, origin: VisibleNode | undefined, target: VisibleNode | undefined): ActivityObject | undefined {
		const a: ActivityObject = structuredClone(s.activity);
		if (s.refs.object && a.object) {
			if (!object?.In.length) return undefined;
			a.object.partOf = { type: "Collection", items: object.In.map((w) => ({ type: "Workspace", id: w.UUID, name: w.Label, rel: w.Path })) };
			a.object.name = object.In[0].Path;
		}
		if (a.origin) {
			if (origin?.In.length) a.origin.name = origin.In[0].Path;
			else delete a.origin;
		}
		if (a.target) {
			if (target?.In.length) a.target.name = target.In[0].Path;
			else delete a.target;
		}
		return a;
	}

	private async visibleItems(user: Identity, rows: ActivityEntry[], pov: StreamRequest["PointOfView"], counts: number[] = []): Promise<ActivityObject[]> {
		const stored = rows.map((r, i) => {
			const st = this.parse(r);
			if ((counts[i] ?? 1) > 1) st.activity.totalItems = counts[i];
			return st;
		});
		const where = await this.locate(user, stored);
		const out: ActivityObject[] = [];
		for (const s of stored) {
			const at = (r?: NodeRef) => (r ? where.get(refKey(r)) : undefined);
			const a = this.present(s, at(s.refs.object), at(s.refs.origin), at(s.refs.target));
			if (!a) continue;
			a.summary = summary(a, pov);
			out.push(a);
		}
		return out;
	}

	/**
	 * What a digest mail tells `user`: their inbox since their last digest, unread only (newer than both markers),
	 * as the AsDigest stream shows it; `upTo` is the newest sequence it covers (the next `lastsent`).
	 */
	async pendingDigest(user: Identity): Promise<{ digest: ActivityObject; upTo?: string }> {
		const [sent, read] = await Promise.all([this.deps.repo.marker(user.Login, "lastsent"), this.deps.repo.marker(user.Login, "lastread")]);
		const after = [sent, read].filter((m): m is string => !!m).sort().pop();
		const rows = await this.deps.repo.list("USER", user.Login, "inbox", { limit: MAX_DIGEST, after });
		return { digest: await this.digest(user, rows), upTo: rows[0]?.seq };
	}

	/** Cells' Digest: the unread activities grouped by the workspace (or cell) they are seen in. */
	private async digest(user: Identity, rows: ActivityEntry[]): Promise<ActivityObject> {
		const stored = rows.map((r) => this.parse(r));
		const where = await this.locate(user, stored);
		const groups = new Map<string, ActivityObject>();
		const items: ActivityObject[] = [];
		for (const s of stored) {
			if (!s.refs.object) {
				const a = { ...s.activity, summary: summary(s.activity, "GENERIC") };
				items.push(a);
				continue;
			}
			const seen = where.get(refKey(s.refs.object));
			for (const w of seen?.In ?? []) {
				let g = groups.get(w.UUID);
				if (!g) groups.set(w.UUID, (g = { "@context": AS_CONTEXT, type: w.Scope === "ROOM" ? "Cell" : "Workspace", id: w.UUID, name: w.Label, items: [] }));
				const a: ActivityObject = structuredClone(s.activity);
				if (a.object) a.object.name = w.Path;
				delete a.origin;
				delete a.target;
				a.summary = summary(a, "GENERIC");
				g.items?.push(a);
			}
		}
		items.push(...groups.values());
		return items.length ? { "@context": AS_CONTEXT, type: "Digest", items, totalItems: items.length } : { "@context": AS_CONTEXT, type: "Digest" };
	}

	/** POST /activity/subscribe: one's own subscriptions only, to a node one can read; no events unsubscribes. */
	async subscribe(user: Identity, s: Partial<SubscriptionRecord>): Promise<SubscriptionRecord> {
		if (!s.UserId || s.UserId !== user.Login) throw new ForbiddenError("you are not allowed to set subscription on this user", "activity.subscription.forbidden");
		if (!s.ObjectId) throw new BadRequestError("ObjectId is required", "activity.subscription.object");
		const type: OwnerType = s.ObjectType ?? "NODE";
		const events = [...new Set(s.Events ?? [])];
		for (const e of events) if (e !== "read" && e !== "change") throw new BadRequestError(`Unknown event ${e}: subscriptions follow "read" and/or "change"`, "activity.subscription.event");
		if (type === "NODE" && events.length) {
			const [seen] = await this.deps.visible(user, [{ Uuid: s.ObjectId }]);
			if (!seen?.Node || !seen.In.length) throw new NotFoundError(`No node ${s.ObjectId} that you can read`, "node.notfound");
		}
		if (type === "USER" && events.length && !(await this.deps.identityOf(s.ObjectId))) throw new NotFoundError(`No user ${s.ObjectId}`, "user.notfound");
		const record: SubscriptionRecord = { UserId: user.Login, ObjectType: type, ObjectId: s.ObjectId, Events: events };
		await this.deps.repo.subscribe(record);
		return record;
	}

	/** POST /activity/subscriptions: the caller's own subscriptions, by objects and types. */
	async searchSubscriptions(user: Identity, req: SearchSubscriptionsRequest): Promise<SubscriptionRecord[]> {
		const types = [...new Set(req.ObjectTypes ?? [])];
		const list = await this.deps.repo.subscriptions({ objectIds: req.ObjectIds, userIds: [user.Login], ...(types.length === 1 ? { objectType: types[0] } : {}) });
		return list.filter((s) => !types.length || types.includes(s.ObjectType));
	}

	/** Drops what the retention no longer keeps; how many rows. */
	prune(): Promise<number> {
		return this.deps.repo.prune(this.deps.now() - this.deps.retentionDays * 86_400_000, this.deps.maxPerBox);
	}
}
