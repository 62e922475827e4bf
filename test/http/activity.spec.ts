// Activity feeds over HTTP: a folder followed by bob shows alice's upload in bob's inbox (unread until he reads
// it), the folder's own feed and alice's outbox show it, a user denied the folder sees nothing of it, and the
// requests Cells refuses are refused. A deleted user's activities go; the service asks the registry which nodes run it
// once per registry change.
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import type { Context } from "moleculer";
import { addUser } from "../helpers/users";
import { until } from "../helpers/poll";
import type { ActivityRepo } from "../../lib/db/activity";

describe("HTTP: activity feeds", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;
	let bob: string;
	let carol: string;
	let folder: string;

	const s3 = (token: string) => new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
	const stream = (body: unknown, token: string) => node.api("POST", "/a/activity/stream", body, token);
	// The changes reach the activity service as events: give them a moment, then write what waits.
	const flush = async () => {
		await new Promise((r) => setTimeout(r, 50));
		await node.broker.call("activity.flush", {});
	};

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "User-Pass-12345");
		bob = await addUser(node, node.admin, "bob", "User-Pass-12345");
		carol = await addUser(node, node.admin, "carol", "User-Pass-12345");
		const made = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/team", Type: "COLLECTION" }] }, alice);
		assert.equal(made.status, 200);
		folder = made.body.Children[0].Uuid;
		const carolUuid = (await node.api("GET", "/a/user/carol", undefined, node.admin)).body.Uuid;
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: carolUuid, NodeID: folder, Action: { Name: "deny", Value: "1" } }, node.admin)).status, 200);
	});

	it("subscribes bob to the folder, and lists his subscriptions; nobody subscribes for someone else", async () => {
		const sub = await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectType: "NODE", ObjectId: folder, Events: ["change"] }, bob);
		assert.equal(sub.status, 200, sub.text);
		assert.deepEqual(sub.body, { UserId: "bob", ObjectId: folder, Events: ["change"] });
		const list = await node.api("POST", "/a/activity/subscriptions", { ObjectIds: [folder] }, bob);
		assert.deepEqual(list.body, { subscriptions: [{ UserId: "bob", ObjectId: folder, Events: ["change"] }] });
		// The folder shows what its reader follows (Cells' user_subscriptions meta), in a stat and in a listing.
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/team")}`, undefined, bob);
		assert.equal(stat.body.Node.MetaStore.user_subscriptions, '"change"');
		const listed = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/*"] }, bob);
		assert.equal(listed.body.Nodes.find((n: { Path: string }) => n.Path === "common-files/team").MetaStore.user_subscriptions, '"change"');
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/team")}`, undefined, alice)).body.Node.MetaStore.user_subscriptions, undefined);
		// Someone else's subscriptions are not listed to bob, nor can he subscribe for alice.
		assert.deepEqual((await node.api("POST", "/a/activity/subscriptions", { UserIds: ["alice"], ObjectIds: [folder] }, alice)).body, {});
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "alice", ObjectId: folder, Events: ["change"] }, bob)).status, 403);
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectId: "no-such-node", Events: ["change"] }, bob)).status, 404);
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "carol", ObjectId: folder, Events: ["change"] }, carol)).status, 404);
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectId: folder, Events: ["explode"] }, bob)).status, 400);
	});

	it("puts alice's upload in bob's inbox, unread until he reads it", async () => {
		await s3(alice).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/team/report.txt", Body: "numbers" }));
		await flush();
		const unread = await stream({ Context: "USER_ID", ContextData: "bob", UnreadCountOnly: true }, bob);
		assert.equal(unread.status, 200, unread.text);
		assert.deepEqual(unread.body, { "@context": "https://www.w3.org/ns/activitystreams", type: "Collection", totalItems: 1 });

		const inbox = await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox", Offset: "0", Limit: "10" }, bob);
		assert.equal(inbox.status, 200, inbox.text);
		assert.equal(inbox.body.type, "Collection");
		assert.equal(inbox.body.totalItems, 1);
		const [a] = inbox.body.items;
		assert.equal(a.type, "Create");
		assert.deepEqual(a.actor, { type: "Person", id: "alice", name: "alice" });
		assert.equal(a.object.type, "Document");
		assert.equal(a.object.name, "common-files/team/report.txt");
		assert.equal(a.object.partOf.items[0].type, "Workspace");
		assert.equal(a.object.partOf.items[0].rel, "common-files/team/report.txt");
		assert.match(a.summary, /\[alice\]\(user:\/\/alice\) created \[report\.txt\]\(doc:\/\//);
		assert.match(a.updated, /^\d{4}-\d\d-\d\dT/);

		const after = await stream({ Context: "USER_ID", ContextData: "bob", UnreadCountOnly: true }, bob);
		assert.deepEqual(after.body, { "@context": "https://www.w3.org/ns/activitystreams", type: "Collection" });
	});

	it("does not tell bob about his own changes, and tells him about later ones", async () => {
		await s3(bob).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/team/bob.txt", Body: "mine" }));
		await s3(alice).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/team/report.txt", Body: "more numbers" }));
		await flush();
		assert.equal((await stream({ Context: "USER_ID", ContextData: "bob", UnreadCountOnly: true }, bob)).body.totalItems, 1);
		const inbox = await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox", Limit: 1 }, bob);
		assert.equal(inbox.body.items[0].type, "Update");
	});

	it("shows a folder's feed (its own and its children's activities) to those who can read it", async () => {
		const feed = await stream({ Context: "NODE_ID", ContextData: folder }, bob);
		assert.equal(feed.status, 200);
		const seen = feed.body.items.map((i: { type: string; object: { name: string } }) => `${i.type} ${i.object.name}`);
		assert.deepEqual(seen, ["Update common-files/team/report.txt", "Create common-files/team/bob.txt", "Create common-files/team/report.txt", "Create common-files/team"]);
		// Carol is denied the folder: its feed is empty for her.
		assert.deepEqual((await stream({ Context: "NODE_ID", ContextData: folder }, carol)).body, { "@context": "https://www.w3.org/ns/activitystreams", type: "Collection" });
		// Paging and the filter.
		assert.deepEqual((await stream({ Context: "NODE_ID", ContextData: folder, Offset: 1, Limit: 1 }, bob)).body.items.map((i: { type: string }) => i.type), ["Create"]);
		const filtered = await stream({ Context: "NODE_ID", ContextData: folder, StreamFilter: "+type:Create +actor.id:alice" }, bob);
		assert.deepEqual(filtered.body.items.map((i: { object: { name: string } }) => i.object.name), ["common-files/team/report.txt", "common-files/team"]);
		assert.equal((await stream({ Context: "NODE_ID", ContextData: folder, StreamFilter: "+colour:blue" }, bob)).status, 400);
	});

	it("shows alice's outbox as her feed, with the point of view asked", async () => {
		const mine = await stream({ Context: "MYFEED", PointOfView: "ACTOR" }, alice);
		assert.equal(mine.body.items.length, 3);
		assert.match(mine.body.items[0].summary, /^You modified/);
		const same = await stream({ Context: "USER_ID", ContextData: "alice", BoxName: "outbox" }, bob);
		assert.equal(same.body.items.length, 3);
	});

	it("gathers unread inbox activities by workspace as a digest", async () => {
		const digest = await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox", AsDigest: true }, bob);
		assert.equal(digest.body.type, "Digest");
		assert.equal(digest.body.items[0].type, "Workspace");
		assert.equal(digest.body.items[0].items.length, 2);
	});

	it("tells a user who was given access to a workspace", async () => {
		const ws = await node.api("PUT", "/a/workspace/projects", { Label: "Projects", RootNodes: { "DATASOURCE:pydiods1": { Uuid: "DATASOURCE:pydiods1", Path: "pydiods1" } } }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		const bobUuid = (await node.api("GET", "/a/user/bob", undefined, node.admin)).body.Uuid;
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: bobUuid, WorkspaceID: ws.body.UUID, Action: { Name: "read", Value: "1" } }, node.admin)).status, 200);
		let items: { type: string; actor: { id: string }; object: { type: string; name: string } }[] = [];
		for (let i = 0; i < 50 && !items.some((a) => a.type === "Share"); i++) {
			await new Promise((r) => setTimeout(r, 50));
			items = (await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox" }, bob)).body.items ?? [];
		}
		const share = items.find((a) => a.type === "Share");
		assert.ok(share, JSON.stringify(items));
		assert.deepEqual([share.actor.id, share.object.type, share.object.name], ["admin", "Workspace", "Projects"]);
	});

	it("tells a follower of \"read\" when someone lists the folder", async () => {
		// bob's stat was cached by the gateway: the new subscription shows at once all the same.
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/team")}`, undefined, bob)).body.Node.MetaStore.user_subscriptions, '"change"');
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectId: folder, Events: ["read", "change"] }, bob)).status, 200);
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/team")}`, undefined, bob)).body.Node.MetaStore.user_subscriptions, '"read,change"');
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/team/*"] }, alice)).status, 200);
		await flush();
		const inbox = await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox", Limit: 1 }, bob);
		assert.equal(inbox.body.items[0].type, "Read");
		assert.equal(inbox.body.items[0].actor.id, "alice");
		assert.equal(inbox.body.items[0].object.name, "common-files/team");
		// Bob's own listings are not news to him.
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/team/*"] }, bob)).status, 200);
		await flush();
		assert.equal((await stream({ Context: "USER_ID", ContextData: "bob", UnreadCountOnly: true }, bob)).body.totalItems, undefined);
	});

	it("forgets what a deleted user leaves, as Cells does, and keeps what others were told of them", async () => {
		const dave = await addUser(node, node.admin, "dave", "User-Pass-12345");
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "dave", ObjectId: folder, Events: ["change"] }, dave)).status, 200);
		await s3(dave).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/team/dave.txt", Body: "hello" }));
		await s3(alice).send(new PutObjectCommand({ Bucket: "io", Key: "common-files/team/for-dave.txt", Body: "hi" }));
		await flush();
		assert.equal((await stream({ Context: "USER_ID", ContextData: "dave", BoxName: "inbox" }, dave)).body.items.length, 1);
		const feedNames = async () => ((await stream({ Context: "NODE_ID", ContextData: folder, Limit: 100 }, node.admin)).body.items ?? []).map((i: { actor: { id: string } }) => i.actor.id);
		assert.ok((await feedNames()).includes("dave"));
		const activity = node.broker.getLocalService("activity") as unknown as { repo: ActivityRepo };
		assert.ok(await activity.repo.marker("dave", "lastread"));

		assert.equal((await node.api("DELETE", "/a/user/dave", undefined, node.admin)).status, 200);
		await until("dave's subscriptions to go", async () => (Object.keys(await node.broker.call("activity.followed", { UserId: "dave", ObjectIds: [folder] })).length ? undefined : true));
		await until("dave's feeds to go", async () => ((await feedNames()).includes("dave") ? undefined : true));
		for (const BoxName of ["inbox", "outbox"]) assert.equal((await stream({ Context: "USER_ID", ContextData: "dave", BoxName }, node.admin)).body.items, undefined, BoxName);
		assert.equal(await activity.repo.marker("dave", "lastread"), undefined);
		// Bob was told of dave's file: that stays in his inbox.
		const bobs = (await stream({ Context: "USER_ID", ContextData: "bob", BoxName: "inbox", Limit: 100 }, bob)).body.items as { actor: { id: string } }[];
		assert.ok(bobs.some((a) => a.actor.id === "dave"));
	});

	it("asks the registry which nodes run the service once per registry change, not at every broadcast", async () => {
		const svc = node.broker.getLocalService("activity") as unknown as { handles(ctx: Partial<Context>): boolean };
		const registry = node.broker.registry as unknown as { hasService(name: string, nodeID?: string): boolean };
		const real = registry.hasService;
		let asked = 0;
		registry.hasService = (name, nodeID) => (name === "activity" && asked++, real.call(registry, name, nodeID));
		try {
			const from = (nodeID: string) => ({ nodeID, eventType: "broadcast" }) as unknown as Context;
			for (let i = 0; i < 100; i++) assert.equal(svc.handles(from("elsewhere")), true);
			assert.equal(svc.handles(from(node.broker.nodeID)), true);
			assert.equal(asked, 1);
			await node.broker.broadcastLocal("$services.changed", { localService: false });
			assert.equal(svc.handles(from("elsewhere")), true);
			assert.equal(asked, 2);
		} finally {
			registry.hasService = real;
		}
	});

	it("refuses what Cells refuses", async () => {
		assert.equal((await stream({ Context: "USER_ID", ContextData: "alice", BoxName: "inbox" }, bob)).status, 403);
		assert.equal((await stream({ UnreadCountOnly: true }, bob)).status, 400);
		assert.equal((await stream({ Context: "NODE_ID" }, bob)).status, 400);
		assert.equal((await stream({ Context: "SOMEWHERE" }, bob)).status, 400);
		assert.equal((await node.api("POST", "/a/activity/stream", {})).status, 401);
	});
});
