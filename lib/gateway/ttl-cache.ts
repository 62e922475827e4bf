// A small bounded map whose entries expire: the gateway keeps resolved credentials and whole responses in
// these, for a few seconds, and empties them on any identity, token or policy change anywhere in the cluster.
export class TtlCache<T> {
	private entries = new Map<string, { value: T; until: number; bytes: number }>();
	private bytes = 0;
	/** Bumped on every clear: a value computed before a clear must not be stored after it. */
	generation = 0;

	/** At most `max` entries and, with `sizeOf`, `maxBytes` bytes: past either, everything goes (all is short-lived). */
	constructor(
		private readonly ttlMs: number,
		private readonly max = 20_000,
		private readonly maxBytes = Infinity,
		private readonly sizeOf?: (key: string, value: T) => number,
	) {}

	get(key: string, now = Date.now()): T | undefined {
		const e = this.entries.get(key);
		if (!e) return undefined;
		if (e.until <= now) {
			this.entries.delete(key);
			this.bytes -= e.bytes;
			return undefined;
		}
		return e.value;
	}

	/** Stores `value` until now + ttl, or until `notAfterMs` if that comes first. */
	set(key: string, value: T, notAfterMs = Infinity, now = Date.now(), generation = this.generation): void {
		if (generation !== this.generation) return;
		const bytes = this.sizeOf?.(key, value) ?? 0;
		if (bytes > this.maxBytes) return;
		const until = Math.min(now + this.ttlMs, notAfterMs);
		if (until <= now) return;
		const old = this.entries.get(key);
		if (old) {
			this.entries.delete(key);
			this.bytes -= old.bytes;
		}
		if (this.entries.size >= this.max || this.bytes + bytes > this.maxBytes) this.evict();
		this.entries.set(key, { value, until, bytes });
		this.bytes += bytes;
	}

	clear(): void {
		this.evict();
		this.generation++;
	}

	private evict(): void {
		this.entries.clear();
		this.bytes = 0;
	}

	/** Bytes held, as `sizeOf` counts them. */
	get heldBytes(): number {
		return this.bytes;
	}

	get size(): number {
		return this.entries.size;
	}
}
