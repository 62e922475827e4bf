import assert from "node:assert/strict";
import { compilePattern, conditionHolds, ipInCidr, isAllowed, type AccessRequest, type Policy } from "../../lib/policy/engine";
import { activeBans, inList, isBanned, isIpOrCidr, KeyedSerializer, normalizeIp, recordAttempt, type BanSettings, type IpState } from "../../lib/policy/ipban";
import { checkIpList, checkPolicyGroup, matchesFilter } from "../../lib/policy/validate";
import { defaultPolicyGroups, type PolicyGroup } from "../../lib/policy/defaults";

function req(subjects: string[], resource: string, action: string, context: AccessRequest["context"] = {}): AccessRequest {
	return { subjects, resource, action, context };
}

const WED_10H_UTC = new Date("2024-01-10T10:00:00Z");
const WED_20H_UTC = new Date("2024-01-10T20:00:00Z");
const SAT_10H_UTC = new Date("2024-01-13T10:00:00Z");

describe("policy engine", () => {
	describe("patterns", () => {
		it("matches literal text exactly and <...> parts as regular expressions", () => {
			assert.ok(compilePattern("rest:/user").test("rest:/user"));
			assert.ok(!compilePattern("rest:/user").test("rest:/users"));
			assert.ok(compilePattern("rest:/user/<.+>").test("rest:/user/alice"));
			assert.ok(!compilePattern("rest:/user/<.+>").test("rest:/user/"));
			assert.ok(compilePattern("<GET|POST>").test("POST"));
			assert.ok(!compilePattern("<GET|POST>").test("DELETE"));
		});
		it("escapes regex characters outside <...>", () => {
			assert.ok(!compilePattern("rest:/a.b").test("rest:/aXb"));
			assert.ok(compilePattern("rest:/a.b").test("rest:/a.b"));
		});
		it("an invalid regex matches nothing", () => {
			assert.ok(!compilePattern("rest:/<[>").test("rest:/["));
		});
	});

	describe("decisions", () => {
		const policies: Policy[] = [
			{ id: "a", subjects: ["profile:standard"], resources: ["rest:/tree/<.+>"], actions: ["GET", "POST"], effect: "allow" },
			{ id: "d", subjects: ["user:bob"], resources: ["rest:/tree/delete"], actions: ["POST"], effect: "deny" },
		];
		it("allows on a matching allow", () => {
			assert.equal(isAllowed(policies, req(["user:alice", "profile:standard"], "rest:/tree/delete", "POST")), true);
		});
		it("denies when nothing matches (subject, resource or action)", () => {
			assert.equal(isAllowed(policies, req(["profile:shared"], "rest:/tree/delete", "POST")), false);
			assert.equal(isAllowed(policies, req(["profile:standard"], "rest:/acl", "POST")), false);
			assert.equal(isAllowed(policies, req(["profile:standard"], "rest:/tree/delete", "DELETE")), false);
		});
		it("deny wins over allow whatever the order", () => {
			const s = ["user:bob", "profile:standard"];
			assert.equal(isAllowed(policies, req(s, "rest:/tree/delete", "POST")), false);
			assert.equal(isAllowed([...policies].reverse(), req(s, "rest:/tree/delete", "POST")), false);
			assert.equal(isAllowed(policies, req(s, "rest:/tree/stats", "POST")), true);
		});
		it("an unknown effect grants nothing", () => {
			assert.equal(isAllowed([{ ...policies[0], effect: "unknown" }], req(["profile:standard"], "rest:/tree/x", "GET")), false);
		});
	});

	describe("conditions", () => {
		const cidr = (c: string) => ({ type: "CIDRCondition", jsonOptions: JSON.stringify({ cidr: c }) });
		it("CIDR: IPv4, IPv6, mapped addresses and single addresses", () => {
			assert.ok(conditionHolds("remoteAddress", cidr("10.0.0.0/8"), { remoteAddress: "10.1.2.3" }));
			assert.ok(!conditionHolds("remoteAddress", cidr("10.0.0.0/8"), { remoteAddress: "11.1.2.3" }));
			assert.ok(conditionHolds("remoteAddress", cidr("127.0.0.0/8"), { remoteAddress: "::ffff:127.0.0.1" }));
			assert.ok(conditionHolds("remoteAddress", cidr("fd00::/8"), { remoteAddress: "fd12::1" }));
			assert.ok(conditionHolds("remoteAddress", cidr("192.168.1.5"), { remoteAddress: "192.168.1.5" }));
			assert.ok(!conditionHolds("remoteAddress", cidr("10.0.0.0/8"), {}));
			assert.ok(ipInCidr("10.0.0.1", "10.0.0.0/24"));
		});
		it("a CIDR deny only applies from inside the network", () => {
			const ps: Policy[] = [
				{ subjects: ["profile:admin"], resources: ["rest:<.+>"], actions: ["GET"], effect: "allow" },
				{ subjects: ["profile:admin"], resources: ["rest:/policy<.*>"], actions: ["GET"], effect: "deny", conditions: { remoteAddress: cidr("127.0.0.0/8") } },
			];
			assert.equal(isAllowed(ps, req(["profile:admin"], "rest:/policy/ipbans", "GET", { remoteAddress: "127.0.0.1" })), false);
			assert.equal(isAllowed(ps, req(["profile:admin"], "rest:/policy/ipbans", "GET", { remoteAddress: "10.0.0.1" })), true);
			assert.equal(isAllowed(ps, req(["profile:admin"], "rest:/user", "GET", { remoteAddress: "127.0.0.1" })), true);
		});
		it("office hours, at fixed times", () => {
			const c = { type: "OfficeHoursCondition", jsonOptions: JSON.stringify({ days: [1, 2, 3, 4, 5], start: "09:00", end: "18:30", utcOffset: 0 }) };
			assert.ok(conditionHolds("t", c, { time: WED_10H_UTC }));
			assert.ok(!conditionHolds("t", c, { time: WED_20H_UTC }));
			assert.ok(!conditionHolds("t", c, { time: SAT_10H_UTC }));
			// The offset moves the local clock: 20:00 UTC is 09:00 at UTC+13.
			const far = { type: "OfficeHoursCondition", jsonOptions: JSON.stringify({ start: "09:00", end: "18:30", utcOffset: 13 * 60 }) };
			assert.ok(conditionHolds("t", far, { time: new Date("2024-01-09T20:00:00Z") }));
		});
		it("within period, date after, date before", () => {
			const period = { type: "WithinPeriodCondition", jsonOptions: JSON.stringify({ start: "2024-01-01T00:00:00Z", end: "2024-02-01T00:00:00Z" }) };
			assert.ok(conditionHolds("t", period, { time: WED_10H_UTC }));
			assert.ok(!conditionHolds("t", period, { time: new Date("2024-03-01T00:00:00Z") }));
			const after = { type: "DateAfterCondition", jsonOptions: JSON.stringify({ date: "2024-01-11T00:00:00Z" }) };
			assert.ok(!conditionHolds("t", after, { time: WED_10H_UTC }));
			assert.ok(conditionHolds("t", after, { time: SAT_10H_UTC }));
			const before = { type: "DateBeforeCondition", jsonOptions: JSON.stringify({ date: "2024-01-11T00:00:00Z" }) };
			assert.ok(conditionHolds("t", before, { time: WED_10H_UTC }));
		});
		it("IP list membership, and its negation", () => {
			const ipLists = { office: ["192.168.0.0/16", "10.1.1.1"] };
			const c = { type: "IPListCondition", jsonOptions: JSON.stringify({ list: "office" }) };
			const notIn = { type: "IPListCondition", jsonOptions: JSON.stringify({ list: "office", negate: true }) };
			assert.ok(conditionHolds("remoteAddress", c, { remoteAddress: "192.168.3.4", ipLists }));
			assert.ok(conditionHolds("remoteAddress", c, { remoteAddress: "10.1.1.1", ipLists }));
			assert.ok(!conditionHolds("remoteAddress", c, { remoteAddress: "8.8.8.8", ipLists }));
			assert.ok(conditionHolds("remoteAddress", notIn, { remoteAddress: "8.8.8.8", ipLists }));
			assert.ok(!conditionHolds("remoteAddress", { type: "IPListCondition", jsonOptions: JSON.stringify({ list: "missing" }) }, { remoteAddress: "10.1.1.1", ipLists }));
		});
		it("every condition must hold; an unknown type never holds", () => {
			const p: Policy = {
				subjects: ["profile:anon"],
				resources: ["rest:/x"],
				actions: ["GET"],
				effect: "allow",
				conditions: { remoteAddress: cidr("10.0.0.0/8"), t: { type: "OfficeHoursCondition", jsonOptions: JSON.stringify({ utcOffset: 0 }) } },
			};
			assert.equal(isAllowed([p], req(["profile:anon"], "rest:/x", "GET", { remoteAddress: "10.0.0.1", time: WED_10H_UTC })), true);
			assert.equal(isAllowed([p], req(["profile:anon"], "rest:/x", "GET", { remoteAddress: "10.0.0.1", time: SAT_10H_UTC })), false);
			assert.equal(isAllowed([{ ...p, conditions: { x: { type: "Nope" } } }], req(["profile:anon"], "rest:/x", "GET")), false);
		});
	});

	describe("default REST groups", () => {
		const policies = defaultPolicyGroups()
			.filter((g) => g.ResourceGroup === "rest")
			.flatMap((g) => g.Policies);
		const can = (subjects: string[], method: string, path: string) => isAllowed(policies, req(subjects, `rest:${path}`, method, { remoteAddress: "127.0.0.1" }));
		const std = ["user:alice", "profile:standard"];
		it("anonymous: login and boot data only", () => {
			assert.ok(can(["profile:anon"], "POST", "/frontend/session"));
			assert.ok(can(["profile:anon"], "GET", "/frontend/bootconf"));
			assert.ok(can(["profile:anon"], "GET", "/config/discovery/openapi"));
			assert.ok(can(["profile:anon"], "POST", "/auth/reset-password-token/x"));
			assert.ok(can(["profile:anon"], "POST", "/install"));
			assert.ok(can(["profile:anon"], "POST", "/scheduler/hooks/my-hook"));
			assert.ok(!can(["profile:anon"], "POST", "/policy"));
			assert.ok(!can(["profile:anon"], "GET", "/frontend/binaries/USER/alice"));
			assert.ok(!can(["profile:anon"], "POST", "/user"));
		});
		it("standard users: user APIs, not admin ones", () => {
			assert.ok(can(std, "POST", "/user"));
			assert.ok(can(std, "POST", "/workspace"));
			assert.ok(!can(std, "PUT", "/workspace/my-files"));
			assert.ok(can(std, "POST", "/tree/create"));
			assert.ok(can(std, "GET", "/tree/stat/personal/a.txt"));
			assert.ok(can(std, "POST", "/auth/token/personal"));
			assert.ok(can(std, "DELETE", "/auth/tokens/abc"));
			assert.ok(can(std, "GET", "/frontend/state"));
			assert.ok(can(std, "PUT", "/user-meta/update"));
			assert.ok(!can(std, "DELETE", "/user-meta/tags/x"));
			assert.ok(!can(std, "PUT", "/user-meta/namespace"));
			for (const [m, p] of [["POST", "/policy"], ["PUT", "/acl"], ["GET", "/config/datasource"], ["POST", "/tree/admin/list"], ["GET", "/policy/ipbans"]]) {
				assert.ok(!can(std, m, p), `${m} ${p}`);
			}
		});
		it("admins: everything", () => {
			assert.ok(can(["profile:admin"], "DELETE", "/policy/x"));
			assert.ok(can(["profile:admin"], "PATCH", "/workspace/x"));
		});
	});
});

describe("ip bans (lib)", () => {
	const settings: BanSettings = { threshold: 3, window: 60, duration: 120 };
	const t0 = Date.UTC(2024, 0, 10, 10, 0, 0);

	function fail(state: IpState | null, at: number) {
		return recordAttempt(state, "10.0.0.7", false, at, settings, { login: "bob" });
	}

	it("bans after `threshold` failures inside the window", () => {
		let r = fail(null, t0);
		r = fail(r.state, t0 + 1000);
		assert.equal(r.banStarted, false);
		r = fail(r.state, t0 + 2000);
		assert.equal(r.banStarted, true);
		assert.equal(r.state.BanExpire, Math.floor((t0 + 2000) / 1000) + 120);
		assert.ok(isBanned(r.state, t0 + 3000));
		assert.ok(!isBanned(r.state, t0 + 123_000));
		assert.deepEqual(r.state.History.map((h) => h.IsSuccess), [false, false, false]);
		assert.deepEqual(r.state.History[0].Details, { login: "bob" });
		assert.equal(r.state.History[0].connectionTime, Math.floor(t0 / 1000));
	});

	it("failures older than the window do not count", () => {
		let r = fail(null, t0);
		r = fail(r.state, t0 + 1000);
		r = fail(r.state, t0 + 60_500);
		assert.equal(r.banStarted, false);
		assert.equal(r.state.Failures.length, 2);
	});

	it("a success clears the count", () => {
		let r = fail(null, t0);
		r = fail(r.state, t0 + 1000);
		r = recordAttempt(r.state, "10.0.0.7", true, t0 + 2000, settings);
		r = fail(r.state, t0 + 3000);
		assert.equal(r.banStarted, false);
		assert.equal(r.state.Failures.length, 1);
	});

	it("failures during a ban do not extend it, and the count restarts after it", () => {
		let r = fail(null, t0);
		r = fail(r.state, t0 + 1);
		r = fail(r.state, t0 + 2);
		const expire = r.state.BanExpire;
		r = fail(r.state, t0 + 10_000);
		assert.equal(r.banStarted, false);
		assert.equal(r.state.BanExpire, expire);
		r = fail(r.state, expire * 1000 + 1000);
		assert.equal(r.banStarted, false);
		assert.equal(r.state.Failures.length, 1);
	});

	it("keeps a bounded history", () => {
		let s: IpState | null = null;
		for (let i = 0; i < 50; i++) s = recordAttempt(s, "10.0.0.7", true, t0 + i, { ...settings, historySize: 5 }).state;
		assert.equal(s!.History.length, 5);
	});

	it("a threshold of 0 disables banning", () => {
		let r = recordAttempt(null, "10.0.0.7", false, t0, { ...settings, threshold: 0 });
		for (let i = 0; i < 10; i++) r = recordAttempt(r.state, "10.0.0.7", false, t0 + i, { ...settings, threshold: 0 });
		assert.equal(isBanned(r.state, t0 + 20), false);
	});

	it("activeBans lists bans in force only", () => {
		const states: IpState[] = [
			{ IP: "1.1.1.1", BanExpire: t0 / 1000 + 10, Failures: [], History: [] },
			{ IP: "2.2.2.2", BanExpire: t0 / 1000 - 10, Failures: [], History: [] },
			{ IP: "3.3.3.3", BanExpire: 0, Failures: [1], History: [] },
		];
		assert.deepEqual(activeBans(states, t0), [{ IP: "1.1.1.1", BanExpire: t0 / 1000 + 10 }]);
	});

	it("addresses and networks", () => {
		assert.equal(normalizeIp("::ffff:10.0.0.1"), "10.0.0.1");
		assert.equal(normalizeIp("2001:db8:0:0:0:0:0:1"), "2001:db8::1");
		assert.equal(normalizeIp("10"), undefined);
		assert.equal(normalizeIp("nope"), undefined);
		assert.equal(normalizeIp(42), undefined);
		for (const ok of ["10.0.0.1", "10.0.0.0/8", "::1", "fd00::/8", "0.0.0.0/0"]) assert.ok(isIpOrCidr(ok), ok);
		for (const bad of ["10.0.0.0/33", "::/129", "10.0.0/8", "abc", "1.2.3.4/8/9", "", "10.0.0.1/", "0x0a.0.0.1"]) assert.ok(!isIpOrCidr(bad), bad);
		assert.ok(inList("10.2.3.4", ["192.168.0.1", "10.0.0.0/8"]));
		assert.ok(!inList("11.2.3.4", ["10.0.0.0/8"]));
		assert.ok(!inList(undefined, ["10.0.0.0/8"]));
	});

	it("KeyedSerializer runs tasks of one key in order", async () => {
		const s = new KeyedSerializer();
		const order: number[] = [];
		const slow = s.run("k", async () => {
			await new Promise((r) => setTimeout(r, 20));
			order.push(1);
		});
		const fast = s.run("k", async () => {
			order.push(2);
		});
		const failing = s.run("k", async () => {
			throw new Error("boom");
		});
		const after = s.run("k", async () => order.push(3));
		await Promise.all([slow, fast, after]);
		await assert.rejects(failing, /boom/);
		assert.deepEqual(order, [1, 2, 3]);
	});
});

describe("policy validation (lib)", () => {
	const base = { Name: "G", Policies: [{ subjects: ["profile:standard"], resources: ["rest:/x"], actions: ["GET"], effect: "allow" }] };

	it("normalises a valid group, generating ids", () => {
		const g = checkPolicyGroup(base);
		assert.match(g.Uuid, /^[0-9a-f-]{36}$/);
		assert.equal(g.ResourceGroup, "rest");
		assert.ok(g.Policies[0].id);
		assert.equal(g.Policies[0].effect, "allow");
	});

	it("refuses bad effects, empty lists, bad patterns, unknown condition types and bad options", () => {
		const bad = (p: Record<string, unknown>) => assert.throws(() => checkPolicyGroup({ Name: "G", Policies: [{ ...base.Policies[0], ...p }] }), (e: { code?: number }) => e.code === 400);
		bad({ effect: "unknown" });
		bad({ effect: undefined });
		bad({ subjects: [] });
		bad({ resources: "rest:/x" });
		bad({ actions: [3] });
		bad({ resources: ["rest:/<[>"] });
		bad({ resources: ["rest:/<.*"] });
		bad({ conditions: { remoteAddress: { type: "Nope" } } });
		bad({ conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: "{" } } });
		bad({ conditions: { remoteAddress: { type: "CIDRCondition", jsonOptions: '{"cidr":"300.0.0.0/8"}' } } });
		bad({ conditions: { remoteAddress: { type: "CIDRCondition" } } });
		bad({ conditions: { remoteAddress: { type: "StringMatchCondition", jsonOptions: '{"matches":"("}' } } });
		bad({ conditions: { t: { type: "OfficeHoursCondition", jsonOptions: '{"start":"9h"}' } } });
		bad({ conditions: { t: { type: "OfficeHoursCondition", jsonOptions: '{"days":[7]}' } } });
		bad({ conditions: { t: { type: "WithinPeriodCondition", jsonOptions: "{}" } } });
		bad({ conditions: { t: { type: "DateAfterCondition", jsonOptions: '{"date":"soon"}' } } });
		bad({ conditions: { t: { type: "IPListCondition", jsonOptions: '{"list":"../x"}' } } });
		bad({ conditions: { "a.b": { type: "OfficeHoursCondition" } } });
		assert.throws(() => checkPolicyGroup({ ...base, ResourceGroup: "files" }), /ResourceGroup/);
		assert.throws(() => checkPolicyGroup({ ...base, Uuid: "../etc" }), /forbidden/);
		assert.throws(() => checkPolicyGroup({ Policies: [{ ...base.Policies[0], id: "x" }, { ...base.Policies[0], id: "x" }] }), /twice/);
	});

	it("accepts every condition type with good options", () => {
		const conditions = {
			a: { type: "CIDRCondition", jsonOptions: '{"cidr":"10.0.0.0/8"}' },
			b: { type: "StringNotMatchCondition", jsonOptions: '{"matches":"^127\\\\."}' },
			c: { type: "OfficeHoursCondition", jsonOptions: '{"days":[1,2],"start":"08:00","end":"17:00","utcOffset":60}' },
			d: { type: "WithinPeriodCondition", jsonOptions: '{"start":"2024-01-01T00:00:00Z"}' },
			e: { type: "DateBeforeCondition", jsonOptions: '{"date":"2030-01-01"}' },
			f: { type: "IPListCondition", jsonOptions: '{"list":"office","negate":true}' },
			g: { type: "StringEqualCondition", jsonOptions: '{"equals":"x"}' },
		};
		const g = checkPolicyGroup({ ...base, Policies: [{ ...base.Policies[0], conditions }] });
		assert.deepEqual(Object.keys(g.Policies[0].conditions!), Object.keys(conditions));
	});

	it("default groups pass validation", () => {
		for (const g of defaultPolicyGroups()) checkPolicyGroup(g);
	});

	it("filters as Cells does", () => {
		const g: PolicyGroup = { Uuid: "u1", Name: "Office Hours", Description: "d", ResourceGroup: "acl", LastUpdated: 0, Policies: [] };
		assert.ok(matchesFilter(g, undefined));
		assert.ok(matchesFilter(g, "resource_group:acl"));
		assert.ok(!matchesFilter(g, "resource_group:rest"));
		assert.ok(matchesFilter(g, "uuid:u1"));
		assert.ok(!matchesFilter(g, "uuid:u2"));
		assert.ok(matchesFilter(g, "like:office"));
		assert.ok(!matchesFilter(g, "like:nothing"));
	});

	it("IP lists: trimmed, deduplicated, each an address or a network", () => {
		assert.deepEqual(checkIpList([" 10.0.0.1", "10.0.0.1", "fd00::/8"]), ["10.0.0.1", "fd00::/8"]);
		assert.deepEqual(checkIpList(undefined), []);
		assert.throws(() => checkIpList(["10.0.0.1", "nope"]), /nope/);
		assert.throws(() => checkIpList("10.0.0.1"), /array/);
	});
});
