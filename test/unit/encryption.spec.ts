// Encryption at rest: the EncryptedStore format (round trips, block-aligned Range reads, tamper detection, flat
// memory, multipart, copy) over LocalStore and S3Store (s3rver); the key export blobs and sealing; and the
// encryption service on a real broker (keys API, export/import, deletion guarded by datasources).
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { ServiceBroker } from "moleculer";
import type { Identity } from "../../lib/auth/identity";
import { BadRequestError, NotFoundError } from "../../lib/errors";
import { LocalStore } from "../../lib/storage/local";
import { S3Store } from "../../lib/storage/s3";
import { openDataStore } from "../../lib/storage";
import type { EncryptionKeysRepo } from "../../lib/db/encryption-keys";
import { cipherSize, DEFAULT_BLOCK_SIZE, EncryptedStore, ENCRYPTED_UPLOADS, HEADER_SIZE, IntegrityError, plainLayout, TAG_SIZE } from "../../lib/storage/encrypted";
import { RangeNotSatisfiableError, type ObjectStore } from "../../lib/storage/types";
import { checkKeyId, exportKey, importKey, seal, unseal } from "../../lib/encryption/keys";
import { KeyMaterialCache } from "../../lib/encryption/material";
import { startS3rver, type TestS3 } from "../helpers/s3rver";
import { generated } from "../helpers/streams";

const MiB = 1024 * 1024;
const B = DEFAULT_BLOCK_SIZE;
const FULL = B + TAG_SIZE;

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

function bufStream(buf: Buffer, chunk = 50_000): Readable {
	return Readable.from(
		(function* () {
			for (let i = 0; i < buf.length; i += chunk) yield buf.subarray(i, i + chunk);
		})(),
		{ objectMode: false },
	);
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
	return Buffer.concat(chunks);
}

/** `total` pseudo-random bytes generated on the fly; md5 of what was produced in `.md5()`. */
/** A LocalStore that records the ranges asked to it. */
class SpyStore extends LocalStore {
	gets: ({ start: number; end: number } | undefined)[] = [];
	override async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		this.gets.push(range);
		return super.get(key, range);
	}
}

async function rejectsWith(p: Promise<unknown>, cls: new (...a: never[]) => Error): Promise<void> {
	await assert.rejects(p, (err: unknown) => {
		assert.ok(err instanceof cls, `expected ${cls.name}, got ${(err as Error)?.constructor?.name}: ${(err as Error)?.message}`);
		return true;
	});
}

async function getAll(store: ObjectStore, key: string, range?: { start: number; end: number }): Promise<Buffer> {
	return readAll(await store.get(key, range));
}

describe("EncryptedStore format", () => {
	it("computes plaintext sizes from ciphertext sizes and back", () => {
		for (const p of [0, 1, B - 1, B, B + 1, 2 * B, 5 * B + 17, 50 * MiB]) {
			const c = cipherSize(p, B);
			assert.deepEqual(plainLayout(c, B), { size: p, blocks: Math.max(1, Math.ceil(p / B)) }, String(p));
		}
		assert.equal(cipherSize(0, B), HEADER_SIZE + TAG_SIZE);
		assert.throws(() => plainLayout(HEADER_SIZE + TAG_SIZE - 1, B), IntegrityError);
		assert.throws(() => plainLayout(HEADER_SIZE + FULL + 3, B), IntegrityError);
	});
	it("refuses keys that are not 256 bits", () => {
		assert.throws(() => new EncryptedStore(new LocalStore(tmpdir()), randomBytes(16)), BadRequestError);
	});
});

describe("EncryptedStore over LocalStore", function () {
	this.timeout(60_000);
	let dir: string;
	let inner: SpyStore;
	let store: EncryptedStore;
	const key = randomBytes(32);

	before(() => {
		dir = mkdtempSync(join(tmpdir(), "cellar-enc-"));
		inner = new SpyStore(dir);
		store = new EncryptedStore(inner, key);
	});
	after(() => rmSync(dir, { recursive: true, force: true }));

	it("round-trips 0, 1, block-1, block, block+1 and several MB, with and without a known size", async () => {
		for (const size of [0, 1, B - 1, B, B + 1, 3 * MiB + 7]) {
			const data = randomBytes(size);
			for (const known of [true, false]) {
				const k = `rt/${size}-${known}.bin`;
				const res = await store.put(k, bufStream(data), known ? { size } : undefined);
				assert.deepEqual(res, { size, md5: md5(data) }, k);
				assert.ok((await getAll(store, k)).equals(data), k);
				assert.equal((await store.head(k))!.size, size);
				// At rest: the encrypted format, not the plaintext.
				const raw = readFileSync(join(dir, k));
				assert.equal(raw.length, cipherSize(size, B));
				assert.equal(raw.subarray(0, 4).toString("latin1"), "CLRE");
				if (size >= 32) assert.equal(raw.indexOf(data.subarray(0, 32)), -1);
			}
		}
	});

	it("reads ranges across block boundaries, fetching only the blocks that cover them", async () => {
		const size = 3 * B + 1000;
		const data = randomBytes(size);
		await store.put("range.bin", bufStream(data));
		const cases: [number, number][] = [
			[0, 0],
			[0, B - 1],
			[B - 1, B],
			[B - 10, 2 * B + 10],
			[B, 2 * B - 1],
			[3 * B, size - 1],
			[size - 1, size - 1],
			[5, size + 10_000], // end clamped
			[2 * B + 5, 2 * B + 5],
		];
		for (const [start, end] of cases) {
			inner.gets = [];
			const got = await getAll(store, "range.bin", { start, end });
			assert.ok(got.equals(data.subarray(start, Math.min(end, size - 1) + 1)), `${start}-${end}`);
			const ranges = inner.gets.filter((r) => r && r.start >= HEADER_SIZE);
			assert.equal(ranges.length, 1);
			const first = Math.floor(start / B);
			const last = Math.floor(Math.min(end, size - 1) / B);
			assert.equal(ranges[0]!.start, HEADER_SIZE + first * FULL, `${start}-${end}`);
			assert.ok(ranges[0]!.end - ranges[0]!.start + 1 <= (last - first + 1) * FULL, `${start}-${end} read too much`);
		}
		await rejectsWith(store.get("range.bin", { start: size, end: size + 5 }), RangeNotSatisfiableError);
		await store.put("empty.bin", bufStream(Buffer.alloc(0)));
		await rejectsWith(store.get("empty.bin", { start: 0, end: 0 }), RangeNotSatisfiableError);
		await rejectsWith(store.get("missing.bin"), NotFoundError);
		await rejectsWith(store.get("missing.bin", { start: 0, end: 1 }), NotFoundError);
		assert.equal(await store.head("missing.bin"), null);
	});

	describe("detects tampering", () => {
		const size = 3 * B + 1000;
		let data: Buffer;
		let file: string;
		beforeEach(async () => {
			data = randomBytes(size);
			await store.put("t.bin", bufStream(data));
			file = join(dir, "t.bin");
		});
		const patch = (offset: number, bytes: Buffer) => {
			const fd = openSync(file, "r+");
			writeSync(fd, bytes, 0, bytes.length, offset);
			closeSync(fd);
		};
		const read = (offset: number, length: number) => {
			const buf = Buffer.alloc(length);
			const fd = openSync(file, "r");
			readSync(fd, buf, 0, length, offset);
			closeSync(fd);
			return buf;
		};

		it("a flipped byte in a block: whole reads and reads of that block fail, other blocks still read", async () => {
			const at = HEADER_SIZE + FULL + 100; // block 1
			patch(at, Buffer.from([read(at, 1)[0] ^ 0x01]));
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(getAll(store, "t.bin", { start: B + 5, end: B + 10 }), IntegrityError);
			assert.ok((await getAll(store, "t.bin", { start: 0, end: 100 })).equals(data.subarray(0, 101)));
		});

		it("a flipped byte in a tag or in the header", async () => {
			patch(HEADER_SIZE + FULL - 1, Buffer.from([read(HEADER_SIZE + FULL - 1, 1)[0] ^ 0x80]));
			await rejectsWith(getAll(store, "t.bin", { start: 0, end: 10 }), IntegrityError);
			await store.put("t.bin", bufStream(data));
			patch(10, Buffer.from([read(10, 1)[0] ^ 0x01])); // salt
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			patch(0, Buffer.from("XXXX"));
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(store.head("t.bin"), IntegrityError);
		});

		it("truncation, at a block boundary or inside a block", async () => {
			truncateSync(file, HEADER_SIZE + 2 * FULL);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(getAll(store, "t.bin", { start: 2 * B - 1, end: 2 * B - 1 }), IntegrityError); // block 1 is not a final block
			await store.put("t.bin", bufStream(data));
			truncateSync(file, HEADER_SIZE + 2 * FULL + 500);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(getAll(store, "t.bin", { start: 2 * B, end: 2 * B + 10 }), IntegrityError);
			truncateSync(file, HEADER_SIZE);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			truncateSync(file, 10);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			truncateSync(file, 0);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(getAll(store, "t.bin", { start: 0, end: 1 }), IntegrityError);
		});

		it("two blocks swapped, or a block dropped from the middle", async () => {
			const b0 = read(HEADER_SIZE, FULL);
			const b1 = read(HEADER_SIZE + FULL, FULL);
			patch(HEADER_SIZE, b1);
			patch(HEADER_SIZE + FULL, b0);
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await rejectsWith(getAll(store, "t.bin", { start: 0, end: 5 }), IntegrityError);
			// Dropping block 1: blocks 2 and 3 move up one place.
			await store.put("t.bin", bufStream(data));
			const raw = readFileSync(file);
			writeFileSync(file, Buffer.concat([raw.subarray(0, HEADER_SIZE + FULL), raw.subarray(HEADER_SIZE + 2 * FULL)]));
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
		});

		it("appended data, a plaintext file, another key", async () => {
			writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.alloc(40)]));
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			writeFileSync(file, "plain text that was never encrypted, long enough to have a header");
			await rejectsWith(getAll(store, "t.bin"), IntegrityError);
			await store.put("t.bin", bufStream(data));
			const other = new EncryptedStore(new LocalStore(dir), randomBytes(32));
			await rejectsWith(getAll(other, "t.bin"), IntegrityError);
			await rejectsWith(getAll(other, "t.bin", { start: 0, end: 9 }), IntegrityError);
		});
	});

	it("refuses a body of another length than announced, leaving nothing", async () => {
		await rejectsWith(store.put("short.bin", bufStream(Buffer.alloc(100)), { size: 200 }), BadRequestError);
		await rejectsWith(store.put("long.bin", bufStream(Buffer.alloc(300)), { size: 200 }), BadRequestError);
		assert.equal(await store.head("short.bin"), null);
		assert.equal(await store.head("long.bin"), null);
		const failing = new Readable({
			read() {
				this.destroy(new Error("client went away"));
			},
		});
		await assert.rejects(store.put("gone.bin", failing), /client went away/);
		assert.equal(await store.head("gone.bin"), null);
	});

	it("copies server-side (same key) and lists plaintext sizes, without the staging area", async () => {
		const data = randomBytes(B + 3);
		await store.put("list/a.bin", bufStream(data));
		assert.deepEqual(await store.copy("list/a.bin", "list/b.bin"), { size: B + 3 });
		assert.ok((await getAll(store, "list/b.bin")).equals(data));
		assert.ok((await getAll(store, "list/b.bin", { start: B, end: B + 2 })).equals(data.subarray(B)));
		const up = await store.createMultipart("list/c.bin");
		const listed = [];
		for await (const o of store.list("")) listed.push(o);
		assert.ok(listed.every((o) => !o.key.startsWith(ENCRYPTED_UPLOADS)));
		const mine = listed.filter((o) => o.key.startsWith("list/")).map((o) => [o.key, o.size]);
		assert.deepEqual(mine, [
			["list/a.bin", B + 3],
			["list/b.bin", B + 3],
		]);
		await store.abortMultipart(up);
		await rejectsWith(store.put(`${ENCRYPTED_UPLOADS}/x`, bufStream(Buffer.from("x"))), BadRequestError);
		await rejectsWith(store.get(`${ENCRYPTED_UPLOADS}/x`), BadRequestError);
	});

	it("multipart: parts out of order, listed, completed into one object that Range reads work on", async () => {
		const p1 = randomBytes(B + 500);
		const p2 = randomBytes(3 * B);
		const p3 = randomBytes(17);
		const up = await store.createMultipart("mp/file.bin");
		const e3 = await store.putPart(up, 3, bufStream(p3));
		const e1 = await store.putPart(up, 1, bufStream(p1), p1.length);
		const e2 = await store.putPart(up, 2, bufStream(p2));
		assert.equal(e1.etag, `"${md5(p1)}"`);
		const parts = await store.listParts(up);
		assert.deepEqual(parts.map((p) => [p.partNumber, p.etag, p.size]), [
			[1, e1.etag, p1.length],
			[2, e2.etag, p2.length],
			[3, e3.etag, p3.length],
		]);
		await rejectsWith(store.completeMultipart(up, [{ partNumber: 1, etag: e2.etag }]), BadRequestError);
		await rejectsWith(store.completeMultipart(up, [{ partNumber: 4, etag: e2.etag }]), BadRequestError);
		const all = Buffer.concat([p1, p2, p3]);
		const done = await store.completeMultipart(up, [
			{ partNumber: 1, etag: e1.etag },
			{ partNumber: 2, etag: e2.etag },
			{ partNumber: 3, etag: e3.etag },
		]);
		assert.equal(done.size, all.length);
		assert.equal(done.md5, md5(all));
		const digests = Buffer.concat([p1, p2, p3].map((p) => createHash("md5").update(p).digest()));
		assert.equal(done.etag, `"${createHash("md5").update(digests).digest("hex")}-3"`);
		assert.ok((await getAll(store, "mp/file.bin")).equals(all));
		const [s, e] = [B + 400, 2 * B + 700]; // across the part 1 / part 2 boundary
		assert.ok((await getAll(store, "mp/file.bin", { start: s, end: e })).equals(all.subarray(s, e + 1)));
		assert.equal((await store.head("mp/file.bin"))!.size, all.length);
		// The upload is gone, and so is its staging.
		await rejectsWith(store.listParts(up), NotFoundError);
		await rejectsWith(store.putPart(up, 4, bufStream(p3)), NotFoundError);
		assert.throws(() => statSync(join(dir, ENCRYPTED_UPLOADS, up)), /ENOENT/);
		// Staged parts are encrypted too.
		const up2 = await store.createMultipart("mp/two.bin");
		const secret = Buffer.from("a very recognisable plaintext part ".repeat(10));
		await store.putPart(up2, 1, bufStream(secret));
		assert.equal(readFileSync(join(dir, ENCRYPTED_UPLOADS, up2, "1")).indexOf("recognisable"), -1);
		await store.abortMultipart(up2);
		await rejectsWith(store.listParts(up2), NotFoundError);
		await rejectsWith(store.listParts("not-an-upload"), NotFoundError);
	});

	it("keeps memory flat while streaming 50 MB in and out", async () => {
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
			const part = await getAll(store, "mem/50mb.bin", { start: 20 * MiB + 3, end: 20 * MiB + 3 + 2 * B });
			assert.equal(part.length, 2 * B + 1);
		} finally {
			clearInterval(timer);
		}
		peak = Math.max(peak, process.memoryUsage().rss);
		const growth = (peak - before) / MiB;
		assert.ok(growth < 30, `rss grew by ${growth.toFixed(1)} MiB`);
	});
});

describe("EncryptedStore over S3Store (s3rver)", function () {
	this.timeout(60_000);
	let srv: TestS3;
	let s3: S3Store;
	let store: EncryptedStore;

	before(async () => {
		srv = await startS3rver();
		await srv.createBucket("enc");
		s3 = new S3Store({ endpoint: srv.endpoint, region: "us-east-1", bucket: "enc", accessKeyId: srv.accessKeyId, secretAccessKey: srv.secretAccessKey, forcePathStyle: true, checksumWhenRequired: true });
		store = new EncryptedStore(s3, randomBytes(32));
	});
	after(async () => {
		s3.close();
		await srv.stop();
	});

	it("round-trips, reads ranges and stores ciphertext", async () => {
		for (const size of [0, B + 1, 6 * MiB + 3]) {
			const data = randomBytes(size);
			const res = await store.put(`s3/${size}.bin`, bufStream(data), size > MiB ? undefined : { size });
			assert.equal(res.md5, md5(data));
			assert.ok((await getAll(store, `s3/${size}.bin`)).equals(data));
			assert.equal((await store.head(`s3/${size}.bin`))!.size, size);
			assert.equal((await s3.head(`s3/${size}.bin`))!.size, cipherSize(size, B));
			if (size > 0) {
				const start = Math.max(0, size - B - 100);
				assert.ok((await getAll(store, `s3/${size}.bin`, { start, end: size + 10 })).equals(data.subarray(start)));
			}
		}
		const raw = await readAll(await s3.get(`s3/${B + 1}.bin`));
		assert.equal(raw.subarray(0, 4).toString("latin1"), "CLRE");
	});

	it("multipart and copy", async () => {
		const p1 = randomBytes(B * 2 + 5);
		const p2 = randomBytes(1000);
		const up = await store.createMultipart("s3/mp.bin");
		const e2 = await store.putPart(up, 2, bufStream(p2));
		const e1 = await store.putPart(up, 1, bufStream(p1));
		const done = await store.completeMultipart(up, [
			{ partNumber: 1, etag: e1.etag },
			{ partNumber: 2, etag: e2.etag },
		]);
		const all = Buffer.concat([p1, p2]);
		assert.equal(done.size, all.length);
		assert.ok((await getAll(store, "s3/mp.bin", { start: B * 2, end: B * 2 + 100 })).equals(all.subarray(B * 2, B * 2 + 101)));
		await store.copy("s3/mp.bin", "s3/mp-copy.bin");
		assert.ok((await getAll(store, "s3/mp-copy.bin")).equals(all));
	});
});

describe("openDataStore", () => {
	it("opens CLEAR datasources as they are and MASTER ones encrypted", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-ods-"));
		try {
			const key = randomBytes(32);
			const asked: string[] = [];
			const material = async (id: string) => (asked.push(id), key);
			const clear = await openDataStore({ StorageType: "LOCAL", StorageConfiguration: { folder: "c" } }, dir, material);
			assert.ok(clear instanceof LocalStore);
			const enc = await openDataStore({ StorageType: "LOCAL", StorageConfiguration: { folder: "e" }, EncryptionMode: "MASTER", EncryptionKey: "k1" }, dir, material);
			assert.ok(enc instanceof EncryptedStore);
			assert.deepEqual(asked, ["k1"]);
			await enc.put("a.txt", bufStream(Buffer.from("hello")));
			assert.equal((await getAll(enc, "a.txt")).toString(), "hello");
			assert.notEqual(readFileSync(join(dir, "e", "a.txt")).toString(), "hello");
			await assert.rejects(openDataStore({ StorageType: "LOCAL", StorageConfiguration: { folder: "u" }, EncryptionMode: "USER" }, dir, material), /not supported/);
			await assert.rejects(openDataStore({ StorageType: "LOCAL", StorageConfiguration: { folder: "m" }, EncryptionMode: "MASTER" }, dir, material), /needs an EncryptionKey/);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("KeyMaterialCache asks once per key until cleared", async () => {
		let calls = 0;
		const key = randomBytes(32);
		const cache = new KeyMaterialCache(async () => (calls++, key.toString("base64")));
		assert.ok((await cache.get("a")).equals(key));
		await cache.resolver("a");
		assert.equal(calls, 1);
		cache.clear("a");
		await cache.get("a");
		assert.equal(calls, 2);
		const bad = new KeyMaterialCache(async () => "c2hvcnQ=");
		await assert.rejects(bad.get("x"), /invalid length/);
	});
});

describe("lib/encryption/keys", function () {
	this.timeout(20_000);
	it("exports and imports a key with a password; a wrong password or altered content is a 400", async () => {
		const material = randomBytes(32);
		const content = await exportKey(material, "correct horse");
		assert.match(content, /^[A-Za-z0-9+/]+=*$/);
		assert.ok((await importKey(content, "correct horse")).equals(material));
		await assert.rejects(importKey(content, "wrong horse"), (err: unknown) => err instanceof BadRequestError && /wrong password/.test((err as Error).message));
		const altered = Buffer.from(content, "base64");
		altered[altered.length - 1] ^= 1;
		await assert.rejects(importKey(altered.toString("base64"), "correct horse"), BadRequestError);
		await assert.rejects(importKey("not base64 !", "x"), BadRequestError);
		await assert.rejects(importKey(Buffer.alloc(80).toString("base64"), "x"), BadRequestError);
		await assert.rejects(importKey(content, ""), BadRequestError);
		await assert.rejects(exportKey(material, ""), BadRequestError);
		// Crafted KDF parameters are refused before any work.
		const greedy = Buffer.from(content, "base64");
		greedy[1] = 30;
		await assert.rejects(importKey(greedy.toString("base64"), "correct horse"), /unsupported key derivation/);
	});

	it("seals keys at rest, bound to their id and the master key", () => {
		const master = randomBytes(32);
		const material = randomBytes(32);
		const sealed = seal(material, "k1", master);
		assert.ok(!sealed.includes(material.toString("base64")));
		assert.ok(unseal(sealed, "k1", master).equals(material));
		assert.throws(() => unseal(sealed, "k2", master), /cannot be opened/);
		assert.throws(() => unseal(sealed, "k1", randomBytes(32)), /cannot be opened/);
	});

	it("checks key ids", () => {
		assert.equal(checkKeyId("my-key_1.2"), "my-key_1.2");
		for (const bad of ["", "a/b", "..", "a\\b", "x\u0000", "x".repeat(256), " x"]) assert.throws(() => checkKeyId(bad), BadRequestError, JSON.stringify(bad));
	});
});

describe("encryption service", function () {
	this.timeout(30_000);
	let broker: ServiceBroker;
	let dataDir: string;
	const saved = { DATA_DIR: process.env.DATA_DIR, JWT_SECRET: process.env.JWT_SECRET };
	const datasources: { Name: string; EncryptionMode?: string; EncryptionKey?: string }[] = [];
	const events: unknown[] = [];
	const admin: Identity = { Uuid: "u1", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP"], TokenKind: "session", ExpiresAt: 2e9 };
	const bob: Identity = { Uuid: "u2", Login: "bob", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u2"], TokenKind: "session", ExpiresAt: 2e9 };
	const call = <T = any>(action: string, params: object = {}, user: Identity | null = admin) => broker.call<T, object>(`encryption.${action}`, params, { meta: { user } });

	before(async () => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-encsvc-"));
		process.env.DATA_DIR = dataDir;
		process.env.JWT_SECRET = "unit-test-secret-unit-test-secret";
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.createService({ name: "datasources", actions: { list: { params: {}, handler: () => datasources } } });
		broker.createService({ name: "listener", events: { "encryption.changed"(ctx: { params: unknown }) { events.push(ctx.params); } } });
		broker.loadService(join(__dirname, "../../services/encryption.service.ts"));
		await broker.start();
	});
	after(async () => {
		await broker.stop();
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		rmSync(dataDir, { recursive: true, force: true });
	});

	it("creates keys (admins only), lists them without material, refuses duplicates and bad ids", async () => {
		assert.deepEqual(await call("createKey", { KeyID: "k1", Label: "First key" }), { Success: true });
		await assert.rejects(call("createKey", { KeyID: "k1" }), { code: 409 });
		await assert.rejects(call("createKey", { KeyID: "../x" }), { code: 400 });
		await assert.rejects(call("createKey", { KeyID: "k2" }, bob), { code: 403 });
		await assert.rejects(call("listKeys", {}, null), { code: 401 });
		const list = await call("listKeys");
		assert.equal(list.Keys.length, 1);
		const k = list.Keys[0];
		assert.equal(k.ID, "k1");
		assert.equal(k.Label, "First key");
		assert.equal(k.Owner, "admin");
		assert.ok(k.CreationDate > 0);
		assert.equal(k.Content, undefined);
		assert.deepEqual(k.Info, { Exports: [], Imports: [] });
		assert.equal(await call("exists", { id: "k1" }), true);
		assert.equal(await call("exists", { id: "nope" }), false);
		const material = Buffer.from(await call<string>("keyMaterial", { id: "k1" }), "base64");
		assert.equal(material.length, 32);
		// The stored row alone does not reveal the key.
		const file = JSON.stringify(await (broker.getLocalService("encryption") as unknown as { keys: EncryptionKeysRepo }).keys.byId("k1"));
		assert.ok(file.includes("k1"));
		assert.ok(!file.includes(material.toString("base64")));
		assert.ok(!file.includes(material.toString("hex")));
		await assert.rejects(call("keyMaterial", { id: "nope" }), { code: 404 });
		assert.ok(events.some((e) => (e as { KeyID?: string }).KeyID === "k1"));
	});

	it("exports with a password, imports under the same or another id, wrong password 400", async () => {
		const material = Buffer.from(await call<string>("keyMaterial", { id: "k1" }), "base64");
		const exp = await call("exportKey", { KeyID: "k1", StrPassword: "backup-pass" });
		assert.equal(exp.Key.ID, "k1");
		assert.equal(typeof exp.Key.Content, "string");
		assert.equal(exp.Key.Info.Exports.length, 1);
		assert.equal(exp.Key.Info.Exports[0].By, "admin");
		assert.ok((await importKey(exp.Key.Content, "backup-pass")).equals(material));
		await assert.rejects(call("exportKey", { KeyID: "k1", StrPassword: "" }), { code: 400 });
		await assert.rejects(call("exportKey", { KeyID: "nope", StrPassword: "x" }), { code: 404 });
		const listed = (await call("listKeys")).Keys[0];
		assert.equal(listed.Info.Exports.length, 1);

		await assert.rejects(call("importKey", { Key: exp.Key, StrPassword: "backup-pass" }), { code: 409 });
		await assert.rejects(call("importKey", { Key: exp.Key, StrPassword: "wrong", Override: true }), { code: 400 });
		await assert.rejects(call("importKey", { Key: exp.Key, StrPassword: "backup-pass", Override: true }, bob), { code: 403 });
		assert.deepEqual(await call("importKey", { Key: exp.Key, StrPassword: "backup-pass", Override: true }), { Success: true });
		assert.deepEqual(await call("importKey", { Key: { ...exp.Key, ID: "k1copy", Label: "Copy" }, StrPassword: "backup-pass" }), { Success: true });
		assert.ok(Buffer.from(await call<string>("keyMaterial", { id: "k1copy" }), "base64").equals(material));
		const keys = (await call("listKeys")).Keys;
		const k1 = keys.find((k: { ID: string }) => k.ID === "k1");
		assert.equal(k1.Info.Imports.length, 1);
		assert.equal(k1.Info.Exports.length, 1);
		assert.equal(keys.find((k: { ID: string }) => k.ID === "k1copy").Label, "Copy");
	});

	it("refuses to delete, or replace by another key, a key a datasource uses", async () => {
		await call("createKey", { KeyID: "k3" });
		const other = await call("exportKey", { KeyID: "k3", StrPassword: "p" });
		datasources.push({ Name: "secure", EncryptionMode: "MASTER", EncryptionKey: "k1" }, { Name: "plain", EncryptionMode: "CLEAR", EncryptionKey: "k3" });
		await assert.rejects(call("deleteKey", { KeyID: "k1" }), (err: { code?: number; message?: string }) => err.code === 409 && /secure/.test(err.message ?? ""));
		await assert.rejects(call("importKey", { Key: { ...other.Key, ID: "k1" }, StrPassword: "p", Override: true }), { code: 409 });
		assert.deepEqual(await call("deleteKey", { KeyID: "k3" }), { Success: true });
		await assert.rejects(call("deleteKey", { KeyID: "k3" }), { code: 404 });
		datasources.length = 0;
		assert.deepEqual(await call("deleteKey", { KeyID: "k1" }), { Success: true });
		assert.equal(await call("exists", { id: "k1" }), false);
	});
});
