// The strings Cellar itself uses (login form, workspaces, errors…), from the dictionaries in ./i18n: English is
// the default, French is offered too. bootconf embeds the default language's dictionary.
import { DEFAULT_LANGUAGE, DICTIONARIES, LANGUAGE_NAMES } from "./i18n";
import { EN_US } from "./i18n/en-us";

export { DEFAULT_LANGUAGE };

export const AVAILABLE_LANGUAGES: Record<string, string> = Object.fromEntries(Object.keys(DICTIONARIES).map((k) => [k, LANGUAGE_NAMES[k] ?? k]));

export const MESSAGES_EN: Readonly<Record<string, string>> = Object.freeze({ ...EN_US });
