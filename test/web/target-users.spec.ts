// A link restricted to the users it was mailed to (RestrictToTargetUsers), in Chromium: opened from the address a
// target received (`?u=<key>`) it shows its files; opened without the key, the page says why it does not open
// (the login's refusal Code, not its message), also for a link with a password, where no password would help.
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { startNode, type TestNode } from "../helpers/node";
import { ensureWebBuilt, launchChromium } from "../helpers/browser";

describe("web: a link restricted to its target users", function () {
	this.timeout(60_000);
	let node: TestNode;
	let browser: Browser;
	let page: Page;
	let url: string;
	let withPassword: string;

	before(async function () {
		browser = await launchChromium(this);
		ensureWebBuilt();
		node = await startNode();
		const admin = await node.login("admin", node.adminPassword);
		assert.equal((await fetch(`${node.url}/io/common-files/for-bob/notes.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": admin }, body: "for bob only" })).status, 200);
		const st = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/for-bob"] }, admin);
		const r = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "For Bob", RootNodes: [{ Uuid: st.body.Nodes[0].Uuid }], Permissions: ["Preview", "Download"], TargetUsers: { "bob-key-1": { Display: "Bob" } }, RestrictToTargetUsers: true } }, admin);
		assert.equal(r.status, 200, r.text);
		url = `${node.url}${r.body.LinkUrl}`;
		const p = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "For Bob, locked", RootNodes: [{ Uuid: st.body.Nodes[0].Uuid }], Permissions: ["Preview", "Download"], TargetUsers: { "bob-key-2": { Display: "Bob" } }, RestrictToTargetUsers: true }, CreatePassword: "Locked-Pass-1234", PasswordEnabled: true }, admin);
		assert.equal(p.status, 200, p.text);
		withPassword = `${node.url}${p.body.LinkUrl}`;
	});
	after(async () => {
		await browser?.close();
		await node?.stop();
	});
	beforeEach(async () => {
		page = await browser.newPage();
	});
	afterEach(async () => {
		await page?.context().close();
	});

	it("opens with the target's key", async () => {
		await page.goto(`${url}?u=bob-key-1`);
		await page.waitForSelector('tr[data-name="notes.txt"]');
	});

	it("without a key, says the link is for the people it was sent to", async () => {
		await page.goto(url);
		await page.waitForSelector('section.refusal[data-status="restricted"]');
		assert.match((await page.textContent("section.refusal")) ?? "", /for the people it was sent to.*address you received/);
	});

	it("with a password but without a key, says so instead of asking the password again", async () => {
		await page.goto(withPassword);
		await page.fill("#link-password", "Locked-Pass-1234");
		await page.click("form.password button");
		await page.waitForSelector('section.refusal[data-status="restricted"]');
		assert.equal(await page.$("form.password"), null);
		await page.goto(`${withPassword}?u=bob-key-2`);
		await page.fill("#link-password", "Locked-Pass-1234");
		await page.click("form.password button");
		await page.waitForSelector('tr[data-name="notes.txt"]');
	});
});
