// A small bounded map whose entries expire: the gateway keeps resolved credentials and whole responses in
// these, for a few seconds, and empties them on any identity, token or policy change anywhere in the cluster.
export class TtlCache<T> {
	private entries = new Map<string, { value: T; until: number }>();
	/** Bumped on every clear: a value computed before a clear must not be stored after it. */
	generation = 0;

	constructor(private readonly ttlMs: number, private readonly max = 20_000) {}

	get(key: string, now = Date.now()): T | undefined {
		const e = this.entries.get(key);
		if (!e) return undefined;
		if (e.until <= now) {
			this.entries.delete(key);
			return undefined;
		}
		return e.value;
	}

	/** Stores `value` until now + ttl, or until `notAfterMs` if that comes first. */
	set(key: string, value: T, notAfterMs = Infinity, now = Date.now(), generation = this.generation): void {
		if (generation !== this.generation) return;
		if (this.entries.size >= this.max) this.entries.clear();
		const until = Math.min(now + this.ttlMs, notAfterMs);
		if (until > now) this.entries.set(key, { value, until });
	}

	clear(): void {
		this.entries.clear();
		this.generation++;
	}

	get size(): number {
		return this.entries.size;
	}
}
