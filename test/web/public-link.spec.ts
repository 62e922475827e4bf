// The public link page in a real browser against a real node: share links made with PUT /a/share/link, opened
// at their LinkUrl, used as a visitor would (password, preview, downloads, drop box), and the refusal pages.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { startNode, type TestNode } from "../helpers/node";
import { ensureWebBuilt, launchChromium } from "../helpers/browser";
import { zipTexts } from "../helpers/zip";

const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

describe("web: the public link page in Chromium", function () {
	this.timeout(60_000);
	let node: TestNode;
	let admin: string;
	let browser: Browser;
	let page: Page;

	const put = async (path: string, body: string | Buffer) => {
		const r = await fetch(`${node.url}/io/${path}`, { method: "PUT", headers: { "X-Pydio-Bearer": admin }, body: typeof body === "string" ? body : new Uint8Array(body) });
		assert.equal(r.status, 200, `PUT ${path}: ${await r.text()}`);
	};

	/** Shares a node with PUT /a/share/link and answers its page's absolute URL. */
	const share = async (path: string, link: Record<string, unknown>, password?: string): Promise<string> => {
		const st = await node.api("POST", "/a/tree/stats", { NodePaths: [path] }, admin);
		assert.equal(st.status, 200, st.text);
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: `Link to ${path}`, RootNodes: [{ Uuid: st.body.Nodes[0].Uuid }], ...link }, PasswordEnabled: !!password, CreatePassword: password }, admin);
		assert.equal(r.status, 200, `PUT /a/share/link: ${r.text}`);
		const url = r.body.LinkUrl as string;
		assert.match(url, /\/public\/[A-Za-z0-9_-]+$/);
		return url.startsWith("/") ? node.url + url : url;
	};

	before(async function () {
		browser = await launchChromium(this);
		ensureWebBuilt();
		node = await startNode();
		admin = await node.login("admin", node.adminPassword);
		await put("common-files/album/notes.txt", "Hello from the shared folder\n");
		await put("common-files/album/dot.png", PNG);
		await put("common-files/album/sub/deep.txt", "deep down");
		await put("common-files/limited.txt", "only once");
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/dropbox", Type: "COLLECTION" }] }, admin)).status, 200);
	});
	after(async () => {
		await browser?.close();
		await node?.stop();
	});
	beforeEach(async () => {
		page = await browser.newPage({ acceptDownloads: true });
	});
	afterEach(async () => {
		await page?.context().close();
	});

	it("opens a folder link with its password, lists, previews, downloads (a file, a zip) and takes uploads", async () => {
		const url = await share("common-files/album", { Permissions: ["Preview", "Download", "Upload"], ViewTemplateName: "pydio_shared_folder" }, "Visit-Pass-123");
		const res = await page.goto(url);
		assert.equal(res?.status(), 200);
		assert.equal(res?.headers()["content-type"], "text/html; charset=utf-8");
		await page.fill("#link-password", "not-the-password");
		await page.click("form.password button[type=submit]");
		await page.waitForSelector("form.password .error");
		assert.match(await page.textContent("form.password .error") ?? "", /Wrong password/);

		await page.fill("#link-password", "Visit-Pass-123");
		await page.click("form.password button[type=submit]");
		await page.waitForSelector('tr[data-name="notes.txt"]');
		assert.deepEqual(await page.$$eval(".listing tbody tr", (rows) => rows.map((r) => r.getAttribute("data-name"))), ["sub", "dot.png", "notes.txt"]);
		assert.equal((await page.textContent('tr[data-name="notes.txt"] .size'))?.trim(), "29 B");

		await page.click('tr[data-name="notes.txt"] .name button');
		await page.waitForSelector(".preview-text pre");
		assert.equal(await page.textContent(".preview-text pre"), "Hello from the shared folder\n");
		await page.click('tr[data-name="dot.png"] .name button');
		await page.waitForFunction(() => (document.querySelector(".preview-image img") as HTMLImageElement | null)?.naturalWidth === 1);

		const [download] = await Promise.all([page.waitForEvent("download"), page.click('tr[data-name="notes.txt"] a.button')]);
		assert.equal(download.suggestedFilename(), "notes.txt");
		assert.equal(await readFile((await download.path()) as string, "utf8"), "Hello from the shared folder\n");

		const [zip] = await Promise.all([page.waitForEvent("download"), page.click("button.download-all")]);
		assert.equal(zip.suggestedFilename(), "Link to common-files_album.zip", "named after the link's label");
		const entries = await zipTexts(await readFile((await zip.path()) as string), "latin1");
		assert.deepEqual(Object.keys(entries).sort(), ["dot.png", "notes.txt", "sub/deep.txt"]);
		assert.equal(entries["sub/deep.txt"], "deep down");

		await page.click('tr[data-name="sub"] .folder-link');
		await page.waitForSelector('tr[data-name="deep.txt"]');

		// An upload-enabled link takes files into the folder shown, and lists them once stored.
		await page.setInputFiles(".upload .file-input", { name: "from visitor.txt", mimeType: "text/plain", buffer: Buffer.from("sent by the visitor") });
		await page.waitForSelector('li[data-name="from visitor.txt"][data-state="done"]');
		await page.waitForSelector('tr[data-name="from visitor.txt"]');
		const st = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/album/sub/from visitor.txt"] }, admin);
		assert.equal(st.body.Nodes?.[0]?.Size, "19");
	});

	it("uploads dropped files into a drop box, with their progress, showing nothing of its contents", async () => {
		await put("common-files/dropbox/already-there.txt", "private");
		const url = await share("common-files/dropbox", { Permissions: ["Upload"], ViewTemplateName: "pydio_dropbox_template" });
		await page.goto(url);
		await page.waitForSelector(".dropzone");
		assert.equal(await page.$(".listing"), null);
		assert.equal(await page.$('[data-name="already-there.txt"]'), null);
		const files = await page.evaluateHandle(() => {
			const dt = new DataTransfer();
			dt.items.add(new File([new Uint8Array(600_000).fill(97)], "dropped.bin", { type: "application/octet-stream" }));
			dt.items.add(new File(["second"], "second file.txt", { type: "text/plain" }));
			return dt;
		});
		await page.dispatchEvent(".dropzone", "dragover", { dataTransfer: files });
		await page.dispatchEvent(".dropzone", "drop", { dataTransfer: files });
		await page.waitForSelector('li[data-name="dropped.bin"] progress');
		await page.waitForSelector('li[data-name="second file.txt"][data-state="done"]');
		assert.equal(await page.$eval('li[data-name="dropped.bin"] progress', (p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max].join("/")), "600000/600000");
		assert.equal((await page.textContent('li[data-name="dropped.bin"] .state'))?.trim(), "Uploaded");

		const st = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/dropbox/dropped.bin", "common-files/dropbox/second file.txt"] }, admin);
		assert.deepEqual(st.body.Nodes.map((n: { Path: string; Size: string }) => `${n.Path}:${n.Size}`).sort(), ["common-files/dropbox/dropped.bin:600000", "common-files/dropbox/second file.txt:6"]);
	});

	it("refuses the link once its downloads are used up", async () => {
		const url = await share("common-files/limited.txt", { Permissions: ["Preview", "Download"], ViewTemplateName: "pydio_unique_strip", MaxDownloads: "1" });
		await page.goto(url);
		await page.waitForSelector(".file a.button");
		assert.equal((await page.textContent(".file .name"))?.trim(), "limited.txt");
		assert.equal((await page.textContent(".limits"))?.trim(), "1 of 1 downloads left");
		// Every read counts on such a link: opening the page does not spend it on a preview nobody asked for.
		assert.ok(await page.$(".show-preview"));
		assert.equal(await page.$(".preview"), null);
		const [download] = await Promise.all([page.waitForEvent("download"), page.click(".file a.button")]);
		assert.equal(await readFile((await download.path()) as string, "utf8"), "only once");

		const again = await page.goto(url);
		assert.equal(again?.status(), 410);
		await page.waitForSelector('.refusal[data-status="exhausted"]');
		assert.match((await page.textContent(".refusal h1")) ?? "", /download limit/);
	});

	it("shows a link that is not active yet, with a 403", async () => {
		const url = await share("common-files/limited.txt", { Permissions: ["Download"], AccessStart: String(Math.floor(Date.now() / 1000) + 3600) });
		const res = await page.goto(url);
		assert.equal(res?.status(), 403);
		await page.waitForSelector('.refusal[data-status="not-started"]');
		assert.equal(await page.textContent(".refusal h1"), "This link is not active yet");
	});

	it("shows an unknown link as a page that says so, with a 404", async () => {
		const res = await page.goto(`${node.url}/public/0123456789ab`);
		assert.equal(res?.status(), 404);
		await page.waitForSelector('.refusal[data-status="unknown"]');
		assert.equal(await page.textContent(".refusal h1"), "This link does not exist");
		assert.equal(await page.title(), "This link does not exist · Cellar");
	});
});
