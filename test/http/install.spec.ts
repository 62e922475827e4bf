import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: install", function () {
	this.timeout(30_000);
	const node = useNode();

	before(async () => {
		const ready = await node.broker.call<{ Installed: boolean; LastError?: string }, object>("install.ready", { timeout: 15_000 }, { timeout: 20_000 });
		assert.equal(ready.Installed, true, ready.LastError);
	});

	it("refuses POST /a/install once installed, whoever asks", async () => {
		const anon = await node.api("POST", "/a/install", { config: { frontendLogin: "evil", frontendPassword: "Evil-Password-1" } });
		assert.equal(anon.status, 409, anon.text);
		assert.equal(anon.body.Title, "Already installed");
		const asAdmin = await node.api("POST", "/a/install", { config: {} }, node.admin);
		assert.equal(asAdmin.status, 409);
		// The evil login was not created.
		assert.notEqual((await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "evil", password: "Evil-Password-1" } })).status, 200);
	});

	it("describes the server without secrets", async () => {
		const r = await node.api("GET", "/a/install");
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.config.frontendApplicationTitle, "Cellar");
		assert.equal(r.body.config.dsType, "LOCAL");
		assert.equal(r.body.config.dbConnectionType, "embedded");
		assert.equal(r.body.config.frontendLogin, undefined);
		assert.ok(!r.text.includes(node.adminPassword));
		const a = await node.api("GET", "/a/install", undefined, node.admin);
		assert.equal(a.body.config.frontendLogin, "admin");
		assert.equal(a.body.config.dsFolder, node.dataDir);
	});

	it("runs checks for admins only once installed", async () => {
		assert.equal((await node.api("POST", "/a/install/check", { Name: "DATA_DIR" })).status, 409);
		const r = await node.api("POST", "/a/install/check", { Name: "DATA_DIR" }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Result.Name, "DATA_DIR");
		assert.equal(r.body.Result.Success, true);
		const db = await node.api("POST", "/a/install/check", { Name: "DB" }, node.admin);
		assert.equal(db.body.Result.Success, true, db.text);
		assert.equal((await node.api("POST", "/a/install/check", { Name: "S3_KEYS" }, node.admin)).status, 400);
		assert.equal((await node.api("POST", "/a/install/check", { Name: "DB", Nope: 1 }, node.admin)).status, 400);
	});

	it("serves the licence and the set-up events", async () => {
		const a = await node.api("GET", "/a/install/agreement");
		assert.equal(a.status, 200);
		assert.match(a.body.Text, /GNU Affero General Public License/);
		const e = await node.api("GET", "/a/install/events");
		assert.equal(e.status, 200);
		assert.deepEqual(e.body, { Success: true });
	});
});
