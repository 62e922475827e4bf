// The configuration tree through the real gateway: PUT/GET /a/config/{FullPath} (admins only, frontend/ and
// services/ roots, validated known paths, subtrees), the log level applied on the node without a restart, the
// sites and the scheduler's job actions.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

describe("HTTP: configuration tree, sites, scheduler actions", function () {
	this.timeout(60_000);
	const node = useNode();
	let user: string;

	before(async () => {
		user = await addUser(node, node.admin, "carla", "Carla-Pass-12345");
	});

	const put = (path: string, data: unknown, token = node.admin) => node.api("PUT", `/a/config/${path}`, { Data: JSON.stringify(data) }, token);
	const get = async (path: string, token = node.admin) => {
		const r = await node.api("GET", `/a/config/${path}`, undefined, token);
		return { status: r.status, body: r.body, data: r.body?.Data === undefined ? undefined : JSON.parse(r.body.Data) };
	};

	it("stores a subtree, reads it back whole and by sub-path, and replaces it atomically", async () => {
		const r = await put("frontend/plugin/core.pydio", { APPLICATION_TITLE: "My Cellar", DEFAULT_LANGUAGE: "fr" });
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.FullPath, "frontend/plugin/core.pydio");
		assert.deepEqual((await get("frontend/plugin/core.pydio")).data, { APPLICATION_TITLE: "My Cellar", DEFAULT_LANGUAGE: "fr" });
		assert.equal((await get("frontend/plugin/core.pydio/APPLICATION_TITLE")).data, "My Cellar");
		assert.deepEqual((await get("frontend/plugin")).data, { "core.pydio": { APPLICATION_TITLE: "My Cellar", DEFAULT_LANGUAGE: "fr" } });
		// A second PUT replaces the subtree: keys it does not name are gone.
		assert.equal((await put("frontend/plugin/core.pydio", { APPLICATION_TITLE: "Other" })).status, 200);
		assert.deepEqual((await get("frontend/plugin/core.pydio")).data, { APPLICATION_TITLE: "Other" });
		// A leaf written below a known path is checked against the object it lands in.
		assert.equal((await put("frontend/plugin/core.pydio/DEFAULT_LANGUAGE", "de")).status, 200);
		assert.deepEqual((await get("frontend/plugin/core.pydio")).data, { APPLICATION_TITLE: "Other", DEFAULT_LANGUAGE: "de" });
		const none = await get("frontend/nothing/here");
		assert.equal(none.status, 200);
		assert.equal(none.data, undefined);
	});

	it("validates known paths and refuses writes outside frontend/ and services/", async () => {
		const bad = await put("frontend/plugin/core.pydio", { APPLICATION_TITLE: 42 });
		assert.equal(bad.status, 400, bad.text);
		assert.match(bad.body.Title, /APPLICATION_TITLE/);
		assert.equal((await put("frontend/plugin/core.pydio/APPLICATION_TITLE", { nested: true })).status, 400);
		assert.deepEqual((await get("frontend/plugin/core.pydio")).data, { APPLICATION_TITLE: "Other", DEFAULT_LANGUAGE: "de" }, "a refused write changes nothing");
		const level = await put("services/config", { logLevel: "loud" });
		assert.equal(level.status, 400);
		assert.match(level.body.Title, /logLevel/);
		assert.equal((await put("databases/main", { dsn: "x" })).status, 401);
		assert.equal((await get("databases/main")).status, 404);
		const notJson = await node.api("PUT", "/a/config/frontend/x", { Data: "{nope" }, node.admin);
		assert.equal(notJson.status, 400);
		assert.equal((await node.api("PUT", "/a/config/frontend/x%20y", { Data: "{}" }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/config/frontend/x", { Data: JSON.stringify({ "a/b": 1 }) }, node.admin)).status, 400);
		// Unknown paths take any JSON value.
		assert.equal((await put("frontend/plugin/custom.thing", { a: [1, 2], b: { c: null } })).status, 200);
		assert.deepEqual((await get("frontend/plugin/custom.thing")).data, { a: [1, 2], b: { c: null } });
	});

	it("is for administrators: 403 for a logged-in user, 401 without credentials", async () => {
		assert.equal((await get("frontend/plugin/core.pydio", user)).status, 403);
		assert.equal((await put("frontend/plugin/core.pydio", { APPLICATION_TITLE: "x" }, user)).status, 403);
		assert.equal((await node.api("GET", "/a/config/frontend/plugin/core.pydio")).status, 401);
		assert.equal((await node.api("GET", "/a/config/sites", undefined, user)).status, 403);
		assert.equal((await node.api("GET", "/a/config/scheduler/actions", undefined, user)).status, 403);
	});

	it("does not shadow the other /config routes", async () => {
		const r = await node.api("GET", "/a/config/versioning", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.ok(Array.isArray(r.body.Policies));
		const ds = await node.api("GET", "/a/config/datasource", undefined, node.admin);
		assert.equal(ds.status, 200);
		assert.ok(ds.body.DataSources);
	});

	it("applies the log level on the node at once, and goes back to LOG_LEVEL when it is removed", async () => {
		const level = async () => {
			const r = await node.api("POST", "/a/config/registry", { options: { types: ["NODE"] } }, node.admin);
			assert.equal(r.status, 200, r.text);
			return r.body.items[0].metadata.logLevel as string;
		};
		assert.equal(await level(), "silent");
		assert.equal((await put("services/config", { logLevel: "debug" })).status, 200);
		for (let i = 0; i < 20 && (await level()) !== "debug"; i++) await new Promise((r) => setTimeout(r, 50));
		assert.equal(await level(), "debug");
		assert.equal((await put("services/config", {})).status, 200);
		for (let i = 0; i < 20 && (await level()) !== "silent"; i++) await new Promise((r) => setTimeout(r, 50));
		assert.equal(await level(), "silent");
	});

	it("lists the sites the gateways bind", async () => {
		const all = await node.api("GET", "/a/config/sites", undefined, node.admin);
		assert.equal(all.status, 200, all.text);
		assert.ok(all.body.Sites.length >= 1);
		assert.match(all.body.Sites[0].Binds[0], /^127\.0\.0\.1:\d+$/);
		assert.equal((await node.api("GET", "/a/config/sites/127.0.0.1", undefined, node.admin)).body.Sites.length, all.body.Sites.length);
		assert.equal((await node.api("GET", "/a/config/sites/nowhere.example", undefined, node.admin)).body.Sites, undefined);
	});

	it("lists the job actions with their forms", async () => {
		const r = await node.api("GET", "/a/config/scheduler/actions", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(Object.keys(r.body.Actions).sort(), ["compress", "copy", "datasource-resync", "delete", "extract", "move"]);
		assert.equal(r.body.Actions.compress.Name, "compress");
		assert.equal(r.body.Actions.compress.HasForm, true);
		const form = await node.api("GET", "/a/config/scheduler/actions/compress", undefined, node.admin);
		assert.equal(form.status, 200);
		assert.match(form.headers.get("content-type") ?? "", /xml/);
		assert.match(form.text, /<param name="archiveName" type="string"/);
		assert.match(form.text, /choices="zip\|zip,tar\|tar,tar.gz\|tar.gz"/);
		assert.equal((await node.api("GET", "/a/config/scheduler/actions/nope", undefined, node.admin)).status, 404);
	});
});
