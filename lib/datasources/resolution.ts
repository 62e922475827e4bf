// Virtual node resolution scripts, as Cells stores them (`Path = DataSources.personal + "/" + User.Name;`),
// parsed and evaluated WITHOUT a JavaScript engine. The accepted subset is one assignment to `Path` of a `+`
// concatenation of string literals, `DataSources.<name>` (the datasource name itself) and the user fields
// `User.Name` (= login), `User.Login`, `User.Uuid`, `User.GroupPath`. Anything else is refused.
import { BadRequestError } from "../errors";

export type UserField = "Name" | "Login" | "Uuid" | "GroupPath";

export type Term = { kind: "literal"; value: string } | { kind: "datasource"; name: string } | { kind: "user"; field: UserField };

export interface ParsedResolution {
	terms: Term[];
	/** Datasource names the script refers to, in order of appearance, without duplicates. */
	dataSources: string[];
}

export interface ResolutionUser {
	Login: string;
	Uuid?: string;
	GroupPath?: string;
}

export const MAX_SCRIPT = 4096;
const USER_FIELDS: UserField[] = ["Name", "Login", "Uuid", "GroupPath"];
const IDENT = /[A-Za-z_$][A-Za-z0-9_$]*/y;
// Control characters (NUL included) never appear in a resolved path.
const CONTROL = /[\u0000-\u001f\u007f]/;

function fail(message: string): never {
	throw new BadRequestError(`Invalid resolution script: ${message}`);
}

class Scanner {
	pos = 0;
	constructor(readonly src: string) {}

	/** Skips blanks and `//` / `/* *\/` comments. */
	skip(): void {
		for (;;) {
			while (this.pos < this.src.length && /\s/.test(this.src[this.pos])) this.pos++;
			if (this.src.startsWith("//", this.pos)) {
				const end = this.src.indexOf("\n", this.pos);
				this.pos = end < 0 ? this.src.length : end + 1;
			} else if (this.src.startsWith("/*", this.pos)) {
				const end = this.src.indexOf("*/", this.pos + 2);
				if (end < 0) fail("unterminated comment");
				this.pos = end + 2;
			} else return;
		}
	}

	eof(): boolean {
		this.skip();
		return this.pos >= this.src.length;
	}

	peek(): string {
		this.skip();
		return this.src[this.pos] ?? "";
	}

	expect(ch: string, what: string): void {
		if (this.peek() !== ch) fail(`expected ${what} at position ${this.pos}${this.pos < this.src.length ? ` (found "${this.src[this.pos]}")` : " (end of script)"}`);
		this.pos++;
	}

	ident(): string {
		this.skip();
		IDENT.lastIndex = this.pos;
		const m = IDENT.exec(this.src);
		if (!m) fail(`expected a name at position ${this.pos}`);
		this.pos += m[0].length;
		return m[0];
	}

	string(): string {
		const quote = this.src[this.pos];
		this.pos++;
		let out = "";
		while (this.pos < this.src.length) {
			const c = this.src[this.pos++];
			if (c === quote) return out;
			if (c === "\n" || c === "\r") fail("line break inside a string literal");
			if (c !== "\\") {
				out += c;
				continue;
			}
			const e = this.src[this.pos++];
			switch (e) {
				case "\\":
				case "'":
				case '"':
				case "/":
					out += e;
					break;
				case "n":
				case "r":
				case "t":
				case "0":
					fail("control characters are not allowed in paths");
					break;
				case "u": {
					const hex = this.src.slice(this.pos, this.pos + 4);
					if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
					out += String.fromCharCode(parseInt(hex, 16));
					this.pos += 4;
					break;
				}
				default:
					fail(`unsupported escape \\${e ?? ""}`);
			}
		}
		fail("unterminated string literal");
	}

	term(): Term {
		const c = this.peek();
		if (c === '"' || c === "'") return { kind: "literal", value: this.string() };
		if (c === "") fail("expected a value at the end of the script");
		const start = this.pos;
		const head = this.ident();
		if (head !== "DataSources" && head !== "User") fail(`unknown name "${head}" at position ${start} (allowed: string literals, DataSources.<name>, User.Name, User.Login, User.Uuid, User.GroupPath)`);
		let name: string;
		if (this.peek() === "[") {
			// DataSources["name"] is the same as DataSources.name.
			this.pos++;
			const q = this.peek();
			if (q !== '"' && q !== "'") fail(`expected a quoted name after ${head}[`);
			name = this.string();
			this.expect("]", '"]"');
		} else {
			this.expect(".", `"." after ${head}`);
			name = this.ident();
		}
		if (head === "DataSources") {
			if (!/^[0-9a-z]{1,64}$/.test(name)) fail(`"${name.slice(0, 80)}" is not a valid datasource name`);
			return { kind: "datasource", name };
		}
		if (!USER_FIELDS.includes(name as UserField)) fail(`User.${name.slice(0, 80)} is not supported (allowed: ${USER_FIELDS.map((f) => `User.${f}`).join(", ")})`);
		return { kind: "user", field: name as UserField };
	}
}

/** Parses a resolution script; throws a 400 for anything outside the supported subset. */
export function parseResolution(script: string): ParsedResolution {
	if (typeof script !== "string" || !script.trim()) fail("the script is empty");
	if (script.length > MAX_SCRIPT) fail(`the script is too long (at most ${MAX_SCRIPT} characters)`);
	if (script.includes("\u0000")) fail("NUL character");
	const s = new Scanner(script);
	const target = s.ident();
	if (target !== "Path") fail(`the script must assign Path (found "${target.slice(0, 80)}")`);
	s.expect("=", '"=" after Path');
	if (s.src[s.pos] === "=") fail('"==" is not an assignment');
	const terms: Term[] = [s.term()];
	while (s.peek() === "+") {
		s.pos++;
		terms.push(s.term());
	}
	if (s.peek() === ";") s.pos++;
	if (!s.eof()) fail(`unexpected "${s.src.slice(s.pos, s.pos + 20)}" at position ${s.pos} (only one "Path = a + b + ...;" statement is supported)`);
	const dataSources = [...new Set(terms.filter((t): t is Extract<Term, { kind: "datasource" }> => t.kind === "datasource").map((t) => t.name))];
	return { terms, dataSources };
}

/** Normalises a resolved path: single slashes, no leading/trailing slash; refuses `.`/`..` segments and control characters. */
export function cleanResolvedPath(raw: string): string {
	if (CONTROL.test(raw)) throw new BadRequestError("The resolved virtual path contains control characters");
	const segments = raw.split("/").filter((s) => s !== "");
	if (!segments.length) throw new BadRequestError("The resolved virtual path is empty");
	if (segments.some((s) => s === "." || s === "..")) throw new BadRequestError('The resolved virtual path contains "." or ".." segments');
	return segments.join("/");
}

/** Evaluates a parsed script for a user: `<datasource>/<path>` (the path part may be empty). */
export function evaluateResolution(parsed: ParsedResolution, user: ResolutionUser): string {
	let out = "";
	for (const t of parsed.terms) {
		if (t.kind === "literal") out += t.value;
		else if (t.kind === "datasource") out += t.name;
		else {
			const v = t.field === "Name" || t.field === "Login" ? user.Login : t.field === "Uuid" ? user.Uuid : user.GroupPath;
			if (typeof v !== "string" || v === "") throw new BadRequestError(`User.${t.field} is not known for this user`);
			out += v;
		}
	}
	return cleanResolvedPath(out);
}

/** Parses and evaluates a resolution script for a user: `<datasource>/<path>`. */
export function resolveVirtualPath(script: string, user: ResolutionUser): string {
	return evaluateResolution(parseResolution(script), user);
}

/** Splits `<datasource>/<path>` into its parts. */
export function splitResolved(resolved: string): { datasource: string; path: string } {
	const i = resolved.indexOf("/");
	return i < 0 ? { datasource: resolved, path: "" } : { datasource: resolved.slice(0, i), path: resolved.slice(i + 1) };
}
