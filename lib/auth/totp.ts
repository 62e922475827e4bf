// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP): HMAC-SHA1, 30-second steps, 6 digits, the
// parameters every authenticator app uses by default. Secrets are 20 random bytes shown as base32 (RFC 4648,
// no padding) inside an otpauth:// URI; at rest they are sealed with AES-256-GCM under a key derived from
// JWT_SECRET, so a copy of the database alone does not give anyone's second factor.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { derivedKey } from "./jwt";

export const TOTP_PERIOD = 30;
export const TOTP_DIGITS = 6;
export const TOTP_ALGORITHM = "SHA1";
/** Steps either side of now a code is accepted for: clocks drift and people type slowly. */
export const TOTP_WINDOW = 1;

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Encode(buf: Buffer): string {
	let bits = 0;
	let value = 0;
	let out = "";
	for (const byte of buf) {
		value = (value << 8) | byte;
		bits += 8;
		while (bits >= 5) {
			out += B32[(value >>> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	if (bits > 0) out += B32[(value << (5 - bits)) & 31];
	return out;
}

/** Decodes base32, ignoring case, spaces and padding; throws on any other character. */
export function base32Decode(text: string): Buffer {
	const clean = text.replace(/[\s=]/g, "").toUpperCase();
	let bits = 0;
	let value = 0;
	const out: number[] = [];
	for (const ch of clean) {
		const i = B32.indexOf(ch);
		if (i < 0) throw new Error(`"${ch}" is not a base32 character`);
		value = (value << 5) | i;
		bits += 5;
		if (bits >= 8) {
			out.push((value >>> (bits - 8)) & 255);
			bits -= 8;
		}
	}
	return Buffer.from(out);
}

export function newSecret(): string {
	return base32Encode(randomBytes(20));
}

/** RFC 4226 HOTP of `counter` with the base32 `secret`. */
export function hotp(secret: string, counter: number): string {
	const msg = Buffer.alloc(8);
	msg.writeBigUInt64BE(BigInt(counter));
	const mac = createHmac("sha1", base32Decode(secret)).update(msg).digest();
	const offset = mac[mac.length - 1] & 0x0f;
	const bin = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) | mac[offset + 3];
	return String(bin % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, "0");
}

export function stepAt(unixSeconds: number): number {
	return Math.floor(unixSeconds / TOTP_PERIOD);
}

/** The code an authenticator shows at `unixSeconds`. */
export function totp(secret: string, unixSeconds = Date.now() / 1000): string {
	return hotp(secret, stepAt(unixSeconds));
}

/** The time step `code` is valid for, within TOTP_WINDOW steps of now; null when it is not a valid code. */
export function verifyTotp(secret: string, code: string, unixSeconds = Date.now() / 1000): number | null {
	const given = code.replace(/\s/g, "");
	if (!/^\d{6}$/.test(given)) return null;
	const now = stepAt(unixSeconds);
	let found: number | null = null;
	// Every candidate is computed and compared in constant time: no early exit tells which step matched.
	for (let s = now - TOTP_WINDOW; s <= now + TOTP_WINDOW; s++) {
		if (timingSafeEqual(Buffer.from(hotp(secret, s)), Buffer.from(given)) && found === null) found = s;
	}
	return found;
}

/** The URI authenticator apps read (as a QR code or pasted), per Google Authenticator's Key Uri Format. */
export function otpauthUri(issuer: string, account: string, secret: string): string {
	const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
	const q = new URLSearchParams({ secret, issuer, algorithm: TOTP_ALGORITHM, digits: String(TOTP_DIGITS), period: String(TOTP_PERIOD) });
	return `otpauth://totp/${label}?${q.toString()}`;
}

function sealKey(): Buffer {
	return Buffer.from(derivedKey("totp-secrets"), "base64url");
}

/** AES-256-GCM under a key derived from JWT_SECRET: "v1.<iv>.<tag>.<ciphertext>" (base64url parts). */
export function seal(secret: string): string {
	const iv = randomBytes(12);
	const c = createCipheriv("aes-256-gcm", sealKey(), iv);
	const ct = Buffer.concat([c.update(secret, "utf8"), c.final()]);
	return ["v1", iv.toString("base64url"), c.getAuthTag().toString("base64url"), ct.toString("base64url")].join(".");
}

/** The secret `seal` sealed; throws when it was sealed under another JWT_SECRET or altered. */
export function unseal(sealed: string): string {
	const [v, iv, tag, ct] = sealed.split(".");
	if (v !== "v1" || !iv || !tag || ct === undefined) throw new Error("Not a sealed TOTP secret");
	const d = createDecipheriv("aes-256-gcm", sealKey(), Buffer.from(iv, "base64url"));
	d.setAuthTag(Buffer.from(tag, "base64url"));
	return Buffer.concat([d.update(Buffer.from(ct, "base64url")), d.final()]).toString("utf8");
}
