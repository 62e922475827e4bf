import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { PublicPages, renderPublicPage, scriptJson } from "../../lib/web/public-page";
import type { PublicLinkInfo } from "../../lib/contracts/share";

const INDEX = `<!doctype html><html><head><title>Cellar</title><!--cellar:boot--><script type="module" src="/web/assets/index-abc.js"></script></head><body><div id="app"></div></body></html>`;

function bootOf(html: string): PublicLinkInfo {
	const m = /<script id="cellar-boot" type="application\/json">([^<]*)<\/script>/.exec(html);
	assert.ok(m, "the page carries the link's data");
	return JSON.parse(m[1]) as PublicLinkInfo;
}

describe("web: the public link page (lib/web/public-page)", () => {
	it("injects the link's data as JSON that cannot end the script element", () => {
		const label = `</script><script>alert(1)</script><!-- & \u2028`;
		const { status, html } = renderPublicPage(INDEX, { Status: "ok", Hash: "abc", Label: label, Login: "x" });
		assert.equal(status, 200);
		assert.equal(html.match(/<\/script>/g)?.length, 2, "only the boot and the app's script elements close");
		assert.ok(!html.includes("<script>alert"));
		assert.equal(bootOf(html).Label, label);
		assert.match(html, /<title>&lt;\/script&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;&lt;!-- &amp; \u2028 · Cellar<\/title>/);
		assert.ok(!scriptJson({ a: "\u2028\u2029" }).includes("\u2028"));
	});

	it("answers refusals with a 4xx and the reason in the HTML itself", () => {
		const cases: [PublicLinkInfo["Status"], number, RegExp][] = [
			["unknown", 404, /does not exist/],
			["expired", 410, /has expired/],
			["exhausted", 410, /download limit/],
			["not-started", 403, /not active yet/],
		];
		for (const [Status, code, text] of cases) {
			const { status, html } = renderPublicPage(INDEX, { Status, Hash: "h" });
			assert.equal(status, code, Status);
			assert.match(html, new RegExp(`<div id="app"><section class="refusal" data-status="${Status}"><h1>[^<]*${text.source}`), Status);
			assert.equal(bootOf(html).Status, Status);
		}
	});

	describe("served over HTTP", () => {
		let server: Server;
		let url: string;
		let root: string;
		const asked: string[] = [];

		before(async () => {
			root = mkdtempSync(join(tmpdir(), "cellar-web-"));
			mkdirSync(join(root, "assets"));
			writeFileSync(join(root, "index.html"), INDEX);
			writeFileSync(join(root, "assets", "index-abc.js"), "console.log(1)");
			writeFileSync(join(root, "assets", "index-abc.css"), "body{}");
			const pages = new PublicPages({
				root,
				publicLink: async (hash) => {
					asked.push(hash);
					if (hash === "broken") throw new Error("share service unreachable");
					return hash === "good" ? { Status: "ok", Hash: hash, Login: "u", RootPath: "link-ws" } : { Status: "unknown", Hash: hash };
				},
			});
			server = createServer((req, res) => void pages.handle(req, res));
			await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
			url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
		});
		after(() => {
			server.close();
			rmSync(root, { recursive: true, force: true });
		});

		it("serves a link's page as HTML, never kept in a cache, locked to its own files", async () => {
			const r = await fetch(`${url}/public/good`);
			assert.equal(r.status, 200);
			assert.equal(r.headers.get("content-type"), "text/html; charset=utf-8");
			assert.equal(r.headers.get("cache-control"), "no-store");
			assert.match(r.headers.get("content-security-policy") ?? "", /script-src 'self'/);
			assert.deepEqual(bootOf(await r.text()), { Status: "ok", Hash: "good", Login: "u", RootPath: "link-ws" });
		});

		it("does not ask the share service about malformed hashes", async () => {
			asked.length = 0;
			for (const p of ["/public/", "/public/a%2Fb", "/public/%zz", "/public/" + "x".repeat(200)]) {
				const r = await fetch(url + p);
				assert.equal(r.status, 404, p);
				assert.equal(bootOf(await r.text()).Status, "unknown");
			}
			assert.deepEqual(asked, []);
		});

		it("serves built assets with their type and a long cache; nothing outside assets/", async () => {
			const js = await fetch(`${url}/web/assets/index-abc.js`);
			assert.equal(js.status, 200);
			assert.equal(js.headers.get("content-type"), "application/javascript; charset=utf-8");
			assert.equal(js.headers.get("cache-control"), "public, max-age=31536000, immutable");
			assert.equal(await js.text(), "console.log(1)");
			assert.equal((await fetch(`${url}/web/assets/index-abc.css`)).headers.get("content-type"), "text/css; charset=utf-8");
			for (const p of ["/web/assets/missing.js", "/web/assets/..%2Findex.html", "/web/index.html", "/web/assets/.hidden"]) assert.equal((await fetch(url + p)).status, 404, p);
			const head = await fetch(`${url}/web/assets/index-abc.js`, { method: "HEAD" });
			assert.equal(head.headers.get("content-length"), "14");
		});

		it("refuses writes, and answers a page when the share service fails", async () => {
			const post = await fetch(`${url}/public/good`, { method: "POST", body: "x" });
			assert.equal(post.status, 405);
			assert.equal(post.headers.get("allow"), "GET, HEAD");
			const broken = await fetch(`${url}/public/broken`);
			assert.equal(broken.status, 503);
			assert.match(await broken.text(), /cannot be shown right now/);
		});

		it("says so when the front end is not built", async () => {
			const empty = mkdtempSync(join(tmpdir(), "cellar-web-"));
			const pages = new PublicPages({ root: empty, publicLink: async (hash) => ({ Status: "ok", Hash: hash }) });
			const s = createServer((req, res) => void pages.handle(req, res));
			await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
			const r = await fetch(`http://127.0.0.1:${(s.address() as AddressInfo).port}/public/good`);
			s.close();
			rmSync(empty, { recursive: true, force: true });
			assert.equal(r.status, 503);
			assert.match(await r.text(), /npm run build/);
		});
	});
});
