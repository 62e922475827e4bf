// PNG thumbnails made off the event loop: decoding a 40-megapixel PNG takes seconds of CPU, during which a node
// making it on its main thread answers nothing else (health probes, heartbeats, every other request). A few
// worker threads run lib/frontend/images' pngThumbnail (thumbnail-worker.ts), one image at a time each; jobs
// wait in a bounded queue, past which the node answers 503 (BusyError) rather than pile up decodes (each takes
// about 5 bytes a pixel while it runs). Requests for the same thumbnail share one job.
import { Worker } from "node:worker_threads";
import { availableParallelism } from "node:os";
import { extname, join } from "node:path";
import { BusyError, CellarError, ServiceUnavailableError } from "../errors";

/** What the pool sends a worker: decode `png`, answer a PNG of at most dim×dim. */
export interface ThumbnailRequest {
	id: number;
	png: Uint8Array;
	dim: number;
}
/** A worker's answer; `data` null: serve the original (not a PNG this server decodes, or no larger than dim). */
export type ThumbnailReply = { id: number; ok: true; data: Uint8Array | null } | { id: number; ok: false; message: string };
/** A worker's first message, once its code is loaded: a job's time limit counts from then, not from its start. */
export const WORKER_READY = { ready: true } as const;
type WorkerMessage = ThumbnailReply | typeof WORKER_READY;

export interface ThumbnailPoolOptions {
	/** Worker threads at most: each decode takes a core. */
	size?: number;
	/** Jobs waiting for a worker at most; past them `make` refuses (503). */
	maxQueue?: number;
	/** A job running longer is abandoned: its worker is ended and replaced, the request fails. */
	jobTimeoutMs?: number;
	/** An idle worker ends after this long (it holds an isolate and the heap of its last decode); the next job starts one. */
	idleMs?: number;
	/** The worker's script; tests give one that can crash or stall. */
	workerFile?: string;
}

/** One worker a core but one (the event loop keeps a core), two at most: thumbnails are a side line. */
export const THUMBNAIL_WORKERS = Math.min(2, Math.max(1, availableParallelism() - 1));
/** A 40-megapixel decode takes seconds: a longer queue would make its last jobs wait past the request timeout. */
export const THUMBNAIL_QUEUE = 8;
const JOB_TIMEOUT_MS = 30_000;
const IDLE_MS = 30_000;

/** The worker beside this file: .ts under tsx (tests, `npm run dev`), .js once compiled. */
const DEFAULT_WORKER = join(__dirname, `thumbnail-worker${extname(__filename)}`);

interface Job {
	id: number;
	key: string;
	png: Buffer;
	dim: number;
	resolve(thumb: Buffer | null): void;
	reject(err: Error): void;
}

interface Slot {
	worker: Worker;
	job: Job | null;
	/** Why the worker is stopping, when the pool stopped it (timeout, idle, close): what its job's error says. */
	stopping?: string;
	/** The worker's uncaught error, reported before its exit. */
	error?: Error;
	timer?: NodeJS.Timeout;
	/** Its code is loaded (it said so): the time limit of a job sent before then starts now. */
	ready?: boolean;
}

/** A thumbnail that could not be made (its worker failed): a 500 that says so. */
function failed(why: string): CellarError {
	return new CellarError(`The thumbnail could not be made: ${why}`, 500, "thumbnail.failed");
}

/**
 * A thread running `file`. A TypeScript file (under tsx: tests, `npm run dev`) is required through tsx's CommonJS
 * hooks, registered in the thread first: neither mocha's `--require` nor `--import tsx`'s ESM hooks reach a worker.
 */
function workerFor(file: string): Worker {
	if (!file.endsWith(".ts")) return new Worker(file);
	return new Worker(`require(${JSON.stringify(require.resolve("tsx/cjs"))}); require(${JSON.stringify(file)});`, { eval: true });
}

const stopping = () => new ServiceUnavailableError("Thumbnails are not made while the service stops");

export class ThumbnailPool {
	private readonly slots: Slot[] = [];
	private readonly queue: Job[] = [];
	private readonly inflight = new Map<string, Promise<Buffer | null>>();
	private readonly size: number;
	private readonly maxQueue: number;
	private readonly jobTimeoutMs: number;
	private readonly idleMs: number;
	private readonly workerFile: string;
	private nextId = 1;
	private closed = false;
	/** Workers started, replacements included (tests, logs). */
	started = 0;

	constructor(opts: ThumbnailPoolOptions = {}) {
		this.size = Math.max(1, opts.size ?? THUMBNAIL_WORKERS);
		this.maxQueue = Math.max(0, opts.maxQueue ?? THUMBNAIL_QUEUE);
		this.jobTimeoutMs = opts.jobTimeoutMs ?? JOB_TIMEOUT_MS;
		this.idleMs = opts.idleMs ?? IDLE_MS;
		this.workerFile = opts.workerFile ?? DEFAULT_WORKER;
	}

	/**
	 * The thumbnail of `png` at `dim` (null: serve the original), made by a worker. `key` names the result: a
	 * request for a key already being made waits for that job instead of starting another. BusyError (503) when
	 * every worker is busy and the queue is full; a 500 naming the cause when the worker failed.
	 */
	make(key: string, png: Buffer, dim: number): Promise<Buffer | null> {
		const shared = this.inflight.get(key);
		if (shared) return shared;
		if (this.closed) return Promise.reject(stopping());
		const startsNow = this.slots.some((s) => !s.job) || this.slots.length < this.size;
		if (!startsNow && this.queue.length >= this.maxQueue) {
			return Promise.reject(new BusyError(`${this.size + this.queue.length} thumbnails are being made on this node: retry in a moment`));
		}
		const p = new Promise<Buffer | null>((resolve, reject) => {
			this.queue.push({ id: this.nextId++, key, png, dim, resolve, reject });
		});
		this.inflight.set(key, p);
		const done = () => this.inflight.get(key) === p && this.inflight.delete(key);
		p.then(done, done);
		this.pump();
		return p;
	}

	/** Jobs waiting for a worker. */
	get queued(): number {
		return this.queue.length;
	}

	/** Workers alive. */
	get workers(): number {
		return this.slots.length;
	}

	/** Ends the workers; jobs waiting or running fail (503). */
	async close(): Promise<void> {
		this.closed = true;
		for (const job of this.queue.splice(0)) job.reject(stopping());
		await Promise.all(this.slots.map((s) => this.stop(s, "the service stopped")));
	}

	private pump(): void {
		while (this.queue.length && !this.closed) {
			let slot = this.slots.find((s) => !s.job);
			if (!slot) {
				if (this.slots.length >= this.size) return;
				slot = this.spawn();
			}
			const job = this.queue.shift();
			if (!job) return;
			this.run(slot, job);
		}
	}

	private spawn(): Slot {
		const slot: Slot = { worker: workerFor(this.workerFile), job: null };
		this.started++;
		this.slots.push(slot);
		// A pool left open never keeps the process alive.
		slot.worker.unref();
		slot.worker.on("message", (m: WorkerMessage) => {
			if (!("ready" in m)) return this.answered(slot, m);
			slot.ready = true;
			if (slot.job) this.startTimer(slot);
		});
		slot.worker.on("error", (err) => (slot.error = err));
		slot.worker.on("exit", (code) => this.exited(slot, code));
		return slot;
	}

	private run(slot: Slot, job: Job): void {
		clearTimeout(slot.timer);
		slot.job = job;
		const request: ThumbnailRequest = { id: job.id, png: job.png, dim: job.dim };
		slot.worker.postMessage(request);
		// A worker still loading its code (seconds under tsx on a busy machine) gets the message once it listens.
		if (slot.ready) this.startTimer(slot);
	}

	private startTimer(slot: Slot): void {
		clearTimeout(slot.timer);
		slot.timer = setTimeout(() => void this.stop(slot, `it took more than ${this.jobTimeoutMs / 1000} s`), this.jobTimeoutMs).unref();
	}

	private answered(slot: Slot, reply: ThumbnailReply): void {
		const job = slot.job;
		if (!job || job.id !== reply.id) return;
		clearTimeout(slot.timer);
		slot.job = null;
		if (reply.ok) job.resolve(reply.data ? Buffer.from(reply.data.buffer, reply.data.byteOffset, reply.data.byteLength) : null);
		else job.reject(failed(reply.message));
		if (this.slots.includes(slot)) slot.timer = setTimeout(() => void this.stop(slot, "idle"), this.idleMs).unref();
		this.pump();
	}

	/** Ends a worker the pool no longer wants; its job, if any, fails with `why`. */
	private stop(slot: Slot, why: string): Promise<number> {
		slot.stopping ??= why;
		this.remove(slot);
		return slot.worker.terminate();
	}

	private exited(slot: Slot, code: number): void {
		this.remove(slot);
		const job = slot.job;
		slot.job = null;
		if (job) {
			const why = slot.stopping ?? (slot.error ? `its worker crashed (${slot.error.message})` : `its worker exited (code ${code})`);
			job.reject(this.closed ? stopping() : failed(why));
		}
		// Its replacement: the next job waiting starts a new worker.
		this.pump();
	}

	private remove(slot: Slot): void {
		clearTimeout(slot.timer);
		const i = this.slots.indexOf(slot);
		if (i >= 0) this.slots.splice(i, 1);
	}
}
