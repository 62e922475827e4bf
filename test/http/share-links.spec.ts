// Public links through the real gateway: a password link limited to two downloads (the minisite login with the
// password, two downloads, the third refused), an upload link without password, a link on a file, expired and
// deleted links refused, the hidden user's login only through its own link's minisite, the share settings an
// administrator sets on a role, and hostile inputs.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import type { PublicLinkInfo } from "../../lib/contracts/share";

describe("HTTP: public links (PUT/GET/DELETE /a/share/link, the minisite)", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;
	let bob: string;

	const stat = (path: string, token: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(path)}`, undefined, token);
	const list = (path: string, token: string) => node.api("POST", "/a/tree/stats", { NodePaths: [`${path}/*`] }, token);
	const info = (hash: string) => node.broker.call<PublicLinkInfo, { hash: string }>("share.publicLink", { hash });
	const visit = (login: string, password: string, hash?: string) =>
		node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login, password } }, undefined, hash ? { "X-Pydio-Minisite": hash } : {});

	before(async () => {
		for (const u of ["alice", "bob"]) assert.equal((await node.api("PUT", `/a/user/${u}`, { Password: `${u}-Pass-12345`, Attributes: { profile: "standard" } }, node.admin)).status, 200);
		alice = await node.login("alice", "alice-Pass-12345");
		bob = await node.login("bob", "bob-Pass-12345");
		assert.equal((await node.io("PUT", "personal-files/pub/report.txt", alice, "quarterly report")).status, 200);
		assert.equal((await node.io("PUT", "personal-files/drop/.keep", alice, "")).status, 200);
		assert.equal((await node.io("PUT", "personal-files/single.pdf", alice, "%PDF-1.4 one file")).status, 200);
	});

	let pub: { Uuid: string; LinkHash: string; UserLogin: string };
	let visitor: string;

	it("alice creates a password link limited to 2 downloads", async () => {
		const folder = (await stat("personal-files/pub", alice)).body.Node.Uuid;
		const r = await node.api(
			"PUT",
			"/a/share/link",
			{ ShareLink: { Label: "Report", Description: "for the board", RootNodes: [{ Uuid: folder }], Permissions: ["Preview", "Download"], MaxDownloads: "2", ViewTemplateName: "pydio_shared_folder" }, PasswordEnabled: true, CreatePassword: "board-secret-1" },
			alice,
		);
		assert.equal(r.status, 200, r.text);
		pub = r.body;
		assert.match(r.body.LinkHash, /^[0-9a-f]{12}$/);
		assert.equal(r.body.LinkUrl, `/public/${r.body.LinkHash}`);
		assert.match(r.body.UserLogin, /^[0-9a-f]{16}$/);
		assert.equal(r.body.PasswordRequired, true);
		assert.equal(r.body.MaxDownloads, "2");
		assert.equal(r.body.CurrentDownloads, undefined);
		assert.deepEqual(r.body.Permissions, ["Preview", "Download"]);
		assert.equal(r.body.ViewTemplateName, "pydio_shared_folder");
		assert.equal(r.body.RootNodes[0].Uuid, folder);
		const g = await node.api("GET", `/a/share/link/${pub.Uuid}`, undefined, alice);
		assert.equal(g.status, 200, g.text);
		assert.equal(g.body.LinkHash, pub.LinkHash);
		// The link is not a workspace of alice's front end, and its hidden user is not listed to her.
		assert.doesNotMatch((await node.api("GET", "/a/frontend/state", undefined, alice)).text, /Report/);
		const users = await node.api("POST", "/a/user", {}, alice);
		assert.ok(!JSON.stringify(users.body).includes(pub.UserLogin));
		// The shared folder says it is shared.
		assert.ok((await stat("personal-files/pub", alice)).body.Node.MetaStore.workspaces_shares.includes(pub.Uuid));
	});

	it("share.publicLink tells the page how to log in and what to show", async () => {
		const i = await info(pub.LinkHash);
		assert.equal(i.Status, "ok");
		assert.equal(i.Login, pub.UserLogin);
		assert.equal(i.PasswordRequired, true);
		assert.equal(i.Label, "Report");
		assert.equal(i.RootIsFile, false);
		assert.ok(i.RootPath);
		assert.equal(i.MaxDownloads, 2);
		assert.equal(i.CurrentDownloads, 0);
		assert.deepEqual(i.Permissions, ["Preview", "Download"]);
		assert.equal((await info("0123456789ab")).Status, "unknown");
	});

	it("the hidden user logs in only with the minisite header of its own link, and the password", async () => {
		assert.equal((await visit(pub.UserLogin, "board-secret-1")).status, 401);
		assert.equal((await visit(pub.UserLogin, "board-secret-1", "ffffffffffff")).status, 401);
		assert.equal((await visit(pub.UserLogin, "wrong-password", pub.LinkHash)).status, 401);
		assert.equal((await visit(pub.UserLogin, `${pub.UserLogin}#$!Az1`, pub.LinkHash)).status, 401);
		const ok = await visit(pub.UserLogin, "board-secret-1", pub.LinkHash);
		assert.equal(ok.status, 200, ok.text);
		visitor = ok.body.JWT;
		// The page's session has a cookie of its own (pydio-<hash>): a user logged in in the same browser keeps theirs.
		const cookie = (ok.headers.get("set-cookie") ?? "").split(";")[0];
		assert.ok(cookie.startsWith(`pydio-${pub.LinkHash}=`), cookie);
		const refreshed = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "refresh" } }, undefined, { "X-Pydio-Minisite": pub.LinkHash, Cookie: cookie });
		assert.equal(refreshed.status, 200, refreshed.text);
		assert.equal((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "refresh" } }, undefined, { Cookie: cookie })).status, 401);
		// A regular user may still log in with the header (Cells does not forbid it).
		assert.equal((await visit("bob", "bob-Pass-12345", pub.LinkHash)).status, 200);
	});

	it("the visitor lists the link, downloads twice, and the third download is refused with a clear 403", async () => {
		const root = (await info(pub.LinkHash)).RootPath as string;
		const l = await list(root, visitor);
		assert.equal(l.status, 200, l.text);
		assert.deepEqual(l.body.Nodes.map((n: { Path: string }) => n.Path), [`${root}/report.txt`]);
		// No uploads on a Preview/Download link.
		assert.equal((await node.io("PUT", `${root}/intruder.txt`, visitor, "x")).status, 403);
		// A HEAD is no download.
		assert.equal((await node.io("HEAD", `${root}/report.txt`, visitor)).status, 200);
		for (let i = 0; i < 2; i++) {
			const r = await node.io("GET", `${root}/report.txt`, visitor);
			assert.equal(r.status, 200);
			assert.equal(await r.text(), "quarterly report");
		}
		const third = await node.io("GET", `${root}/report.txt`, visitor);
		assert.equal(third.status, 403);
		assert.match(await third.text(), /maximum number of downloads/);
		const g = await node.api("GET", `/a/share/link/${pub.Uuid}`, undefined, alice);
		assert.equal(g.body.CurrentDownloads, "2");
		assert.equal((await info(pub.LinkHash)).Status, "exhausted");
		// An exhausted link no longer logs visitors in.
		const again = await visit(pub.UserLogin, "board-secret-1", pub.LinkHash);
		assert.equal(again.status, 401);
		assert.match(again.text, /maximum number of downloads/);
		// The visitor's front end shows the link's workspace and nothing else.
		const state = await node.api("GET", "/a/frontend/state", undefined, visitor);
		assert.match(state.text, /Report/);
		assert.doesNotMatch(state.text, /personal-files|common-files/);
		// The visitor cannot reach alice's other files nor share anything.
		assert.equal((await node.api("PUT", "/a/share/cell", { Room: { Label: "x", RootNodes: [{ Path: `${root}/report.txt` }] } }, visitor)).status, 403);
		assert.equal((await list("personal-files", visitor)).status, 404);
		assert.equal((await node.api("PUT", "/a/share/link", { ShareLink: { Label: "x", RootNodes: [{ Uuid: "x" }] } }, visitor)).status, 403);
	});

	it("an upload link without password: the page logs in with the preset password and uploads", async () => {
		const folder = (await stat("personal-files/drop", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Drop box", RootNodes: [{ Uuid: folder }], Permissions: ["Upload"], ViewTemplateName: "pydio_dropbox_template" } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body.Permissions, ["Upload"]);
		assert.ok(!r.body.PasswordRequired);
		const i = await info(r.body.LinkHash);
		const s = await visit(i.Login as string, `${i.Login}#$!Az1`, r.body.LinkHash);
		assert.equal(s.status, 200, s.text);
		const up = await node.io("PUT", `${i.RootPath}/contribution.txt`, s.body.JWT, "my part");
		assert.equal(up.status, 200, await up.text());
		assert.equal(await (await node.io("GET", "personal-files/drop/contribution.txt", alice)).text(), "my part");
		// Upload only: nothing to read.
		assert.equal((await node.io("GET", `${i.RootPath}/contribution.txt`, s.body.JWT)).status, 403);
	});

	it("a link on a file: the root is the file, under the link's slug", async () => {
		const file = (await stat("personal-files/single.pdf", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "single.pdf", RootNodes: [{ Uuid: file }], Permissions: ["Preview", "Download"] } }, alice);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.ViewTemplateName, "pydio_unique_strip");
		const i = await info(r.body.LinkHash);
		assert.equal(i.RootIsFile, true);
		assert.match(i.RootPath as string, /\/single\.pdf$/);
		const s = await visit(i.Login as string, `${i.Login}#$!Az1`, r.body.LinkHash);
		const st = await stat(i.RootPath as string, s.body.JWT);
		assert.equal(st.status, 200, st.text);
		assert.equal(st.body.Node.Type, "LEAF");
		assert.equal(await (await node.io("GET", i.RootPath as string, s.body.JWT)).text(), "%PDF-1.4 one file");
	});

	it("an expired link is refused: at the page, at login, and to a visitor already in", async () => {
		const folder = (await stat("personal-files/pub", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Soon gone", RootNodes: [{ Uuid: folder }], Permissions: ["Preview", "Download"] } }, alice);
		assert.equal(r.status, 200, r.text);
		const i = await info(r.body.LinkHash);
		const s = await visit(i.Login as string, `${i.Login}#$!Az1`, r.body.LinkHash);
		assert.equal(s.status, 200);
		assert.equal((await list(i.RootPath as string, s.body.JWT)).status, 200);
		const past = Math.floor(Date.now() / 1000) - 60;
		const u = await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: r.body.Uuid, Label: "Soon gone", AccessEnd: String(past) } }, alice);
		assert.equal(u.status, 200, u.text);
		assert.equal(u.body.AccessEnd, String(past));
		assert.equal((await info(r.body.LinkHash)).Status, "expired");
		const login = await visit(i.Login as string, `${i.Login}#$!Az1`, r.body.LinkHash);
		assert.equal(login.status, 401);
		assert.match(login.text, /expired/);
		const dl = await node.io("GET", `${i.RootPath}/report.txt`, s.body.JWT);
		assert.equal(dl.status, 403);
		assert.equal((await node.io("PUT", `${i.RootPath}/late.txt`, s.body.JWT, "late")).status, 403);
		const late = await list(i.RootPath as string, s.body.JWT);
		assert.equal(late.status, 403, late.text);
		assert.match(late.text, /expired/);
		// Not started yet, likewise.
		const future = Math.floor(Date.now() / 1000) + 3600;
		await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: r.body.Uuid, Label: "Soon gone", AccessStart: String(future), AccessEnd: String(future + 3600) } }, alice);
		assert.equal((await info(r.body.LinkHash)).Status, "not-started");
	});

	it("changing the password recreates the hidden user; a custom hash; deleting the link ends it", async () => {
		const folder = (await stat("personal-files/pub", alice)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Changing", RootNodes: [{ Uuid: folder }], Permissions: ["Preview", "Download"] } }, alice);
		const first = await visit(r.body.UserLogin, `${r.body.UserLogin}#$!Az1`, r.body.LinkHash);
		assert.equal(first.status, 200);
		const u = await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: r.body.Uuid, Label: "Changing" }, PasswordEnabled: true, CreatePassword: "now-protected", UpdateCustomHash: "my-custom-hash-1" }, alice);
		assert.equal(u.status, 200, u.text);
		assert.equal(u.body.LinkHash, "my-custom-hash-1");
		assert.equal(u.body.PasswordRequired, true);
		assert.deepEqual(u.body.Permissions, ["Preview", "Download"]);
		// The old session's user is gone; the old password no longer works, the new one does, on the new hash.
		assert.equal((await list(r.body.UserLogin, first.body.JWT)).status, 401);
		assert.equal((await visit(r.body.UserLogin, `${r.body.UserLogin}#$!Az1`, "my-custom-hash-1")).status, 401);
		const second = await visit(r.body.UserLogin, "now-protected", "my-custom-hash-1");
		assert.equal(second.status, 200, second.text);
		assert.equal((await info(r.body.LinkHash)).Status, "unknown");
		// Someone else's link: bob may neither read, edit nor delete it.
		assert.equal((await node.api("GET", `/a/share/link/${r.body.Uuid}`, undefined, bob)).status, 404);
		assert.equal((await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: r.body.Uuid, Label: "x" } }, bob)).status, 403);
		assert.equal((await node.api("DELETE", `/a/share/link/${r.body.Uuid}`, undefined, bob)).status, 403);
		const d = await node.api("DELETE", `/a/share/link/${r.body.Uuid}`, undefined, alice);
		assert.equal(d.status, 200, d.text);
		assert.equal(d.body.Success, true);
		assert.equal((await info("my-custom-hash-1")).Status, "unknown");
		assert.equal((await visit(r.body.UserLogin, "now-protected", "my-custom-hash-1")).status, 401);
		assert.equal((await list("x", second.body.JWT)).status, 401);
		assert.equal((await node.api("GET", `/a/share/link/${r.body.Uuid}`, undefined, alice)).status, 404);
	});

	it("share settings set on a role (parameter:action.share:*) are honoured", async () => {
		const me = await node.api("GET", "/a/user/bob", undefined, node.admin);
		const role = me.body.Uuid as string;
		const acl = await node.api("PUT", "/a/acl", { RoleID: role, WorkspaceID: "PYDIO_REPO_SCOPE_ALL", Action: { Name: "parameter:action.share:ENABLE_FOLDER_PUBLIC_LINK", Value: "false" } }, node.admin);
		assert.equal(acl.status, 200, acl.text);
		assert.equal((await node.io("PUT", "personal-files/b/x.txt", bob, "x")).status, 200);
		const folder = (await stat("personal-files/b", bob)).body.Node.Uuid;
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "b", RootNodes: [{ Uuid: folder }], Permissions: ["Preview"] } }, bob);
		assert.equal(r.status, 403, r.text);
		assert.equal(r.body.Code, "folder.public-link.forbidden");
		await node.api("PUT", "/a/acl", { RoleID: role, WorkspaceID: "PYDIO_REPO_SCOPE_ALL", Action: { Name: "parameter:action.share:SHARE_FORCE_PASSWORD", Value: "true" } }, node.admin);
		const file = (await stat("personal-files/b/x.txt", bob)).body.Node.Uuid;
		const f = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "x", RootNodes: [{ Uuid: file }], Permissions: ["Preview"] } }, bob);
		assert.equal(f.status, 403, f.text);
		assert.match(f.text, /password is required/i);
	});

	it("hostile inputs are clear 4xx", async () => {
		const folder = (await stat("personal-files/pub", alice)).body.Node.Uuid;
		const file = (await stat("personal-files/single.pdf", alice)).body.Node.Uuid;
		const ok = { Label: "x", RootNodes: [{ Uuid: folder }] };
		const cases: [unknown, number][] = [
			[{ ShareLink: { Label: "x" } }, 400],
			[{ ShareLink: { RootNodes: [{ Uuid: folder }] } }, 400],
			[{ ShareLink: { ...ok, Permissions: ["Everything"] } }, 400],
			[{ ShareLink: { Label: "x", RootNodes: [{ Uuid: file }], Permissions: ["Upload"] } }, 400],
			[{ ShareLink: { ...ok, RootNodes: [{ Uuid: "nope" }] } }, 404],
			[{ ShareLink: { ...ok, MaxDownloads: "-1" } }, 400],
			[{ ShareLink: { ...ok, ViewTemplateName: "../../etc" } }, 400],
			[{ ShareLink: ok, PasswordEnabled: true }, 400],
			[{ ShareLink: ok, UpdateCustomHash: "short" }, 403],
			[{ ShareLink: ok, UpdateCustomHash: "bad hash with spaces" }, 400],
			[{ ShareLink: ok, UpdateCustomHash: pub.LinkHash + "-no" }, 200],
			[{ ShareLink: ok, UpdateCustomHash: pub.LinkHash + "-no" }, 409],
			[{ ShareLink: { Uuid: "nope", Label: "x" } }, 404],
			[{ ShareLink: "nope" }, 400],
		];
		for (const [body, status] of cases) {
			const r = await node.api("PUT", "/a/share/link", body, alice);
			assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 140)} -> ${r.status} ${r.text}`);
			if (status >= 400) assert.ok(r.body.Title || r.body.Detail, r.text);
		}
		assert.equal((await node.api("GET", "/a/share/link/nope", undefined, alice)).status, 404);
		assert.equal((await node.api("PUT", "/a/share/link", { ShareLink: ok })).status, 401);
	});
});
