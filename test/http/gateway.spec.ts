import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: the gateway", function () {
	this.timeout(30_000);
	const node = useNode();

	before(async () => {
		assert.equal((await node.api("PUT", "/a/user/gina", { Password: "Gina-Pass-1234", Attributes: { profile: "standard", displayName: "Gina" } }, node.admin)).status, 200);
	});

	it("answers unknown routes with a 404 in Cells' error shape", async () => {
		const r = await node.api("GET", "/a/no/such/route", undefined, node.admin);
		assert.equal(r.status, 404);
		assert.equal(r.body.Code, "route.not.found");
		assert.ok(r.body.Title && r.body.Detail);
	});

	it("echoes X-Request-Id and answers CORS preflights", async () => {
		const r = await node.api("GET", "/a/frontend/bootconf", undefined, undefined, { "X-Request-Id": "req-123" });
		assert.equal(r.headers.get("x-request-id"), "req-123");
		const pre = await fetch(`${node.url}/a/user`, { method: "OPTIONS", headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST" } });
		assert.ok(pre.status < 300);
		assert.equal(pre.headers.get("access-control-allow-origin"), "*");
	});

	it("treats explicit nulls as absent and int64 fields travel as strings", async () => {
		const r = await node.api("POST", "/a/user", { Queries: null, Offset: null, Limit: "5", CountOnly: null }, node.admin);
		assert.equal(r.status, 200, r.text);
		const del = await node.api("PUT", "/a/user/tmp-user", { Password: "Tmp-Pass-12345" }, node.admin);
		assert.equal(del.status, 200);
		const gone = await node.api("DELETE", "/a/user/tmp-user", undefined, node.admin);
		assert.deepEqual(gone.body, { Success: true, NumRows: "1" });
	});

	it("refuses malformed and oversized bodies with 400 and 413", async () => {
		assert.equal((await node.api("POST", "/a/user", "{oops", node.admin)).status, 400);
		assert.equal((await node.api("POST", "/a/user", "[1,2]", node.admin)).status, 400);
		assert.equal((await node.api("POST", "/a/user", { Queries: [{ Login: "x".repeat(4 * 1024 * 1024) }] }, node.admin)).status, 413);
		assert.equal((await node.api("POST", "/a/user", { Offset: "-x" }, node.admin)).status, 400);
	});

	it("never serves a cached answer after the data or the credential changed", async () => {
		const first = await node.api("GET", "/a/user/gina", undefined, node.admin);
		const again = await node.api("GET", "/a/user/gina", undefined, node.admin);
		assert.deepEqual(again.body, first.body);
		await node.api("PUT", "/a/user/gina", { Uuid: first.body.Uuid, Attributes: { ...first.body.Attributes, displayName: "Gina Renamed" } }, node.admin);
		const after = await node.api("GET", "/a/user/gina", undefined, node.admin);
		assert.equal(after.body.Attributes.displayName, "Gina Renamed");

		const gina = await node.login("gina", "Gina-Pass-1234");
		const search = { Queries: [{ Login: "gin*" }] };
		assert.equal((await node.api("POST", "/a/user", search, gina)).status, 200);
		assert.equal((await node.api("POST", "/a/user", search, gina)).status, 200);
		assert.equal((await node.api("POST", "/a/auth/token/revoke", { TokenId: gina }, gina)).status, 200);
		assert.equal((await node.api("POST", "/a/user", search, gina)).status, 401);
	});

	it("checks the REST policies even for answers it has cached", async () => {
		const gina = await node.login("gina", "Gina-Pass-1234");
		assert.equal((await node.api("GET", "/a/frontend/state", undefined, gina)).status, 200);
		assert.equal((await node.api("POST", "/a/acl", {}, node.admin)).status, 200);
		assert.equal((await node.api("POST", "/a/acl", {}, node.admin)).status, 200);
		assert.equal((await node.api("POST", "/a/acl", {}, gina)).status, 403);
	});
});
