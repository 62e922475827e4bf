// Issue 9's "Done when", end to end through the real gateway and a real SMTP server: alice shares a folder with bob
// as a cell (bob is told by mail), bob sees it in /a/frontend/state and writes into it; alice makes a password
// link limited to two downloads, a visitor logs in on its minisite with the password, downloads twice and is
// refused the third time; bob's feed shows alice's upload and his open websocket received it; a reset-password mail
// reaches the SMTP server; the request `cec share` sends answers the link it prints. (The page itself in Chromium:
// test/web/public-link.spec.ts.)
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { until } from "../helpers/poll";
import { Relay } from "../helpers/smtp";
import { addUsers, type TestUser } from "../helpers/users";
import { WsClient } from "../helpers/ws-client";
import type { PublicLinkInfo } from "../../lib/contracts/share";

describe("Issue 9, done when: cells, a limited password link, feeds and live events, mail, cec share", function () {
	this.timeout(60_000);
	const relay = new Relay();
	before(() => relay.start());
	const node = useNode(() => ({ env: { SMTP_URL: relay.url, MAIL_RETRY_DELAY: "1", MAIL_FROM: "Cellar <cellar@files.example.com>" } }));
	let alice: TestUser;
	let bob: TestUser;
	let socket: WsClient;
	let folder: string;

	before(async () => {
		({ alice, bob } = await addUsers(node, node.admin, ["alice", "bob"]));
		assert.equal((await node.io("PUT", "personal-files/project/plan.txt", alice.token, "the plan")).status, 200);
		folder = (await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/project")}`, undefined, alice.token)).body.Node.Uuid;
	});
	after(async () => {
		socket?.close();
		await relay.stop();
	});

	it("alice shares a folder with bob as a cell: bob gets the invitation mail and sees the cell in his state", async () => {
		const r = await node.api("PUT", "/a/share/cell", { Room: { Label: "Project", RootNodes: [{ Uuid: folder }], ACLs: { [bob.uuid]: { RoleId: bob.uuid, Actions: [{ Name: "read" }, { Name: "write" }] } } } }, alice.token);
		assert.equal(r.status, 200, r.text);
		const mail = await until("bob's invitation", () => relay.find("bob@example.com", /^Alice added you to the cell Project$/));
		assert.match(mail.mail.text ?? "", new RegExp(`${node.url}/ws/project/`));
		const state = await node.api("GET", "/a/frontend/state", undefined, bob.token);
		assert.equal(state.status, 200);
		assert.match(state.text, /repository_type="cell"/);
		assert.match(state.text, /Project/);
	});

	it("bob follows the cell, opens the websocket, and writes into the cell", async () => {
		assert.equal((await node.api("POST", "/a/activity/subscribe", { UserId: "bob", ObjectType: "NODE", ObjectId: folder, Events: ["change"] }, bob.token)).status, 200);
		socket = await WsClient.open(node.url, bob.token);
		assert.equal((await node.io("PUT", "project/from-bob.txt", bob.token, "bob was here")).status, 200);
		const listed = await node.api("POST", "/a/tree/stats", { NodePaths: ["personal-files/project/*"] }, alice.token);
		assert.ok(listed.body.Nodes.some((n: { Path: string }) => n.Path === "personal-files/project/from-bob.txt"), listed.text);
	});

	it("alice uploads: bob's open websocket receives it, and his feed shows it", async () => {
		assert.equal((await node.io("PUT", "personal-files/project/results.csv", alice.token, "a,b\n1,2\n")).status, 200);
		const pushed = await socket.waitFor((m) => m.Target?.Path === "project/results.csv");
		assert.equal(pushed.Target.Type, "LEAF");
		const inbox = await until("alice's upload in bob's inbox", async () => {
			await node.broker.call("activity.flush", {});
			const r = await node.api("POST", "/a/activity/stream", { Context: "USER_ID", ContextData: "bob", BoxName: "inbox" }, bob.token);
			return (r.body.items ?? []).some((i: { type?: string; actor?: { id?: string }; object?: { name?: string } }) => i.type === "Create" && i.actor?.id === "alice" && i.object?.name === "project/results.csv") ? r : undefined;
		});
		assert.equal(inbox.status, 200);
		// The new inbox activity is pushed to its owner as well.
		const activity = await socket.waitFor((m) => m.JsonType === "activity" && JSON.stringify(m).includes("results.csv"));
		assert.ok(activity);
	});

	let hash: string;
	let visitor: string;

	it("alice makes a password link limited to 2 downloads; a visitor logs in on its minisite with the password", async () => {
		const r = await node.api(
			"PUT",
			"/a/share/link",
			{ ShareLink: { Label: "Results", RootNodes: [{ Uuid: folder }], Permissions: ["Preview", "Download"], MaxDownloads: "2" }, PasswordEnabled: true, CreatePassword: "visitor-secret-1" },
			alice.token,
		);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.PasswordRequired, true);
		hash = r.body.LinkHash;
		// A page, not JSON (its content, once `npm run build` made it, is test/web/public-link.spec.ts's business).
		const page = await fetch(`${node.url}${r.body.LinkUrl}`);
		assert.match(page.headers.get("content-type") ?? "", /text\/html/);
		const info = await node.broker.call<PublicLinkInfo, { hash: string }>("share.publicLink", { hash });
		assert.equal(info.PasswordRequired, true);
		const login = (password: string) => node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: info.Login, password } }, undefined, { "X-Pydio-Minisite": hash });
		assert.equal((await login("wrong-password")).status, 401);
		const s = await login("visitor-secret-1");
		assert.equal(s.status, 200, s.text);
		visitor = s.body.JWT;
		const listed = await node.api("POST", "/a/tree/stats", { NodePaths: [`${info.RootPath}/*`] }, visitor);
		assert.ok(listed.body.Nodes.some((n: { Path: string }) => n.Path.endsWith("/results.csv")), listed.text);
		visitorRoot = info.RootPath as string;
	});
	let visitorRoot: string;

	it("the visitor downloads twice; the third download is refused", async () => {
		for (let i = 0; i < 2; i++) {
			const dl = await node.io("GET", `${visitorRoot}/results.csv`, visitor);
			assert.equal(dl.status, 200);
			assert.equal(await dl.text(), "a,b\n1,2\n");
		}
		const third = await node.io("GET", `${visitorRoot}/results.csv`, visitor);
		assert.equal(third.status, 403);
		assert.match(await third.text(), /download/i);
		const after = await node.broker.call<PublicLinkInfo, { hash: string }>("share.publicLink", { hash });
		assert.equal(after.Status, "exhausted");
	});

	it("a reset-password mail reaches the SMTP server", async () => {
		assert.equal((await node.api("PUT", "/a/auth/reset-password-token/bob", {})).status, 200);
		const got = await until("bob's reset mail", () => relay.find("bob@example.com", /^Reset your password/));
		assert.match(got.mail.text ?? "", new RegExp(`${node.url}/user/reset-password/[0-9a-f-]{36}`));
	});

	it("cec share: the request the CLI sends answers the link it prints", async () => {
		const head = await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/project/plan.txt")}`, undefined, alice.token);
		assert.equal(head.status, 200, head.text);
		const body = `{"ShareLink":{"Label":"plan.txt","Permissions":["Download","Preview"],"PoliciesContextEditable":true,"RootNodes":[{"Uuid":"${head.body.Node.Uuid}"}],"ViewTemplateName":"pydio_shared_folder"}}`;
		const r = await node.api("PUT", "/a/share/link", body, alice.token);
		assert.equal(r.status, 200, r.text);
		const printed = `${node.url}${r.body.LinkUrl}`;
		assert.match(printed, /^http:\/\/127\.0\.0\.1:\d+\/public\/[0-9a-f]{12}$/);
		assert.match((await fetch(printed)).headers.get("content-type") ?? "", /text\/html/);
	});
});
