// What the official Cells CLI sends for shares, request for request (cells-client rest/shares.go, cmd/files_share.go,
// cmd/cell.go): `cec share <path>` stats the node (HeadNode: GET /a/tree/stat/<path>), then PUT /a/share/link with
// a go-swagger body (false booleans omitted, Download before Preview, the shared-folder template even for a file)
// and prints `<server url><LinkUrl>`; `cec create-cell <label> --username bob` reads the user (GET /a/user/bob) and
// sends it whole in the cell's ACLs with CreateEmptyRoot.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUsers } from "../helpers/users";
import type { PublicLinkInfo } from "../../lib/contracts/share";

describe("HTTP: what the Cells CLI sends for shares (cec share, cec create-cell)", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = (await addUsers(node, node.admin, ["alice", "bob"], { email: false, displayName: false })).alice.token;
		const r = await fetch(`${node.url}/io/personal-files/MyPublicImage.jpg`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: "jpeg bytes" });
		assert.equal(r.status, 200);
	});

	it("cec share personal-files/MyPublicImage.jpg: a public link the CLI can print, that a visitor opens", async () => {
		// StatNode
		const head = await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/MyPublicImage.jpg")}`, undefined, alice);
		assert.equal(head.status, 200, head.text);
		const uuid = head.body.Node.Uuid as string;
		// CreateSimpleFolderLink, as go-swagger serialises it.
		const body = `{"ShareLink":{"Label":"MyPublicImage.jpg","Permissions":["Download","Preview"],"PoliciesContextEditable":true,"RootNodes":[{"Uuid":"${uuid}"}],"ViewTemplateName":"pydio_shared_folder"}}`;
		const r = await node.api("PUT", "/a/share/link", body, alice);
		assert.equal(r.status, 200, r.text);
		// rest.StandardizeLink prefixes a relative LinkUrl with the server's URL.
		assert.match(r.body.LinkUrl, /^\/public\/[0-9a-f]{12}$/);
		const printed = `${node.url}${r.body.LinkUrl}`;
		assert.ok(printed.startsWith("http://"));
		assert.deepEqual(r.body.Permissions, ["Preview", "Download"]);
		// The link works: the page logs its visitor in and the file downloads.
		const hash = r.body.LinkHash as string;
		const info = await node.broker.call<PublicLinkInfo, { hash: string }>("share.publicLink", { hash });
		assert.equal(info.Status, "ok");
		const s = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: info.Login, password: `${info.Login}#$!Az1` } }, undefined, { "X-Pydio-Minisite": hash });
		assert.equal(s.status, 200, s.text);
		const dl = await fetch(`${node.url}/io/${info.RootPath}`, { headers: { "X-Pydio-Bearer": s.body.JWT } });
		assert.equal(dl.status, 200);
		assert.equal(await dl.text(), "jpeg bytes");
		// A path that does not exist: the CLI stats it first and stops on the 404.
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/none.jpg")}`, undefined, alice)).status, 404);
	});

	it("cec create-cell Team --username bob --write: the user's whole record in ACLs, an empty root created", async () => {
		const user = await node.api("GET", "/a/user/bob", undefined, alice);
		assert.equal(user.status, 200, user.text);
		const bobUuid = user.body.Uuid as string;
		const body = {
			Room: { Label: "Team", ACLs: { [bobUuid]: { RoleId: bobUuid, User: user.body, Actions: [{ Name: "read", Value: "1" }, { Name: "write", Value: "1" }] } } },
			CreateEmptyRoot: true,
		};
		const r = await node.api("PUT", "/a/share/cell", body, alice);
		assert.equal(r.status, 200, r.text);
		assert.ok(r.body.Uuid);
		assert.equal(r.body.ACLs[bobUuid].User.Login, "bob");
		const bob = await node.login("bob", "bob-Pass-12345");
		const put = await fetch(`${node.url}/io/team/hello.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": bob }, body: "hi" });
		assert.equal(put.status, 200, await put.text());
		const l = await node.api("POST", "/a/tree/stats", { NodePaths: ["team/*"] }, alice);
		assert.deepEqual(l.body.Nodes.map((n: { Path: string }) => n.Path), ["team/hello.txt"]);
	});
});
