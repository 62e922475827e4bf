// PoliciesRepo, one behaviour suite on SQLite and PostgreSQL: policy groups upserted by uuid and seeded once
// under concurrency, IP lists, per-address states and bans, and the NeDB import of the policies collection.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PoliciesRepo, importNedbPolicies } from "../../lib/db/policies";
import { importNedbOnce } from "../../lib/db/nedb-import";
import type { PolicyGroup } from "../../lib/policy/defaults";
import { onEveryBackend } from "../helpers/db";

const group = (uuid: string, extra: Partial<PolicyGroup> = {}): PolicyGroup => ({
	Uuid: uuid,
	Name: `Group ${uuid}`,
	Description: "",
	ResourceGroup: "rest",
	LastUpdated: 1700000000,
	Policies: [{ id: `${uuid}-p`, subjects: ["profile:admin"], resources: ["rest:<.+>"], actions: ["GET"], effect: "allow" }],
	...extra,
});

onEveryBackend("PoliciesRepo", (h) => {
	let repo: PoliciesRepo;
	before(() => {
		repo = new PoliciesRepo(h().db);
	});

	it("creates and replaces policy groups by uuid, every field read back", async () => {
		const g = group("g1", { OwnerUuid: "owner-1", Description: "d" });
		assert.deepEqual(await repo.saveGroup(g), g);
		const replaced = group("g1", { Name: "Renamed", ResourceGroup: "acl", Policies: [] });
		assert.deepEqual(await repo.saveGroup(replaced), replaced);
		assert.deepEqual(await repo.group("g1"), replaced, "the owner went with the replacement");
		assert.equal(await repo.group("nope"), null);
		assert.equal(await repo.deleteGroup("g1"), true);
		assert.equal(await repo.deleteGroup("g1"), false);
	});

	it("20 concurrent seeds of one default group from two handles: added once", async () => {
		const db2 = await h().second();
		const repos = [repo, new PoliciesRepo(db2)];
		const added = await Promise.all(Array.from({ length: 20 }, (_, i) => repos[i % 2].addGroupIfAbsent(group("seeded", { Name: `try ${i}` }))));
		assert.equal(added.filter(Boolean).length, 1);
		assert.equal((await repo.groups()).filter((g) => g.Uuid === "seeded").length, 1);
		assert.deepEqual(await repo.seededGroups(), []);
		await repo.recordSeededGroups(["b", "a", "b"]);
		await repo.recordSeededGroups(["c", "a", "b"]);
		assert.deepEqual(await repo.seededGroups(), ["a", "b", "c"]);
	});

	it("stores IP lists; a list never written is null", async () => {
		await repo.saveIpList("whitelist", ["10.0.0.0/8"]);
		await repo.saveIpList("whitelist", ["10.0.0.0/8", "192.0.2.1"]);
		await repo.saveIpList("blacklist", []);
		assert.deepEqual(await repo.ipList("whitelist"), ["10.0.0.0/8", "192.0.2.1"]);
		assert.equal(await repo.ipList("never"), null);
		assert.deepEqual(await repo.ipLists(), { blacklist: [], whitelist: ["10.0.0.0/8", "192.0.2.1"] });
	});

	it("stores per-address states and lists the bans in force", async () => {
		const now = Date.now();
		const banned = { IP: "203.0.113.1", BanExpire: Math.floor(now / 1000) + 600, Failures: [now - 1000], History: [{ IP: "203.0.113.1", connectionTime: 1, IsSuccess: false }] };
		await repo.saveIpState(banned);
		await repo.saveIpState({ IP: "203.0.113.2", BanExpire: Math.floor(now / 1000) - 1, Failures: [], History: [] });
		await repo.saveIpState({ IP: "203.0.113.3", BanExpire: 0, Failures: [now], History: [] });
		assert.deepEqual(await repo.ipState("203.0.113.1"), banned);
		assert.deepEqual((await repo.bannedAt(now)).map((s) => s.IP), ["203.0.113.1"]);
		assert.equal((await repo.ipStates()).length, 3);
		await repo.saveIpState({ ...banned, BanExpire: 0 });
		assert.deepEqual(await repo.bannedAt(now), []);
		assert.equal(await repo.deleteIpState("203.0.113.1"), true);
		assert.equal(await repo.ipState("203.0.113.1"), null);
	});

	it("counts 20 concurrent failures of one address from two handles: none lost; storing nothing leaves no row", async () => {
		const db2 = await h().second();
		const repos = [repo, new PoliciesRepo(db2)];
		const ip = "198.51.100.99";
		await Promise.all(
			Array.from({ length: 20 }, (_, i) =>
				repos[i % 2].updateIpState(ip, (prev) => ({ IP: ip, BanExpire: 0, Failures: [...(prev?.Failures ?? []), i], History: prev?.History ?? [] })),
			),
		);
		assert.deepEqual((await repo.ipState(ip))?.Failures.slice().sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
		await repo.updateIpState("198.51.100.100", () => null);
		assert.equal(await repo.ipState("198.51.100.100"), null);
		await repo.updateIpState(ip, (prev) => prev && { ...prev, Failures: [] });
		assert.deepEqual((await repo.ipState(ip))?.Failures, []);
	});

	it("imports the policies collection of an NeDB DATA_DIR once: groups, lists, address states, the seeded marker", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-nedb-policies-"));
		try {
			mkdirSync(join(dir, "db"));
			const { Uuid: _u, ...legacyFields } = group("legacy");
			const docs = [
				{ _id: "group:legacy", kind: "group", Uuid: "legacy", ...legacyFields },
				{ _id: "iplist:office", kind: "iplist", Name: "office", IPs: ["192.168.0.0/16"] },
				{ _id: "ip:198.51.100.7", kind: "ipstate", IP: "198.51.100.7", BanExpire: 5, Failures: [1, 2], History: [] },
				{ _id: "meta:seeded", kind: "meta", Uuids: ["x", "legacy"] },
			];
			writeFileSync(join(dir, "db", "policies.db"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");
			assert.equal((await importNedbOnce(h().db, dir, "policies", importNedbPolicies)).imported, true);
			assert.deepEqual(await repo.group("legacy"), group("legacy"));
			assert.deepEqual(await repo.ipList("office"), ["192.168.0.0/16"]);
			assert.deepEqual(await repo.ipState("198.51.100.7"), { IP: "198.51.100.7", BanExpire: 5, Failures: [1, 2], History: [] });
			assert.deepEqual(await repo.seededGroups(), ["a", "b", "c"], "a marker this database already had stands");
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
