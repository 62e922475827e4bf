/** What answers show in place of a stored secret (a bind password, a client secret); sent back, it keeps the stored one. */
export const SECRET_MASK = "********";

const HTML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
/** `s` as text inside HTML, element content or a quoted attribute alike. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c]);

/** `s` as a literal inside a regular expression. */
export const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const NON_ASCII = /[^\x00-\x7f]/;
const MARKS = /\p{M}+/gu;

/**
 * Lower case without accents ("Résumé" -> "resume"), for matching what people type against what they named:
 * search folds both sides. ASCII text, the usual case, skips the Unicode decomposition.
 */
export function foldText(s: string): string {
	const lower = s.toLowerCase();
	return NON_ASCII.test(lower) ? lower.normalize("NFD").replace(MARKS, "").normalize("NFC") : lower;
}
