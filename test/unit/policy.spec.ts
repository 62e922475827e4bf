import assert from "node:assert/strict";
import { ServiceBroker } from "moleculer";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Identity } from "../../lib/auth/identity";
import type { PolicyGroup } from "../../lib/policy/defaults";
import type { Policy } from "../../lib/policy/engine";
import { AccessControl } from "../../lib/gateway/access";
import type { PoliciesRepo } from "../../lib/db/policies";
import type { IpState } from "../../lib/policy/ipban";

const SERVICE = join(__dirname, "..", "..", "services", "policy.service.ts");

const admin: Identity = { Uuid: "admin-uuid", Login: "admin", Profile: "admin", GroupPath: "/", Roles: [], TokenKind: "session", ExpiresAt: 0 };
const alice: Identity = { ...admin, Uuid: "alice-uuid", Login: "alice", Profile: "standard" };
const asAdmin = { meta: { user: admin } };

interface Snapshot {
	policies: Policy[];
	ipLists: Record<string, string[]>;
	bans: { IP: string; BanExpire: number }[];
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
	for (let i = 0; i < 200; i++) {
		const v = await fn();
		if (ok(v)) return v;
		await new Promise((r) => setTimeout(r, 10));
	}
	throw new Error(`timed out waiting for ${what}`);
}

describe("policy service", () => {
	let dataDir: string;
	let broker: ServiceBroker;
	let changes: unknown[];
	const saved: Record<string, string | undefined> = {};

	async function start() {
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.loadService(SERVICE);
		broker.createService({
			name: "spy",
			events: {
				"policy.changed"(ctx: { params: unknown }) {
					changes.push(ctx.params);
				},
			},
		});
		await broker.start();
	}

	before(() => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-policy-"));
		for (const k of ["DATA_DIR", "MONGO_URI", "IP_BAN_THRESHOLD", "IP_BAN_WINDOW", "IP_BAN_DURATION"]) saved[k] = process.env[k];
		process.env.DATA_DIR = dataDir;
		delete process.env.MONGO_URI;
		process.env.IP_BAN_THRESHOLD = "3";
		process.env.IP_BAN_WINDOW = "60";
		process.env.IP_BAN_DURATION = "600";
	});
	beforeEach(async () => {
		changes = [];
		await start();
	});
	afterEach(async () => {
		await broker.stop();
	});
	after(() => {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		rmSync(dataDir, { recursive: true, force: true });
	});

	const list = (filter?: string) => broker.call<{ PolicyGroups: PolicyGroup[]; Total: number }, { Filter?: string }>("policy.list", filter ? { Filter: filter } : {}, asAdmin);

	it("seeds Cells' default groups", async () => {
		const { PolicyGroups, Total } = await list();
		const uuids = PolicyGroups.map((g) => g.Uuid);
		for (const u of ["public-access", "public-access-install", "admin-access", "user-access", "oidc-actions-policies", "sample-acl-policy", "limited-period-access-acl-policy2", "no-access-after-acl-policy", "office-hours-access-acl-policy", "no-external-access-acl-policy"]) {
			assert.ok(uuids.includes(u), u);
		}
		assert.equal(Total, PolicyGroups.length);
		// Sorted: rest groups first.
		const rgs = PolicyGroups.map((g) => g.ResourceGroup);
		assert.deepEqual(rgs, [...rgs].sort((a, b) => ["rest", "acl", "oidc"].indexOf(a) - ["rest", "acl", "oidc"].indexOf(b)));
		const office = PolicyGroups.find((g) => g.Uuid === "office-hours-access-acl-policy")!;
		assert.equal(office.ResourceGroup, "acl");
		assert.equal(office.Policies[0].conditions?.clientTime.type, "OfficeHoursCondition");
		assert.ok(office.LastUpdated > 0);
		assert.equal((await list("resource_group:acl")).PolicyGroups.length, 5);
		assert.deepEqual((await list("uuid:admin-access")).PolicyGroups.map((g) => g.Uuid), ["admin-access"]);
	});

	it("is admin only", async () => {
		await assert.rejects(broker.call("policy.list", {}, { meta: { user: alice } }), { code: 403 });
		await assert.rejects(broker.call("policy.list", {}, { meta: { user: null } }), { code: 401 });
		await assert.rejects(broker.call("policy.listBans", {}, { meta: { user: alice } }), { code: 403 });
	});

	it("puts, updates and deletes a group, broadcasting policy.changed", async () => {
		const put = await broker.call<PolicyGroup, unknown>(
			"policy.put",
			{ Name: "Deny tree for bob", Policies: [{ subjects: ["user:bob"], resources: ["rest:/tree/<.+>"], actions: ["POST"], effect: "deny" }] },
			asAdmin,
		);
		assert.ok(put.Uuid);
		assert.equal(put.ResourceGroup, "rest");
		assert.ok(put.Policies[0].id);
		assert.ok(Math.abs(put.LastUpdated - Date.now() / 1000) < 5);
		await until(async () => changes.length, (n) => n > 0, "policy.changed");
		assert.deepEqual(changes.at(-1), { kind: "groups" });

		const updated = await broker.call<PolicyGroup, unknown>("policy.put", { ...put, Description: "changed" }, asAdmin);
		assert.equal(updated.Uuid, put.Uuid);
		const found = (await list(`uuid:${put.Uuid}`)).PolicyGroups;
		assert.equal(found.length, 1);
		assert.equal(found[0].Description, "changed");

		const del = await broker.call("policy.delete", { Uuid: put.Uuid }, asAdmin);
		assert.deepEqual(del, { Success: true, NumRows: 1 });
		assert.equal((await list(`uuid:${put.Uuid}`)).PolicyGroups.length, 0);
		await assert.rejects(broker.call("policy.delete", { Uuid: put.Uuid }, asAdmin), { code: 404 });
	});

	it("refuses to delete the administrators' group", async () => {
		await assert.rejects(broker.call("policy.delete", { Uuid: "admin-access" }, asAdmin), { code: 403 });
	});

	it("answers 400 on invalid groups", async () => {
		const p = { subjects: ["user:bob"], resources: ["rest:/x"], actions: ["GET"], effect: "allow" };
		const bad = async (group: Record<string, unknown>) => assert.rejects(broker.call("policy.put", group, asAdmin), (e: { code?: number }) => e.code === 400);
		await bad({ Policies: [{ ...p, effect: "unknown" }] });
		await bad({ Policies: [{ ...p, subjects: [] }] });
		await bad({ Policies: [{ ...p, actions: "GET" }] });
		await bad({ Policies: [{ ...p, conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"10.0.0.0/40"}' } } }] });
		await bad({ Policies: [{ ...p, conditions: { remoteAddress: { type: "GeoCondition", jsonOptions: "{}" } } }] });
		await bad({ Policies: [{ ...p, conditions: { t: { type: "WithinPeriodCondition", jsonOptions: "not json" } } }] });
		await bad({ Uuid: "a/b", Policies: [p] });
		await bad({ ResourceGroup: "nope", Policies: [p] });
	});

	it("refuses a REST group that would lock the calling admin out of the policy API", async () => {
		const lockout = { Name: "oops", Policies: [{ subjects: ["profile:admin"], resources: ["rest:/policy<.*>"], actions: ["PUT"], effect: "deny" }] };
		await assert.rejects(broker.call("policy.put", lockout, asAdmin), (e: { code?: number; message?: string }) => e.code === 400 && /lock yourself out/.test(e.message ?? ""));
		// Denied only from another network: fine from where the admin is.
		const elsewhere = {
			Name: "not from 10/8",
			Policies: [{ ...lockout.Policies[0], conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"10.0.0.0/8"}' } } }],
		};
		const ok = await broker.call<PolicyGroup, unknown>("policy.put", elsewhere, { meta: { user: admin, ip: "127.0.0.1" } });
		await assert.rejects(broker.call("policy.put", { ...elsewhere, Uuid: ok.Uuid }, { meta: { user: admin, ip: "10.1.2.3" } }), { code: 400 });
		await broker.call("policy.delete", { Uuid: ok.Uuid }, asAdmin);
		// Emptying the admins' group is refused too.
		await assert.rejects(broker.call("policy.put", { Uuid: "admin-access", Name: "x", Policies: [] }, asAdmin), { code: 400 });
		const adminGroup = (await list("uuid:admin-access")).PolicyGroups[0];
		await assert.rejects(broker.call("policy.put", { ...adminGroup, ResourceGroup: "acl" }, asAdmin), { code: 400 });
	});

	it("forgets address states that hold no ban and no recent failure", async () => {
		const svc = broker.getLocalService("policy") as unknown as { repo: PoliciesRepo; cleanupIpStates(): Promise<number> };
		broker.emit("auth.login.failed", { ip: "192.0.2.200", login: "x" });
		broker.emit("auth.login.failed", { ip: "192.0.2.201", login: "x" });
		await until(() => svc.repo.ipState("192.0.2.201"), (d) => !!d, "state");
		const old = await until(() => svc.repo.ipState("192.0.2.200"), (d) => !!d, "state");
		await svc.repo.saveIpState({ ...(old as IpState), Failures: [Date.now() - 3600_000] });
		assert.equal(await svc.cleanupIpStates(), 1);
		assert.equal(await svc.repo.ipState("192.0.2.200"), null);
		assert.ok(await svc.repo.ipState("192.0.2.201"));
	});

	it("snapshot: REST policies flattened, IP lists, bans", async () => {
		await broker.call("policy.put", { Uuid: "acl-only", ResourceGroup: "acl", Policies: [{ id: "acl-x", subjects: ["policy:x"], resources: ["acl"], actions: ["read"], effect: "allow" }] }, asAdmin);
		await broker.call("policy.updateIPs", { Name: "office", IPs: ["192.168.0.0/16"] }, asAdmin);
		const snap = await broker.call<Snapshot, unknown>("policy.snapshot", {});
		const ids = snap.policies.map((p) => p.id);
		assert.ok(ids.includes("admin-default-policy"));
		assert.ok(ids.includes("frontend-auth"));
		assert.ok(ids.includes("user-default-policy"));
		assert.ok(!ids.includes("acl-x"));
		assert.ok(!ids.includes("all-users-login"));
		assert.deepEqual(snap.ipLists.office, ["192.168.0.0/16"]);
		assert.ok(Array.isArray(snap.bans));
		await broker.call("policy.delete", { Uuid: "acl-only" }, asAdmin);
	});

	it("IP lists: stored, validated, unknown lists are empty", async () => {
		const stored = await broker.call("policy.updateIPs", { Name: "whitelist", IPs: ["10.9.0.0/16", " 10.8.0.1 "] }, asAdmin);
		assert.deepEqual(stored, { Name: "whitelist", IPs: ["10.9.0.0/16", "10.8.0.1"] });
		assert.deepEqual(await broker.call("policy.listIPs", { Name: "whitelist" }, asAdmin), stored);
		assert.deepEqual(await broker.call("policy.listIPs", { Name: "never-written" }, asAdmin), { Name: "never-written", IPs: [] });
		await assert.rejects(broker.call("policy.updateIPs", { Name: "x", IPs: ["10.0.0.1", "not-an-ip"] }, asAdmin), { code: 400 });
		await assert.rejects(broker.call("policy.updateIPs", { Name: "../x", IPs: [] }, asAdmin), { code: 400 });
		await assert.rejects(broker.call("policy.updateIPs", { Name: "blacklist", IPs: ["127.0.0.0/8"] }, { meta: { user: admin, ip: "127.0.0.1" } }), { code: 400 });
		await until(async () => changes, (c) => c.some((x) => (x as { kind: string }).kind === "iplists"), "iplists change");
	});

	it("bans an address after N failed logins, lists it, and unbans it", async () => {
		const ip = "203.0.113.9";
		for (let i = 0; i < 2; i++) broker.emit("auth.login.failed", { ip, login: "bob" });
		broker.emit("auth.login.failed", { ip: "not an ip", login: "bob" });
		const snapBefore = await until(() => broker.call<Snapshot, unknown>("policy.snapshot", {}), () => true, "snapshot");
		assert.ok(!snapBefore.bans.some((b) => b.IP === ip));
		broker.emit("auth.login.failed", { ip, login: "carol" });
		const snap = await until(() => broker.call<Snapshot, unknown>("policy.snapshot", {}), (s) => s.bans.some((b) => b.IP === ip), "ban");
		const ban = snap.bans.find((b) => b.IP === ip)!;
		assert.ok(Math.abs(ban.BanExpire - (Date.now() / 1000 + 600)) < 5);
		await until(async () => changes, (c) => c.some((x) => (x as { kind: string }).kind === "bans"), "bans change");

		const { Bans } = await broker.call<{ Bans: { IP: string; BanExpire: number; History: { IsSuccess: boolean; connectionTime: number; Details?: Record<string, string> }[] }[] }, unknown>("policy.listBans", {}, asAdmin);
		const listed = Bans.find((b) => b.IP === ip)!;
		assert.equal(listed.History.length, 3);
		assert.equal(listed.History[2].Details?.login, "carol");
		assert.equal(listed.History[0].IsSuccess, false);

		changes = [];
		assert.deepEqual(await broker.call("policy.unban", { IP: ip }, asAdmin), { Success: true });
		assert.ok(!(await broker.call<Snapshot, unknown>("policy.snapshot", {})).bans.some((b) => b.IP === ip));
		await until(async () => changes, (c) => c.some((x) => (x as { kind: string }).kind === "bans"), "unban change");
		// Failure history is gone too: two more failures do not ban again.
		broker.emit("auth.login.failed", { ip, login: "bob" });
		broker.emit("auth.login.failed", { ip, login: "bob" });
		await new Promise((r) => setTimeout(r, 50));
		assert.ok(!(await broker.call<Snapshot, unknown>("policy.snapshot", {})).bans.some((b) => b.IP === ip));
		await assert.rejects(broker.call("policy.unban", { IP: "nope" }, asAdmin), { code: 400 });
	});

	it("a success resets the count; whitelisted addresses are never banned", async () => {
		const ip = "198.51.100.4";
		broker.emit("auth.login.failed", { ip, login: "bob" });
		broker.emit("auth.login.failed", { ip, login: "bob" });
		broker.emit("auth.login.succeeded", { ip, login: "bob" });
		broker.emit("auth.login.failed", { ip, login: "bob" });
		broker.emit("auth.login.failed", { ip, login: "bob" });
		await new Promise((r) => setTimeout(r, 80));
		assert.ok(!(await broker.call<Snapshot, unknown>("policy.snapshot", {})).bans.some((b) => b.IP === ip));

		await broker.call("policy.updateIPs", { Name: "whitelist", IPs: ["192.0.2.0/24"] }, asAdmin);
		for (let i = 0; i < 5; i++) broker.emit("auth.login.failed", { ip: "192.0.2.77", login: "bob" });
		await new Promise((r) => setTimeout(r, 80));
		assert.ok(!(await broker.call<Snapshot, unknown>("policy.snapshot", {})).bans.some((b) => b.IP === "192.0.2.77"));
	});

	it("blacklisted addresses reach the gateway in the snapshot's IP lists, refused everything for good (not as login bans)", async () => {
		await broker.call("policy.updateIPs", { Name: "blacklist", IPs: ["100.64.0.0/10"] }, asAdmin);
		const snap = await broker.call<Snapshot, unknown>("policy.snapshot", {});
		assert.deepEqual(snap.ipLists.blacklist, ["100.64.0.0/10"]);
		assert.ok(!snap.bans.some((x) => x.IP === "100.64.0.0/10"));
		const access = new AccessControl(async () => snap);
		assert.ok(access.isBlocked(await access.current(), "100.64.1.2"));
		assert.ok(!access.isBlocked(snap, "192.0.2.1"));
		await broker.call("policy.updateIPs", { Name: "blacklist", IPs: [] }, asAdmin);
	});

	it("seeding is idempotent across restarts and keeps admins' edits and deletions", async () => {
		const before = await list();
		const pub = before.PolicyGroups.find((g) => g.Uuid === "public-access")!;
		await broker.call("policy.put", { ...pub, Description: "edited by admin" }, asAdmin);
		await broker.call("policy.delete", { Uuid: "sample-acl-policy" }, asAdmin);
		const count = (await list()).Total;

		await broker.stop();
		await start();
		const after = await list();
		assert.equal(after.Total, count);
		assert.equal(after.PolicyGroups.find((g) => g.Uuid === "public-access")!.Description, "edited by admin");
		assert.ok(!after.PolicyGroups.some((g) => g.Uuid === "sample-acl-policy"));
		assert.equal(new Set(after.PolicyGroups.map((g) => g.Uuid)).size, after.Total);
		// Bans survive a restart too (persisted).
		for (let i = 0; i < 3; i++) broker.emit("auth.login.failed", { ip: "203.0.113.50", login: "x" });
		await until(() => broker.call<Snapshot, unknown>("policy.snapshot", {}), (s) => s.bans.some((b) => b.IP === "203.0.113.50"), "ban");
		await broker.stop();
		await start();
		assert.ok((await broker.call<Snapshot, unknown>("policy.snapshot", {})).bans.some((b) => b.IP === "203.0.113.50"));
	});
});
