import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: frontend boot", function () {
	this.timeout(30_000);
	const node = useNode();

	before(async () => {
		const ready = await node.broker.call<{ Installed: boolean; LastError?: string }, object>("install.ready", { timeout: 15_000 }, { timeout: 20_000 });
		assert.equal(ready.Installed, true, ready.LastError);
	});

	it("serves bootconf to anonymous callers as JSON", async () => {
		const r = await node.api("GET", "/a/frontend/bootconf");
		assert.equal(r.status, 200, r.text);
		assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
		assert.equal(r.body.ENDPOINT_REST_API, "/a");
		assert.equal(r.body.customWording.title, "Cellar");
		assert.equal(r.body.backend.PackageLabel, "Cellar");
		assert.match(r.body.ajxpVersion, /^[0-9a-f]{32}$/);
	});

	it("shows the real version to a logged user", async () => {
		const r = await node.api("GET", "/a/frontend/bootconf", undefined, node.admin);
		assert.equal(r.status, 200);
		assert.match(r.body.ajxpVersion, /^\d+\.\d+\.\d+/);
	});

	it("serves an anonymous state without a user", async () => {
		const r = await node.api("GET", "/a/frontend/state");
		assert.equal(r.status, 200, r.text);
		assert.match(r.headers.get("content-type") ?? "", /^text\/xml/);
		assert.ok(r.text.includes("<pydio_registry>"));
		assert.ok(!r.text.includes("<user"));
	});

	it("lists common-files read-write in the admin's state", async () => {
		const r = await node.api("GET", "/a/frontend/state", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.ok(r.text.includes('<user id="admin">'), r.text);
		assert.match(r.text, /<repo id="[^"]+" access_type="gateway" repositorySlug="common-files" acl="rw"/);
		assert.ok(r.text.includes('<special_rights is_admin="1"/>'));
		const ws = await node.api("GET", "/a/frontend/state?ws=common-files", undefined, node.admin);
		const id = /<repo id="([^"]+)" access_type="gateway" repositorySlug="common-files"/.exec(ws.text)?.[1];
		assert.ok(ws.text.includes(`<active_repo id="${id}"`));
	});

	it("refuses a malformed ws parameter", async () => {
		const r = await node.api("GET", "/a/frontend/state?ws=..%2Fx", undefined, node.admin);
		assert.equal(r.status, 400, r.text);
	});

	it("lists the login connectors and the auth state anonymously", async () => {
		const c = await node.api("GET", "/a/frontend/login/connectors");
		assert.equal(c.status, 200, c.text);
		assert.deepEqual(c.body, { Connectors: [{ Id: "pydio", Name: "Cellar", Type: "pydio" }] });
		const s = await node.api("GET", "/a/frontend/auth/state");
		assert.equal(s.status, 200, s.text);
		assert.equal(s.body.Logged, false);
		const l = await node.api("GET", "/a/frontend/auth/state", undefined, node.admin);
		assert.equal(l.body.Login, "admin");
	});
});
