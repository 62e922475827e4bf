import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { useNode } from "../helpers/node";
import { ensureWebBuilt } from "../helpers/browser";
import { defaultWebRoot } from "../../lib/web/public-page";

describe("HTTP: the gateway serves the web front end", function () {
	this.timeout(60_000);
	const node = useNode();
	let script: string;

	before(() => {
		ensureWebBuilt();
		script = readdirSync(join(defaultWebRoot(join(__dirname, "..", "..", "lib", "web")), "assets")).find((f) => f.endsWith(".js")) as string;
	});

	it("serves the built files under /web/assets with their type and a long cache", async () => {
		const r = await fetch(`${node.url}/web/assets/${script}`);
		assert.equal(r.status, 200);
		assert.equal(r.headers.get("content-type"), "application/javascript; charset=utf-8");
		assert.equal(r.headers.get("cache-control"), "public, max-age=31536000, immutable");
		assert.equal((await fetch(`${node.url}/web/assets/nothing.js`)).status, 404);
	});

	it("answers a malformed link address with the unknown-link page, and only GET/HEAD", async () => {
		const r = await fetch(`${node.url}/public/not%20a%20hash`);
		assert.equal(r.status, 404);
		assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
		const html = await r.text();
		assert.match(html, /<h1>This link does not exist<\/h1>/);
		assert.ok(html.includes(`/web/assets/${script}`), "the page loads the built app");
		assert.equal((await fetch(`${node.url}/public/abc`, { method: "DELETE" })).status, 405);
	});

	it("serves a link's page with what the share service says, and a folder's zip spends one of its downloads", async () => {
		const admin = await node.login("admin", node.adminPassword);
		for (const k of ["zipme/a.txt", "zipme/b.txt"]) await fetch(`${node.url}/io/common-files/${k}`, { method: "PUT", headers: { "X-Pydio-Bearer": admin }, body: k });
		const uuid = (await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/zipme"] }, admin)).body.Nodes[0].Uuid;
		const link = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Zip </script> me", RootNodes: [{ Uuid: uuid }], Permissions: ["Preview", "Download"], MaxDownloads: "1" } }, admin);
		assert.equal(link.status, 200, link.text);
		const page = await fetch(node.url + link.body.LinkUrl);
		assert.equal(page.status, 200);
		const html = await page.text();
		const info = JSON.parse(/<script id="cellar-boot" type="application\/json">([^<]*)<\/script>/.exec(html)?.[1] ?? "null");
		assert.equal(info.Status, "ok");
		assert.equal(info.Label, "Zip </script> me");
		assert.equal(info.MaxDownloads, 1);
		assert.equal(info.RootIsFile, false);

		const session = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: info.Login, password: `${info.Login}#$!Az1` } }, undefined, { "X-Pydio-Minisite": info.Hash });
		assert.equal(session.status, 200, session.text);
		const listing = await node.api("POST", "/a/tree/stats", { NodePaths: [`${info.RootPath}/*`] }, session.body.JWT);
		const paths = listing.body.Nodes.map((n: { Path: string }) => n.Path);
		assert.equal(paths.length, 2);
		const zipOf = async () => {
			const sel = await node.api("POST", "/a/tree/selection", { Nodes: paths.map((Path: string) => ({ Path })) }, session.body.JWT);
			return fetch(`${node.url}/io/${info.RootPath.split("/")[0]}/all-${sel.body.SelectionUUID}.zip?pydio_jwt=${session.body.JWT}`);
		};
		const first = await zipOf();
		assert.equal(first.status, 200);
		await first.arrayBuffer();
		assert.equal((await zipOf()).status, 403, "the link's one download is spent");
		assert.equal((await fetch(node.url + link.body.LinkUrl)).status, 410);
	});

	it("leaves /a and /io as they were", async () => {
		assert.equal((await node.api("GET", "/a/frontend/bootconf")).status, 200);
		assert.equal((await fetch(`${node.url}/io/common-files/x.txt`)).status, 403);
	});
});
