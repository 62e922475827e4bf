// Full-text of small text files: which files qualify, and how text becomes words (stored by lib/db/search.ts).
import { lookup as mimeLookup, types as mimeTypes } from "mime-types";
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

/** The key isTextFile reads from a name: its lower-case extension, or the whole name when it has no dot. */
export function textKeyOf(name: string): string {
	const lower = name.toLowerCase();
	const dot = lower.lastIndexOf(".");
	return dot >= 0 ? lower.slice(dot + 1) : lower;
}

let textKeys: string[] | undefined;
/**
 * Every key (textKeyOf) that makes a file a text file by its name alone: the list above and every extension whose
 * MIME type is text. What the store's catch-up filters on (lib/db/search.ts staleTexts), so that it never reads the
 * rows of photos and archives; files made text by a `mime` metadata are found by that metadata.
 */
export function textFileKeys(): string[] {
	textKeys ??= [...new Set([...TEXT_EXTENSIONS, ...Object.entries(mimeTypes).filter(([, m]) => m.startsWith("text/") || TEXT_MIMES.has(m)).map(([e]) => e)])].sort();
	return textKeys;
}

/** Whether a file's text is worth reading: small, and a text type by its extension, its name or its `mime` meta. */
export function isTextFile(name: string, size: number, mimeMeta?: string): boolean {
	if (size > MAX_CONTENT_BYTES) return false;
	const lower = name.toLowerCase();
	if (TEXT_EXTENSIONS.has(textKeyOf(lower))) return true;
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
