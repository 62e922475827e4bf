// Slots kept in (datasource, path) order, so that a subtree is one contiguous run: the slots under "a/b" are the
// node "a/b" itself plus every key in ["a/b/", "a/b0") ("0" is the character after "/"). A list of small blocks
// (sqrt decomposition): an insert or a removal touches one block of at most MAX entries, a lookup is two binary
// searches. The keys live in the owner's columns; `key(slot)` reads them.

const MAX = 1024;
const HALF = MAX >> 1;

export interface Position {
	b: number;
	i: number;
}

export class SortedSlots {
	private blocks: number[][] = [[]];

	constructor(
		private readonly dsOf: (slot: number) => number,
		private readonly pathOf: (slot: number) => string,
	) {}

	get length(): number {
		let n = 0;
		for (const b of this.blocks) n += b.length;
		return n;
	}

	private cmp(slot: number, ds: number, path: string): number {
		const d = this.dsOf(slot) - ds;
		if (d !== 0) return d;
		const p = this.pathOf(slot);
		return p < path ? -1 : p > path ? 1 : 0;
	}

	/** Replaces the content with `slots`, which must already be in key order. */
	load(slots: ArrayLike<number>): void {
		this.blocks = [];
		for (let s = 0; s < slots.length; s += HALF) this.blocks.push(Array.from({ length: Math.min(HALF, slots.length - s) }, (_, k) => slots[s + k]));
		if (!this.blocks.length) this.blocks.push([]);
	}

	/** The first position whose key is >= (ds, path). */
	lowerBound(ds: number, path: string): Position {
		const blocks = this.blocks;
		let lo = 0;
		let hi = blocks.length;
		// First block whose last key >= target.
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			const blk = blocks[mid];
			if (blk.length && this.cmp(blk[blk.length - 1], ds, path) < 0) lo = mid + 1;
			else hi = mid;
		}
		if (lo === blocks.length) return { b: blocks.length - 1, i: blocks[blocks.length - 1].length };
		const blk = blocks[lo];
		let l = 0;
		let h = blk.length;
		while (l < h) {
			const mid = (l + h) >> 1;
			if (this.cmp(blk[mid], ds, path) < 0) l = mid + 1;
			else h = mid;
		}
		return { b: lo, i: l };
	}

	/** The number of slots before a position (for range sizes). */
	rank(p: Position): number {
		let n = p.i;
		for (let b = 0; b < p.b; b++) n += this.blocks[b].length;
		return n;
	}

	insert(slot: number): void {
		const p = this.lowerBound(this.dsOf(slot), this.pathOf(slot));
		const blk = this.blocks[p.b];
		blk.splice(p.i, 0, slot);
		if (blk.length > MAX) this.blocks.splice(p.b, 1, blk.slice(0, HALF), blk.slice(HALF));
	}

	/** Removes `slot`, found by its current key (call before changing the key). Returns false if it was not there. */
	remove(slot: number): boolean {
		const ds = this.dsOf(slot);
		const path = this.pathOf(slot);
		let { b, i } = this.lowerBound(ds, path);
		// Equal keys (should not happen, but the index must survive inconsistent events): scan them.
		for (; b < this.blocks.length; b++, i = 0) {
			const blk = this.blocks[b];
			for (; i < blk.length; i++) {
				const s = blk[i];
				if (s === slot) {
					blk.splice(i, 1);
					if (!blk.length && this.blocks.length > 1) this.blocks.splice(b, 1);
					return true;
				}
				if (this.cmp(s, ds, path) !== 0) return false;
			}
		}
		return false;
	}

	/** Calls `fn` for every slot in [from, to), in key order; stops early when `fn` returns false. */
	each(from: Position, to: Position, fn: (slot: number) => boolean | void): void {
		for (let b = from.b; b <= to.b && b < this.blocks.length; b++) {
			const blk = this.blocks[b];
			const start = b === from.b ? from.i : 0;
			const end = b === to.b ? to.i : blk.length;
			for (let i = start; i < end; i++) if (fn(blk[i]) === false) return;
		}
	}

	/** Calls `fn` with each block piece of [from, to): `fn(block, start, end)` (for tight loops). */
	runs(from: Position, to: Position, fn: (block: readonly number[], start: number, end: number) => void): void {
		for (let b = from.b; b <= to.b && b < this.blocks.length; b++) {
			const blk = this.blocks[b];
			const start = b === from.b ? from.i : 0;
			const end = b === to.b ? to.i : blk.length;
			if (start < end) fn(blk, start, end);
		}
	}

	/** The slots of the run [from, to) as an array (for moves: collected before keys change). */
	slice(from: Position, to: Position): number[] {
		const out: number[] = [];
		this.each(from, to, (s) => void out.push(s));
		return out;
	}

	/** Positions of the descendants of (ds, prefix): ["prefix/", "prefix0"), or the whole datasource but its root for "". */
	descendants(ds: number, prefix: string): [Position, Position] {
		if (prefix === "") return [this.lowerBound(ds, "\u0000"), this.lowerBound(ds + 1, "")];
		return [this.lowerBound(ds, prefix + "/"), this.lowerBound(ds, prefix + "0")];
	}

	/** The slot whose key is exactly (ds, path), or -1. */
	find(ds: number, path: string): number {
		const p = this.lowerBound(ds, path);
		const blk = this.blocks[p.b];
		if (p.i < blk.length && this.cmp(blk[p.i], ds, path) === 0) return blk[p.i];
		const next = this.blocks[p.b + 1];
		if (p.i === blk.length && next?.length && this.cmp(next[0], ds, path) === 0) return next[0];
		return -1;
	}
}
