// The outbox: one RFC 5322 message per `.eml` file under <DATA_DIR>/outbox/, written atomically (a reader listing
// `*.eml` never sees half a message). Where the mailer delivers when no SMTP relay is configured (SMTP_URL):
// whatever relays mail (an MTA pickup directory, a sidecar, an operator) takes them from there. Also the address
// checks every mail goes through.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { ensureDir, loadConfig, writeFileAtomic } from "../config";
import { BadRequestError } from "../errors";

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const ADDRESS = /^[^\s@<>()",;:\\[\]]+@[^\s@<>()",;:\\[\]]+$/;

function outboxDir(dataDir = loadConfig().dataDir): string {
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

/** Writes one complete message (RFC 5322 bytes) to the outbox; the file written. */
export function writeOutboxRaw(raw: Buffer | string, dataDir = loadConfig().dataDir): string {
	const dir = ensureDir(outboxDir(dataDir));
	const file = join(dir, `${Date.now()}-${randomUUID()}.eml`);
	writeFileAtomic(file, raw);
	return file;
}
