// The configuration tree applied without restart, through the real gateway: the application title in bootconf,
// the share link policies (the tree's value is the default, a role parameter overrides it).
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

const enc = (p: string) => encodeURIComponent(p);

describe("HTTP: configuration applied without restart", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	const put = (path: string, data: unknown) => node.api("PUT", `/a/config/${path}`, { Data: JSON.stringify(data) }, node.admin);
	const title = async (token?: string) => JSON.parse((await node.api("GET", "/a/frontend/bootconf", undefined, token)).text).customWording.title as string;
	const upload = async (path: string, body: string) => {
		const r = await fetch(`${node.url}/io/${path.split("/").map(enc).join("/")}`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body });
		assert.equal(r.status, 200, path);
		return (await node.api("GET", `/a/tree/stat/${enc(path)}`, undefined, alice)).body.Node.Uuid as string;
	};
	const link = (uuid: string, extra: Record<string, unknown> = {}) => node.api("PUT", "/a/share/link", { ShareLink: { Label: "l", RootNodes: [{ Uuid: uuid }], Permissions: ["Preview", "Download"], ...extra } }, alice);

	it("shows the configured application title in bootconf at once, and the default again once removed", async () => {
		assert.equal(await title(), "Cellar");
		assert.equal(await title(alice), "Cellar"); // now in the gateway's response cache
		assert.equal((await put("frontend/plugin/core.pydio/APPLICATION_TITLE", "Team Files")).status, 200);
		assert.equal(await title(), "Team Files");
		assert.equal(await title(alice), "Team Files");
		assert.equal((await put("frontend/plugin/core.pydio", {})).status, 200);
		assert.equal(await title(), "Cellar");
	});

	it("applies the share policies of the tree to new links, under the role parameters", async () => {
		const file = await upload("personal-files/policy.txt", "x");
		assert.equal((await put("frontend/plugin/action.share", { ENABLE_FILE_PUBLIC_LINK: false })).status, 200);
		const off = await link(file);
		assert.equal(off.status, 403, off.text);
		assert.equal(off.body.Code, "file.public-link.forbidden");

		assert.equal((await put("frontend/plugin/action.share", { FILE_MAX_DOWNLOAD: 5, SHARE_FORCE_PASSWORD: true })).status, 200);
		const tooMany = await link(file, { MaxDownloads: "10" });
		assert.equal(tooMany.status, 403, tooMany.text);
		assert.equal(tooMany.body.Code, "link.max-download");
		const noPassword = await link(file, { MaxDownloads: "5" });
		assert.equal(noPassword.status, 403, noPassword.text);
		assert.match(noPassword.text, /password is required/i);
		const ok = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "l", RootNodes: [{ Uuid: file }], Permissions: ["Preview", "Download"], MaxDownloads: "5" }, PasswordEnabled: true, CreatePassword: "Link-Pass-1234" }, alice);
		assert.equal(ok.status, 200, ok.text);

		// A role parameter overrides the server-wide default, as in Cells.
		const me = await node.api("GET", "/a/user/alice", undefined, node.admin);
		const acl = await node.api("PUT", "/a/acl", { RoleID: me.body.Uuid, WorkspaceID: "PYDIO_REPO_SCOPE_ALL", Action: { Name: "parameter:action.share:SHARE_FORCE_PASSWORD", Value: "false" } }, node.admin);
		assert.equal(acl.status, 200, acl.text);
		assert.equal((await link(file, { MaxDownloads: "5" })).status, 200);

		// Invalid values are refused by the tree's schema, the policy in force stays.
		assert.equal((await put("frontend/plugin/action.share", { FILE_MAX_DOWNLOAD: "lots" })).status, 400);
		assert.equal((await link(file, { MaxDownloads: "10" })).status, 403);

		assert.equal((await put("frontend/plugin/action.share", {})).status, 200);
		assert.equal((await link(file, { MaxDownloads: "10" })).status, 200);
	});

	it("limits uploads to the configured size, single and multipart, at once", async () => {
		const url = (k: string) => `${node.url}/io/${k.split("/").map(enc).join("/")}`;
		const send = (k: string, body: Buffer<ArrayBuffer>) => fetch(url(k), { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body });
		assert.equal((await put("frontend/plugin/core.uploader", { UPLOAD_MAX_SIZE: 1000 })).status, 200);
		const big = await send("personal-files/big.bin", Buffer.alloc(1001, 1));
		assert.equal(big.status, 400, await big.text());
		assert.match(await (await send("personal-files/big.bin", Buffer.alloc(1001, 1))).text(), /EntityTooLarge/);
		assert.equal((await node.api("GET", `/a/tree/stat/${enc("personal-files/big.bin")}`, undefined, alice)).status, 404);
		assert.equal((await send("personal-files/small.bin", Buffer.alloc(1000, 1))).status, 200);

		// Multipart: two parts of 600 bytes make a file past the limit, refused at completion.
		const created = await fetch(`${url("personal-files/parts.bin")}?uploads`, { method: "POST", headers: { "X-Pydio-Bearer": alice } });
		assert.equal(created.status, 200);
		const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1];
		const etags: string[] = [];
		for (const n of [1, 2]) {
			const p = await fetch(`${url("personal-files/parts.bin")}?partNumber=${n}&uploadId=${enc(uploadId)}`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: Buffer.alloc(600, n) });
			assert.equal(p.status, 200, await p.text());
			etags.push(p.headers.get("etag")!);
		}
		const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("")}</CompleteMultipartUpload>`;
		const done = await fetch(`${url("personal-files/parts.bin")}?uploadId=${enc(uploadId)}`, { method: "POST", headers: { "X-Pydio-Bearer": alice }, body: xml });
		const text = await done.text();
		assert.equal(done.status, 400, text);
		assert.match(text, /EntityTooLarge/);
		assert.equal((await node.api("GET", `/a/tree/stat/${enc("personal-files/parts.bin")}`, undefined, alice)).status, 404);

		// Lifted: the same upload goes through.
		assert.equal((await put("frontend/plugin/core.uploader", {})).status, 200);
		assert.equal((await send("personal-files/big.bin", Buffer.alloc(1001, 1))).status, 200);
	});
});
