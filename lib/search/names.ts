// Substring search over every lower-case file name at once: the names live in one big string, separated by NUL
// (which no name may contain), searched with String.prototype.indexOf (a memchr/Boyer-Moore scan in V8: ~12 ms
// over a million names, see bench/search.ts). The text is append-only: a renamed or removed node only marks its
// old segment dead, and the text is rebuilt once dead segments outnumber live ones.

export class NameText {
	private text = "";
	private tail: string[] = [];
	private textLen = 0;
	private segStart = new Int32Array(1024);
	private segSlot = new Int32Array(1024);
	private nseg = 0;
	private dead = 0;
	/** Current segment of each slot, -1 if none. */
	private slotSeg = new Int32Array(1024).fill(-1);

	constructor(private readonly nameOf: (slot: number) => string | undefined) {}

	private growSlots(slot: number): void {
		if (slot < this.slotSeg.length) return;
		let n = this.slotSeg.length;
		while (n <= slot) n *= 2;
		const next = new Int32Array(n).fill(-1);
		next.set(this.slotSeg);
		this.slotSeg = next;
	}

	set(slot: number, lowerName: string): void {
		this.growSlots(slot);
		if (this.slotSeg[slot] >= 0) this.dead++;
		if (this.nseg === this.segStart.length) {
			const a = new Int32Array(this.nseg * 2);
			a.set(this.segStart);
			this.segStart = a;
			const b = new Int32Array(this.nseg * 2);
			b.set(this.segSlot);
			this.segSlot = b;
		}
		this.segStart[this.nseg] = this.textLen;
		this.segSlot[this.nseg] = slot;
		this.slotSeg[slot] = this.nseg++;
		this.tail.push(lowerName, "\u0000");
		this.textLen += lowerName.length + 1;
		if (this.dead > 50_000 && this.dead > this.nseg - this.dead) this.compact();
	}

	remove(slot: number): void {
		if (slot < this.slotSeg.length && this.slotSeg[slot] >= 0) {
			this.slotSeg[slot] = -1;
			this.dead++;
		}
	}

	/** Forgets everything (before slots are renumbered). */
	clear(): void {
		this.text = "";
		this.tail = [];
		this.textLen = 0;
		this.nseg = 0;
		this.dead = 0;
		this.slotSeg.fill(-1);
	}

	/** Rebuilds the text from the live names only. */
	compact(): void {
		const live: number[] = [];
		for (let s = 0; s < this.nseg; s++) {
			const slot = this.segSlot[s];
			if (this.slotSeg[slot] === s) live.push(slot);
		}
		this.clear();
		for (const slot of live) {
			const name = this.nameOf(slot);
			if (name !== undefined) this.set(slot, name);
		}
	}

	/** Joins the appended names now (after a bulk load), so that the first query does not pay for it. */
	prepare(): void {
		this.flush().indexOf("\u0000\u0000");
	}

	private flush(): string {
		if (this.tail.length) {
			this.text = this.text + this.tail.join("");
			this.tail = [];
		}
		return this.text;
	}

	/** Calls `fn` once for every slot whose name contains `needle` (lower-case, non-empty, no NUL). */
	search(needle: string, fn: (slot: number) => void): void {
		const text = this.flush();
		const starts = this.segStart;
		const n = this.nseg;
		let pos = 0;
		for (;;) {
			const at = text.indexOf(needle, pos);
			if (at < 0) return;
			// The segment holding `at`: the last start <= at.
			let lo = 0;
			let hi = n - 1;
			while (lo < hi) {
				const mid = (lo + hi + 1) >> 1;
				if (starts[mid] <= at) lo = mid;
				else hi = mid - 1;
			}
			const slot = this.segSlot[lo];
			if (this.slotSeg[slot] === lo) fn(slot);
			pos = lo + 1 < n ? starts[lo + 1] : text.length;
		}
	}

	get bytes(): number {
		return this.textLen;
	}
}
