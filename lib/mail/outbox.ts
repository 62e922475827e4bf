// The outbox: one RFC 5322 message per `.eml` file under <DATA_DIR>/outbox/, written atomically (a reader listing
// `*.eml` never sees half a message). Where the mailer delivers when no SMTP relay is configured (SMTP_URL):
// whatever relays mail (an MTA pickup directory, a sidecar, an operator) takes them from there. Also the address
// checks every mail goes through.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { ensureDir, loadConfig, writeFileAtomic } from "../config";
import { BadRequestError } from "../errors";

export interface OutboxMail {
	to: string;
	subject: string;
	text: string;
	/** Defaults to MAIL_FROM, else `Cellar <no-reply@localhost>`. */
	from?: string;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const ADDRESS = /^[^\s@<>()",;:\\[\]]+@[^\s@<>()",;:\\[\]]+$/;

export function outboxDir(dataDir = loadConfig().dataDir): string {
	return join(dataDir, "outbox");
}

/** A mailbox: an address, with the display name it was given, if any. */
export interface Mailbox {
	name?: string;
	address: string;
}

/**
 * A bare address (`a@b.c`) or `Name <a@b.c>`, checked: no control characters (so no header injection), one
 * address, no comments or groups. A BadRequestError names `what` otherwise.
 */
export function parseMailbox(value: string, what: string): Mailbox {
	const v = value.trim();
	if (v.length === 0 || v.length > 320 || CONTROL.test(v)) throw new BadRequestError(`Invalid ${what} address`);
	const m = /^(.*)<([^<>]+)>$/.exec(v);
	const address = m ? m[2].trim() : v;
	if (!ADDRESS.test(address)) throw new BadRequestError(`Invalid ${what} address`);
	const name = m ? m[1].trim().replace(/^"(.*)"$/, "$1").replace(/["\\]/g, "") : "";
	return name ? { name, address } : { address };
}

/** Whether `value` is one plain address (`a@b.c`) the mailer accepts. */
export function isMailAddress(value: string): boolean {
	return value.length <= 320 && !CONTROL.test(value) && ADDRESS.test(value);
}

/** A bare address (`a@b.c`) or `Name <a@b.c>`; no header injection possible. */
function checkAddress(value: string, what: string): string {
	const { name, address } = parseMailbox(value, what);
	return name ? `${encodeWord(name)} <${address}>` : address;
}

/** RFC 2047 encoded-word when the text is not plain printable ASCII. */
function encodeWord(s: string): string {
	if (/^[\x20-\x7e]*$/.test(s)) return s;
	return `=?UTF-8?B?${Buffer.from(s, "utf8").toString("base64")}?=`;
}

function rfc5322Date(d: Date): string {
	return d.toUTCString().replace(/GMT$/, "+0000");
}

/** Body lines as CRLF, none longer than RFC 5322's 998 octets (long lines are cut, never dropped). */
function bodyLines(text: string): string {
	const out: string[] = [];
	for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
		let rest = line;
		while (Buffer.byteLength(rest, "utf8") > 900) {
			out.push(rest.slice(0, 300));
			rest = rest.slice(300);
		}
		out.push(rest);
	}
	return out.join("\r\n");
}

/** Renders the message (exported for tests). */
export function renderMail(mail: OutboxMail, now = new Date(), messageId = `${randomUUID()}@${safeHost()}`): string {
	const from = checkAddress(mail.from ?? loadConfig().mailFrom, "sender");
	const to = checkAddress(mail.to, "recipient");
	const subject = mail.subject.replace(/[\r\n]+/g, " ").slice(0, 200);
	const ascii = /^[\x00-\x7f]*$/.test(mail.text);
	const headers = [
		`From: ${from}`,
		`To: ${to}`,
		`Subject: ${encodeWord(subject)}`,
		`Date: ${rfc5322Date(now)}`,
		`Message-ID: <${messageId}>`,
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		`Content-Transfer-Encoding: ${ascii ? "7bit" : "8bit"}`,
		"X-Mailer: Cellar",
	];
	return `${headers.join("\r\n")}\r\n\r\n${bodyLines(mail.text)}\r\n`;
}

function safeHost(): string {
	const h = hostname().replace(/[^A-Za-z0-9.-]/g, "");
	return h || "localhost";
}

/** Writes one complete message (RFC 5322 bytes) to the outbox; the file written. */
export function writeOutboxRaw(raw: Buffer | string, dataDir = loadConfig().dataDir): string {
	const dir = ensureDir(outboxDir(dataDir));
	const file = join(dir, `${Date.now()}-${randomUUID()}.eml`);
	writeFileAtomic(file, raw);
	return file;
}
