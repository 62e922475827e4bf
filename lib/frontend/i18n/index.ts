// The dictionaries, by language code. GET /frontend/messages/{Lang} answers English overlaid with the asked
// language (a missing translation shows in English, never as a key); an unknown language gets English, as Cells.
import { EN_US, type MessageKey } from "./en-us";
import { FR } from "./fr";

export type { MessageKey };
export type Dictionary = Readonly<Record<MessageKey, string>>;

export const DEFAULT_LANGUAGE = "en-us";

export const DICTIONARIES: Readonly<Record<string, Dictionary>> = Object.freeze({ "en-us": EN_US, fr: FR });

/** Code -> name of the language in itself, as bootconf's availableLanguages shows them. */
export const LANGUAGE_NAMES: Readonly<Record<string, string>> = Object.freeze({ "en-us": "English", fr: "Français" });

/**
 * The language a request's code selects: the code itself when known ("fr", "en-us"), else its primary subtag
 * ("fr-CA", "fr_FR" -> "fr"; "en", "en-GB" -> "en-us"), else the default.
 */
export function resolveLanguage(code: string | undefined): string {
	const l = (code ?? "").trim().toLowerCase().replace(/_/g, "-");
	if (DICTIONARIES[l]) return l;
	const primary = l.split("-")[0];
	if (DICTIONARIES[primary]) return primary;
	const sameFamily = Object.keys(DICTIONARIES).find((k) => k.split("-")[0] === primary);
	return sameFamily ?? DEFAULT_LANGUAGE;
}

/**
 * The language an Accept-Language header prefers among the dictionaries ("de, fr-CH;q=0.9, en;q=0.5" → "fr"), or
 * undefined when it names none of them: the caller's own default applies then.
 */
export function acceptedLanguage(header: string | undefined): string | undefined {
	if (!header) return undefined;
	const ranked = header
		.slice(0, 512)
		.split(",")
		.map((part, i) => {
			const [tag, ...params] = part.split(";").map((x) => x.trim());
			const q = params.find((p) => p.startsWith("q="));
			return { tag, q: q === undefined ? 1 : Number(q.slice(2)), i };
		})
		.filter((r) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(r.tag) && r.q > 0)
		.sort((a, b) => b.q - a.q || a.i - b.i);
	for (const { tag } of ranked) {
		const l = resolveLanguage(tag);
		// resolveLanguage falls back to the default: only a tag of the default's own family selects it here.
		if (l !== DEFAULT_LANGUAGE || tag.toLowerCase().split("-")[0] === DEFAULT_LANGUAGE.split("-")[0]) return l;
	}
	return undefined;
}

/** Each language overlaid on English, built once. */
const MERGED: Readonly<Record<string, Dictionary>> = Object.freeze(Object.fromEntries(Object.entries(DICTIONARIES).map(([k, d]) => [k, Object.freeze({ ...EN_US, ...d })])));

export function messagesFor(code: string | undefined): Record<MessageKey, string> {
	return { ...MERGED[resolveLanguage(code)] };
}

/** One message in a language, with %1, %2… replaced by `args`. */
export function translate(code: string | undefined, key: MessageKey, ...args: string[]): string {
	const text = MERGED[resolveLanguage(code)][key];
	return text.replace(/%(\d)/g, (m, n: string) => args[Number(n) - 1] ?? m);
}
