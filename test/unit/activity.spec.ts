// lib/activity without a broker: the feeds over a real ActivityRepo with the tree, users and workspaces faked —
// who gets what from a tree change, the share and access announcements (once per workspace and user), the stream
// filter, the batcher.
import assert from "node:assert/strict";
import { ActivityRepo } from "../../lib/db/activity";
import { Feeds, type FeedsDeps } from "../../lib/activity/feeds";
import { compileFilter } from "../../lib/activity/filter";
import { Batcher } from "../../lib/activity/batcher";
import type { Identity } from "../../lib/auth/identity";
import type { TreeChange, TreeRead } from "../../lib/contracts/tree";
import { countingStatements, onEveryBackend } from "../helpers/db";

const person = (login: string): Identity => ({ Uuid: `u-${login}`, Login: login, Profile: "standard", GroupPath: "/", Roles: [`u-${login}`], TokenKind: "session", ExpiresAt: 0 });
const UUIDS: Record<string, string> = { "": "root", team: "n-team", "team/sub": "n-sub", big: "n-big" };

onEveryBackend("Feeds", (h) => {
	let feeds: Feeds;
	let repo: ActivityRepo;
	let posted: { ownerId: string; activity: { type?: string } }[];
	const hidden = new Set<string>(["dan"]);
	let deps: FeedsDeps;
	before(() => {
		posted = [];
		deps = {
			repo: (repo = new ActivityRepo(h().db)),
			// Everyone reads everything in workspace "ws" (datasource ds), but dan.
			visible: async (user, nodes) =>
				nodes.map((n) => ("Uuid" in n ? { Node: { Uuid: n.Uuid, ds: "ds", path: "team" }, In: hidden.has(user.Login) ? [] : [{ UUID: "ws1", Slug: "ws", Label: "WS", Path: "ws/team" }] } : { Node: n, In: hidden.has(user.Login) ? [] : [{ UUID: "ws1", Slug: "ws", Label: "WS", Path: `ws/${n.path}` }] })),
			uuidsAt: async (_ds, paths) => paths.map((p) => UUIDS[p] ?? null),
			identityOf: async (login) => (login === "ghost" ? null : person(login)),
			identityByUuid: async (uuid) => (uuid.startsWith("u-") ? person(uuid.slice(2)) : null),
			workspaceFor: async (user, uuid) => (uuid === "cell1" && user.Login !== "dan" ? { UUID: "cell1", Label: "Project", Scope: "ROOM" } : undefined),
			posted: (items) => posted.push(...items),
			now: () => 1_700_000_000_000,
			retentionDays: 30,
			maxPerBox: 100,
		};
		feeds = new Feeds(deps);
	});

	const change = (id: string, type: TreeChange["type"], path: string, by?: string): TreeChange => ({ id, type, by, node: { Uuid: `n-${path}`, ds: "ds", path, name: path.split("/").pop() ?? path, type: "LEAF" } as TreeChange["node"] });

	it("fans a change out to the node, its parents, its author and the followers who can read it, once", async () => {
		for (const who of ["bob", "alice"]) await feeds.subscribe(person(who), { UserId: who, ObjectId: "n-team", Events: ["change"] });
		// Dan followed the folder when he could read it; he no longer can.
		await repo.subscribe({ UserId: "dan", ObjectType: "NODE", ObjectId: "n-team", Events: ["change"] });
		const c = change("c1", "create", "team/sub/a.txt", "alice");
		assert.equal(await feeds.recordTreeChanges([c, c, change("c0", "create", "team/x", undefined)]), 6);
		assert.deepEqual(posted.map((p) => p.ownerId), ["bob"]);
		// Replayed by another replica: nothing new, nobody told twice.
		assert.equal(await feeds.recordTreeChanges([c]), 0);
		assert.equal(posted.length, 1);
		const node = await feeds.stream(person("bob"), { Context: "NODE_ID", ContextData: "n-sub" });
		assert.deepEqual(node.items?.map((a) => [a.type, a.object?.name]), [["Create", "ws/team/sub/a.txt"]]);
		assert.equal((await feeds.stream(person("dan"), { Context: "NODE_ID", ContextData: "n-sub" })).items, undefined);
		assert.equal((await feeds.stream(person("bob"), { Context: "USER_ID", ContextData: "bob", UnreadCountOnly: true })).totalItems, 1);
		assert.equal((await feeds.stream(person("dan"), { Context: "USER_ID", ContextData: "dan", UnreadCountOnly: true })).totalItems, undefined);
	});

	it("drops a deleted node's own feed and keeps its parents'", async () => {
		await feeds.recordTreeChanges([change("c2", "delete", "team/sub/a.txt", "alice")]);
		const parent = await feeds.stream(person("bob"), { Context: "NODE_ID", ContextData: "n-sub" });
		assert.deepEqual(parent.items?.map((a) => a.type), ["Delete", "Create"]);
		assert.equal((await feeds.stream(person("bob"), { Context: "NODE_ID", ContextData: "n-team/sub/a.txt" })).items, undefined);
	});

	it("announces a cell to its members once, whichever way it is announced", async () => {
		posted = [];
		const n = await feeds.recordShare({ Uuid: "cell1", Scope: "ROOM", Action: "create", OwnerUuid: "u-alice", Members: ["u-alice", "u-bob", "u-dan", "team-role"], Roots: ["n-team"] });
		assert.equal(n, 3);
		assert.deepEqual(posted.map((p) => [p.ownerId, p.activity.type]), [["bob", "Share"]]);
		assert.equal(await feeds.recordAccess("alice", "u-bob", "cell1"), 0);
		assert.equal(await feeds.recordShare({ Uuid: "cell1", Scope: "LINK", Action: "create", OwnerUuid: "u-alice", Members: ["u-carol"] }), 0);
		const inbox = await feeds.stream(person("bob"), { Context: "USER_ID", ContextData: "bob", BoxName: "inbox" });
		assert.deepEqual(inbox.items?.[0].object, { type: "Cell", id: "cell1", name: "Project" });
		assert.match(inbox.items?.[0].summary ?? "", /shared \[Project\]\(workspaces:\/\/cell1\) with you/);
	});

	it("stacks a run of similar activities as its newest, with the run's length, before paging", async () => {
		const edits = ["e1", "e2", "e3"].map((id) => change(id, "content", "team/notes.md", "erin"));
		await feeds.recordTreeChanges([change("e0", "create", "team/notes.md", "erin")]);
		for (const e of edits) await feeds.recordTreeChanges([e]);
		await feeds.recordTreeChanges([change("e4", "content", "team/notes.md", "frank")]);
		const feed = await feeds.stream(person("bob"), { Context: "NODE_ID", ContextData: "n-team/notes.md" });
		assert.deepEqual(feed.items?.map((a) => [a.type, a.actor?.id, a.totalItems]), [["Update", "frank", undefined], ["Update", "erin", 3], ["Create", "erin", undefined]]);
		const second = await feeds.stream(person("bob"), { Context: "NODE_ID", ContextData: "n-team/notes.md", Offset: 1, Limit: 1 });
		assert.deepEqual(second.items?.map((a) => [a.type, a.totalItems]), [["Update", 3]]);
	});

	it("refuses subscriptions for others, to unknown events, to nodes one cannot read", async () => {
		await assert.rejects(feeds.subscribe(person("bob"), { UserId: "alice", ObjectId: "n-team", Events: ["change"] }), /not allowed/);
		await assert.rejects(feeds.subscribe(person("bob"), { UserId: "bob", ObjectId: "n-team", Events: ["poke"] }), /Unknown event/);
		await assert.rejects(feeds.subscribe(person("dan"), { UserId: "dan", ObjectId: "n-other", Events: ["change"] }), /No node/);
		// Without events: unsubscribed, whatever the node.
		assert.deepEqual(await feeds.subscribe(person("dan"), { UserId: "dan", ObjectId: "n-team", Events: [] }), { UserId: "dan", ObjectType: "NODE", ObjectId: "n-team", Events: [] });
		assert.deepEqual((await feeds.searchSubscriptions(person("dan"), {})).length, 0);
	});

	/** Feeds over the same fakes, counting the SQL statements and the calls to the tree and the users. */
	function counted() {
		const sql = countingStatements(h().db);
		const calls = { visible: 0, uuidsAt: 0, identityOf: 0 };
		const items: { ownerId: string }[] = [];
		const f = new Feeds({
			...deps,
			repo: new ActivityRepo(sql.db),
			visible: (u, n) => (calls.visible++, deps.visible(u, n)),
			uuidsAt: (ds, p) => (calls.uuidsAt++, deps.uuidsAt(ds, p)),
			identityOf: (l) => (calls.identityOf++, deps.identityOf(l)),
			posted: (i) => items.push(...i),
		});
		return { f, sql, calls, items };
	}

	it("writes a batch of 200 changes in a few statements, with one lookup and one tree call per follower", async () => {
		for (const who of ["bob", "carol", "erin", "dan", "ghost"]) await repo.subscribe({ UserId: who, ObjectType: "NODE", ObjectId: "n-big", Events: ["change"] });
		await repo.subscribe({ UserId: "frank", ObjectType: "NODE", ObjectId: "n-big", Events: ["read"] });
		const batch: TreeChange[] = [];
		for (let i = 0; i < 180; i++) batch.push(change(`b${i}`, "create", `big/f${i}.txt`, "alice"));
		for (let i = 0; i < 20; i++) batch.push(change(`d${i}`, "delete", `big/f${i}.txt`, "alice"));
		const { f, sql, calls, items } = counted();
		const written = await f.recordTreeChanges(batch);
		// Each change: its node (not for a delete), 2 parents, the author; and bob, carol and erin's inboxes.
		assert.equal(written, 180 * 7 + 20 * 6);
		// One subscriptions query, the inserts (200 rows each), the deleted nodes' boxes and subscriptions: one
		// transaction. Before, each change queried the subscriptions and each follower was asked per change.
		assert.equal(sql.count, 1 + Math.ceil(written / 200) + 2);
		// The followers (dan cannot read, ghost is unknown) are looked up once, asked once; the parents in one call.
		assert.deepEqual(calls, { visible: 4, uuidsAt: 1, identityOf: 5 });
		assert.deepEqual([...new Set(items.map((i) => i.ownerId))].sort(), ["bob", "carol", "erin"]);
		assert.equal(items.length, 600);
		// The deleted nodes' boxes are gone, the others' stay.
		assert.equal(await repo.count("NODE", "n-big/f0.txt", "outbox"), 0);
		assert.equal(await repo.count("NODE", "n-big/f20.txt", "outbox"), 1);
		assert.equal(await repo.count("NODE", "n-big", "outbox"), 200);
	});

	it("writes a batch of reads with one lookup and one tree call per follower of \"read\"", async () => {
		await repo.subscribe({ UserId: "bob", ObjectType: "NODE", ObjectId: "n-big", Events: ["read", "change"] });
		const reads: TreeRead[] = [];
		for (let i = 20; i < 70; i++) reads.push({ id: `r${i}`, by: "alice", node: change("", "create", `big/f${i}.txt`).node });
		// The same listing twice in a batch is one read.
		reads.push({ ...reads[0], id: "r-again" });
		const { f, sql, calls, items } = counted();
		assert.equal(await f.recordReads(reads), 100);
		assert.equal(sql.count, 1 + 1);
		assert.deepEqual(calls, { visible: 2, uuidsAt: 1, identityOf: 2 });
		assert.deepEqual([...new Set(items.map((i) => `${i.ownerId}`))].sort(), ["bob", "frank"]);
	});
});

describe("activity: stream filter and batcher", () => {
	it("reads must, must-not and should clauses over the activity's fields", () => {
		const a = { type: "Create", actor: { id: "alice" }, object: { type: "Document", name: "ws/report.txt" } };
		const t = (q: string, published = 1_700_000_000_000) => compileFilter(q)!(a, published);
		assert.equal(t("+type:Create +actor.id:alice"), true);
		assert.equal(t("+type:create -object.type:Folder"), true);
		assert.equal(t("type:Delete type:Move"), false);
		assert.equal(t('type:Delete object.name:"ws/report.txt"'), true);
		assert.equal(t("+updated:>1600000000"), true);
		assert.equal(t("+updated:<=1600000000"), false);
		assert.equal(compileFilter("  "), undefined);
		assert.throws(() => compileFilter("+colour:red"), /unknown field colour/);
		assert.throws(() => compileFilter("+type:>3"), /compares only updated/);
		assert.throws(() => compileFilter("type Create"), /cannot read/);
	});

	it("batches by time and by size, in order, and bounds what waits", async () => {
		const got: number[][] = [];
		const b = new Batcher<number>(async (items) => void got.push(items), { delayMs: 30, max: 3, cap: 5, onError: () => undefined });
		b.add(1);
		b.add(2);
		b.add(3);
		await b.flush();
		b.add(4);
		await new Promise((r) => setTimeout(r, 60));
		assert.deepEqual(got, [[1, 2, 3], [4]]);
		const slow = new Batcher<number>(async (items) => void got.push(items), { delayMs: 10_000, max: 100, cap: 2, onError: () => undefined });
		for (const i of [5, 6, 7]) slow.add(i);
		await slow.flush();
		assert.deepEqual(got.at(-1), [6, 7]);
		assert.equal(slow.dropped, 1);
	});
});
