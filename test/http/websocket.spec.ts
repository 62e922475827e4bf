// /ws/event as Cells' web client uses it: subscribe with the JWT, then receive the node changes of workspaces one
// can read, one's task progress, one's new inbox activities and reload signals; a bad JWT is refused and closed.
import assert from "node:assert/strict";
import WebSocket from "ws";
import { S3Client, PutObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { WsClient as Client, type WsMessage as Msg } from "../helpers/ws-client";
import { startJob } from "../helpers/jobs";

describe("HTTP: /ws/event websocket", function () {
	this.timeout(60_000);
	let alice: string;
	let bob: string;
	let carol: string;
	let carolUuid: string;
	let folder: string;
	const clients: Client[] = [];
	// Hooks run in the order they are registered: the sockets close before useNode() stops the node.
	after(() => {
		for (const c of clients) c.close();
	});
	const node = useNode();
	const open = async (jwt?: string) => {
		const c = await Client.open(node.url, jwt);
		clients.push(c);
		return c;
	};
	const s3 = (token: string) => new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" } });
	const put = (token: string, key: string, body: string) => s3(token).send(new PutObjectCommand({ Bucket: "io", Key: key, Body: body }));
	const pathIs = (p: string) => (m: Msg) => m.Target?.Path === p || m.Source?.Path === p;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "User-Pass-12345");
		bob = await addUser(node, node.admin, "bob", "User-Pass-12345");
		carol = await addUser(node, node.admin, "carol", "User-Pass-12345");
		folder = (await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/live", Type: "COLLECTION" }] }, alice)).body.Children[0].Uuid;
		await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/closed", Type: "COLLECTION" }] }, alice);
		const closed = (await node.api("GET", `/a/tree/stat/${encodeURIComponent("common-files/closed")}`, undefined, node.admin)).body.Node.Uuid;
		carolUuid = (await node.api("GET", "/a/user/carol", undefined, node.admin)).body.Uuid;
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: carolUuid, NodeID: closed, Action: { Name: "deny", Value: "1" } }, node.admin)).status, 200);
	});

	it("pushes alice's upload to bob, as a node change in his workspace", async () => {
		const c = await open(bob);
		await put(alice, "common-files/live/hello.txt", "hi");
		const m = await c.waitFor(pathIs("common-files/live/hello.txt"));
		assert.equal(m.Type, undefined, "CREATE is the zero value: protojson leaves it out");
		assert.equal(m.Target.Type, "LEAF");
		assert.equal(m.Target.Size, "2");
		assert.equal(m.Target.MetaStore.name, '"hello.txt"');
		assert.match(m.Target.MetaStore.EventWorkspaceId, /^".+"$/);
		assert.ok(m.Target.Uuid);

		// An overwrite is an UPDATE_CONTENT, a move an UPDATE_PATH with both ends, a delete a DELETE of the source.
		await put(alice, "common-files/live/hello.txt", "hello");
		await c.waitFor((x) => x.Type === "UPDATE_CONTENT" && x.Target?.Path === "common-files/live/hello.txt");
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/live/hello.txt" }] }, alice)).status, 200);
		const moved = await c.waitFor((x) => x.Type === "UPDATE_PATH" && x.Source?.Path === "common-files/live/hello.txt");
		assert.equal(moved.Target.Path, "common-files/recycle_bin/hello.txt");
	});

	it("keeps from a user what they cannot read", async () => {
		const c = await open(carol);
		await put(alice, "common-files/closed/secret.txt", "s");
		await put(alice, "common-files/live/open.txt", "o");
		await c.waitFor(pathIs("common-files/live/open.txt"));
		await new Promise((r) => setTimeout(r, 700));
		assert.equal(c.messages.filter(pathIs("common-files/closed/secret.txt")).length, 0);
	});

	it("refuses a bad JWT: an error message, then the socket closes", async () => {
		const c = await open("not-a-token");
		const closed = await c.waitClosed();
		assert.equal(closed.code, 1008);
		assert.equal(c.messages[0]["@type"], "error");
		assert.match(c.messages[0].error, /jwt/);
		const empty = await open("");
		await empty.waitClosed();
		assert.equal(empty.messages[0].error, "empty jwt");
		// A socket that never subscribes receives nothing.
		const mute = await open();
		await put(alice, "common-files/live/mute.txt", "m");
		await new Promise((r) => setTimeout(r, 800));
		assert.deepEqual(mute.messages, []);
	});

	it("answers 404 to other websocket paths", async () => {
		const ws = new WebSocket(`${node.url.replace(/^http/, "ws")}/ws/chat`);
		const status = await new Promise<number>((res) => ws.once("unexpected-response", (_req, r) => res(r.statusCode ?? 0)).once("error", () => res(-1)));
		assert.equal(status, 404);
	});

	it("pushes task progress to the task's owner only", async () => {
		const bobSocket = await open(bob);
		const aliceSocket = await open(alice);
		await put(bob, "common-files/live/tocopy.txt", "copy me");
		const jobId = await startJob(node.api, bob, "copy", { nodes: ["common-files/live/tocopy.txt"], target: "common-files/live/copied", targetParent: true });
		const m = await bobSocket.waitFor((x) => x.TaskUpdated?.JobID === jobId && x.TaskUpdated?.Status === "Finished", 15_000);
		assert.equal(m.TaskUpdated.TriggerOwner, "bob");
		assert.equal(m.Job.ID, jobId);
		assert.equal(aliceSocket.messages.filter((x) => x.TaskUpdated).length, 0);
	});

	it("pushes a new inbox activity to its owner", async () => {
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectId: folder, Events: ["change"] }, bob)).status, 200);
		const c = await open(bob);
		await put(alice, "common-files/live/news.txt", "news");
		const m = await c.waitFor((x) => x.JsonType === "activity");
		assert.deepEqual([m.OwnerType, m.OwnerId, m.BoxName], ["USER", "bob", "inbox"]);
		assert.equal(m.Activity.type, "Create");
		assert.equal(m.Activity.actor.id, "alice");
		assert.equal(m.Activity.object.name, "news.txt");
	});

	it("closes the socket of a session that logs out", async () => {
		const token = await node.login("bob", "User-Pass-12345");
		const c = await open(token);
		const other = await open(bob);
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "logout" } }, token)).status, 200);
		const closed = await c.waitClosed();
		assert.equal(closed.code, 1008);
		assert.match(c.messages.at(-1)?.error ?? "", /invalid jwt/);
		// Bob's other session stays.
		await new Promise((r) => setTimeout(r, 300));
		assert.equal(other.closed, undefined);
	});

	it("tells a user to reload when their rights change", async () => {
		const c = await open(carol);
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: carolUuid, NodeID: folder, Action: { Name: "read", Value: "1" } }, node.admin)).status, 200);
		const m = await c.waitFor((x) => x.JsonType === "idm");
		assert.equal(m.Acl.RoleID, carolUuid);
	});
});
