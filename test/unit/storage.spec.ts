// The storage layer of datasources: one behaviour suite run against LocalStore (a temp folder) and S3Store (an
// in-process s3rver), plus the LOCAL-only guarantees (path checks, temp files, resumable multipart, flat memory)
// and the DataSource -> store mapping.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { BadRequestError, NotFoundError } from "../../lib/errors";
import { LocalStore } from "../../lib/storage/local";
import { S3Store, createBucket, listBuckets } from "../../lib/storage/s3";
import { openStore, s3ConfigFromDataSource } from "../../lib/storage";
import { RangeNotSatisfiableError, type ObjectInfo, type ObjectStore } from "../../lib/storage/types";
import { startS3rver, type TestS3 } from "../helpers/s3rver";
import { generated } from "../helpers/streams";

const MiB = 1024 * 1024;

function md5(buf: Buffer): string {
	return createHash("md5").update(buf).digest("hex");
}

/** A stream of `buf` in chunks, optionally yielding to the event loop between chunks (to interleave uploads). */
function bufStream(buf: Buffer, chunk = 64 * 1024, slow = false): Readable {
	return Readable.from(
		(async function* () {
			for (let i = 0; i < buf.length; i += chunk) {
				if (slow) await new Promise((r) => setTimeout(r, 2));
				yield buf.subarray(i, i + chunk);
			}
		})(),
		{ objectMode: false },
	);
}

/** `total` pseudo-random bytes generated on the fly (never held in memory); md5 of what was produced in `.md5()`. */
/** Emits `before` bytes, then fails like a client that went away (destroyed with an error, or without one). */
function failingStream(before: number, withError = true): Readable {
	let sent = 0;
	const s = new Readable({
		read() {
			if (sent >= before) {
				setImmediate(() => s.destroy(withError ? new Error("client went away") : undefined));
				return;
			}
			const n = Math.min(64 * 1024, before - sent);
			sent += n;
			setImmediate(() => s.push(Buffer.alloc(n, 7)));
		},
	});
	return s;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
	return Buffer.concat(chunks);
}

async function keysOf(it: AsyncIterable<ObjectInfo>): Promise<string[]> {
	const out: string[] = [];
	for await (const o of it) out.push(o.key);
	return out;
}

async function rejectsWith(p: Promise<unknown>, cls: new (...a: never[]) => Error): Promise<void> {
	await assert.rejects(p, (err: unknown) => {
		assert.ok(err instanceof cls, `expected ${cls.name}, got ${(err as Error)?.name}: ${(err as Error)?.message}`);
		return true;
	});
}

interface Harness {
	store: ObjectStore;
	/** Files left in the LOCAL staging area (always [] on S3). */
	tempFiles(): string[];
	cleanup(): Promise<void>;
}

function behaviourSuite(name: string, make: () => Promise<Harness>): void {
	describe(`ObjectStore behaviour: ${name}`, function () {
		this.timeout(60_000);
		let h: Harness;
		let store: ObjectStore;
		before(async () => {
			h = await make();
			store = h.store;
		});
		after(async () => h?.cleanup());

		it("puts and gets an object, with md5 and size computed while streaming", async () => {
			const data = Buffer.from("hello, cellar storage\n".repeat(1000));
			const res = await store.put("docs/hello.txt", bufStream(data, 1000), { contentType: "text/plain" });
			assert.deepEqual(res, { size: data.length, md5: md5(data) });
			assert.ok((await readAll(await store.get("docs/hello.txt"))).equals(data));
			// known size path
			const small = Buffer.from("small");
			assert.deepEqual(await store.put("docs/small.txt", bufStream(small), { size: small.length }), { size: 5, md5: md5(small) });
			assert.equal((await readAll(await store.get("docs/small.txt"))).toString(), "small");
		});

		it("stores empty objects and keys with spaces and unicode", async () => {
			assert.deepEqual(await store.put("empty.bin", bufStream(Buffer.alloc(0))), { size: 0, md5: md5(Buffer.alloc(0)) });
			assert.equal((await readAll(await store.get("empty.bin"))).length, 0);
			await store.put("dir with space/Été 😀.txt", bufStream(Buffer.from("unicode")));
			assert.equal((await readAll(await store.get("dir with space/Été 😀.txt"))).toString(), "unicode");
			assert.equal((await store.head("dir with space/Été 😀.txt"))?.size, 7);
		});

		it("overwrites an object", async () => {
			await store.put("over.txt", bufStream(Buffer.from("first version")));
			await store.put("over.txt", bufStream(Buffer.from("v2")));
			assert.equal((await readAll(await store.get("over.txt"))).toString(), "v2");
		});

		it("reads inclusive ranges, clamps the end, refuses a start past the end", async () => {
			const data = Buffer.from("0123456789abcdef");
			await store.put("range.txt", bufStream(data));
			assert.equal((await readAll(await store.get("range.txt", { start: 2, end: 5 }))).toString(), "2345");
			// (not 0-0: s3rver ignores an end of 0 and sends everything)
			assert.equal((await readAll(await store.get("range.txt", { start: 1, end: 1 }))).toString(), "1");
			assert.equal((await readAll(await store.get("range.txt", { start: 10, end: 1000 }))).toString(), "abcdef");
			await rejectsWith(store.get("range.txt", { start: 16, end: 20 }), RangeNotSatisfiableError);
			await rejectsWith(store.get("range.txt", { start: 5, end: 2 }), BadRequestError);
		});

		it("heads objects, null when absent; get of a missing key is NotFound", async () => {
			const before = Date.now();
			await store.put("head/a.bin", bufStream(Buffer.alloc(1234, 1)));
			const info = await store.head("head/a.bin");
			assert.ok(info);
			assert.equal(info.key, "head/a.bin");
			assert.equal(info.size, 1234);
			assert.ok(Math.abs(info.mtime - before) < 60_000, `mtime ${info.mtime} near ${before}`);
			assert.equal(await store.head("head/missing.bin"), null);
			assert.equal(await store.head("nowhere/at/all"), null);
			await rejectsWith(store.get("head/missing.bin"), NotFoundError);
		});

		it("deletes idempotently", async () => {
			await store.put("del/x.txt", bufStream(Buffer.from("x")));
			await store.delete("del/x.txt");
			assert.equal(await store.head("del/x.txt"), null);
			await store.delete("del/x.txt");
			await store.delete("never/existed.txt");
		});

		it("copies an object; copying a missing one is NotFound", async () => {
			const data = Buffer.from("copy me ".repeat(500));
			await store.put("copy/src.txt", bufStream(data));
			assert.deepEqual(await store.copy("copy/src.txt", "copy/sub/dst.txt"), { size: data.length });
			assert.ok((await readAll(await store.get("copy/sub/dst.txt"))).equals(data));
			assert.ok((await readAll(await store.get("copy/src.txt"))).equals(data));
			assert.deepEqual(await store.copy("copy/src.txt", "copy/src.txt"), { size: data.length });
			// (no "+", "#", "?"... here: s3rver decodes x-amz-copy-source with decodeURI, which leaves %2B etc. encoded)
			await store.put("copy/space name é.txt", bufStream(Buffer.from("sp")));
			await store.copy("copy/space name é.txt", "copy/copied name.txt");
			assert.equal((await readAll(await store.get("copy/copied name.txt"))).toString(), "sp");
			await rejectsWith(store.copy("copy/nope.txt", "copy/x.txt"), NotFoundError);
		});

		it("lists recursively in key order, by prefix", async () => {
			for (const k of ["ls/b.txt", "ls/a/z.txt", "ls/a.txt", "ls/a/b/c.txt", "ls/0.txt", "lsx/other.txt"]) {
				await store.put(k, bufStream(Buffer.from(k)));
			}
			assert.deepEqual(await keysOf(store.list("ls/")), ["ls/0.txt", "ls/a.txt", "ls/a/b/c.txt", "ls/a/z.txt", "ls/b.txt"]);
			assert.deepEqual(await keysOf(store.list("ls/a")), ["ls/a.txt", "ls/a/b/c.txt", "ls/a/z.txt"]);
			assert.deepEqual(await keysOf(store.list("ls")), ["ls/0.txt", "ls/a.txt", "ls/a/b/c.txt", "ls/a/z.txt", "ls/b.txt", "lsx/other.txt"]);
			assert.deepEqual(await keysOf(store.list("nothing-here/")), []);
			const all = await keysOf(store.list(""));
			assert.ok(all.includes("ls/a/b/c.txt") && all.includes("docs/hello.txt"));
			assert.deepEqual(all, [...all].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
			for await (const o of store.list("ls/a/b/")) {
				assert.equal(o.key, "ls/a/b/c.txt");
				assert.equal(o.size, "ls/a/b/c.txt".length);
				assert.ok(o.mtime > 0);
			}
		});

		it("mkdir does not fail, rmdir deletes a folder recursively and is idempotent", async () => {
			await store.mkdir("tree/sub/deeper");
			await store.mkdir("tree/sub/deeper/"); // again, with a trailing slash
			await store.put("tree/sub/deeper/f1.txt", bufStream(Buffer.from("1")));
			await store.put("tree/sub/f2.txt", bufStream(Buffer.from("2")));
			await store.put("tree/keep.txt", bufStream(Buffer.from("3")));
			await store.put("treeish.txt", bufStream(Buffer.from("4")));
			await store.rmdir("tree/sub");
			assert.deepEqual(await keysOf(store.list("tree")), ["tree/keep.txt", "treeish.txt"]);
			await store.rmdir("tree/sub");
			await store.rmdir("never/was");
		});

		it("refuses bad keys", async () => {
			for (const bad of ["", "/abs.txt", "a/../../x", "..", "a//b", "a/./b", "a\\b", "nul\0.txt", "x".repeat(256)]) {
				await rejectsWith(store.put(bad, bufStream(Buffer.from("x"))), BadRequestError);
				await rejectsWith(store.head(bad), BadRequestError);
			}
		});

		it("refuses a body whose length differs from the announced size, storing nothing", async () => {
			await rejectsWith(store.put("size/short.txt", bufStream(Buffer.from("12345")), { size: 10 }), BadRequestError);
			await rejectsWith(store.put("size/long.txt", bufStream(Buffer.from("12345")), { size: 3 }), BadRequestError);
			assert.equal(await store.head("size/short.txt"), null);
			assert.equal(await store.head("size/long.txt"), null);
			assert.deepEqual(h.tempFiles(), []);
		});

		it("an aborted upload stream leaves no object and no temp file", async () => {
			await rejectsWith(store.put("abort/small.bin", failingStream(300 * 1024)), Error);
			assert.equal(await store.head("abort/small.bin"), null);
			// big enough for a multipart upload on S3 (parts of 8 MiB)
			await rejectsWith(store.put("abort/big.bin", failingStream(20 * MiB)), Error);
			assert.equal(await store.head("abort/big.bin"), null);
			// destroyed without an error (premature close)
			await rejectsWith(store.put("abort/closed.bin", failingStream(2 * MiB, false)), Error);
			assert.equal(await store.head("abort/closed.bin"), null);
			// with a known size (single PutObject on S3)
			await rejectsWith(store.put("abort/sized.bin", failingStream(MiB), { size: 4 * MiB }), Error);
			assert.equal(await store.head("abort/sized.bin"), null);
			// an existing object stays as it was
			await store.put("abort/existing.txt", bufStream(Buffer.from("old")));
			await rejectsWith(store.put("abort/existing.txt", failingStream(MiB)), Error);
			assert.equal((await readAll(await store.get("abort/existing.txt"))).toString(), "old");
			assert.deepEqual(h.tempFiles(), []);
		});

		it("multipart: parts uploaded in parallel and out of order, listed, completed", async () => {
			const p1 = Buffer.alloc(5 * MiB, 1);
			const p2 = Buffer.alloc(5 * MiB, 2);
			p2.write("part two marker", 100);
			const p3 = Buffer.from("the last part is small");
			const uploadId = await store.createMultipart("mp/big.bin");
			assert.equal(typeof uploadId, "string");
			// part 3 first, then 2 and 1 concurrently with slow streams
			const r3 = await store.putPart(uploadId, 3, bufStream(p3), p3.length);
			const [r2, r1] = await Promise.all([
				store.putPart(uploadId, 2, bufStream(p2, 256 * 1024, true), p2.length),
				store.putPart(uploadId, 1, bufStream(p1, 256 * 1024, true)), // unknown size
			]);
			assert.equal(r1.size, p1.length);
			assert.equal(r2.size, p2.length);
			assert.equal(r3.size, p3.length);
			assert.equal(r1.etag, `"${md5(p1)}"`);
			assert.equal(r3.etag, `"${md5(p3)}"`);
			const listed = await store.listParts(uploadId);
			assert.deepEqual(listed, [
				{ partNumber: 1, etag: r1.etag, size: p1.length },
				{ partNumber: 2, etag: r2.etag, size: p2.length },
				{ partNumber: 3, etag: r3.etag, size: p3.length },
			]);
			assert.equal(await store.head("mp/big.bin"), null, "nothing visible before completion");
			const done = await store.completeMultipart(uploadId, [
				{ partNumber: 1, etag: r1.etag },
				{ partNumber: 2, etag: r2.etag },
				{ partNumber: 3, etag: r3.etag },
			]);
			const whole = Buffer.concat([p1, p2, p3]);
			assert.equal(done.size, whole.length);
			assert.ok(typeof done.etag === "string" && done.etag.length > 2);
			if (done.md5 !== undefined) assert.equal(done.md5, md5(whole));
			if (store.kind === "LOCAL") {
				const s3etag = md5(Buffer.concat([p1, p2, p3].map((p) => createHash("md5").update(p).digest())));
				assert.equal(done.etag, `"${s3etag}-3"`);
			}
			const back = await readAll(await store.get("mp/big.bin"));
			assert.equal(md5(back), md5(whole));
			assert.equal((await store.head("mp/big.bin"))?.size, whole.length);
			assert.ok(!(await keysOf(store.list(""))).some((k) => k.includes("cellar")), "no staging area in listings");
			// s3rver has no ListParts: the S3 store then only knows the parts of uploads it has running.
			if (store.kind === "LOCAL") await rejectsWith(store.listParts(uploadId), NotFoundError);
		});

		it("multipart: bad part numbers and order are refused, unknown uploads are NotFound", async () => {
			const uploadId = await store.createMultipart("mp/bad.bin");
			await rejectsWith(store.putPart(uploadId, 0, bufStream(Buffer.from("x"))), BadRequestError);
			await rejectsWith(store.putPart(uploadId, 10001, bufStream(Buffer.from("x"))), BadRequestError);
			const a = await store.putPart(uploadId, 1, bufStream(Buffer.from("a")));
			const b = await store.putPart(uploadId, 2, bufStream(Buffer.from("b")));
			await rejectsWith(
				store.completeMultipart(uploadId, [
					{ partNumber: 2, etag: b.etag },
					{ partNumber: 1, etag: a.etag },
				]),
				BadRequestError,
			);
			await rejectsWith(store.completeMultipart(uploadId, []), BadRequestError);
			await rejectsWith(store.putPart("not-an-upload", 1, bufStream(Buffer.from("x"))), NotFoundError);
			await rejectsWith(store.listParts("../../etc"), NotFoundError);
			await store.abortMultipart(uploadId);
			await store.abortMultipart(uploadId); // idempotent
			assert.equal(await store.head("mp/bad.bin"), null);
		});

		it("multipart: an aborted part stream stores no part", async () => {
			const uploadId = await store.createMultipart("mp/partfail.bin");
			await rejectsWith(store.putPart(uploadId, 1, failingStream(MiB), 2 * MiB), Error);
			await rejectsWith(store.putPart(uploadId, 2, failingStream(MiB)), Error);
			const parts = await store.listParts(uploadId);
			assert.deepEqual(parts, []);
			await store.abortMultipart(uploadId);
		});

		it("streams 50 MB in and out", async function () {
			const g = generated(50 * MiB);
			const res = await store.put("big/50mb.bin", g.stream);
			assert.equal(res.size, 50 * MiB);
			assert.equal(res.md5, g.md5());
			const hash = createHash("md5");
			let n = 0;
			for await (const c of (await store.get("big/50mb.bin")) as AsyncIterable<Buffer>) {
				hash.update(c);
				n += c.length;
			}
			assert.equal(n, 50 * MiB);
			assert.equal(hash.digest("hex"), res.md5);
			await store.delete("big/50mb.bin");
		});
	});
}

// ---------------------------------------------------------------------------------------------------------------

behaviourSuite("LocalStore", async () => {
	const root = mkdtempSync(join(tmpdir(), "cellar-local-"));
	const store = new LocalStore(join(root, "ds"));
	return {
		store,
		tempFiles: () => (existsSync(join(root, "ds", ".cellar-tmp")) ? readdirSync(join(root, "ds", ".cellar-tmp")) : []),
		cleanup: async () => rmSync(root, { recursive: true, force: true }),
	};
});

let s3: TestS3 | undefined;
async function sharedS3(): Promise<TestS3> {
	s3 ??= await startS3rver();
	return s3;
}
after(async () => {
	await s3?.stop();
	s3 = undefined;
});

behaviourSuite("S3Store on s3rver", async () => {
	const srv = await sharedS3();
	await srv.createBucket("cellar-suite");
	const store = new S3Store({
		endpoint: srv.endpoint,
		region: "us-east-1",
		bucket: "cellar-suite",
		baseFolder: "/pydiods1/",
		accessKeyId: srv.accessKeyId,
		secretAccessKey: srv.secretAccessKey,
		forcePathStyle: true,
		checksumWhenRequired: true,
	});
	return { store, tempFiles: () => [], cleanup: async () => store.close() };
});

describe("LocalStore specifics", function () {
	this.timeout(60_000);
	let root: string;
	let store: LocalStore;
	beforeEach(() => {
		root = mkdtempSync(join(tmpdir(), "cellar-local-"));
		store = new LocalStore(root);
	});
	afterEach(() => rmSync(root, { recursive: true, force: true }));

	it("refuses traversal, absolute paths and the staging areas", async () => {
		const bad = ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "a\\..\\b", ".cellar-tmp/x", ".cellar-uploads/x", "é".repeat(128), "a/\0"];
		for (const key of bad) {
			await rejectsWith(store.put(key, bufStream(Buffer.from("x"))), BadRequestError);
			await rejectsWith(store.get(key), BadRequestError);
			await rejectsWith(store.delete(key), BadRequestError);
			await rejectsWith(store.copy("a.txt", key), BadRequestError);
			await rejectsWith(store.mkdir(key), BadRequestError);
			await rejectsWith(store.rmdir(key), BadRequestError);
			await rejectsWith(store.createMultipart(key), BadRequestError);
		}
		await rejectsWith(store.rmdir(""), BadRequestError);
		await rejectsWith(keysOf(store.list("../")), BadRequestError);
		assert.ok(!existsSync(join(root, "..", "outside.txt")));
	});

	it("writes through .cellar-tmp and keeps staging out of listings", async () => {
		await store.put("a/b.txt", bufStream(Buffer.from("b")));
		const up = await store.createMultipart("c.txt");
		await store.putPart(up, 1, bufStream(Buffer.from("part")));
		assert.ok(existsSync(join(root, ".cellar-uploads", up, "1")));
		assert.ok(existsSync(join(root, ".cellar-uploads", up, "manifest.json")));
		assert.deepEqual(await keysOf(store.list("")), ["a/b.txt"]);
		assert.deepEqual(readdirSync(join(root, ".cellar-tmp")), []);
		await store.abortMultipart(up);
		assert.ok(!existsSync(join(root, ".cellar-uploads", up)));
	});

	it("a multipart upload survives a restart (new instance on the same folder)", async () => {
		const up = await store.createMultipart("resumed/file.bin");
		const a = await store.putPart(up, 1, bufStream(Buffer.from("first-")));
		const again = new LocalStore(root);
		assert.deepEqual(await again.listParts(up), [{ partNumber: 1, etag: a.etag, size: 6 }]);
		const b = await again.putPart(up, 2, bufStream(Buffer.from("second")));
		// a missing sidecar is recomputed
		rmSync(join(root, ".cellar-uploads", up, "2.json"));
		assert.deepEqual((await again.listParts(up)).map((p) => p.etag), [a.etag, b.etag]);
		const done = await again.completeMultipart(up, [
			{ partNumber: 1, etag: a.etag.replace(/"/g, "") },
			{ partNumber: 2, etag: b.etag },
		]);
		assert.equal(done.size, 12);
		// Completion does not hash the content again: the ETag is S3's md5 of the parts' md5s.
		assert.equal(done.etag, `"${md5(Buffer.concat([Buffer.from(md5(Buffer.from("first-")), "hex"), Buffer.from(md5(Buffer.from("second")), "hex")]))}-2"`);
		assert.equal((await readAll(await store.get("resumed/file.bin"))).toString(), "first-second");
		assert.ok(!existsSync(join(root, ".cellar-uploads", up)));
	});

	it("completion checks part presence and ETags", async () => {
		const up = await store.createMultipart("check.bin");
		const a = await store.putPart(up, 1, bufStream(Buffer.from("aaa")));
		await rejectsWith(store.completeMultipart(up, [{ partNumber: 1, etag: '"00000000000000000000000000000000"' }]), BadRequestError);
		await rejectsWith(
			store.completeMultipart(up, [
				{ partNumber: 1, etag: a.etag },
				{ partNumber: 2, etag: a.etag },
			]),
			BadRequestError,
		);
		assert.equal(await store.head("check.bin"), null);
		assert.deepEqual(readdirSync(join(root, ".cellar-tmp")), []);
		const ok = await store.completeMultipart(up, [{ partNumber: 1, etag: a.etag }]);
		assert.equal(ok.size, 3);
	});

	it("files and folders with the same name conflict instead of failing obscurely", async () => {
		await store.put("f", bufStream(Buffer.from("file")));
		await assert.rejects(store.put("f/child.txt", bufStream(Buffer.from("x"))), { code: 409 });
		await assert.rejects(store.mkdir("f/sub"), { code: 409 });
		await store.mkdir("d");
		await assert.rejects(store.put("d", bufStream(Buffer.from("x"))), { code: 409 });
		await assert.rejects(store.rmdir("f"), { code: 409 });
		assert.deepEqual(readdirSync(join(root, ".cellar-tmp")), []);
	});

	it("cleanupStaging removes stale temp files and uploads", async () => {
		await store.put("x.txt", bufStream(Buffer.from("x")));
		writeFileSync(join(root, ".cellar-tmp", "stale.tmp"), "left by a crash");
		const up = await store.createMultipart("y.txt");
		await new Promise((r) => setTimeout(r, 20));
		assert.deepEqual(await store.cleanupStaging(10), { removed: 2 });
		await rejectsWith(store.listParts(up), NotFoundError);
		assert.equal((await readAll(await store.get("x.txt"))).toString(), "x");
	});

	it("keeps memory flat while streaming 50 MB in and out", async () => {
		// Warm-up: the first MBs through a fresh process grow the allocator's pools (garbage chunks not yet
		// collected), which says nothing about buffering; flat means: no growth with the size of the stream.
		const warm = generated(20 * MiB);
		await store.put("mem/warm.bin", warm.stream);
		for await (const c of (await store.get("mem/warm.bin")) as AsyncIterable<Buffer>) void c;
		const g = generated(50 * MiB);
		global.gc?.();
		const before = process.memoryUsage().rss;
		let peak = before;
		const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
		try {
			const res = await store.put("mem/50mb.bin", g.stream);
			assert.equal(res.md5, g.md5());
			const hash = createHash("md5");
			for await (const c of (await store.get("mem/50mb.bin")) as AsyncIterable<Buffer>) hash.update(c);
			assert.equal(hash.digest("hex"), res.md5);
			const up = await store.createMultipart("mem/mp.bin");
			const parts = [];
			for (let n = 1; n <= 3; n++) {
				const part = generated(10 * MiB);
				parts.push({ partNumber: n, etag: (await store.putPart(up, n, part.stream)).etag });
			}
			assert.equal((await store.completeMultipart(up, parts)).size, 30 * MiB);
		} finally {
			clearInterval(timer);
		}
		peak = Math.max(peak, process.memoryUsage().rss);
		const growth = (peak - before) / MiB;
		if (process.env.STORAGE_DEBUG) console.log(`      rss growth ${growth.toFixed(1)} MiB`);
		assert.ok(growth < 30, `rss grew by ${growth.toFixed(1)} MiB`);
	});
});

describe("S3Store specifics (s3rver)", function () {
	this.timeout(60_000);
	let srv: TestS3;
	const conf = () => ({
		endpoint: srv.endpoint,
		region: "us-east-1",
		accessKeyId: srv.accessKeyId,
		secretAccessKey: srv.secretAccessKey,
		forcePathStyle: true,
		checksumWhenRequired: true,
	});
	before(async () => {
		srv = await sharedS3();
	});

	it("creates and lists buckets", async () => {
		await createBucket(conf(), "cellar-made");
		await createBucket(conf(), "cellar-made"); // idempotent
		await rejectsWith(createBucket(conf(), "B"), BadRequestError);
		const names = (await listBuckets(conf())).map((b) => b.Name);
		assert.ok(names.includes("cellar-made"), names.join(","));
	});

	it("prefixes keys with the base folder and paginates listings with StartAfter", async () => {
		await createBucket(conf(), "cellar-paged");
		const inner = new S3Store({ ...conf(), bucket: "cellar-paged", baseFolder: "base/folder", listPageSize: 2 });
		const whole = new S3Store({ ...conf(), bucket: "cellar-paged" });
		try {
			const keys = ["k1.txt", "k2.txt", "k3.txt", "k4.txt", "k5.txt"];
			for (const k of keys) await inner.put(`p/${k}`, bufStream(Buffer.from(k)));
			await whole.put("outside.txt", bufStream(Buffer.from("o")));
			assert.deepEqual(await keysOf(inner.list("p/")), keys.map((k) => `p/${k}`));
			assert.deepEqual(await keysOf(inner.list("")), keys.map((k) => `p/${k}`));
			assert.deepEqual(await keysOf(whole.list("base/")), keys.map((k) => `base/folder/p/${k}`));
			await inner.rmdir("p");
			assert.deepEqual(await keysOf(whole.list("")), ["outside.txt"]);
		} finally {
			inner.close();
			whole.close();
		}
	});

	it("multipart upload ids carry the key, so another instance can finish the upload", async () => {
		await createBucket(conf(), "cellar-mp");
		const a = new S3Store({ ...conf(), bucket: "cellar-mp" });
		const b = new S3Store({ ...conf(), bucket: "cellar-mp" });
		try {
			const up = await a.createMultipart("x/y z.bin");
			const p1 = await a.putPart(up, 1, bufStream(Buffer.from("abc")), 3);
			const done = await b.completeMultipart(up, [{ partNumber: 1, etag: p1.etag }]);
			assert.equal(done.size, 3);
			assert.equal((await readAll(await b.get("x/y z.bin"))).toString(), "abc");
			// s3rver has no AbortMultipartUpload: abort is tolerated
			const up2 = await b.createMultipart("x/abandoned.bin");
			await b.abortMultipart(up2);
			assert.equal(await b.head("x/abandoned.bin"), null);
		} finally {
			a.close();
			b.close();
		}
	});

	it("a missing bucket is reported, not mistaken for a missing object", async () => {
		const store = new S3Store({ ...conf(), bucket: "cellar-no-such-bucket" });
		try {
			await assert.rejects(store.get("a.txt"), (err: unknown) => err instanceof NotFoundError && /Bucket/.test((err as Error).message));
			await assert.rejects(keysOf(store.list("")), NotFoundError);
		} finally {
			store.close();
		}
	});
});

describe("openStore (DataSource -> store)", function () {
	this.timeout(30_000);

	it("opens LOCAL datasources, resolving relative folders against the data dir", async () => {
		const dataDir = mkdtempSync(join(tmpdir(), "cellar-data-"));
		try {
			const store = openStore({ StorageType: "LOCAL", StorageConfiguration: { folder: "datasources/personal" } }, dataDir);
			assert.equal(store.kind, "LOCAL");
			assert.equal((store as LocalStore).root, join(dataDir, "datasources", "personal"));
			await store.put("a.txt", bufStream(Buffer.from("a")));
			assert.ok(existsSync(join(dataDir, "datasources", "personal", "a.txt")));
			const abs = openStore({ StorageType: "LOCAL", StorageConfiguration: { folder: join(dataDir, "abs") } }, "/elsewhere");
			assert.equal((abs as LocalStore).root, join(dataDir, "abs"));
			assert.throws(() => openStore({ StorageType: "LOCAL", StorageConfiguration: {} }, dataDir), BadRequestError);
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it("maps S3 datasource fields", () => {
		const aws = s3ConfigFromDataSource({ StorageType: "S3", ObjectsHost: "s3.amazonaws.com", ObjectsSecure: true, ObjectsPort: 443, ObjectsBucket: "b1", ApiKey: "K", ApiSecret: "S" });
		assert.deepEqual(aws, {
			endpoint: undefined,
			region: "us-east-1",
			bucket: "b1",
			baseFolder: undefined,
			accessKeyId: "K",
			secretAccessKey: "S",
			forcePathStyle: false,
			checksumWhenRequired: true,
		});
		const minio = s3ConfigFromDataSource({
			StorageType: "S3",
			StorageConfiguration: { customRegion: "eu-west-3" },
			ObjectsHost: "minio.local",
			ObjectsPort: "9000",
			ObjectsSecure: false,
			ObjectsBucket: "data",
			ObjectsBaseFolder: "cells",
		});
		assert.equal(minio.endpoint, "http://minio.local:9000");
		assert.equal(minio.region, "eu-west-3");
		assert.equal(minio.baseFolder, "cells");
		assert.equal(minio.forcePathStyle, true);
		const custom = s3ConfigFromDataSource({ StorageType: "S3", StorageConfiguration: { customEndpoint: "https://s3.example.com" }, ObjectsHost: "ignored", ObjectsBucket: "x" });
		assert.equal(custom.endpoint, "https://s3.example.com");
		assert.throws(() => openStore({ StorageType: "S3", ObjectsHost: "h" }, "/tmp"), BadRequestError);
		assert.throws(() => openStore({ StorageType: "AZURE" as "S3" }, "/tmp"), /not supported/);
	});

	it("opens an S3 datasource that works against s3rver", async () => {
		const srv = await sharedS3();
		await srv.createBucket("cellar-ds");
		const url = new URL(srv.endpoint);
		const store = openStore(
			{ StorageType: "S3", ObjectsHost: url.hostname, ObjectsPort: Number(url.port), ObjectsSecure: false, ObjectsBucket: "cellar-ds", ObjectsBaseFolder: "pydiods1", ApiKey: srv.accessKeyId, ApiSecret: srv.secretAccessKey },
			"/unused",
		);
		try {
			assert.equal(store.kind, "S3");
			await store.put("hello.txt", bufStream(Buffer.from("hi")));
			assert.equal((await store.head("hello.txt"))?.size, 2);
			assert.deepEqual(await keysOf(store.list("")), ["hello.txt"]);
		} finally {
			(store as S3Store).close();
		}
	});
});
