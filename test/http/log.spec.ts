// The system log and the audit trail through the gateway: a node's log lines (shipped by its LogShipper) are
// queryable by level, logger, node, text and time; a failed login shows in the audit log with the client's
// address; exports stream the whole result as CSV or JSON with a file name; chart data counts audit events per
// time bucket; only administrators may read any of it; a query the server does not understand is a 400.
import assert from "node:assert/strict";
import type { Service } from "moleculer";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { until as poll } from "../helpers/poll";
import { LogShipper } from "../../lib/logs/shipper";
import type { ShareChange } from "../../lib/contracts";

const until = <T>(what: string, fn: () => Promise<T | undefined>, ms = 8000) => poll(what, fn, ms, 50);

describe("Logs and audit (/a/log)", function () {
	this.timeout(30_000);
	const node = useNode({ logger: new LogShipper({ level: "info", bufferSize: 1000, batchSize: 50, flushMs: 50 }) });
	let bob: string;
	const marker = `marker${Date.now()}`;

	before(async () => {
		bob = await addUser(node, node.admin, "bob", "Bob-Pass-12345");
	});

	const sys = (Query: string, extra: Record<string, unknown> = {}) => node.api("POST", "/a/log/sys", { Query, ...extra }, node.admin);

	it("ships a node's log lines to the log service, queryable by level, logger, node, text and time", async () => {
		const users = node.broker.getLocalService("users") as Service;
		const before = Math.floor(Date.now() / 1000);
		users.logger.error(`${marker} disk exploded`);
		users.logger.info(`${marker} all is well`);
		const found = await until("the shipped lines", async () => {
			const r = await sys(`+Msg:${marker}*`);
			assert.equal(r.status, 200, r.text);
			return r.body.Logs?.length === 2 ? r.body.Logs : undefined;
		});
		assert.deepEqual(found.map((l: { Msg: string }) => l.Msg).sort(), [`${marker} all is well`, `${marker} disk exploded`]);
		const err = found.find((l: { Level: string }) => l.Level === "error");
		assert.equal(err.Logger, "users");
		assert.equal(typeof err.Ts, "number");
		assert.ok(err.Ts >= before && err.Ts <= Math.floor(Date.now() / 1000));
		assert.equal(JSON.parse(err.JsonZaps).Node, node.broker.nodeID);

		const byLevel = await sys(`+Level:error +Msg:${marker}*`);
		assert.deepEqual(byLevel.body.Logs.map((l: { Msg: string }) => l.Msg), [`${marker} disk exploded`]);
		assert.equal((await sys(`+Logger:users +Msg:"${marker} disk"`)).body.Logs.length, 1);
		// Without a "+", a clause only counts when no clause is required (Bleve's should).
		assert.equal((await sys(`"${marker} disk" "${marker} all"`)).body.Logs.length, 2);
		assert.equal((await sys(`+Node:${node.broker.nodeID} +Msg:${marker}*`)).body.Logs.length, 2);
		assert.equal((await sys(`+Node:some-other-node +Msg:${marker}*`)).body.Logs?.length ?? 0, 0);
		assert.equal((await sys(`+Ts:>=${before} +Msg:${marker}*`)).body.Logs.length, 2);
		assert.equal((await sys(`+Ts:<${before} +Msg:${marker}*`)).body.Logs?.length ?? 0, 0);
		assert.equal((await sys(`-Level:error +Msg:${marker}*`)).body.Logs.length, 1);
		// Paged: Size 1, pages 0 and 1, newest first.
		const p0 = await sys(`+Msg:${marker}*`, { Size: 1, Page: 0 });
		const p1 = await sys(`+Msg:${marker}*`, { Size: 1, Page: 1 });
		assert.equal(p0.body.Logs.length, 1);
		assert.equal(p1.body.Logs.length, 1);
		assert.notEqual(p0.body.Logs[0].Msg, p1.body.Logs[0].Msg);
	});

	it("ships at the level the configuration tree sets, and back at its own when it is removed", async () => {
		const users = node.broker.getLocalService("users") as Service;
		const setLevel = async (data: Record<string, string>, level: string) => {
			assert.equal((await node.api("PUT", "/a/config/services/config", { Data: JSON.stringify(data) }, node.admin)).status, 200);
			// Applied on config.changed: the node's registry entry tells when.
			await until(`log level ${level}`, async () => {
				const r = await node.api("POST", "/a/config/registry", { options: { types: ["NODE"] } }, node.admin);
				return r.body.items[0].metadata.logLevel === level ? true : undefined;
			});
		};
		const tag = `level${Date.now()}`;
		users.logger.debug(`${tag} 1 hidden at info`);
		await setLevel({ logLevel: "debug" }, "debug");
		users.logger.debug(`${tag} 2 shipped at debug`);
		await setLevel({}, "silent");
		users.logger.debug(`${tag} 3 hidden again`);
		users.logger.info(`${tag} 4 info`);
		const found = await until("the shipped lines", async () => {
			const r = await sys(`+Msg:${tag}*`);
			return r.body.Logs?.some((l: { Msg: string }) => l.Msg.includes(" 4 ")) ? r.body.Logs : undefined;
		});
		assert.deepEqual(found.map((l: { Msg: string }) => l.Msg).sort(), [`${tag} 2 shipped at debug`, `${tag} 4 info`]);
	});

	it("records a failed login in the audit trail, with the login and the client's address", async () => {
		const r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "mallory", password: "wrong-password-1" } }, undefined, { "User-Agent": "audit-test/1.0" });
		assert.equal(r.status, 401);
		const entry = await until("the login.failed entry", async () => {
			const a = await node.api("POST", "/a/log/audit", { Query: "+MsgId:login.failed +UserName:mallory" }, node.admin);
			assert.equal(a.status, 200, a.text);
			return a.body.Logs?.[0];
		});
		assert.equal(entry.UserName, "mallory");
		assert.match(entry.RemoteAddress, /127\.0\.0\.1/);
		assert.equal(entry.UserAgent, "audit-test/1.0");
		assert.match(entry.Msg, /mallory failed to log in from .*127\.0\.0\.1/);
		// Successful logins are there too (bob's, in before()).
		const ok = await node.api("POST", "/a/log/audit", { Query: "+MsgId:login.succeeded +UserName:bob" }, node.admin);
		assert.ok(ok.body.Logs.length >= 1);
	});

	it("keeps who changed roles, users, permissions and files, from which address", async () => {
		assert.equal((await node.api("PUT", "/a/role/audit-team", { Label: "Audit team", IsTeam: true }, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/acl", { RoleID: "audit-team", WorkspaceID: "audit-ws", Action: { Name: "read", Value: "1" } }, node.admin)).status, 200);
		assert.equal((await node.api("DELETE", "/a/role/audit-team", undefined, node.admin)).status, 200);
		assert.equal((await node.api("PUT", "/a/user/carol", { Password: "Carol-Pass-12345", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		assert.equal((await node.api("DELETE", "/a/user/carol", undefined, node.admin)).status, 200);
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/audit-doomed", Type: "COLLECTION" }] }, node.admin)).status, 200);
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/audit-doomed" }] }, node.admin)).status, 200);
		const want = ["role.update", "acl.update", "role.delete", "user.delete", "node.delete"];
		const got = await until("the audit entries", async () => {
			const r = await node.api("POST", "/a/log/audit", { Query: "+UserName:admin -MsgId:login.*" }, node.admin);
			const ids = (r.body.Logs ?? []).map((l: { MsgId: string }) => l.MsgId);
			return want.every((w) => ids.includes(w)) ? r.body.Logs : undefined;
		});
		const byId = (id: string) => got.find((l: { MsgId: string }) => l.MsgId === id);
		assert.match(byId("role.delete").Msg, /^admin deleted role audit-team from .*127\.0\.0\.1/);
		assert.match(byId("user.delete").Msg, /deleted user carol/);
		assert.equal(byId("node.delete").NodePath, "common-files/audit-doomed");
		assert.equal(byId("acl.update").WsUuid, "audit-ws");
		for (const l of got) assert.match(l.RemoteAddress, /127\.0\.0\.1/);
		// An administrator obtaining a token that acts as bob (the tokens service's audit.log).
		assert.equal((await node.api("POST", "/a/auth/token/impersonate", { UserLogin: "bob" }, node.admin)).status, 200);
		const imp = await until("the impersonation entry", async () => (await node.api("POST", "/a/log/audit", { Query: "+MsgId:token.impersonate" }, node.admin)).body.Logs?.[0]);
		assert.match(imp.Msg, /^admin obtained an impersonation token for bob from .*127\.0\.0\.1/);
		assert.equal(imp.Logger, "tokens");
		assert.equal(JSON.parse(imp.JsonZaps).Target, "bob");
		// Share changes (broadcast by the share service to every instance) are kept once, with the caller.
		const meta = { user: { Login: "admin", Uuid: "admin-uuid" }, ip: "192.0.2.7" };
		await node.broker.broadcast("share.changed", { Uuid: "cell-1", Scope: "ROOM", Action: "create", OwnerUuid: "admin-uuid" } satisfies ShareChange, { meta });
		const share = await until("the share entry", async () => (await node.api("POST", "/a/log/audit", { Query: "+MsgId:share.changed +WsUuid:cell-1" }, node.admin)).body.Logs?.[0]);
		assert.equal(share.Msg, "admin changed share cell cell-1 from 192.0.2.7: create");
		// A real cell, shared through the share service: its creation is in the trail with who and from where.
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/audit-shared", Type: "COLLECTION" }] }, node.admin)).status, 200);
		const folder = (await node.api("GET", "/a/tree/stat/common-files%2Faudit-shared", undefined, node.admin)).body.Node.Uuid;
		const cell = await node.api("PUT", "/a/share/cell", { Room: { Label: "Audited cell", RootNodes: [{ Uuid: folder }], ACLs: {} } }, node.admin);
		assert.equal(cell.status, 200, cell.text);
		const real = await until("the cell's entry", async () => (await node.api("POST", "/a/log/audit", { Query: `+MsgId:share.changed +WsUuid:${cell.body.Uuid}` }, node.admin)).body.Logs?.[0]);
		assert.match(real.Msg, /^admin changed share cell .* from .*127\.0\.0\.1: create/);
		// The chart counts them by event id.
		const chart = await node.api("POST", "/a/log/audit/chartdata", { MsgId: "user.delete", TimeRangeType: "H" }, node.admin);
		assert.ok(chart.body.Results[11].Count >= 1);
	});

	it("exports the whole result as CSV or JSON, streamed with a file name", async () => {
		const csv = await node.api("POST", "/a/log/sys/export", { Query: `+Msg:${marker}*`, Format: "CSV", Size: 1 }, node.admin);
		assert.equal(csv.status, 200);
		assert.match(csv.headers.get("content-type") ?? "", /^text\/csv/);
		assert.match(csv.headers.get("content-disposition") ?? "", /^attachment; filename="system-log-.*\.csv"$/);
		const lines = csv.text.trim().split("\r\n");
		assert.equal(lines[0].split(",")[0], "Date");
		assert.equal(lines.length, 3, "header and both lines: Size does not page an export");
		assert.ok(lines.some((l) => l.includes(`${marker} disk exploded`)));

		const json = await node.api("POST", "/a/log/audit/export", { Query: "+MsgId:login.failed", Format: "JSON" }, node.admin);
		assert.equal(json.status, 200);
		assert.match(json.headers.get("content-type") ?? "", /^application\/json/);
		assert.match(json.headers.get("content-disposition") ?? "", /filename="audit-log-.*\.json"/);
		assert.ok(json.body.Logs.some((l: { UserName?: string }) => l.UserName === "mallory"));

		const xlsx = await node.api("POST", "/a/log/sys/export", { Format: "XLSX" }, node.admin);
		assert.equal(xlsx.status, 400);
		assert.match(xlsx.body.Title, /XLSX/);
	});

	it("counts audit events per time bucket, with links to the neighbouring ranges", async () => {
		const now = Math.floor(Date.now() / 1000);
		const r = await node.api("POST", "/a/log/audit/chartdata", { MsgId: "login.failed", TimeRangeType: "D", RefTime: now }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Results.length, 24);
		const last = r.body.Results[23];
		assert.ok(last.Start <= now && now < last.End);
		assert.ok(last.Count >= 1, "the failed login is in the current hour");
		assert.ok(last.Relevance >= 1 && last.Relevance <= 100);
		assert.equal(r.body.Results[0].Count ?? 0, 0);
		assert.deepEqual(r.body.Links.map((l: { Rel: string }) => l.Rel), ["FIRST", "PREV", "LAST"]);
		// A day back: nothing then, and a NEXT link.
		const prev = r.body.Links[1].RefTime;
		const back = await node.api("POST", "/a/log/audit/chartdata", { MsgId: "login.failed", TimeRangeType: "D", RefTime: prev }, node.admin);
		assert.ok(back.body.Results.every((p: { Count?: number }) => !p.Count));
		assert.ok(back.body.Links.some((l: { Rel: string }) => l.Rel === "NEXT"));
		for (const t of ["H", "W", "M", "Y"]) {
			const x = await node.api("POST", "/a/log/audit/chartdata", { TimeRangeType: t }, node.admin);
			assert.equal(x.status, 200, t);
			assert.equal(x.body.Results.length, { H: 12, W: 7, M: 30, Y: 12 }[t]);
		}
		assert.equal((await node.api("POST", "/a/log/audit/chartdata", { TimeRangeType: "Q" }, node.admin)).status, 400);
	});

	it("answers 403 to a logged-in user who is not an administrator, 401 without credentials", async () => {
		for (const path of ["/a/log/sys", "/a/log/sys/export", "/a/log/audit", "/a/log/audit/export", "/a/log/audit/chartdata"]) {
			assert.equal((await node.api("POST", path, {}, bob)).status, 403, path);
			assert.equal((await node.api("POST", path, {})).status, 401, path);
		}
	});

	it("answers 400 to a query it does not understand, saying why", async () => {
		for (const q of ["+Colour:red", "+Ts:>yesterday", "+Level:>error", "(a OR b)", '+Msg:"open', "Msg:foo~2"]) {
			const r = await sys(q);
			assert.equal(r.status, 400, `${q}: ${r.text}`);
			assert.ok(r.body.Title, q);
		}
		assert.equal((await sys("+Colour:red")).body.Title.includes("Unsupported field Colour"), true);
	});
});
