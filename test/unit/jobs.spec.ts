import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { ZipWriter, bufferSource, openEntry, openZip, safeEntryPath, type ZipEntry } from "../../lib/jobs/zip";
import { TarWriter, readTar } from "../../lib/jobs/tar";
import { createGunzip } from "node:zlib";
import { checkFields, fullyPrefiltered, matches, parseQuery, prefilter } from "../../lib/jobs/query";
import { JobQueue, TaskInterrupted, type TaskControl } from "../../lib/jobs/queue";
import { resyncOnRestart } from "../../lib/jobs/model";
import { resyncAtStart, type ResyncAtStartDeps } from "../../lib/jobs/resync-at-start";
import { resync, type IndexEntry, type ResyncAdd, type StorageEntry } from "../../lib/jobs/resync";
import { jobParams, parseJsonParameters } from "../../lib/jobs/params";
import { LOG_FIELDS, presentLog, type LogDoc } from "../../lib/jobs/model";

const hasZipTools = spawnSync("unzip", ["-v"]).status === 0 && spawnSync("zip", ["-v"]).status === 0;

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
	return Buffer.concat(chunks);
}

/** Builds a zip in memory with the writer (the output is consumed while entries are added). */
async function buildZip(fill: (z: ZipWriter) => Promise<void>, opts: ConstructorParameters<typeof ZipWriter>[0] = {}): Promise<Buffer> {
	const z = new ZipWriter(opts);
	const out = collect(z.output);
	await fill(z);
	await z.finish();
	return out;
}

async function readAll(buf: Buffer): Promise<Map<string, { entry: ZipEntry; data?: Buffer }>> {
	const src = bufferSource(buf);
	const dir = await openZip(src);
	const out = new Map<string, { entry: ZipEntry; data?: Buffer }>();
	for await (const e of dir.entries()) out.set(e.name, { entry: e, data: e.dir ? undefined : await collect(await openEntry(src, e)) });
	return out;
}

describe("lib/jobs/zip", function () {
	this.timeout(60_000);
	let dir: string;
	before(() => {
		dir = mkdtempSync(join(tmpdir(), "cellar-zip-"));
	});
	after(() => rmSync(dir, { recursive: true, force: true }));

	const big = Buffer.alloc(3 * 1024 * 1024);
	for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);

	it("round-trips a folder tree (stored and deflated entries, unicode names, empty files)", async () => {
		const zip = await buildZip(async (z) => {
			await z.addDirectory("top", { mtime: new Date("2024-05-06T07:08:10Z") });
			await z.addFile("top/a.txt", Buffer.from("hello\n".repeat(1000)), { mtime: new Date("2024-05-06T07:08:10Z") });
			await z.addDirectory("top/sub");
			await z.addFile("top/sub/été.bin", Readable.from([big.subarray(0, 1000), big.subarray(1000)]));
			await z.addFile("top/sub/empty.txt", "");
			await z.addFile("top/photo.jpg", Buffer.from("not really a jpeg"));
		});
		const entries = await readAll(zip);
		assert.deepEqual([...entries.keys()], ["top/", "top/a.txt", "top/sub/", "top/sub/été.bin", "top/sub/empty.txt", "top/photo.jpg"]);
		assert.equal(entries.get("top/")?.entry.dir, true);
		assert.equal(entries.get("top/a.txt")?.data?.toString(), "hello\n".repeat(1000));
		assert.equal(entries.get("top/a.txt")?.entry.method, 8);
		assert.equal(entries.get("top/photo.jpg")?.entry.method, 0);
		assert.ok(entries.get("top/sub/été.bin")?.data?.equals(big));
		assert.equal(entries.get("top/sub/empty.txt")?.data?.length, 0);
		assert.equal(entries.get("top/a.txt")?.entry.mtime.getTime(), new Date("2024-05-06T07:08:10Z").getTime());

		if (!hasZipTools) return;
		const file = join(dir, "tree.zip");
		writeFileSync(file, zip);
		const test = execFileSync("unzip", ["-t", file]).toString();
		assert.match(test, /No errors detected/);
		const list = execFileSync("unzip", ["-l", file]).toString();
		assert.match(list, /top\/sub\/empty\.txt/);
		const out = join(dir, "x");
		execFileSync("unzip", ["-q", file, "-d", out]);
		assert.ok(readFileSync(join(out, "top/sub/été.bin")).equals(big));
	});

	it("reads archives made by the zip command", async function () {
		if (!hasZipTools) this.skip();
		const src = join(dir, "src");
		mkdirSync(join(src, "d/e"), { recursive: true });
		writeFileSync(join(src, "d/one.txt"), "one ".repeat(5000));
		writeFileSync(join(src, "d/e/two.bin"), big);
		const file = join(dir, "made.zip");
		execFileSync("zip", ["-qr", file, "d"], { cwd: src });
		const entries = await readAll(readFileSync(file));
		assert.equal(entries.get("d/one.txt")?.data?.toString(), "one ".repeat(5000));
		assert.ok(entries.get("d/e/two.bin")?.data?.equals(big));
		assert.equal(entries.get("d/e/")?.entry.dir, true);
	});

	it("writes valid ZIP64 records (forced) and more than 65535 entries", async function () {
		const zip = await buildZip(async (z) => {
			await z.addDirectory("d");
			await z.addFile("d/a.txt", "zip64 content");
		}, { forceZip64: true });
		const entries = await readAll(zip);
		assert.equal(entries.get("d/a.txt")?.data?.toString(), "zip64 content");
		if (hasZipTools) {
			writeFileSync(join(dir, "z64.zip"), zip);
			assert.match(execFileSync("unzip", ["-t", join(dir, "z64.zip")]).toString(), /No errors detected/);
		}
		const many = await buildZip(async (z) => {
			for (let i = 0; i < 70_000; i++) await z.addFile(`f/${i}`, "", { method: "store" });
		});
		const dir2 = await openZip(bufferSource(many));
		assert.equal(dir2.count, 70_000);
		if (hasZipTools) {
			writeFileSync(join(dir, "many.zip"), many);
			assert.match(execFileSync("unzip", ["-l", join(dir, "many.zip")], { maxBuffer: 64 << 20 }).toString(), /70000 files/);
		}
	});

	it("detects corruption (CRC) and truncation", async () => {
		const zip = await buildZip(async (z) => {
			await z.addFile("a.txt", Buffer.from("abcdefghij".repeat(10)), { method: "store" });
		});
		const bad = Buffer.from(zip);
		bad[bad.indexOf("abcdefghij") + 3] ^= 0xff;
		const src = bufferSource(bad);
		const [e] = await (async () => {
			const out: ZipEntry[] = [];
			for await (const x of (await openZip(src)).entries()) out.push(x);
			return out;
		})();
		await assert.rejects(collect(await openEntry(src, e)), /CRC mismatch/);
		await assert.rejects(openZip(bufferSource(zip.subarray(0, zip.length - 30))), /Not a zip archive|Corrupt|truncated/);
		await assert.rejects(openZip(bufferSource(Buffer.from("definitely not a zip file at all"))), /Not a zip archive/);
	});

	it("refuses zip-slip names", async () => {
		assert.equal(safeEntryPath("a/b/c.txt"), "a/b/c.txt");
		assert.equal(safeEntryPath("./a//b/"), "a/b");
		assert.equal(safeEntryPath("a\\b.txt"), "a/b.txt");
		for (const bad of ["../evil.txt", "a/../../evil.txt", "/etc/passwd", "C:\\windows\\x", "..\\x", "a/\u0001b"]) assert.throws(() => safeEntryPath(bad), /Refusing/, bad);
		// A hand-made archive with a ".." entry reads fine; it is the extraction that refuses the name.
		const evil = await buildZip(async (z) => {
			await z.addFile("ok.txt", "fine");
		});
		const patched = Buffer.from(evil.toString("latin1").split("ok.txt").join("../x.t"), "latin1");
		const names: string[] = [];
		for await (const e of (await openZip(bufferSource(patched))).entries()) names.push(e.name);
		assert.deepEqual(names, ["../x.t"]);
		assert.throws(() => safeEntryPath(names[0]), /outside the extraction folder/);
	});

	it("stops writing when its reader goes away, and can be aborted", async () => {
		const z = new ZipWriter();
		z.output.on("error", () => undefined);
		z.output.destroy(new Error("upload failed"));
		await assert.rejects(z.addFile("a", "x"), /closed/);
		const z2 = new ZipWriter();
		const got = collect(z2.output);
		await z2.addFile("a", "x");
		z2.abort(new Error("stop"));
		await assert.rejects(got, /stop/);
	});
});

describe("lib/jobs/tar", function () {
	this.timeout(30_000);
	const hasTar = spawnSync("tar", ["--version"]).status === 0;
	let dir: string;
	before(() => {
		dir = mkdtempSync(join(tmpdir(), "cellar-tar-"));
	});
	after(() => rmSync(dir, { recursive: true, force: true }));

	const longName = `deep/${"x".repeat(120)}/file-with-a-long-name.txt`;
	const data = Buffer.alloc(70_000);
	for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;

	async function build(gzip: boolean): Promise<Buffer> {
		const t = new TarWriter({ gzip });
		const out = collect(t.output);
		await t.addDirectory("top", { mtime: new Date("2024-01-02T03:04:05Z") });
		await t.addFile("top/a.txt", "alpha", 5);
		await t.addFile("top/été.bin", Readable.from([data.subarray(0, 1000), data.subarray(1000)]), data.length);
		await t.addFile(longName, "long", 4);
		await t.addFile("top/empty", "", 0);
		await t.finish();
		return out;
	}

	async function entries(buf: Buffer, gzip: boolean, readBodies = true) {
		const input = gzip ? Readable.from([buf]).pipe(createGunzip()) : Readable.from([buf]);
		const out: { name: string; type: string; data?: Buffer; mtime: Date }[] = [];
		for await (const e of readTar(input)) out.push({ name: e.name, type: e.type, mtime: e.mtime, data: readBodies && e.type === "file" ? await collect(e.body) : undefined });
		return out;
	}

	for (const gzip of [false, true]) {
		it(`round-trips ${gzip ? "tar.gz" : "tar"} (PAX names, unicode, empty files), and the tar command agrees`, async () => {
			const buf = await build(gzip);
			const got = await entries(buf, gzip);
			assert.deepEqual(got.map((e) => [e.name, e.type]), [["top/", "dir"], ["top/a.txt", "file"], ["top/été.bin", "file"], [longName, "file"], ["top/empty", "file"]]);
			assert.equal(got[1].data?.toString(), "alpha");
			assert.ok(got[2].data?.equals(data));
			assert.equal(got[3].data?.toString(), "long");
			assert.equal(got[0].mtime.getTime(), new Date("2024-01-02T03:04:05Z").getTime());
			// Entries whose content is not read are skipped.
			assert.equal((await entries(buf, gzip, false)).length, 5);
			if (!hasTar) return;
			const file = join(dir, gzip ? "t.tgz" : "t.tar");
			writeFileSync(file, buf);
			const out = join(dir, gzip ? "xz" : "x");
			mkdirSync(out);
			execFileSync("tar", [gzip ? "-xzf" : "-xf", file, "-C", out]);
			assert.ok(readFileSync(join(out, "top/été.bin")).equals(data));
			assert.equal(readFileSync(join(out, longName)).toString(), "long");
		});
	}

	it("reads archives made by the tar command", async function () {
		if (!hasTar) this.skip();
		const src = join(dir, "src");
		mkdirSync(join(src, "d/e"), { recursive: true });
		writeFileSync(join(src, "d/one.txt"), "one");
		writeFileSync(join(src, "d/e/two.bin"), data);
		writeFileSync(join(src, `d/${"y".repeat(150)}.txt`), "long");
		for (const [flags, gz] of [["-cf", false], ["-czf", true], ["--format=posix -cf", false]] as const) {
			const file = join(dir, `made-${flags.replace(/\W/g, "")}.tar`);
			execFileSync("sh", ["-c", `tar ${flags} ${file} d`], { cwd: src });
			const got = await entries(readFileSync(file), gz);
			const byName = new Map(got.map((e) => [e.name, e]));
			assert.equal(byName.get("d/one.txt")?.data?.toString(), "one");
			assert.ok(byName.get("d/e/two.bin")?.data?.equals(data));
			assert.equal(byName.get(`d/${"y".repeat(150)}.txt`)?.data?.toString(), "long");
			assert.equal(byName.get("d/e/")?.type, "dir");
		}
	});

	it("refuses sizes that do not match and corrupt archives", async () => {
		const t = new TarWriter();
		void collect(t.output).catch(() => undefined);
		await assert.rejects(t.addFile("a", "abc", 5), /smaller than announced/);
		const t2 = new TarWriter();
		void collect(t2.output).catch(() => undefined);
		await assert.rejects(t2.addFile("a", "abcdef", 5), /larger than announced/);
		await assert.rejects(entries(Buffer.alloc(1024, 7), false), /Not a tar archive/);
		const good = await build(false);
		await assert.rejects(entries(good.subarray(0, 1500), false), /truncated/);
	});
});

describe("lib/jobs/query (Bleve-lite)", () => {
	const log = (over: Partial<LogDoc>) => presentLog({ id: "m1", JobID: "copy-move-1", TaskID: "abcdef12-3456", Owner: "alice", OwnerUuid: "u1", Ts: 1000, Seq: 1, Level: "info", Msg: "Copied a.txt to b", OperationUuid: "copy-move-1-abcdef12", ...over });

	it("parses required, excluded and optional clauses, quotes, wildcards and comparisons", () => {
		assert.deepEqual(parseQuery(`+OperationUuid:"copy-move-1-abcdef12*"`), [{ occur: "must", field: "OperationUuid", op: "glob", value: "copy-move-1-abcdef12\u0000*" }]);
		assert.deepEqual(parseQuery(`+SchedulerJobUuid:"x y" -Level:debug word`), [
			{ occur: "must", field: "SchedulerJobUuid", op: "eq", value: "x y" },
			{ occur: "not", field: "Level", op: "eq", value: "debug" },
			{ occur: "should", field: undefined, op: "eq", value: "word" },
		]);
		assert.deepEqual(parseQuery("+Ts:>=100"), [{ occur: "must", field: "Ts", op: ">=", value: "100" }]);
		assert.deepEqual(parseQuery('Msg:"a \\"quoted\\" \\*star"'), [{ occur: "should", field: "Msg", op: "eq", value: 'a "quoted" *star' }]);
		assert.deepEqual(parseQuery(""), []);
		for (const bad of ['+Op:"unterminated', "+Ts:>abc", "(a OR b)", "+Field:"]) assert.throws(() => parseQuery(bad), /query|number|syntax|Missing/i, bad);
		assert.throws(() => checkFields(parseQuery("+Nope:1"), LOG_FIELDS), /Unsupported field Nope/);
	});

	it("matches logs like Cells' queries do", () => {
		const m = (q: string, l = log({})) => matches(parseQuery(q), l, LOG_FIELDS, "Msg");
		assert.ok(m(`+OperationUuid:"copy-move-1-abcdef12*"`));
		assert.ok(m(`+OperationUuid:"copy-move-1*"`));
		assert.ok(!m(`+OperationUuid:"copy-move-2*"`));
		assert.ok(m(`+SchedulerJobUuid:"copy-move-1"`));
		assert.ok(!m(`+SchedulerJobUuid:"copy-move"`));
		assert.ok(m(`+SchedulerTaskUuid:"abcdef12-3456"`));
		assert.ok(m(`+SchedulerJobUuid:"copy-move-1" -Level:error`));
		assert.ok(!m(`+SchedulerJobUuid:"copy-move-1" -Level:INFO`));
		assert.ok(m("copied"));
		assert.ok(!m("deleted"));
		assert.ok(m("deleted copied"));
		assert.ok(m("+Ts:>=1000 +Ts:<1001"));
		assert.ok(!m("+Ts:>1000"));
		assert.ok(m("Msg:cop*"));
	});

	it("derives a database pre-filter from required id clauses", () => {
		const f = prefilter(parseQuery(`+OperationUuid:"copy-move-1-ab*" +SchedulerJobUuid:"j" Level:info -SchedulerTaskUuid:"t"`), LOG_FIELDS);
		assert.deepEqual(Object.keys(f), ["OperationUuid", "SchedulerJobUuid"]);
		assert.deepEqual(f.OperationUuid, { prefix: "copy-move-1-ab" });
		assert.deepEqual(f.SchedulerJobUuid, { eq: "j" });
		assert.ok(fullyPrefiltered(parseQuery(`+OperationUuid:"x-ab*" +SchedulerJobUuid:"x"`), LOG_FIELDS));
		assert.ok(!fullyPrefiltered(parseQuery(`+OperationUuid:"x-*b"`), LOG_FIELDS));
		assert.ok(!fullyPrefiltered(parseQuery(`+SchedulerJobUuid:"x" -Level:info`), LOG_FIELDS));
		assert.ok(!fullyPrefiltered(parseQuery(`SchedulerJobUuid:"x"`), LOG_FIELDS));
	});
});

describe("lib/jobs/params", () => {
	it("parses JsonParameters and refuses bad JSON, non-objects and templates", () => {
		assert.deepEqual(parseJsonParameters('{"a":1}'), { a: 1 });
		assert.throws(() => parseJsonParameters("{nope"), /not valid JSON/);
		assert.throws(() => parseJsonParameters("[1]"), /JSON object/);
		assert.throws(() => parseJsonParameters('{"target":"{{.User.Name}}"}'), /templates/);
	});
	it("normalises copy/move parameters", () => {
		assert.deepEqual(jobParams("copy", { nodes: ["/ws/a", "ws/b/"], target: "/ws/dest", targetParent: true }), { type: "copy", nodes: ["ws/a", "ws/b"], target: "ws/dest", targetParent: true });
		// Several nodes cannot share one name: the target is their folder, whatever targetParent says (as Cells' CLI sends it).
		assert.deepEqual(jobParams("move", { nodes: ["ws/a", "ws/b"], target: "ws/x", targetParent: false }), { type: "move", nodes: ["ws/a", "ws/b"], target: "ws/x", targetParent: true });
		assert.deepEqual(jobParams("move", { nodes: ["ws/a"], target: "ws/x" }), { type: "move", nodes: ["ws/a"], target: "ws/x", targetParent: false });
		assert.throws(() => jobParams("copy", { nodes: [], target: "ws/x" }), /non-empty/);
		assert.throws(() => jobParams("copy", { nodes: ["ws/../x"], target: "ws/x" }), /\.\./);
		assert.throws(() => jobParams("compress", { nodes: ["ws/a"], archiveName: "ws/a.rar", format: "rar" }), /format/);
		assert.deepEqual(jobParams("extract", { node: "ws/a.zip" }), { node: "ws/a.zip", target: "", format: "zip" });
	});
});

describe("lib/jobs/queue", () => {
	it("runs in order within the per-user limit, and pauses and stops between items", async () => {
		const started: string[] = [];
		const release = new Map<string, () => void>();
		const results = new Map<string, string>();
		const q = new JobQueue(
			async (id: string, c: TaskControl) => {
				started.push(id);
				try {
					for (let i = 0; i < 3; i++) {
						await c.checkpoint();
						if (i === 1) await new Promise<void>((r) => release.set(id, r));
					}
					results.set(id, "done");
				} catch (e) {
					results.set(id, e instanceof TaskInterrupted ? "interrupted" : "error");
				}
			},
			{ perUser: 1, total: 2 },
		);
		const wait = async (cond: () => boolean) => {
			for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
			assert.ok(cond());
		};
		const a1 = q.enqueue("a1", "alice");
		q.enqueue("a2", "alice");
		q.enqueue("b1", "bob");
		await wait(() => started.length === 2);
		assert.deepEqual(started, ["a1", "b1"]); // a2 waits for a1 (one per user)
		assert.ok(q.isWaiting("a2"));
		a1.pause();
		release.get("a1")?.();
		await new Promise((r) => setTimeout(r, 30));
		assert.equal(results.get("a1"), undefined); // paused at its checkpoint
		a1.resume();
		await wait(() => results.get("a1") === "done");
		await wait(() => release.has("a2"));
		q.control("a2")?.stop();
		release.get("a2")?.();
		await wait(() => results.get("a2") === "interrupted");
		// A waiting task can be withdrawn before it starts; a paused waiting task is passed over.
		q.enqueue("b2", "bob");
		const b3 = q.enqueue("b3", "bob");
		b3.pause();
		assert.equal(q.withdraw("b2"), true);
		release.get("b1")?.();
		await wait(() => results.get("b1") === "done");
		await new Promise((r) => setTimeout(r, 20));
		assert.ok(!started.includes("b2") && !started.includes("b3"));
		b3.resume();
		q.pump();
		await wait(() => release.has("b3"));
		release.get("b3")?.();
		await wait(() => results.get("b3") === "done");
	});
});

describe("lib/jobs/resync", () => {
	const md5 = (s: string) => createHash("md5").update(s).digest("hex");
	it("adds what storage has, removes what it lost, updates what changed, keeps folders", async () => {
		const index: IndexEntry[] = [
			{ path: "", type: "COLLECTION", size: 0, mtime: 0 },
			{ path: "docs", type: "COLLECTION", size: 0, mtime: 0 },
			{ path: "docs/kept.txt", type: "LEAF", size: 4, etag: md5("kept"), mtime: 2000 },
			{ path: "docs/gone.txt", type: "LEAF", size: 4, etag: md5("gone"), mtime: 2000 },
			{ path: "docs/grown.txt", type: "LEAF", size: 1, etag: md5("g"), mtime: 2000 },
			{ path: "docs/touched.txt", type: "LEAF", size: 3, etag: md5("old"), mtime: 2000 },
			{ path: "was-file", type: "LEAF", size: 1, etag: md5("w"), mtime: 2000 },
			{ path: "empty", type: "COLLECTION", size: 0, mtime: 0 },
		];
		const content: Record<string, string> = { "docs/kept.txt": "kept", "docs/grown.txt": "grown", "docs/touched.txt": "new", "docs/new.txt": "fresh", "was-file/inner.txt": "in", "docs": "clash", "bad\\name": "x" };
		const storage: StorageEntry[] = Object.keys(content)
			.sort()
			.map((key) => ({ key, size: content[key].length, mtime: key === "docs/touched.txt" ? 3000_000 : 1000_000 }));
		const batches: { add: ResyncAdd[]; remove: string[] }[] = [];
		const res = await resync({
			index: async function* () {
				yield* index;
			},
			storage: async function* () {
				yield* storage;
			},
			md5: async (key) => md5(content[key]),
			apply: async (b) => void batches.push(b),
			checkKey: (key) => (key.includes("\\") ? "bad name" : null),
		});
		assert.deepEqual(batches[0], { add: [], remove: ["docs/gone.txt", "was-file"] });
		const adds = batches.slice(1).flatMap((b) => b.add);
		assert.deepEqual(adds.map((a) => a.path).sort(), ["docs/grown.txt", "docs/new.txt", "docs/touched.txt", "was-file/inner.txt"]);
		assert.equal(adds.find((a) => a.path === "docs/new.txt")?.etag, md5("fresh"));
		assert.deepEqual(res, { added: 2, updated: 2, removed: 2, unchanged: 1, skipped: 2, scanned: storage.length });
	});
});

describe("jobs: resync at start", () => {
	it("picks structured, non-internal datasources created before the start, unless they opt out", () => {
		const at = 1_000;
		const list = [
			{ Name: "flat", FlatStorage: true, CreationDate: 10 },
			{ Name: "struct", FlatStorage: false, CreationDate: 10 },
			{ Name: "skip", FlatStorage: false, SkipSyncOnRestart: true, CreationDate: 10 },
			{ Name: "off", FlatStorage: false, Disabled: true, CreationDate: 10 },
			{ Name: "internal", FlatStorage: false, CreationDate: 10, StorageConfiguration: { cellsInternal: "true" } },
			{ Name: "new", FlatStorage: false, CreationDate: 1_001 },
			{ Name: "undated", FlatStorage: false },
		];
		assert.deepEqual(resyncOnRestart(list, at), ["struct", "undated"]);
	});

	function deps(over: Partial<ResyncAtStartDeps> = {}) {
		const queued: string[] = [];
		const warned: string[] = [];
		const d: ResyncAtStartDeps = {
			servicesUp: async () => true,
			stopping: () => false,
			datasources: async () => [
				{ Name: "struct", FlatStorage: false, CreationDate: 10 },
				{ Name: "flat", FlatStorage: true, CreationDate: 10 },
				{ Name: "late", FlatStorage: false, CreationDate: 2_000 },
			],
			queue: async (ds) => void queued.push(ds),
			lease: null,
			warn: (m) => void warned.push(m),
			now: () => 1_000,
			...over,
		};
		return { d, queued, warned };
	}

	it("queues the structured datasources' resyncs once the services are up, alone or as the lease's holder", async () => {
		let polls = 0;
		const alone = deps({ servicesUp: async () => ++polls >= 3 });
		assert.equal(await resyncAtStart(alone.d), true);
		assert.equal(polls, 3, "waits as long as the services take");
		assert.deepEqual(alone.queued, ["struct"]);
		const holder = deps({ lease: { run: async (work) => (await work(), { ran: true }) } });
		assert.equal(await resyncAtStart(holder.d), true);
		assert.deepEqual(holder.queued, ["struct"]);
		const other = deps({ lease: { run: async () => ({ ran: false }) } });
		assert.equal(await resyncAtStart(other.d), false);
		assert.deepEqual(other.queued, [], "another node holds the lease: it resyncs");
	});

	it("gives up quietly when the node stops, and says why when a resync cannot be queued", async () => {
		const stopping = deps({ servicesUp: async () => false, stopping: () => true });
		assert.equal(await resyncAtStart(stopping.d), false);
		assert.deepEqual([stopping.queued, stopping.warned], [[], []]);
		const failing = deps({ queue: async () => Promise.reject(new Error("tree unavailable")) });
		assert.equal(await resyncAtStart(failing.d), false);
		assert.deepEqual(failing.warned, ["Resync of structured datasources at start: tree unavailable"]);
	});
});
