// The enterprise audit of shares: who shared what with whom (cells and links by node, their owner, readers and
// writers, links past their end or limit flagged), filters, administrators only.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";

describe("HTTP: audit of shares (GET /a/audit/data/reports, POST /a/audit/data/shares)", function () {
	this.timeout(60_000);
	const node = useNode();
	let alice: string;
	let aliceUuid: string;
	let bobUuid: string;
	let folder: string;

	before(async () => {
		for (const u of ["alice", "bob"]) {
			const r = await node.api("PUT", `/a/user/${u}`, { Password: `${u}-Pass-12345`, Attributes: { profile: "standard" } }, node.admin);
			if (u === "alice") aliceUuid = r.body.Uuid;
			else bobUuid = r.body.Uuid;
		}
		alice = await node.login("alice", "alice-Pass-12345");
		await fetch(`${node.url}/io/personal-files/shared/a.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: "a" });
		folder = (await node.api("GET", "/a/tree/stat/personal-files%2Fshared", undefined, alice)).body.Node.Uuid;
		const cell = await node.api("PUT", "/a/share/cell", { Room: { Label: "Audited", RootNodes: [{ Uuid: folder }], ACLs: { [bobUuid]: { RoleId: bobUuid, Actions: [{ Name: "read" }] } } } }, alice);
		assert.equal(cell.status, 200, cell.text);
		const link = await node.api("PUT", "/a/share/link", { ShareLink: { Label: "Old link", RootNodes: [{ Uuid: folder }], AccessEnd: String(Math.floor(Date.now() / 1000) + 3600) } }, alice);
		assert.equal(link.status, 200, link.text);
		const past = await node.api("PUT", "/a/share/link", { ShareLink: { Uuid: link.body.Uuid, Label: "Old link", AccessEnd: String(Math.floor(Date.now() / 1000) - 10) } }, alice);
		assert.equal(past.status, 200, past.text);
	});

	it("lists the shared node with its cell and link, owner and readers; the expired link is flagged", async () => {
		const r = await node.api("POST", "/a/audit/data/shares", { ShareType: "ANY" }, node.admin);
		assert.equal(r.status, 200, r.text);
		const res = r.body.Resources.find((x: { Node?: { Uuid: string } }) => x.Node?.Uuid === folder);
		assert.ok(res, r.text);
		const cell = res.Workspaces.find((w: { Workspace: { Scope: string } }) => w.Workspace.Scope === "ROOM");
		const link = res.Workspaces.find((w: { Workspace: { Scope: string } }) => w.Workspace.Scope === "LINK");
		assert.equal(cell.Workspace.Label, "Audited");
		assert.equal(cell.OwnerUser.Login, "alice");
		assert.ok(cell.RolesRead.some((role: { Uuid: string }) => role.Uuid === bobUuid));
		assert.equal(cell.UsersReadCount, 2);
		assert.equal(link.BrokenLink, true);
		assert.equal(r.body.Facets.CELL, 1);
		assert.equal(r.body.Facets.LINK, 1);
	});

	it("filters by type and owner; the report date is now; non-admins get 403", async () => {
		const links = await node.api("POST", "/a/audit/data/shares", { ShareType: "LINK" }, node.admin);
		assert.equal(links.status, 200, links.text);
		assert.ok(links.body.Resources.every((x: { Workspaces: { Workspace: { Scope: string } }[] }) => x.Workspaces.every((w) => w.Workspace.Scope === "LINK")));
		const none = await node.api("POST", "/a/audit/data/shares", { ShareType: "CELL", OwnerUUID: bobUuid }, node.admin);
		assert.equal(none.body.Total ?? 0, 0);
		const mine = await node.api("POST", "/a/audit/data/shares", { ShareType: "CELL", OwnerUUID: aliceUuid }, node.admin);
		assert.equal(mine.body.Total, 1);
		const reports = await node.api("GET", "/a/audit/data/reports", undefined, node.admin);
		assert.equal(reports.status, 200);
		assert.ok(Math.abs(reports.body.ReportDates[0] - Date.now() / 1000) < 60);
		assert.equal((await node.api("POST", "/a/audit/data/shares", {}, alice)).status, 403);
		assert.equal((await node.api("GET", "/a/audit/data/reports", undefined, alice)).status, 403);
		assert.equal((await node.api("POST", "/a/audit/data/shares", { ShareType: "NOPE" }, node.admin)).status, 400);
	});
});
