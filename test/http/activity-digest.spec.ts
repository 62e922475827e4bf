// Activity digest mails (ACTIVITY_DIGEST_HOURS; here the run is asked directly through `activity.digest`): a user
// with an email and unread inbox activities gets one Digest mail with them; the next run starts after it (the
// `lastsent` marker); users without an email, or with nothing unread, get none.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { Relay } from "../helpers/smtp";
import { addUsers, type TestUser } from "../helpers/users";

describe("HTTP: activity digest mails", function () {
	this.timeout(60_000);
	const relay = new Relay();
	before(() => relay.start());
	const node = useNode(() => ({ env: { SMTP_URL: relay.url, MAIL_RETRY_DELAY: "1" } }));
	let alice: TestUser;
	let bob: TestUser;
	let carol: TestUser;
	let folder: string;
	const put = (token: string, path: string, body: string) => fetch(`${node.url}/io/${path}`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body });
	const digest = async () => {
		await node.broker.call("activity.flush", {});
		return (await node.broker.call<{ Mailed: number }, Record<string, never>>("activity.digest", {})).Mailed;
	};
	const digestsTo = (address: string) => relay.received.filter((r) => r.envelopeTo.includes(address) && /notifications$/.test(r.mail.subject ?? ""));
	const settle = async (n: number, address: string) => {
		for (let i = 0; i < 100 && digestsTo(address).length < n; i++) await new Promise((r) => setTimeout(r, 100));
	};

	before(async () => {
		({ alice, bob } = await addUsers(node, node.admin, ["alice", "bob"]));
		({ carol } = await addUsers(node, node.admin, ["carol"], { email: false }));
		folder = (await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/news", Type: "COLLECTION" }] }, alice.token)).body.Children[0].Uuid;
		for (const u of [bob, carol]) assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: u.login, ObjectType: "NODE", ObjectId: folder, Events: ["change"] }, u.token)).status, 200);
	});
	after(() => relay.stop());

	it("mails bob his unread activities once; carol, without an email, gets nothing", async () => {
		assert.equal((await put(alice.token, "common-files/news/first.txt", "1")).status, 200);
		assert.equal(await digest(), 1);
		await settle(1, "bob@example.com");
		const [mail] = digestsTo("bob@example.com");
		assert.ok(mail, "bob's digest");
		assert.match(mail.mail.text ?? "", /Workspace Common Files:|Workspace [^\n]+:/);
		assert.match(mail.mail.text ?? "", /alice created first\.txt/);
		assert.equal(relay.received.filter((r) => /notifications$/.test(r.mail.subject ?? "")).length, 1);
		// Nothing new: no second mail.
		assert.equal(await digest(), 0);
	});

	it("the next digest holds only what came after the last one; read activities are not mailed", async () => {
		assert.equal((await put(alice.token, "common-files/news/second.txt", "2")).status, 200);
		assert.equal(await digest(), 1);
		await settle(2, "bob@example.com");
		const second = digestsTo("bob@example.com")[1];
		assert.match(second.mail.text ?? "", /second\.txt/);
		assert.doesNotMatch(second.mail.text ?? "", /first\.txt/);
		// Bob reads his inbox (the read marker moves): what he read is not mailed.
		assert.equal((await put(alice.token, "common-files/news/third.txt", "3")).status, 200);
		await node.broker.call("activity.flush", {});
		const inbox = await node.api("POST", "/a/activity/stream", { Context: "USER_ID", ContextData: "bob", BoxName: "inbox" }, bob.token);
		assert.ok(inbox.body.items.some((i: { object?: { name?: string } }) => /third\.txt/.test(i.object?.name ?? "")), inbox.text);
		assert.equal(await digest(), 0);
	});
});
