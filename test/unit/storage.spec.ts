// The storage layer of datasources: one behaviour suite run against LocalStore (a temp folder) and S3Store (an
// in-process s3rver), plus the LOCAL-only guarantees (path checks, temp files, resumable multipart, flat memory)
// and the DataSource -> store mapping.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { BadRequestError, NotFoundError } from "../../lib/errors";
import { LocalStore } from "../../lib/storage/local";
import { CorruptObjectError } from "../../lib/storage/composite";
import { S3Store, createBucket, listBuckets } from "../../lib/storage/s3";
import { openStore, s3ConfigFromDataSource } from "../../lib/storage";
import { RangeNotSatisfiableError, type ObjectInfo, type ObjectStore } from "../../lib/storage/types";
import { startS3rver, type TestS3 } from "../helpers/s3rver";
import { createServer, type Server } from "node:http";
import { PeerStoreServer } from "../../lib/peers/server";
import { PeerObjectStore } from "../../lib/peers/client";
import { sha256, signPeerRequest } from "../../lib/peers/signing";
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

behaviourSuite("LocalStore (composite multipart objects)", async () => {
	const root = mkdtempSync(join(tmpdir(), "cellar-local-"));
	const store = new LocalStore(join(root, "ds"), { composite: true });
	return {
		store,
		tempFiles: () => (existsSync(join(root, "ds", ".cellar-tmp")) ? readdirSync(join(root, "ds", ".cellar-tmp")) : []),
		cleanup: async () => rmSync(root, { recursive: true, force: true }),
	};
});

// A LOCAL datasource held by another node: the same suite through a real peer endpoint (the handler the gateway
// mounts at /_peer/store/, on its own HTTP server here) in front of a LocalStore.
behaviourSuite("PeerObjectStore over HTTP to a holder's LocalStore", async () => {
	const root = mkdtempSync(join(tmpdir(), "cellar-peer-"));
	const local = new LocalStore(join(root, "ds"), { composite: true });
	const secret = "peer-suite-secret";
	const handler = new PeerStoreServer({ secret: () => secret, store: async (name) => (name === "peerds" ? local : Promise.reject(new NotFoundError(`no ${name}`))), log: () => undefined });
	const server: Server = createServer((req, res) => handler.handle(req, res));
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
	const port = (server.address() as { port: number }).port;
	const store = new PeerObjectStore({ datasource: "peerds", holder: "node-b", baseUrl: () => `http://127.0.0.1:${port}`, secret: () => secret });
	return {
		store,
		tempFiles: () => (existsSync(join(root, "ds", ".cellar-tmp")) ? readdirSync(join(root, "ds", ".cellar-tmp")) : []),
		cleanup: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
			rmSync(root, { recursive: true, force: true });
		},
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

	it("tells the free space of its filesystem, as df does", async () => {
		const free = await store.freeSpace();
		const df = Number(/\n\S+\s+\d+\s+\d+\s+(\d+)/.exec(require("node:child_process").execFileSync("df", ["-k", root]).toString())?.[1]) * 1024;
		assert.ok(free > 0);
		assert.ok(Math.abs(free - df) < 512 * 1024 * 1024, `${free} vs df ${df}`);
	});

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

describe("composite objects (LocalStore of a flat datasource)", function () {
	this.timeout(60_000);
	let root: string;
	let store: LocalStore;
	beforeEach(() => {
		root = mkdtempSync(join(tmpdir(), "cellar-composite-"));
		store = new LocalStore(root, { composite: true });
	});
	afterEach(() => rmSync(root, { recursive: true, force: true }));

	/** Distinct bytes per part, so that a read from the wrong part or offset shows. */
	const partsOf = (sizes: number[]) => sizes.map((n, i) => Buffer.from(Array.from({ length: n }, (_, j) => (i * 37 + j * 7) & 0xff)));

	async function upload(s: LocalStore, key: string, parts: Buffer[]): Promise<{ size: number; etag: string }> {
		const up = await s.createMultipart(key);
		const done: { partNumber: number; etag: string }[] = [];
		// uploaded in reverse order, numbered with gaps (2, 4, 6...): only the order and the numbers' names matter
		for (let i = parts.length - 1; i >= 0; i--) done.unshift({ partNumber: 2 * (i + 1), etag: (await s.putPart(up, 2 * (i + 1), bufStream(parts[i]))).etag });
		return s.completeMultipart(up, done);
	}
	const tmpEntries = () => readdirSync(join(root, ".cellar-tmp"));

	it("completes as a directory of parts and a manifest, with the same size and ETag as an assembled object", async () => {
		const parts = partsOf([100, 200, 50]);
		const done = await upload(store, "obj", parts);
		const whole = Buffer.concat(parts);
		assert.equal(done.size, whole.length);
		assert.equal(done.etag, `"${md5(Buffer.concat(parts.map((p) => createHash("md5").update(p).digest())))}-3"`);
		assert.ok(statSync(join(root, "obj")).isDirectory());
		assert.deepEqual(readdirSync(join(root, "obj")).sort(), [".composite.json", "part.00002", "part.00004", "part.00006"]);
		assert.deepEqual(JSON.parse(readFileSync(join(root, "obj", ".composite.json"), "utf8")), {
			v: 1,
			size: 350,
			parts: [
				{ n: 2, size: 100 },
				{ n: 4, size: 200 },
				{ n: 6, size: 50 },
			],
		});
		assert.deepEqual(readdirSync(join(root, ".cellar-uploads")), []);
		assert.deepEqual(tmpEntries(), []);
		assert.ok((await readAll(await store.get("obj"))).equals(whole));
		const info = await store.head("obj");
		assert.equal(info?.size, 350);
		assert.ok(info && Math.abs(info.mtime - Date.now()) < 60_000);
		assert.deepEqual(await keysOf(store.list("")), ["obj"]);
	});

	it("reads ranges within a part, across two and three parts, clamped, and refuses a start past the end", async () => {
		// six parts: a whole read goes through the pinned path, short ranges hold their parts open
		const parts = partsOf([10, 20, 30, 5, 7, 11]);
		const whole = Buffer.concat(parts);
		await upload(store, "r", parts);
		const range = async (start: number, end: number) => readAll(await store.get("r", { start, end }));
		assert.ok((await readAll(await store.get("r"))).equals(whole));
		assert.ok((await range(2, 5)).equals(whole.subarray(2, 6)), "within the first part");
		assert.ok((await range(12, 14)).equals(whole.subarray(12, 15)), "within a middle part");
		assert.ok((await range(8, 12)).equals(whole.subarray(8, 13)), "across two parts");
		assert.ok((await range(5, 35)).equals(whole.subarray(5, 36)), "across three parts");
		assert.ok((await range(9, 10)).equals(whole.subarray(9, 11)), "the last byte of a part and the first of the next");
		assert.ok((await range(1, 70)).equals(whole.subarray(1, 71)), "across all six");
		assert.ok((await range(whole.length - 4, 10_000)).equals(whole.subarray(-4)), "a suffix, end clamped");
		assert.ok((await range(whole.length - 1, whole.length - 1)).equals(whole.subarray(-1)));
		await rejectsWith(store.get("r", { start: whole.length, end: whole.length + 5 }), RangeNotSatisfiableError);
		await rejectsWith(store.get("r", { start: 5, end: 2 }), BadRequestError);
		assert.deepEqual(tmpEntries(), [], "no pin left once the reads are done");
	});

	it("empty parts and an empty object", async () => {
		const parts = [Buffer.from("ab"), Buffer.alloc(0), Buffer.from("cd")];
		await upload(store, "gap", parts);
		assert.equal((await readAll(await store.get("gap"))).toString(), "abcd");
		assert.equal((await readAll(await store.get("gap", { start: 1, end: 2 }))).toString(), "bc");
		await upload(store, "empty", [Buffer.alloc(0)]);
		assert.equal((await readAll(await store.get("empty"))).length, 0);
		assert.equal((await store.head("empty"))?.size, 0);
		await rejectsWith(store.get("empty", { start: 0, end: 0 }), RangeNotSatisfiableError);
	});

	it("lists a composite as one object with its total size, never its parts", async () => {
		await upload(store, "uuid-1", partsOf([3, 4]));
		await upload(store, "uuid-1.v2", partsOf([5, 6]));
		await store.put("uuid-1.v3", bufStream(Buffer.from("plain")));
		await upload(store, "deep/er", partsOf([1, 1]));
		await store.put("deep/plain", bufStream(Buffer.from("p")));
		await store.put("deep-1", bufStream(Buffer.from("p")));
		const all: ObjectInfo[] = [];
		for await (const o of store.list("")) all.push(o);
		assert.deepEqual(
			all.map((o) => [o.key, o.size]),
			[
				["deep-1", 1],
				["deep/er", 2],
				["deep/plain", 1],
				["uuid-1", 7],
				["uuid-1.v2", 11],
				["uuid-1.v3", 5],
			],
		);
		// the search service's look-up of a flat file's newer object
		assert.deepEqual(await keysOf(store.list("uuid-1.")), ["uuid-1.v2", "uuid-1.v3"]);
		assert.deepEqual(await keysOf(store.list("deep/")), ["deep/er", "deep/plain"]);
		assert.deepEqual(await keysOf(store.list("uuid-1/")), []);
		assert.deepEqual(await keysOf(store.list("deep/er/")), []);
	});

	it("copies (as a composite), then the original can go; renames; deletes everything", async () => {
		const parts = partsOf([30, 40, 50, 60, 70]);
		const whole = Buffer.concat(parts);
		await upload(store, "src", parts);
		assert.deepEqual(await store.copy("src", "copies/dst"), { size: whole.length });
		assert.deepEqual(await store.copy("src", "src"), { size: whole.length });
		assert.ok(statSync(join(root, "copies", "dst", ".composite.json")).isFile());
		await store.delete("src");
		assert.ok(!existsSync(join(root, "src")));
		assert.equal(await store.head("src"), null);
		await rejectsWith(store.get("src"), NotFoundError);
		await store.delete("src"); // idempotent
		assert.ok((await readAll(await store.get("copies/dst"))).equals(whole));
		await store.rename("copies/dst", "moved");
		assert.ok((await readAll(await store.get("moved", { start: 25, end: 105 }))).equals(whole.subarray(25, 106)));
		assert.equal(await store.head("copies/dst"), null);
		await rejectsWith(store.rename("copies/dst", "x"), NotFoundError);
		await rejectsWith(store.copy("copies/dst", "x"), NotFoundError);
		await store.delete("moved");
		assert.deepEqual(readdirSync(root).sort(), [".cellar-tmp", ".cellar-uploads", "copies"]);
		assert.deepEqual(tmpEntries(), []);
		assert.deepEqual(await keysOf(store.list("")), []);
	});

	it("a read in progress survives the deletion of the object (pinned parts or open parts)", async () => {
		for (const sizes of [[MiB, MiB, MiB, MiB, MiB, MiB], [2 * MiB, MiB]]) {
			const parts = partsOf(sizes);
			await upload(store, "busy", parts);
			const stream = (await store.get("busy")) as NodeJS.ReadableStream & AsyncIterable<Buffer>;
			const chunks: Buffer[] = [];
			for await (const c of stream) {
				if (chunks.length === 0) {
					await store.delete("busy");
					assert.equal(await store.head("busy"), null);
				}
				chunks.push(Buffer.from(c));
			}
			assert.ok(Buffer.concat(chunks).equals(Buffer.concat(parts)), `sizes ${sizes.length}`);
		}
		// a stream dropped midway leaves nothing behind either
		await upload(store, "dropped", partsOf([10, 10, 10, 10, 10, 10]));
		const s = (await store.get("dropped")) as Readable;
		s.destroy();
		await new Promise((r) => setTimeout(r, 50));
		assert.deepEqual(tmpEntries(), []);
	});

	it("put and copy over a composite replace it; a completion over an existing key assembles", async () => {
		await upload(store, "k", partsOf([5, 5]));
		await store.put("k", bufStream(Buffer.from("now a plain file")));
		assert.ok(statSync(join(root, "k")).isFile());
		assert.equal((await readAll(await store.get("k"))).toString(), "now a plain file");
		await upload(store, "c", partsOf([7, 8]));
		await store.copy("k", "c");
		assert.equal((await readAll(await store.get("c"))).toString(), "now a plain file");
		await upload(store, "d", partsOf([1, 2]));
		await store.copy("d", "k"); // composite over a plain file
		assert.equal((await store.head("k"))?.size, 3);
		assert.deepEqual(tmpEntries(), []);
		// the key is taken (never on a flat datasource): the parts are assembled over it, as before
		const parts = partsOf([4, 4]);
		await upload(store, "k", parts);
		assert.ok(statSync(join(root, "k")).isFile());
		assert.ok((await readAll(await store.get("k"))).equals(Buffer.concat(parts)));
		await store.mkdir("folder");
		await assert.rejects(upload(store, "folder", partsOf([1])), { code: 409 });
		await upload(store, "e", partsOf([1, 1]));
		await assert.rejects(store.rename("e", "folder"), { code: 409 });
		assert.equal((await store.head("e"))?.size, 2, "a refused rename keeps its source");
	});

	it("the insides of a composite are not reachable through keys", async () => {
		await upload(store, "x", partsOf([3, 3]));
		await rejectsWith(store.get("x/part.00002"), NotFoundError);
		await rejectsWith(store.get("x/.composite.json"), NotFoundError);
		assert.equal(await store.head("x/part.00002"), null);
		await store.delete("x/part.00002");
		await assert.rejects(store.put("x/child", bufStream(Buffer.from("c"))), { code: 409 });
		await assert.rejects(store.copy("x", "x/inner"), { code: 409 });
		await assert.rejects(store.mkdir("x"), { code: 409 });
		await assert.rejects(store.mkdir("x/sub"), { code: 409 });
		await assert.rejects(store.rmdir("x"), { code: 409 });
		await store.rmdir("x/sub");
		assert.equal((await readAll(await store.get("x"))).length, 6);
		assert.deepEqual(readdirSync(join(root, "x")).sort(), [".composite.json", "part.00002", "part.00004"]);
	});

	it("refuses crafted or damaged composites with an error, never a crash", async () => {
		const craft = (name: string, manifest: unknown, files: Record<string, string> = {}) => {
			mkdirSync(join(root, name));
			writeFileSync(join(root, name, ".composite.json"), typeof manifest === "string" ? manifest : JSON.stringify(manifest));
			for (const [f, content] of Object.entries(files)) writeFileSync(join(root, name, f), content);
		};
		writeFileSync(join(root, "secret"), "outside of any composite");
		const notObjects: [string, unknown][] = [
			["paths", { v: 1, size: 3, parts: [{ n: "../secret", size: 3 }] }],
			["named", { v: 1, size: 3, parts: [{ n: 1, size: 3, path: "/etc/passwd" }] }],
			["sum", { v: 1, size: 4, parts: [{ n: 1, size: 3 }] }],
			["none", { v: 1, size: 0, parts: [] }],
			["negative", { v: 1, size: -1, parts: [{ n: 1, size: -1 }] }],
			["fraction", { v: 1, size: 1.5, parts: [{ n: 1, size: 1.5 }] }],
			["order", { v: 1, size: 2, parts: [{ n: 2, size: 1 }, { n: 1, size: 1 }] }],
			["toobig", { v: 1, size: 1, parts: [{ n: 10001, size: 1 }] }],
			["version", { v: 2, size: 1, parts: [{ n: 1, size: 1 }] }],
			["json", "{not json"],
		];
		for (const [name, manifest] of notObjects) {
			craft(name, manifest, { "part.00001": "abc" });
			await rejectsWith(store.get(name), NotFoundError);
			assert.equal(await store.head(name), null, name);
			await rejectsWith(store.copy(name, `${name}-copy`), NotFoundError);
		}
		craft("toomany", { v: 1, size: 10001, parts: Array.from({ length: 10001 }, (_, i) => ({ n: i + 1, size: 1 })) });
		await rejectsWith(store.get("toomany"), NotFoundError);
		// A valid manifest whose parts do not match: a damaged object (500), refused before any byte is sent.
		craft("short", { v: 1, size: 6, parts: [{ n: 1, size: 3 }, { n: 2, size: 3 }] }, { "part.00001": "abc", "part.00002": "de" });
		craft("missing", { v: 1, size: 6, parts: [{ n: 1, size: 3 }, { n: 2, size: 3 }] }, { "part.00001": "abc" });
		craft("linked", { v: 1, size: 24, parts: [{ n: 1, size: 24 }] });
		symlinkSync(join(root, "secret"), join(root, "linked", "part.00001"));
		craft("many", { v: 1, size: 6, parts: [1, 2, 3, 4, 5, 6].map((n) => ({ n, size: 1 })) }, { "part.00001": "a", "part.00002": "b", "part.00003": "c", "part.00004": "d", "part.00005": "e" });
		for (const name of ["short", "missing", "linked", "many"]) {
			await rejectsWith(store.get(name), CorruptObjectError);
			await assert.rejects(store.get(name), { code: 500 });
			await rejectsWith(store.copy(name, `${name}-copy`), CorruptObjectError);
			assert.equal(await store.head(`${name}-copy`), null);
		}
		assert.equal((await readAll(await store.get("many", { start: 0, end: 3 }))).toString(), "abcd", "the parts that are there can be read");
		assert.deepEqual(tmpEntries(), []);
		// a crafted manifest that is a symlink is not read
		mkdirSync(join(root, "ml"));
		symlinkSync(join(root, "secret"), join(root, "ml", ".composite.json"));
		await rejectsWith(store.get("ml"), NotFoundError);
		// nor is a symlink to a directory that looks like a composite
		await upload(store, "real", partsOf([2, 2]));
		symlinkSync(join(root, "real"), join(root, "alias"));
		await rejectsWith(store.get("alias"), NotFoundError);
		assert.equal(await store.head("alias"), null);
		const listed = await keysOf(store.list(""));
		assert.ok(listed.includes("real") && !listed.some((k) => k.startsWith("alias")));
		// the damaged ones are listed as objects (their manifest is valid), the crafted ones as folders
		assert.ok(listed.includes("short") && listed.includes("paths/.composite.json"));
	});

	it("a store of a structured datasource assembles a plain file and sees a composite as a folder", async () => {
		const plain = new LocalStore(root);
		const parts = partsOf([10, 20]);
		await upload(plain, "docs/report.bin", parts);
		assert.ok(statSync(join(root, "docs", "report.bin")).isFile());
		assert.ok((await readAll(await plain.get("docs/report.bin"))).equals(Buffer.concat(parts)));
		await upload(store, "comp", parts);
		await rejectsWith(plain.get("comp"), NotFoundError);
		assert.equal(await plain.head("comp"), null);
		assert.deepEqual(await keysOf(plain.list("comp")), ["comp/.composite.json", "comp/part.00002", "comp/part.00004"]);
	});

	it("cleanupStaging leaves composites alone and removes stale build leftovers", async () => {
		await upload(store, "keep", partsOf([3, 4, 5, 6, 7]));
		mkdirSync(join(root, ".cellar-tmp", "crashed.composite"));
		writeFileSync(join(root, ".cellar-tmp", "crashed.composite", "part.00001"), "x");
		await new Promise((r) => setTimeout(r, 20));
		assert.deepEqual(await store.cleanupStaging(10), { removed: 1 });
		assert.equal((await readAll(await store.get("keep"))).length, 25);
	});

	it("openStore makes composite stores only for flat, unencrypted LOCAL datasources", () => {
		const open = (extra: Record<string, unknown>) => openStore({ StorageType: "LOCAL", StorageConfiguration: { folder: root }, ...extra }, root) as LocalStore;
		assert.equal(open({ FlatStorage: true }).composite, true);
		assert.equal(open({ FlatStorage: true, EncryptionMode: "CLEAR" }).composite, true);
		assert.equal(open({ FlatStorage: false }).composite, false);
		assert.equal(open({}).composite, false);
		assert.equal(open({ FlatStorage: true, EncryptionMode: "MASTER", EncryptionKey: "k" }).composite, false);
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

describe("PeerObjectStore: signatures and a holder that is down", function () {
	this.timeout(20_000);
	it("refuses unsigned, badly signed and expired requests with 403", async () => {
		const local = new LocalStore(mkdtempSync(join(tmpdir(), "cellar-peer-sig-")));
		const handler = new PeerStoreServer({ secret: () => "right", store: async () => local, log: () => undefined });
		const server = createServer((req, res) => handler.handle(req, res));
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
		const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
		try {
			const plain = await fetch(`${base}/_peer/store/ds?op=get&key=a`);
			assert.equal(plain.status, 403);
			const wrong = new PeerObjectStore({ datasource: "ds", holder: "b", baseUrl: () => base, secret: () => "wrong" });
			await assert.rejects(wrong.head("a"), { code: 403 });
			const old = signPeerRequest("right", "POST", "/_peer/store/ds?op=head", sha256(Buffer.from('{"args":["a"]}')), Date.now() - 120_000);
			const expired = await fetch(`${base}/_peer/store/ds?op=head`, { method: "POST", headers: old, body: '{"args":["a"]}' });
			assert.equal(expired.status, 403);
			const good = new PeerObjectStore({ datasource: "ds", holder: "b", baseUrl: () => base, secret: () => "right" });
			assert.equal(await good.head("a"), null);
		} finally {
			await new Promise((r) => server.close(r));
		}
	});

	it("fails fast with a 503 naming the holder when it does not answer or is not in the cluster", async () => {
		const closed = createServer();
		await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
		const port = (closed.address() as { port: number }).port;
		await new Promise((r) => closed.close(r));
		const down = new PeerObjectStore({ datasource: "ds", holder: "node-b", baseUrl: () => `http://127.0.0.1:${port}`, secret: () => "s" });
		const t = Date.now();
		await assert.rejects(down.get("a"), (err: Error & { code?: number }) => err.code === 503 && /node-b/.test(err.message));
		await assert.rejects(down.put("a", bufStream(Buffer.from("x"))), { code: 503 });
		const gone = new PeerObjectStore({ datasource: "ds", holder: "node-c", baseUrl: () => undefined, secret: () => "s" });
		await assert.rejects(keysOf(gone.list("")), { code: 503 });
		assert.ok(Date.now() - t < 5000, `took ${Date.now() - t} ms`);
	});
});
