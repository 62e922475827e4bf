import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";
import { ensureWebBuilt } from "../helpers/browser";
import { defaultWebRoot } from "../../lib/web/public-page";

describe("HTTP: the gateway serves the web front end", function () {
	this.timeout(60_000);
	let node: TestNode;
	let script: string;

	before(async () => {
		ensureWebBuilt();
		script = readdirSync(join(defaultWebRoot(join(__dirname, "..", "..", "lib", "web")), "assets")).find((f) => f.endsWith(".js")) as string;
		node = await startNode();
	});
	after(() => node.stop());

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

	it("leaves /a and /io as they were", async () => {
		assert.equal((await node.api("GET", "/a/frontend/bootconf")).status, 200);
		assert.equal((await fetch(`${node.url}/io/common-files/x.txt`)).status, 403);
	});
});
