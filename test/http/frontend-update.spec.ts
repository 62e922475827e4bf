// Updates and license through the real gateway: without a source, the running version and why; with a source
// (a local HTTP server speaking Cells' update protocol), only newer versions; never an applied upgrade; license
// stats counted from the store.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { useNode } from "../helpers/node";
import { packageInfo } from "../../lib/frontend/version";

const current = packageInfo().version;

describe("HTTP: update and license (no update source)", function () {
	this.timeout(60_000);
	const node = useNode();
	let dave: string;

	before(async () => {
		for (const login of ["dave", "erin"]) assert.equal((await node.api("PUT", `/a/user/${login}`, { Password: "Some-Pass-1234", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		dave = await node.login("dave", "Some-Pass-1234");
	});

	it("answers the running version and says no update source is configured", async () => {
		const r = await node.api("POST", "/a/update", {}, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Channel, "stable");
		assert.equal(r.body.AvailableBinaries.length, 1);
		assert.equal(r.body.AvailableBinaries[0].Version, current);
		assert.match(r.body.AvailableBinaries[0].Description, /No update source is configured \(UPDATE_URL\)/);
	});

	it("refuses to apply an update, saying why, and never changes anything", async () => {
		const r = await node.api("PATCH", "/a/update/99.0.0", {}, node.admin);
		assert.equal(r.status, 409, r.text);
		assert.match(r.body.Title, /cannot replace its own code.*Nothing was changed/);
		assert.equal((await node.api("PATCH", `/a/update/${current}`, {}, node.admin)).status, 409);
		assert.equal((await node.api("PATCH", "/a/update/not-a-version", {}, node.admin)).status, 400);
	});

	it("keeps update and license to administrators", async () => {
		assert.equal((await node.api("POST", "/a/update", {}, dave)).status, 403);
		assert.equal((await node.api("GET", "/a/license/stats", undefined, dave)).status, 403);
		assert.equal((await node.api("GET", "/a/license/stats")).status, 401);
	});

	it("counts users, workspaces and stored bytes from the store", async () => {
		const before = await node.api("GET", "/a/license/stats", undefined, node.admin);
		assert.equal(before.status, 200, before.text);
		assert.equal(before.body.ActiveUsers, "3");
		assert.equal(before.body.ActivePeers, "1");
		const f = before.body.License.Features;
		assert.equal(f.Users, "3");
		assert.equal(f.License, "AGPL-3.0-or-later");
		const up = await fetch(`${node.url}/io/personal-files/stats-probe.bin`, { method: "PUT", body: new Uint8Array(1000), headers: { Authorization: `Bearer ${node.admin}` } });
		assert.ok(up.ok, `${up.status}`);
		assert.equal((await node.api("PUT", "/a/user/frank", { Password: "Some-Pass-1234" }, node.admin)).status, 200);
		const ws = await node.api("PUT", "/a/workspace/stats-ws", { Label: "Stats", Slug: "stats-ws", Scope: "ADMIN" }, node.admin);
		assert.equal(ws.status, 200, ws.text);
		// Counted a moment ago: kept (the whole store is not scanned on every poll) until ForceRefresh.
		assert.equal((await node.api("GET", "/a/license/stats", undefined, node.admin)).body.ActiveUsers, "3");
		const after = (await node.api("GET", "/a/license/stats?ForceRefresh=true", undefined, node.admin)).body;
		assert.equal(after.ActiveUsers, "4");
		assert.equal(Number(after.License.Features.Workspaces), Number(f.Workspaces) + 1);
		assert.equal(Number(after.License.Features.StorageUsedBytes), Number(f.StorageUsedBytes) + 1000);
		assert.equal(Number(after.License.Features.Files), Number(f.Files) + 1);
	});

	it("refuses a license key: Cellar is AGPL and needs none", async () => {
		const r = await node.api("PUT", "/a/license/update", { LicenseString: "ABC" }, node.admin);
		assert.equal(r.status, 400);
		assert.match(r.body.Title, /AGPL-3\.0.*no license key/);
	});

	it("answers in the caller's language: its lang attribute, else its request's Accept-Language", async () => {
		const fr = { "Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5" };
		assert.match((await node.api("POST", "/a/update", {}, node.admin, fr)).body.AvailableBinaries[0].Description, /Aucune source de mises à jour/);
		assert.match((await node.api("PATCH", "/a/update/99.0.0", {}, node.admin, fr)).body.Title, /ne peut pas remplacer son propre code/);
		assert.match((await node.api("GET", "/a/license/stats", undefined, node.admin, fr)).body.License.AccountName, /logiciel libre/);
		assert.match((await node.api("POST", "/a/update", {}, node.admin)).body.AvailableBinaries[0].Description, /No update source/);
		assert.equal((await node.api("PUT", "/a/user/fanny", { Password: "Some-Pass-1234", Attributes: { profile: "admin", lang: "fr" } }, node.admin)).status, 200);
		const fanny = await node.login("fanny", "Some-Pass-1234");
		assert.match((await node.api("POST", "/a/update", {}, fanny)).body.AvailableBinaries[0].Description, /Aucune source de mises à jour/);
		assert.match((await node.api("PUT", "/a/license/update", { LicenseString: "ABC" }, fanny)).body.Title, /AGPL-3\.0.*aucune clé de licence/);
		assert.match((await node.api("POST", "/a/update", {}, fanny, { "Accept-Language": "en" })).body.AvailableBinaries[0].Description, /Aucune source/, "her own setting first");
	});
});

describe("HTTP: update from a source", function () {
	this.timeout(60_000);
	let source: Server;
	let received: Record<string, string> | undefined;
	let answer: () => [number, string];

	before(async () => {
		source = createServer((req, res) => {
			let body = "";
			req.on("data", (c) => (body += c));
			req.on("end", () => {
				received = JSON.parse(body);
				const [status, text] = answer();
				res.writeHead(status, { "Content-Type": "application/json" }).end(text);
			});
		});
		await new Promise<void>((r) => source.listen(0, "127.0.0.1", r));
	});
	const node = useNode(() => ({ env: { UPDATE_URL: `http://127.0.0.1:${(source.address() as AddressInfo).port}/update` } }));
	after(() => {
		source?.close();
	});

	it("lists the newer versions the source offers, newest first, and none older", async () => {
		answer = () => [200, JSON.stringify({ Channel: "stable", AvailableBinaries: [{ Version: "0.0.1", PackageName: "cellar" }, { Version: "99.1.0", PackageName: "cellar", Label: "Next", BinarySize: 123, Status: "Released" }, { Version: "99.2.0", PackageName: "cellar" }, { Version: "nonsense" }] })];
		const admin = await node.login("admin", node.adminPassword);
		const r = await node.api("POST", "/a/update", { Channel: "stable" }, admin);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body.AvailableBinaries.map((p: { Version: string }) => p.Version), ["99.2.0", "99.1.0"]);
		assert.equal(r.body.AvailableBinaries[1].BinarySize, "123");
		assert.equal(received?.CurrentVersion, current);
		assert.equal(received?.PackageName, "cellar");
	});

	it("says when the source fails, with the running version", async () => {
		answer = () => [500, "oops"];
		const admin = await node.login("admin", node.adminPassword);
		const r = await node.api("POST", "/a/update", {}, admin);
		assert.equal(r.status, 200);
		assert.equal(r.body.AvailableBinaries[0].Version, current);
		assert.match(r.body.AvailableBinaries[0].Description, /could not be reached.*HTTP 500/);
	});
});
