// ActivityRepo on SQLite and PostgreSQL: boxes read newest first and page, a key is written once, counts and
// markers (moving forward only), who a digest mails (in one statement), subscriptions (upsert, removal by empty events,
// filters), deleted nodes (in the batch's transaction) and deleted users, and the pruning by age and by size.
import assert from "node:assert/strict";
import { FollowedNodes } from "../../lib/activity/followed";
import { ActivityRepo, sequence, type ActivityEntry } from "../../lib/db/activity";
import { countingStatements, onEveryBackend } from "../helpers/db";

function entry(key: string, ownerId: string, ms: number, over: Partial<ActivityEntry> = {}): ActivityEntry {
	return { key, ownerType: "USER", ownerId, box: "inbox", seq: sequence(ms), actor: "alice", published: ms, body: JSON.stringify({ type: "Create", n: key }), ...over };
}

onEveryBackend("ActivityRepo", (h) => {
	let repo: ActivityRepo;
	before(() => {
		repo = new ActivityRepo(h().db);
	});

	it("writes a batch once: a key already written is skipped and not reported as new", async () => {
		const a = entry("c1|bob|inbox", "bob", 1000);
		const b = entry("c2|bob|inbox", "bob", 2000);
		assert.deepEqual((await repo.post([a, b])).map((e) => e.key), [a.key, b.key]);
		assert.deepEqual(await repo.post([{ ...a, seq: sequence(9999) }, entry("c3|bob|inbox", "bob", 3000)]).then((l) => l.map((e) => e.key)), ["c3|bob|inbox"]);
		assert.equal(await repo.count("USER", "bob", "inbox"), 3);
	});

	it("lists a box newest first, paged, and only the rows newer than a sequence", async () => {
		const all = await repo.list("USER", "bob", "inbox", { limit: 10 });
		assert.deepEqual(all.map((e) => e.key), ["c3|bob|inbox", "c2|bob|inbox", "c1|bob|inbox"]);
		assert.deepEqual(JSON.parse(all[0].body), { type: "Create", n: "c3|bob|inbox" });
		assert.equal(all[0].published, 3000);
		assert.deepEqual((await repo.list("USER", "bob", "inbox", { offset: 1, limit: 1 })).map((e) => e.key), ["c2|bob|inbox"]);
		assert.deepEqual((await repo.list("USER", "bob", "inbox", { limit: 10, after: all[1].seq })).map((e) => e.key), ["c3|bob|inbox"]);
		assert.deepEqual(await repo.list("USER", "bob", "outbox", { limit: 10 }), []);
		assert.equal(await repo.count("USER", "bob", "inbox", all[2].seq), 2);
	});

	it("moves a marker forward only", async () => {
		assert.equal(await repo.marker("bob", "lastread"), undefined);
		await repo.setMarker("bob", "lastread", "0000000002000");
		await repo.setMarker("bob", "lastread", "0000000001000");
		assert.equal(await repo.marker("bob", "lastread"), "0000000002000");
		await repo.setMarker("bob", "lastread", "0000000003000");
		assert.equal(await repo.marker("bob", "lastread"), "0000000003000");
		assert.equal(await repo.marker("bob", "lastsent"), undefined);
	});

	it("digestOwners: users whose inbox has rows newer than both their read and digest markers", async () => {
		const dan = entry("d1|dan|inbox", "dan", 5000);
		const erin = entry("e1|erin|inbox", "erin", 4000);
		await repo.post([dan, erin, entry("f1|frank|outbox", "frank", 6000, { box: "outbox" })]);
		await repo.setMarker("erin", "lastsent", erin.seq);
		const owners = (await repo.digestOwners()).sort((a, b) => a.userId.localeCompare(b.userId));
		// bob's last read marker is the time of his newest row, not its sequence: that row is still unread.
		assert.deepEqual(owners.map((o) => o.userId), ["bob", "dan"]);
		assert.equal(owners[1].newest, dan.seq);
		await repo.setMarker("dan", "lastread", dan.seq);
		assert.deepEqual((await repo.digestOwners()).map((o) => o.userId), ["bob"]);
		// A digest mailed after the last read counts as well: erin's newer row makes her due again, until it is sent.
		const erin2 = entry("e2|erin|inbox", "erin", 7000);
		await repo.post([erin2]);
		await repo.setMarker("erin", "lastread", erin.seq);
		assert.deepEqual((await repo.digestOwners()).map((o) => o.userId).sort(), ["bob", "erin"]);
		await repo.setMarker("erin", "lastsent", erin2.seq);
		// One statement, and only the users due come back (the SQL filters, not the caller).
		const counter = countingStatements(h().db);
		assert.deepEqual((await new ActivityRepo(counter.db).digestOwners()).map((o) => o.userId), ["bob"]);
		assert.equal(counter.count, 1);
	});

	it("stores, updates, filters and removes subscriptions", async () => {
		await repo.subscribe({ UserId: "bob", ObjectType: "NODE", ObjectId: "n1", Events: ["read", "change", "change"] });
		await repo.subscribe({ UserId: "carol", ObjectType: "NODE", ObjectId: "n1", Events: ["change"] });
		await repo.subscribe({ UserId: "bob", ObjectType: "NODE", ObjectId: "n2", Events: ["change"] });
		assert.deepEqual(await repo.subscriptions({ objectType: "NODE", objectIds: ["n1"] }), [
			{ UserId: "bob", ObjectType: "NODE", ObjectId: "n1", Events: ["read", "change"] },
			{ UserId: "carol", ObjectType: "NODE", ObjectId: "n1", Events: ["change"] },
		]);
		// A listing is bounded unless told otherwise (a batch's followers are all wanted).
		assert.deepEqual((await repo.subscriptions({ objectIds: ["n1", "n2"], limit: 2 })).map((s) => s.UserId), ["bob", "carol"]);
		assert.equal((await repo.subscriptions({ objectIds: ["n1", "n2"], limit: null })).length, 3);
		await repo.subscribe({ UserId: "bob", ObjectType: "NODE", ObjectId: "n1", Events: ["read"] });
		assert.deepEqual((await repo.subscriptions({ userIds: ["bob"] })).map((s) => [s.ObjectId, s.Events]), [["n1", ["read"]], ["n2", ["change"]]]);
		await repo.subscribe({ UserId: "bob", ObjectType: "NODE", ObjectId: "n1", Events: [] });
		assert.deepEqual((await repo.subscriptions({ userIds: ["bob"] })).map((s) => s.ObjectId), ["n2"]);
	});

	it("followed nodes (lib/activity/followed over the repository): the events a user follows on the nodes asked, by user for a few subscriptions, by node for many", async () => {
		// A fresh cache for each question: what the store answers, not what was kept.
		const followedNodes = (user: string, ids: string[]) => new FollowedNodes({ byUser: (u, max) => repo.followedByUser(u, max), among: (u, nodes) => repo.followedAmong(u, nodes) }).of(user, ids);
		await repo.subscribe({ UserId: "ivy", ObjectType: "NODE", ObjectId: "f1", Events: ["read", "change"] });
		await repo.subscribe({ UserId: "ivy", ObjectType: "NODE", ObjectId: "f3", Events: ["change"] });
		await repo.subscribe({ UserId: "ivy", ObjectType: "USER", ObjectId: "f2", Events: ["change"] });
		await repo.subscribe({ UserId: "jon", ObjectType: "NODE", ObjectId: "f2", Events: ["change"] });
		assert.deepEqual(await followedNodes("ivy", ["f1", "f2", "f3", "f4", "f1"]), { f1: ["read", "change"], f3: ["change"] });
		assert.deepEqual(await followedNodes("ivy", []), {});
		assert.deepEqual(await followedNodes("kim", ["f1", "f2"]), {});
		// More subscriptions than are matched in memory: the nodes asked are looked up, with the same answer.
		for (let i = 0; i < 205; i++) await repo.subscribe({ UserId: "ivy", ObjectType: "NODE", ObjectId: `g${String(i).padStart(3, "0")}`, Events: ["read"] });
		assert.deepEqual(await followedNodes("ivy", ["f1", "f2", "f3", "g204", "zz"]), { f1: ["read", "change"], f3: ["change"], g204: ["read"] });
	});

	it("drops the boxes of nodes a batch deleted, and the subscriptions to them, in the batch's transaction", async () => {
		await repo.post([entry("k1|n9|outbox", "n9", 1000, { ownerType: "NODE", box: "outbox" })]);
		await repo.subscribe({ UserId: "carol", ObjectType: "NODE", ObjectId: "n9", Events: ["change"] });
		await repo.subscribe({ UserId: "carol", ObjectType: "NODE", ObjectId: "n8", Events: ["change"] });
		// The batch writes to n9's box, then deletes n9 (and n8): nothing of theirs is left, the parent's row stays.
		const written = await repo.post([entry("k2|n9|outbox", "n9", 1001, { ownerType: "NODE", box: "outbox" }), entry("k2|n7|outbox", "n7", 1001, { ownerType: "NODE", box: "outbox" })], ["n9", "n8", "n9"]);
		assert.deepEqual(written.map((e) => e.key), ["k2|n9|outbox", "k2|n7|outbox"]);
		assert.equal(await repo.count("NODE", "n9", "outbox"), 0);
		assert.equal(await repo.count("NODE", "n7", "outbox"), 1);
		assert.deepEqual(await repo.subscriptions({ objectIds: ["n9", "n8"] }), []);
		// Deletions alone are a batch too.
		await repo.subscribe({ UserId: "carol", ObjectType: "NODE", ObjectId: "n7", Events: ["change"] });
		assert.deepEqual(await repo.post([], ["n7"]), []);
		assert.equal(await repo.count("NODE", "n7", "outbox"), 0);
		assert.deepEqual(await repo.subscriptions({ objectIds: ["n7"] }), []);
	});

	it("deletes what deleted users leave, as Cells does, and keeps their activities in others' inboxes", async () => {
		const counter = countingStatements(h().db);
		const counted = new ActivityRepo(counter.db);
		await repo.post([
			entry("g1|gus|inbox", "gus", 1000, { actor: "hal" }),
			entry("g2|gus|outbox", "gus", 1000, { box: "outbox", actor: "gus" }),
			entry("g2|n5|outbox", "n5", 1000, { ownerType: "NODE", box: "outbox", actor: "gus" }),
			entry("h1|n5|outbox", "n5", 1001, { ownerType: "NODE", box: "outbox", actor: "hal" }),
			entry("g2|hal|inbox", "hal", 1000, { actor: "gus" }),
			entry("i1|ivy|outbox", "ivy", 1000, { box: "outbox", actor: "ivy" }),
		]);
		await repo.setMarker("gus", "lastread", "0000000001000");
		await repo.setMarker("ivy", "lastsent", "0000000001000");
		await repo.subscribe({ UserId: "gus", ObjectType: "NODE", ObjectId: "n5", Events: ["change"] });
		await repo.subscribe({ UserId: "hal", ObjectType: "USER", ObjectId: "gus", Events: ["change"] });
		await repo.subscribe({ UserId: "hal", ObjectType: "NODE", ObjectId: "n5", Events: ["change"] });
		counter.reset();
		assert.equal(await counted.deleteUsers(["gus", "ivy", "gus"]), 4);
		// One transaction of a few statements, whatever the number of users (under 500).
		assert.ok(counter.count <= 6, `${counter.count} statements`);
		for (const [type, id, box] of [["USER", "gus", "inbox"], ["USER", "gus", "outbox"], ["USER", "ivy", "outbox"]] as const) assert.equal(await repo.count(type, id, box), 0);
		assert.deepEqual((await repo.list("NODE", "n5", "outbox", { limit: 10 })).map((e) => e.key), ["h1|n5|outbox"]);
		assert.equal(await repo.count("USER", "hal", "inbox"), 1);
		assert.equal(await repo.marker("gus", "lastread"), undefined);
		assert.equal(await repo.marker("ivy", "lastsent"), undefined);
		assert.deepEqual((await repo.subscriptions({})).filter((s) => s.UserId === "gus" || s.ObjectId === "gus"), []);
		assert.deepEqual((await repo.subscriptions({ userIds: ["hal"] })).map((s) => s.ObjectId), ["n5"]);
		assert.equal(await repo.deleteUsers([]), 0);
	});

	it("prunes by age and keeps at most N rows per box, the newest", async () => {
		const rows: ActivityEntry[] = [];
		for (let i = 0; i < 6; i++) rows.push(entry(`p${i}|dan|outbox`, "dan", 10_000 + i, { box: "outbox" }));
		rows.push(entry("old|erin|outbox", "erin", 10, { box: "outbox" }));
		rows.push(entry("new|erin|outbox", "erin", 20_000, { box: "outbox" }));
		await repo.post(rows);
		assert.equal(await repo.prune(100, 4), 3);
		assert.deepEqual((await repo.list("USER", "dan", "outbox", { limit: 10 })).map((e) => e.key), ["p5|dan|outbox", "p4|dan|outbox", "p3|dan|outbox", "p2|dan|outbox"]);
		assert.deepEqual((await repo.list("USER", "erin", "outbox", { limit: 10 })).map((e) => e.key), ["new|erin|outbox"]);
	});
});
