// lib/frontend/thumbnail-pool (PNG thumbnails made by worker threads: parallel jobs, one job per key, a bounded
// queue answered with 503, crashed, stalled and idle workers replaced) and lib/frontend/binaries' BinaryReader
// (dims rounded to THUMBNAIL_SIZES; a kept thumbnail served from the binary's metadata, its bytes not read).
import assert from "node:assert/strict";
import { BroadcastChannel } from "node:worker_threads";
import { join } from "node:path";
import { encodePng, pngSize, pngThumbnail } from "../../lib/frontend/images";
import { ThumbnailPool } from "../../lib/frontend/thumbnail-pool";
import { BinaryReader, ThumbnailCache, thumbnailDim, type BinaryMeta, type BinaryStore, type BinaryType, type StoredBinary } from "../../lib/frontend/binaries";
import type { HoldMessage } from "../helpers/thumbnail-test-worker";
import { clusterBrokerOptions } from "../../lib/cluster/broker-options";
import { loadConfig } from "../../lib/config";
import { toRestError } from "../../lib/errors";

const TEST_WORKER = join(__dirname, "..", "helpers", "thumbnail-test-worker.ts");

function png(width: number, height: number): Buffer {
	const data = Buffer.alloc(width * height * 4);
	for (let i = 0; i < width * height; i++) data.set([i % 256, (i * 7) % 256, 200, 255], i * 4);
	return encodePng({ width, height, data });
}

const text = (b: Buffer | null) => b?.toString() ?? null;
const failure = (code: number, pattern: RegExp) => (e: Error & { code?: number }) => e.code === code && pattern.test(e.message);

describe("thumbnail pool (lib/frontend/thumbnail-pool)", function () {
	// Each worker loads tsx before its first job: seconds on a loaded machine.
	this.timeout(60_000);
	const pools: ThumbnailPool[] = [];
	const pool = (opts: ConstructorParameters<typeof ThumbnailPool>[0]) => {
		const p = new ThumbnailPool(opts);
		pools.push(p);
		return p;
	};
	afterEach(async () => {
		await Promise.all(pools.splice(0).map((p) => p.close()));
	});

	it("makes the thumbnail lib/frontend/images makes, in a worker thread; the original for what it does not resize", async () => {
		const p = pool({ size: 1 });
		const image = png(300, 150);
		const thumb = await p.make("k1", image, 64);
		assert.ok(thumb?.equals(pngThumbnail(image, 64) as Buffer));
		assert.deepEqual(pngSize(thumb as Buffer), { width: 64, height: 32 });
		// Not larger than asked, and not a PNG decoded here (16-bit): null, serve the original.
		assert.equal(await p.make("k2", image, 512), null);
		const deep = Buffer.from(image);
		deep[24] = 16;
		assert.equal(await p.make("k3", deep, 64), null);
		// A damaged header: no thumbnail (the original is served), and the worker goes on.
		const broken = Buffer.concat([image.subarray(0, 8), Buffer.from([0, 0, 0, 0]), Buffer.from("IHDR"), Buffer.alloc(4), Buffer.alloc(8, 0xff)]);
		assert.equal(await p.make("k4", broken, 64), null);
		assert.ok((await p.make("k5", image, 32))?.length);
		assert.deepEqual([p.started, p.workers], [1, 1]);
	});

	describe("with a worker held by the test", () => {
		const channel = new BroadcastChannel("thumbnail-test");
		const started: HoldMessage[] = [];
		channel.onmessage = (e) => void started.push((e as { data: HoldMessage }).data);
		after(() => channel.close());
		beforeEach(() => void (started.length = 0));
		const release = (name: string) => channel.postMessage({ release: name } satisfies HoldMessage);
		const waitStarted = async (n: number) => {
			for (let i = 0; i < 600 && started.length < n; i++) await new Promise((r) => setTimeout(r, 50));
			assert.equal(started.length, n, `${n} job(s) running`);
		};

		it("runs jobs side by side, one per key, and refuses past its queue with a 503", async () => {
			const p = pool({ workerFile: TEST_WORKER, size: 2, maxQueue: 1 });
			const a = p.make("a", Buffer.from("hold:a"), 64);
			const b = p.make("b", Buffer.from("hold:b"), 64);
			// Both running at once, each in its own thread.
			await waitStarted(2);
			assert.deepEqual(started.map((m) => m.started).sort(), ["a", "b"]);
			assert.notEqual(started[0].thread, started[1].thread);
			// The same key again: the job already under way, not another one.
			assert.equal(p.make("a", Buffer.from("hold:a"), 64), a);
			// One may wait; the next is refused, saying so, with the status the gateway adds Retry-After to.
			const c = p.make("c", Buffer.from("hold:c"), 64);
			assert.equal(p.queued, 1);
			const busy = await p.make("d", Buffer.from("hold:d"), 64).then(() => assert.fail("accepted past the queue"), (e: Error) => e);
			assert.deepEqual(toRestError(busy), { status: 503, body: { Code: "busy", Title: busy.message, Detail: `Service Unavailable: ${busy.message}` } });
			assert.match(busy.message, /^3 thumbnails are being made on this node: retry in a moment$/);
			// Shedding load is not failing: the circuit breaker does not count it against the service.
			const breaker = clusterBrokerOptions(loadConfig()).circuitBreaker;
			assert.deepEqual([breaker?.check?.(busy), breaker?.check?.(new Error("a failure"))], [false, true]);
			// A key waiting in the queue is shared too, and does not count twice.
			assert.equal(p.make("c", Buffer.from("hold:c"), 64), c);
			release("a");
			assert.match(text(await a) ?? "", /^a@\d+$/);
			// Its worker takes the job waiting.
			await waitStarted(3);
			release("b");
			release("c");
			assert.match(text(await b) ?? "", /^b@\d+$/);
			assert.match(text(await c) ?? "", /^c@\d+$/);
			assert.deepEqual([p.started, p.queued], [2, 0]);
			// Done: the key makes a new job.
			const again = p.make("a", Buffer.from("hold:a"), 64);
			assert.notEqual(again, a);
			await waitStarted(4);
			release("a");
			await again;
		});

		it("fails the job of a worker that crashed or exited, and replaces the worker", async () => {
			const p = pool({ workerFile: TEST_WORKER, size: 1, maxQueue: 4 });
			assert.equal(text(await p.make("ok", Buffer.from("ok"), 64)), "OK");
			// A job queued behind the crash runs on the replacement.
			const crash = p.make("crash", Buffer.from("crash"), 64);
			const next = p.make("next", Buffer.from("next"), 64);
			await assert.rejects(crash, failure(500, /^The thumbnail could not be made: its worker crashed \(boom\)/));
			assert.equal(text(await next), "NEXT");
			await assert.rejects(p.make("exit", Buffer.from("exit"), 64), failure(500, /its worker exited \(code 3\)/));
			assert.equal(text(await p.make("after", Buffer.from("after"), 64)), "AFTER");
			assert.deepEqual([p.started, p.workers], [3, 1]);
		});

		it("abandons a job past its time limit, ends idle workers, and fails what is left when closed", async () => {
			const p = pool({ workerFile: TEST_WORKER, size: 1, maxQueue: 4, jobTimeoutMs: 1500, idleMs: 100 });
			await assert.rejects(p.make("hang", Buffer.from("hang"), 64), failure(500, /took more than 1.5 s/));
			assert.equal(text(await p.make("ok", Buffer.from("ok"), 64)), "OK");
			assert.equal(p.started, 2);
			for (let i = 0; i < 100 && p.workers; i++) await new Promise((r) => setTimeout(r, 20));
			assert.equal(p.workers, 0, "the idle worker ended");
			const held = p.make("held", Buffer.from("hold:held"), 64);
			const waiting = p.make("waiting", Buffer.from("x"), 64);
			await waitStarted(1);
			await p.close();
			await assert.rejects(held, failure(503, /service stops/));
			await assert.rejects(waiting, failure(503, /service stops/));
			await assert.rejects(p.make("late", Buffer.from("x"), 64), failure(503, /service stops/));
			assert.equal(p.workers, 0);
		});
	});
});

/** The store in memory, counting the reads that carry the image's bytes and those that do not. */
class MemoryBinaries implements BinaryStore {
	rows: StoredBinary[] = [];
	dataReads = 0;
	metaReads = 0;
	private meta({ data: _data, ...m }: StoredBinary): BinaryMeta {
		return m;
	}
	async byOwner(kind: BinaryType, owner: string) {
		this.dataReads++;
		return this.rows.find((r) => r.kind === kind && r.owner === owner) ?? null;
	}
	async byId(kind: BinaryType, id: string) {
		this.dataReads++;
		return this.rows.find((r) => r.kind === kind && r.id === id) ?? null;
	}
	async metaByOwner(kind: BinaryType, owner: string) {
		this.metaReads++;
		const r = this.rows.find((x) => x.kind === kind && x.owner === owner);
		return r ? this.meta(r) : null;
	}
	async metaById(kind: BinaryType, id: string) {
		this.metaReads++;
		const r = this.rows.find((x) => x.kind === kind && x.id === id);
		return r ? this.meta(r) : null;
	}
}

describe("binary reads (lib/frontend/binaries BinaryReader)", () => {
	it("rounds dim up to the thumbnail sizes", () => {
		assert.deepEqual([1, 16, 32, 33, 100, 128, 200, 1000, 1500, 4096, 9999].map(thumbnailDim), [32, 32, 32, 64, 128, 128, 256, 1024, 2048, 4096, 4096]);
	});

	it("serves a kept thumbnail from the binary's metadata, reading its bytes only to make one or to serve the original", async () => {
		const store = new MemoryBinaries();
		const avatar = png(300, 150);
		store.rows.push({ kind: "USER", owner: "u-dave", id: "d1.png", mime: "image/png", data: avatar, createdAt: 1 });
		store.rows.push({ kind: "GLOBAL", owner: "logo", id: "l1.jpg", mime: "image/jpeg", data: Buffer.from([0xff, 0xd8, 0xff]), createdAt: 1 });
		const made: [string, number][] = [];
		const reader = new BinaryReader(store, new ThumbnailCache(), async (key, image, dim) => (made.push([key, dim]), pngThumbnail(image, dim)));
		const dave = { kind: "USER" as const, owner: "u-dave", login: "dave" };

		const first = await reader.read(dave, 100);
		// 100 asked, 128 answered: the size it rounds up to.
		assert.deepEqual([first.mime, first.resized, pngSize(first.data)], ["image/png", true, { width: 128, height: 64 }]);
		assert.deepEqual([made.length, made[0][1], store.metaReads, store.dataReads], [1, 128, 1, 1]);
		// Another dim of the same size: the kept thumbnail, from the metadata alone.
		const second = await reader.read(dave, 120);
		assert.equal(second.data, first.data);
		assert.deepEqual([made.length, store.metaReads, store.dataReads], [1, 2, 1]);
		// No dim: the original, read whole, no metadata read first.
		assert.equal((await reader.read(dave, undefined)).data, avatar);
		assert.deepEqual([store.metaReads, store.dataReads], [2, 2]);
		// A new upload (a new id): the metadata names it, so the old thumbnail is not served.
		const replaced = png(50, 100);
		store.rows[0] = { ...store.rows[0], id: "d2.png", data: replaced };
		assert.deepEqual(pngSize((await reader.read(dave, 40)).data), { width: 32, height: 64 });
		// Already small enough at 128: the original, which needs the bytes.
		assert.equal((await reader.read(dave, 128)).data, replaced);
		// Not a PNG: the original, by name or by id.
		const logo = await reader.read({ kind: "GLOBAL", name: "logo" }, 32);
		assert.deepEqual([logo.mime, logo.resized], ["image/jpeg", false]);
		assert.equal((await reader.read({ kind: "GLOBAL", name: "l1.jpg" }, undefined)).mime, "image/jpeg");
		await assert.rejects(reader.read({ kind: "USER", owner: "u-erin", login: "erin" }, 32), failure(404, /erin has no avatar/));
		await assert.rejects(reader.read({ kind: "GLOBAL", name: "nothing" }, undefined), failure(404, /No global image named nothing/));
	});
});
