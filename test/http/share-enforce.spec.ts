// What shares store and now also enforce: links mailed to TargetUsers (each with its identification key `?u=`),
// RestrictToTargetUsers at the minisite login, preview-only links (no attachment download, no zip), and a shared
// root moved to the recycle bin no longer reachable through its cell or link.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { until } from "../helpers/poll";
import { Relay } from "../helpers/smtp";
import { addUsers, type TestUser } from "../helpers/users";
import type { PublicLinkInfo } from "../../lib/contracts/share";
import { LINK_RESTRICTED_CODE } from "../../lib/share/minisite";

describe("HTTP: share invitations by mail and what links enforce", function () {
	this.timeout(60_000);
	const relay = new Relay();
	before(() => relay.start());
	const node = useNode(() => ({ env: { SMTP_URL: relay.url, MAIL_RETRY_DELAY: "1" } }));
	let alice: TestUser;
	let bob: TestUser;
	let carol: TestUser;
	const uuidOf = async (path: string) => (await node.api("GET", `/a/tree/stat/${encodeURIComponent(path)}`, undefined, alice.token)).body.Node.Uuid as string;
	const info = (hash: string) => node.broker.call<PublicLinkInfo, { hash: string }>("share.publicLink", { hash });
	const visit = (i: PublicLinkInfo, extra: Record<string, string> = {}) =>
		node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: i.Login, password: `${i.Login}#$!Az1`, ...extra } }, undefined, { "X-Pydio-Minisite": i.Hash });

	before(async () => {
		({ alice, bob } = await addUsers(node, node.admin, ["alice", "bob"]));
		({ carol } = await addUsers(node, node.admin, ["carol"], { email: false }));
		for (const f of ["sent/brief.txt", "preview/photo.txt", "gone/old.txt"]) assert.equal((await node.io("PUT", `personal-files/${f}`, alice.token, `content of ${f}`)).status, 200);
	});
	after(() => relay.stop());

	it("a cell mails its new members only, and only those with an email", async () => {
		const r = await node.api("PUT", "/a/share/cell", { Room: { Label: "Gone", RootNodes: [{ Uuid: await uuidOf("personal-files/gone") }], ACLs: { [carol.uuid]: { RoleId: carol.uuid, Actions: [{ Name: "read" }] } } } }, alice.token);
		assert.equal(r.status, 200, r.text);
		const update = await node.api(
			"PUT",
			"/a/share/cell",
			{ Room: { Uuid: r.body.Uuid, ACLs: { [carol.uuid]: { RoleId: carol.uuid, Actions: [{ Name: "read" }] }, [bob.uuid]: { RoleId: bob.uuid, Actions: [{ Name: "read" }] } } } },
			alice.token,
		);
		assert.equal(update.status, 200, update.text);
		await until("bob's invitation", () => relay.find("bob@example.com", /added you to the cell Gone/));
		await new Promise((r) => setTimeout(r, 500));
		assert.equal(relay.received.filter((m) => /Gone/.test(m.mail.subject ?? "")).length, 1, "bob once; carol has no email; alice owns it");
	});

	let restricted: PublicLinkInfo;
	it("PUT /a/share/link with TargetUsers mails each new target the link with its identification key", async () => {
		const r = await node.api(
			"PUT",
			"/a/share/link",
			{ ShareLink: { Label: "Brief", RootNodes: [{ Uuid: await uuidOf("personal-files/sent") }], Permissions: ["Preview", "Download"], TargetUsers: { "bob@example.com": { Display: "Bob" }, [bob.uuid]: { Display: "Bob again" }, outside: {} }, RestrictToTargetUsers: true } },
			alice.token,
		);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.RestrictToTargetUsers, true);
		const hash = r.body.LinkHash as string;
		const byAddress = await until("the mail to the address", () => relay.received.find((m) => /is sharing a folder with you/.test(m.mail.subject ?? "") && (m.mail.text ?? "").includes(`?u=bob%40example.com`)));
		assert.ok((byAddress.mail.text ?? "").includes(`${node.url}/public/${hash}?u=bob%40example.com`));
		await until("the mail to bob's account", () => relay.received.find((m) => (m.mail.text ?? "").includes(`/public/${hash}?u=${bob.uuid}`)));
		restricted = await info(hash);
	});

	it("RestrictToTargetUsers: the minisite opens only with a target's identification key", async () => {
		const none = await visit(restricted);
		assert.equal(none.status, 401);
		assert.match(none.text, /restricted to the users it was sent to/);
		assert.equal(none.body.Code, LINK_RESTRICTED_CODE, "the page decides on the Code");
		assert.equal((await visit(restricted, { u: "someone-else" })).status, 401);
		const ok = await visit(restricted, { u: "bob@example.com" });
		assert.equal(ok.status, 200, ok.text);
		// Without the restriction, anyone with the link opens it.
		await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: (await node.api("POST", "/a/share/resources", { ShareType: "LINKS" }, alice.token)).body.Resources.find((x: { Link?: { LinkHash: string } }) => x.Link?.LinkHash === restricted.Hash).Link.Uuid, RestrictToTargetUsers: false } }, alice.token);
		assert.equal((await visit(restricted)).status, 200);
	});

	it("a preview-only link shows its files inline but refuses them as attachments and zips", async () => {
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Look only", RootNodes: [{ Uuid: await uuidOf("personal-files/preview") }], Permissions: ["Preview"] } }, alice.token);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body.Permissions, ["Preview"]);
		const i = await info(r.body.LinkHash);
		const jwt = (await visit(i)).body.JWT as string;
		const inline = await node.io("GET", `${i.RootPath}/photo.txt`, jwt);
		assert.equal(inline.status, 200);
		assert.equal(await inline.text(), "content of preview/photo.txt");
		const saved = await node.io("GET", `${i.RootPath}/photo.txt?response-content-disposition=${encodeURIComponent("attachment; filename=photo.txt")}`, jwt);
		assert.equal(saved.status, 403);
		assert.match(await saved.text(), /previews only/);
		// A file no page can preview is not handed out either, whatever type the request asks to see it as.
		const bin = await fetch(`${node.url}/io/personal-files/preview/tool.bin`, { method: "PUT", headers: { "X-Pydio-Bearer": alice.token, "Content-Type": "application/octet-stream" }, body: "binary" });
		assert.equal(bin.status, 200);
		assert.equal((await node.io("GET", `${i.RootPath}/tool.bin`, jwt)).status, 403);
		assert.equal((await node.io("GET", `${i.RootPath}/tool.bin?response-content-type=text%2Fplain`, jwt)).status, 403);
		const sel = await node.api("POST", "/a/tree/selection", { Nodes: [{ Path: `${i.RootPath}/photo.txt` }] }, jwt);
		assert.equal(sel.status, 200, sel.text);
		const zip = await node.io("GET", `${String(i.RootPath).split("/")[0]}/selection-${sel.body.SelectionUUID}.zip`, jwt);
		assert.equal(zip.status, 403);
	});

	it("a link's zip is refused as its files are, whatever profile an administrator gave its hidden user", async () => {
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Still a link", RootNodes: [{ Uuid: await uuidOf("personal-files/preview") }], Permissions: ["Preview"] } }, alice.token);
		assert.equal(r.status, 200, r.text);
		const i = await info(r.body.LinkHash);
		const hidden = await node.api("GET", `/a/user/${i.Login}`, undefined, node.admin);
		assert.equal(hidden.status, 200, hidden.text);
		const edit = await node.api("PUT", `/a/user/${i.Login}`, { Uuid: hidden.body.Uuid, Login: i.Login, Attributes: { profile: "standard" } }, node.admin);
		assert.equal(edit.status, 200, edit.text);
		const jwt = (await visit(i)).body.JWT as string;
		assert.equal((await node.io("GET", `${i.RootPath}/photo.txt?response-content-disposition=attachment`, jwt)).status, 403);
		const sel = await node.api("POST", "/a/tree/selection", { Nodes: [{ Path: `${i.RootPath}/photo.txt` }] }, jwt);
		assert.equal(sel.status, 200, sel.text);
		const zip = await node.io("GET", `${String(i.RootPath).split("/")[0]}/selection-${sel.body.SelectionUUID}.zip`, jwt);
		assert.equal(zip.status, 403);
		assert.match(await zip.text(), /previews only/);
	});

	it("a shared root moved to the recycle bin is no longer reachable through its cell or link", async () => {
		const l = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Old", RootNodes: [{ Uuid: await uuidOf("personal-files/gone") }], Permissions: ["Preview", "Download"] } }, alice.token);
		assert.equal(l.status, 200, l.text);
		const i = await info(l.body.LinkHash);
		const jwt = (await visit(i)).body.JWT as string;
		assert.equal((await node.io("GET", `${i.RootPath}/old.txt`, jwt)).status, 200);
		assert.equal((await node.io("GET", "gone/old.txt", bob.token)).status, 200);
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "personal-files/gone" }] }, alice.token)).status, 200);
		await until("the folder in the bin", async () => ((await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/recycle_bin/gone")}`, undefined, alice.token)).status === 200 ? true : undefined));
		assert.equal((await node.io("GET", "gone/old.txt", bob.token)).status, 404);
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["gone/*"] }, bob.token)).status, 404);
		assert.equal((await node.io("GET", `${i.RootPath}/old.txt`, jwt)).status, 404);
		assert.equal((await info(i.Hash)).Status, "unknown", "the page says the link no longer opens");
		// Restored, it is shared again.
		assert.equal((await node.api("POST", "/a/tree/restore", { Nodes: [{ Path: "personal-files/recycle_bin/gone" }] }, alice.token)).status, 200);
		await until("the restored share", async () => ((await node.io("GET", "gone/old.txt", bob.token)).status === 200 ? true : undefined));
		assert.equal((await info(i.Hash)).Status, "ok");
	});
});
