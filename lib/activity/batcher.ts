// Collects items and hands them over in batches: after `delayMs` from the first item of a batch, or as soon as
// `max` items wait. One flush at a time, in order; what arrives during a flush waits for the next one. The queue
// is bounded: past `cap` waiting items the oldest are dropped (and counted), so a stuck store cannot fill memory.
export class Batcher<T> {
	private items: T[] = [];
	private timer: NodeJS.Timeout | undefined;
	private running: Promise<void> = Promise.resolve();
	dropped = 0;

	constructor(
		private readonly flushFn: (items: T[]) => Promise<void>,
		private readonly opts: { delayMs: number; max: number; cap: number; onError: (err: unknown) => void },
	) {}

	add(item: T): void {
		this.items.push(item);
		if (this.items.length > this.opts.cap) {
			const extra = this.items.length - this.opts.cap;
			this.items.splice(0, extra);
			this.dropped += extra;
		}
		if (this.items.length >= this.opts.max) void this.flush();
		else if (!this.timer) {
			this.timer = setTimeout(() => void this.flush(), this.opts.delayMs);
			this.timer.unref?.();
		}
	}

	/** Hands over what waits now; resolves once it is written (and every earlier batch too). */
	flush(): Promise<void> {
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
		const batch = this.items;
		this.items = [];
		this.running = this.running.then(async () => {
			if (!batch.length) return;
			try {
				await this.flushFn(batch);
			} catch (err) {
				this.opts.onError(err);
			}
		});
		return this.running;
	}
}
