// Full-text of small text files: which files qualify, how text becomes words, and the word -> slots postings.
import { lookup as mimeLookup } from "mime-types";
import { foldText } from "../strings";

/** Files above this size are never read for their text. */
export const MAX_CONTENT_BYTES = 1024 * 1024;
/** Distinct words kept per file (a 1 MB file of random tokens must not flood the index). */
export const MAX_WORDS_PER_FILE = 20_000;
const MAX_WORD_LENGTH = 64;

const TEXT_EXTENSIONS = new Set(
	(
		"txt text md markdown rst adoc csv tsv json jsonl ndjson xml html htm xhtml css scss less js mjs cjs ts tsx jsx vue svelte log " +
		"yml yaml toml ini cfg conf properties env sql sh bash zsh bat ps1 py rb go rs java kt scala c h cc cpp hpp cs php pl lua r " +
		"tex bib srt vtt svg gitignore dockerfile makefile"
	).split(" "),
);
const TEXT_MIMES = new Set(["application/json", "application/xml", "application/javascript", "application/x-javascript", "application/x-sh", "application/x-yaml", "application/yaml", "application/sql", "application/x-tex", "image/svg+xml"]);

/** Whether a file's text is worth reading: small, and a text type by its extension, its name or its `mime` meta. */
export function isTextFile(name: string, size: number, mimeMeta?: string): boolean {
	if (size > MAX_CONTENT_BYTES) return false;
	const lower = name.toLowerCase();
	const dot = lower.lastIndexOf(".");
	const ext = dot >= 0 ? lower.slice(dot + 1) : lower;
	if (TEXT_EXTENSIONS.has(ext)) return true;
	let mime = "";
	if (mimeMeta) {
		try {
			const v = JSON.parse(mimeMeta);
			if (typeof v === "string") mime = v;
		} catch {
			mime = mimeMeta;
		}
	}
	if (!mime) mime = mimeLookup(lower) || "";
	return mime.startsWith("text/") || TEXT_MIMES.has(mime.split(";")[0].trim());
}

/** Whether bytes look like text (no NUL in the first 8 KB). */
export function looksLikeText(buf: Buffer): boolean {
	return !buf.subarray(0, 8192).includes(0);
}

const WORD = /[\p{L}\p{N}]+/gu;

/** Distinct lower-case words (letters and digits) of a text, in first-seen order, at most `max`. */
export function tokenize(text: string, max = MAX_WORDS_PER_FILE): string[] {
	const seen = new Set<string>();
	for (const m of foldText(text).matchAll(WORD)) {
		const w = m[0];
		if (w.length > MAX_WORD_LENGTH) continue;
		seen.add(w);
		if (seen.size >= max) break;
	}
	return [...seen];
}

/** Query words: like tokenize, but a trailing `*` (prefix search) is kept. */
export function queryWords(text: string): string[] {
	const out: string[] = [];
	for (const raw of foldText(text).split(/\s+/)) {
		if (!raw) continue;
		const prefix = raw.endsWith("*");
		const words = tokenize(prefix ? raw.slice(0, -1) : raw, 100);
		words.forEach((w, i) => out.push(prefix && i === words.length - 1 ? `${w}*` : w));
	}
	return [...new Set(out)];
}

/**
 * word -> slots. Each slot also keeps its sorted word ids, for membership tests. Removal is lazy: a removed
 * file's entries stay in the postings (counted as stale, filtered out by lookups) until they are half of a list,
 * which is then compacted. Removing a file costs O(its words), whatever the size of the postings.
 */
export class ContentIndex {
	private ids = new Map<string, number>();
	private words: string[] = [];
	private postings: Int32Array[] = [];
	private lengths: number[] = [];
	private stale: number[] = [];
	private bySlot: (Int32Array | undefined)[] = [];
	private free: number[] = [];
	indexedFiles = 0;

	has(slot: number): boolean {
		return this.bySlot[slot] !== undefined;
	}

	private idOf(word: string): number {
		let id = this.ids.get(word);
		if (id === undefined) {
			id = this.free.pop() ?? this.words.length;
			this.ids.set(word, id);
			this.words[id] = word;
			this.postings[id] = new Int32Array(4);
			this.lengths[id] = 0;
			this.stale[id] = 0;
		}
		return id;
	}

	set(slot: number, words: string[]): void {
		this.remove(slot);
		const ids = new Int32Array(words.length);
		for (let k = 0; k < words.length; k++) {
			const id = this.idOf(words[k]);
			ids[k] = id;
			let list = this.postings[id];
			const len = this.lengths[id];
			if (len === list.length) {
				const grown = new Int32Array(len * 2);
				grown.set(list);
				this.postings[id] = list = grown;
			}
			list[len] = slot;
			this.lengths[id] = len + 1;
		}
		ids.sort();
		this.bySlot[slot] = ids;
		this.indexedFiles++;
	}

	remove(slot: number): void {
		const ids = this.bySlot[slot];
		if (!ids) return;
		this.bySlot[slot] = undefined;
		this.indexedFiles--;
		for (const id of ids) {
			this.stale[id]++;
			if (this.stale[id] * 2 >= this.lengths[id]) this.compact(id);
		}
	}

	private hasId(slot: number, id: number): boolean {
		const ids = slot >= 0 ? this.bySlot[slot] : undefined;
		if (!ids) return false;
		let lo = 0;
		let hi = ids.length - 1;
		while (lo <= hi) {
			const mid = (lo + hi) >> 1;
			if (ids[mid] === id) return true;
			if (ids[mid] < id) lo = mid + 1;
			else hi = mid - 1;
		}
		return false;
	}

	/** Drops the stale (and duplicate) entries of a posting list; frees the word when none is left. */
	private compact(id: number): void {
		const list = this.postings[id];
		const len = this.lengths[id];
		const seen = new Set<number>();
		let n = 0;
		for (let i = 0; i < len; i++) {
			const slot = list[i];
			if (!seen.has(slot) && this.hasId(slot, id)) {
				seen.add(slot);
				list[n++] = slot;
			}
		}
		this.lengths[id] = n;
		this.stale[id] = 0;
		if (n === 0) {
			this.ids.delete(this.words[id]);
			this.words[id] = "";
			this.postings[id] = new Int32Array(0);
			this.free.push(id);
		} else if (n < list.length >> 2 && list.length > 16) {
			this.postings[id] = list.slice(0, Math.max(4, n * 2));
		}
	}

	/**
	 * Renumbers slots (`newOf[old]`), after the index changed its layout. Stale entries are renumbered too (a
	 * removed slot becomes -1, which no lookup accepts): compacting every list here would cost far more.
	 */
	remap(newOf: Int32Array): void {
		for (let id = 0; id < this.postings.length; id++) {
			const list = this.postings[id];
			for (let i = 0; i < this.lengths[id]; i++) list[i] = list[i] >= 0 && list[i] < newOf.length ? newOf[list[i]] : -1;
		}
		const next: (Int32Array | undefined)[] = [];
		this.bySlot.forEach((ids, old) => {
			if (ids && newOf[old] >= 0) next[newOf[old]] = ids;
		});
		this.bySlot = next;
	}

	/** Word ids for a query word; a trailing `*` means every word starting with it. */
	private idsFor(word: string): number[] {
		if (word.endsWith("*")) {
			const prefix = word.slice(0, -1);
			const out: number[] = [];
			for (const [w, id] of this.ids) if (w.startsWith(prefix)) out.push(id);
			return out;
		}
		const id = this.ids.get(word);
		return id === undefined ? [] : [id];
	}

	/** Whether the slot's text has the word (or, with a trailing `*`, a word starting with it). */
	contains(slot: number, word: string): boolean {
		const ids = this.bySlot[slot];
		if (!ids) return false;
		if (word.endsWith("*")) {
			const prefix = word.slice(0, -1);
			for (const id of ids) if (this.words[id].startsWith(prefix)) return true;
			return false;
		}
		const id = this.ids.get(word);
		return id !== undefined && this.hasId(slot, id);
	}

	/** Slots containing every word (an AND), from the shortest posting list; may hold a slot twice. */
	matchAll(words: string[]): number[] {
		if (!words.length) return [];
		const lists = words.map((w) => {
			const ids = this.idsFor(w);
			return { w, ids, n: ids.reduce((a, id) => a + this.lengths[id], 0) };
		});
		lists.sort((a, b) => a.n - b.n);
		const first = lists[0];
		const out: number[] = [];
		for (const id of first.ids) {
			const list = this.postings[id];
			const len = this.lengths[id];
			const check = this.stale[id] > 0;
			for (let i = 0; i < len; i++) {
				const slot = list[i];
				if (check && !this.hasId(slot, id)) continue;
				let ok = true;
				for (let k = 1; k < lists.length && ok; k++) ok = this.contains(slot, lists[k].w);
				if (ok) out.push(slot);
			}
		}
		return out;
	}

	get distinctWords(): number {
		return this.ids.size;
	}
}
