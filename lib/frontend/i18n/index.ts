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
