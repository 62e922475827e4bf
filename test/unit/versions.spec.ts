import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { ServiceBroker } from "moleculer";
import type { Identity } from "../../lib/auth/identity";
import { DEFAULT_POLICIES, checkPolicyId, normalizePolicy, parseInterval, type VersioningPolicy } from "../../lib/versions/policy";
import { newestFirst, pruneBySize, pruneNode, pruneOnDelete, prunePeriods, shouldCapture, type VersionRecord } from "../../lib/versions/prune";
import { LocalStore } from "../../lib/storage";

const H = 3_600_000;
const D = 24 * H;
const NOW = Date.UTC(2025, 0, 31, 12);

function v(id: string, ageMs: number, size = 10): VersionRecord {
	return { _id: id, kind: "version", nodeUuid: "n1", ds: "pydiods1", path: "a.txt", size, etag: id, mtime: 0, owner: "", createdAt: NOW - ageMs, vds: "versions", key: `n1/${id}`, policy: "p" };
}
const ids = (l: { _id: string }[]) => l.map((x) => x._id).sort();
const policy = (p: Partial<VersioningPolicy>): VersioningPolicy => ({ Uuid: "p", Name: "p", VersionsDataSourceName: "versions", KeepPeriods: [], NodeDeletedStrategy: "KeepAll", ...p });

describe("lib/versions/policy", () => {
	it("parses period starts: 0, days, hours, minutes and combinations", () => {
		assert.equal(parseInterval("0"), 0);
		assert.equal(parseInterval(""), 0);
		assert.equal(parseInterval("7d"), 7 * D);
		assert.equal(parseInterval("1h"), H);
		assert.equal(parseInterval("10m"), 600_000);
		assert.equal(parseInterval("1h30m"), 1.5 * H);
		assert.equal(parseInterval("2w"), 14 * D);
		for (const bad of ["7", "-1d", "d", "7 days", "1y", "abc", "1e3d", "99999999999d"]) assert.throws(() => parseInterval(bad), /IntervalStart/, bad);
	});

	it("normalises a policy: defaults, sorted periods, limits kept as given", () => {
		const p = normalizePolicy("p1", { Name: " Mine ", KeepPeriods: [{ IntervalStart: "7d", MaxNumber: 1 }, { IntervalStart: "0", MaxNumber: 10 }, { IntervalStart: "30d" }], MaxTotalSize: 1000, MaxSizePerFile: -1 });
		assert.deepEqual(p, {
			Uuid: "p1",
			Name: "Mine",
			VersionsDataSourceName: "versions",
			KeepPeriods: [
				{ IntervalStart: "0", MaxNumber: 10 },
				{ IntervalStart: "7d", MaxNumber: 1 },
				{ IntervalStart: "30d", MaxNumber: 0 },
			],
			NodeDeletedStrategy: "KeepAll",
			MaxTotalSize: 1000,
			MaxSizePerFile: -1,
		});
		assert.equal(normalizePolicy("p1", { Name: "x", NodeDeletedStrategy: "KeepNone", VersionsDataSourceName: "other" }).NodeDeletedStrategy, "KeepNone");
	});

	it("refuses bad policies with clear messages", () => {
		const bad: [unknown, RegExp][] = [
			[{}, /Name is required/],
			[{ Name: "  " }, /Name is required/],
			[{ Name: "x", NodeDeletedStrategy: "KeepSome" }, /NodeDeletedStrategy/],
			[{ Name: "x", KeepPeriods: [{ IntervalStart: "soon", MaxNumber: 1 }] }, /IntervalStart/],
			[{ Name: "x", KeepPeriods: [{ IntervalStart: "1d", MaxNumber: -2 }] }, /MaxNumber/],
			[{ Name: "x", KeepPeriods: [{ IntervalStart: "1d", MaxNumber: 1.5 }] }, /MaxNumber/],
			[{ Name: "x", KeepPeriods: [{ IntervalStart: "1d" }, { IntervalStart: "24h" }] }, /two periods/],
			[{ Name: "x", KeepPeriods: "0" }, /KeepPeriods/],
			[{ Name: "x", MaxTotalSize: -5 }, /MaxTotalSize/],
			[{ Name: "x", IgnoreFilesGreaterThan: "big" }, /IgnoreFilesGreaterThan/],
			[{ Name: "x", VersionsDataSourceName: "../etc" }, /VersionsDataSourceName/],
			[{ Name: "x\u0001" }, /control/],
		];
		for (const [input, re] of bad) assert.throws(() => normalizePolicy("p1", input as object), re, JSON.stringify(input));
		for (const id of ["", "a/b", "..", "a\u0000", " a", "x".repeat(256)]) assert.throws(() => checkPolicyId(id), /Uuid/);
	});

	it("seeds Cells' first-run policies, all valid", () => {
		assert.deepEqual(DEFAULT_POLICIES.map((p) => p.Uuid), ["default-policy", "keep-all", "regular-pruning"]);
		for (const p of DEFAULT_POLICIES) assert.deepEqual(normalizePolicy(p.Uuid, p), p);
	});
});

describe("lib/versions/prune", () => {
	it("keeps everything without periods, and in -1 windows", () => {
		const list = [v("a", H), v("b", 2 * H), v("c", 40 * D)];
		assert.deepEqual(prunePeriods(list, { KeepPeriods: [] }, NOW), []);
		assert.deepEqual(prunePeriods(list, { KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }] }, NOW), []);
	});

	it("drops everything in a 0 window (Cells' default: nothing older than 30 days)", () => {
		const list = [v("new", D), v("mid", 20 * D), v("old", 31 * D), v("older", 300 * D)];
		const p = DEFAULT_POLICIES[0];
		assert.deepEqual(ids(prunePeriods(list, p, NOW)), ["old", "older"]);
		// The same versions a month later: everything is past 30 days but the newest two windows move too.
		assert.deepEqual(ids(prunePeriods(list, p, NOW + 30 * D)), ["mid", "new", "old", "older"]);
	});

	it("keeps N per window: the newest stays and the most crowded go first, older ones on ties", () => {
		// Ages 1h, 2h, 3h, 10h: gaps to the next newer are 1h (2h), 1h (3h), 7h (10h).
		const list = [v("h1", H), v("h2", 2 * H), v("h3", 3 * H), v("h10", 10 * H)];
		assert.deepEqual(ids(prunePeriods(list, { KeepPeriods: [{ IntervalStart: "0", MaxNumber: 3 }] }, NOW)), ["h3"]);
		assert.deepEqual(ids(prunePeriods(list, { KeepPeriods: [{ IntervalStart: "0", MaxNumber: 2 }] }, NOW)), ["h2", "h3"]);
		assert.deepEqual(ids(prunePeriods(list, { KeepPeriods: [{ IntervalStart: "0", MaxNumber: 1 }] }, NOW)), ["h10", "h2", "h3"]);
		// Equal times: the newest by id order stays, deterministically.
		const same = [v("x1", 0), v("x2", 0), v("x3", 0)];
		assert.equal(prunePeriods(same, { KeepPeriods: [{ IntervalStart: "0", MaxNumber: 1 }] }, NOW).length, 2);
	});

	it("applies each window to its own ages; versions younger than the first start are kept", () => {
		const list = [v("m5", 5 * 60_000), v("h2", 2 * H), v("h3", 3 * H), v("d2", 2 * D), v("d3", 3 * D), v("d40", 40 * D)];
		const removed = prunePeriods(list, { KeepPeriods: [{ IntervalStart: "1h", MaxNumber: 1 }, { IntervalStart: "1d", MaxNumber: 1 }, { IntervalStart: "30d", MaxNumber: 0 }] }, NOW);
		assert.deepEqual(ids(removed), ["d3", "d40", "h3"]);
	});

	it("caps the cumulated size, newest first", () => {
		const list = [v("a", 1, 40), v("b", 2, 40), v("c", 3, 40), v("d", 4, 1)];
		assert.deepEqual(ids(pruneBySize(list, 100)), ["c", "d"]);
		assert.deepEqual(ids(pruneBySize(list, -1)), []);
		assert.deepEqual(ids(pruneBySize(list, 0)), []);
		assert.deepEqual(ids(pruneNode(list, policy({ MaxSizePerFile: 80, KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }] }), NOW)), ["c", "d"]);
	});

	it("ignores content too large to be versioned", () => {
		assert.equal(shouldCapture(policy({ IgnoreFilesGreaterThan: 100 }), 101), false);
		assert.equal(shouldCapture(policy({ IgnoreFilesGreaterThan: 100 }), 100), true);
		assert.equal(shouldCapture(policy({ MaxSizePerFile: 10 }), 11), false);
		assert.equal(shouldCapture(policy({ IgnoreFilesGreaterThan: -1 }), 1e12), true);
	});

	it("applies the node-deleted strategies", () => {
		const list = [v("a", 3), v("b", 1), v("c", 2)];
		assert.deepEqual(pruneOnDelete(list, "KeepAll"), []);
		assert.deepEqual(ids(pruneOnDelete(list, "KeepNone")), ["a", "b", "c"]);
		assert.deepEqual(ids(pruneOnDelete(list, "KeepLast")), ["a", "c"]);
		assert.deepEqual(newestFirst(list).map((x) => x._id), ["b", "c", "a"]);
	});
});

describe("versions service", () => {
	let broker: ServiceBroker;
	let dataDir: string;
	const admin: Identity = { Uuid: "u1", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP"], TokenKind: "session", ExpiresAt: 2e9 } as Identity;
	const bob: Identity = { ...admin, Uuid: "u2", Login: "bob", Profile: "standard" } as Identity;
	const datasources: Record<string, { Name: string; StorageType: "LOCAL"; StorageConfiguration: Record<string, string>; VersioningPolicyName?: string }> = {};
	let files: LocalStore;
	let versionsStore: LocalStore;

	before(async () => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-versions-"));
		process.env.DATA_DIR = dataDir;
		datasources.files = { Name: "files", StorageType: "LOCAL", StorageConfiguration: { folder: join(dataDir, "files") }, VersioningPolicyName: "default-policy" };
		datasources.plain = { Name: "plain", StorageType: "LOCAL", StorageConfiguration: { folder: join(dataDir, "plain") } };
		datasources.versions = { Name: "versions", StorageType: "LOCAL", StorageConfiguration: { folder: join(dataDir, "versions") } };
		files = new LocalStore(join(dataDir, "files"));
		versionsStore = new LocalStore(join(dataDir, "versions"));
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.createService({
			name: "datasources",
			actions: {
				get(ctx: { params: { name: string } }) {
					const ds = datasources[ctx.params.name];
					if (!ds) throw Object.assign(new Error("not found"), { code: 404 });
					return ds;
				},
				list() {
					return Object.values(datasources);
				},
			},
		});
		broker.loadService(join(__dirname, "../../services/versions.service.ts"));
		await broker.start();
	});
	after(async () => {
		await broker.stop();
		rmSync(dataDir, { recursive: true, force: true });
	});

	const call = <T>(action: string, params: object, user: Identity | null = admin) => broker.call<T, object>(action, params, { meta: { user } });
	const current = new Map<string, { size: number; etag: string }>();
	async function write(key: string, text: string) {
		const w = await files.put(key, Readable.from([Buffer.from(text)]));
		current.set(key, { size: w.size, etag: w.md5 });
	}
	async function overwrite(uuid: string, path: string, next: string) {
		// What the tree does: capture the current content, then replace it.
		const cur = current.get(uuid)!;
		await call("versions.capture", { ds: "files", uuid, path, key: uuid, size: cur.size, etag: cur.etag, mtime: 1_700_000_000, owner: "u1" });
		await write(uuid, next);
	}
	async function readVersion(uuid: string, versionId: string) {
		const loc = await call<{ ds: string; key: string }>("versions.locate", { uuid, versionId });
		assert.equal(loc.ds, "versions");
		const chunks: Buffer[] = [];
		for await (const c of (await versionsStore.get(loc.key)) as AsyncIterable<Buffer>) chunks.push(c);
		return Buffer.concat(chunks).toString();
	}

	it("seeds the default policies once and serves them to administrators only", async () => {
		const r = await call<{ Policies: VersioningPolicy[] }>("versions.listPolicies", {});
		assert.deepEqual(r.Policies.map((p) => p.Uuid), ["default-policy", "keep-all", "regular-pruning"]);
		await assert.rejects(call("versions.listPolicies", {}, bob), { code: 403 });
		await assert.rejects(call("versions.getPolicy", { Uuid: "nope" }), { code: 404 });
		await assert.rejects(call("versions.putPolicy", { Uuid: "p1", Name: "x", VersionsDataSourceName: "missing" }), /does not exist/);
		await assert.rejects(call("versions.putPolicy", { Uuid: "p1", Name: "x", VersionsDataSourceName: "files" }), /cannot store versions/);
		await assert.rejects(call("versions.deletePolicy", { Uuid: "default-policy" }), { code: 403 });
	});

	it("keeps the replaced content, lists versions newest first, and is idempotent for a retried write", async () => {
		await write("n1", "one");
		await overwrite("n1", "docs/a.txt", "two");
		// An upload of "three" fails after the capture and is retried: "two" is captured twice, kept once.
		const cur = current.get("n1")!;
		const capture = () => call<{ Captured: boolean }>("versions.capture", { ds: "files", uuid: "n1", path: "docs/a.txt", key: "n1", size: cur.size, etag: cur.etag, mtime: 1_700_000_000, owner: "u1" });
		assert.equal((await capture()).Captured, true);
		assert.equal((await capture()).Captured, false);
		await write("n1", "three");
		const list = await call<{ Uuid: string; Size: number; OwnerUuid: string; MTime: number }[]>("versions.list", { uuid: "n1" });
		assert.equal(list.length, 2);
		assert.deepEqual(await Promise.all(list.map((x) => readVersion("n1", x.Uuid))), ["two", "one"]);
		assert.equal(list[0].OwnerUuid, "u1");
		assert.equal(list[0].MTime, 1_700_000_000);
		await assert.rejects(call("versions.locate", { uuid: "other", versionId: list[0].Uuid }), { code: 404 });
	});

	it("does nothing for a datasource without policy, or content over IgnoreFilesGreaterThan", async () => {
		const r = await call<{ Captured: boolean }>("versions.capture", { ds: "plain", uuid: "p1", path: "x", key: "p1", size: 3, etag: "e", mtime: 1, owner: "" });
		assert.equal(r.Captured, false);
		await call("versions.putPolicy", { Uuid: "small", Name: "Small", IgnoreFilesGreaterThan: 2, KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }] });
		datasources.plain.VersioningPolicyName = "small";
		const big = await call<{ Captured: boolean }>("versions.capture", { ds: "plain", uuid: "p1", path: "x", key: "p1", size: 3, etag: "e", mtime: 1, owner: "" });
		assert.equal(big.Captured, false);
		await assert.rejects(call("versions.deletePolicy", { Uuid: "small" }), { code: 409 });
		delete datasources.plain.VersioningPolicyName;
		assert.deepEqual(await call("versions.deletePolicy", { Uuid: "small" }), { Success: true });
		await assert.rejects(call("versions.getPolicy", { Uuid: "small" }), { code: 404 });
	});

	it("prunes per policy on capture (MaxNumber) and deletes the pruned objects", async () => {
		await call("versions.putPolicy", { Uuid: "two", Name: "Two", KeepPeriods: [{ IntervalStart: "0", MaxNumber: 2 }] });
		datasources.files.VersioningPolicyName = "two";
		await write("n2", "v0");
		for (let i = 1; i <= 5; i++) {
			await overwrite("n2", "b.txt", `v${i}`);
			await new Promise((r) => setTimeout(r, 5));
		}
		const list = await call<{ Uuid: string }[]>("versions.list", { uuid: "n2" });
		assert.equal(list.length, 2);
		assert.equal(await readVersion("n2", list[0].Uuid), "v4");
		const objects: string[] = [];
		for await (const o of versionsStore.list("n2/")) objects.push(o.key);
		assert.deepEqual(objects.sort(), list.map((x) => `n2/${x.Uuid}`).sort());
		datasources.files.VersioningPolicyName = "default-policy";
	});

	it("prunes time windows in the periodic sweep (fake clock)", async () => {
		await call("versions.putPolicy", { Uuid: "day", Name: "A day", KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }, { IntervalStart: "1d", MaxNumber: 0 }] });
		datasources.files.VersioningPolicyName = "day";
		await write("n3", "a");
		await overwrite("n3", "c.txt", "b");
		const r = await call<{ Removed: number }>("versions.prune", { now: Date.now() + 2 * D });
		assert.ok(r.Removed >= 1);
		assert.deepEqual(await call("versions.list", { uuid: "n3" }), []);
		datasources.files.VersioningPolicyName = "default-policy";
	});

	it("follows moves and applies NodeDeletedStrategy to a deleted folder's files", async () => {
		await call("versions.putPolicy", { Uuid: "last", Name: "Last", KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }], NodeDeletedStrategy: "KeepLast" });
		datasources.files.VersioningPolicyName = "last";
		await write("n4", "a");
		await overwrite("n4", "dir/sub/d.txt", "b");
		await new Promise((r) => setTimeout(r, 5));
		await overwrite("n4", "dir/sub/d.txt", "c");
		assert.equal((await call<unknown[]>("versions.list", { uuid: "n4" })).length, 2);
		await broker.emit("tree.changed", { type: "move", node: { Uuid: "f1", ds: "files", path: "moved", type: "COLLECTION" }, from: { ds: "files", path: "dir" } });
		await broker.emit("tree.changed", { type: "delete", node: { Uuid: "f1", ds: "files", path: "moved", type: "COLLECTION" } });
		let list: { Uuid: string }[] = [];
		for (let i = 0; i < 100; i++) {
			list = await call<{ Uuid: string }[]>("versions.list", { uuid: "n4" });
			if (list.length === 1) break;
			await new Promise((r) => setTimeout(r, 10));
		}
		assert.equal(list.length, 1);
		assert.equal(await readVersion("n4", list[0].Uuid), "b");

		await call("versions.putPolicy", { Uuid: "last", Name: "Last", KeepPeriods: [{ IntervalStart: "0", MaxNumber: -1 }], NodeDeletedStrategy: "KeepNone" });
		await broker.emit("tree.changed", { type: "delete", node: { Uuid: "n4", ds: "files", path: "moved/sub/d.txt", type: "LEAF" } });
		for (let i = 0; i < 100 && list.length; i++) {
			list = await call<{ Uuid: string }[]>("versions.list", { uuid: "n4" });
			await new Promise((r) => setTimeout(r, 10));
		}
		assert.equal(list.length, 0);
		datasources.files.VersioningPolicyName = "default-policy";
	});
});
