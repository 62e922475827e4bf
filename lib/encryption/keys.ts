// Master keys of encrypted datasources (Cells' encryption.Key): validation, sealing at rest with a key derived
// from JWT_SECRET, and password-protected export/import blobs. Plain functions, unit-testable.
//
// Sealed form (stored):   "v1." + base64(nonce 12 | tag 16 | ciphertext 32), AES-256-GCM, AAD "cellar-key:<ID>"
//                         (a sealed value moved to another key id does not open).
// Export form (Content):  base64(version 1 | log2 N | r | p | salt 16 | nonce 12 | tag 16 | ciphertext 32), the
//                         AES-256-GCM key being scrypt(password, salt, N, r, p); AAD = the 20 bytes before the nonce.
import { createCipheriv, createDecipheriv, randomBytes, scrypt, type ScryptOptions } from "node:crypto";
import { BadRequestError, CellarError } from "../errors";

export const KEY_BYTES = 32;
const CONTROL = /[\u0000-\u001f\u007f]/;

export interface KeyExport {
	By: string;
	Date: number;
}
export interface KeyInfo {
	Exports: KeyExport[];
	Imports: KeyExport[];
}
/** What the encryption service stores: never the key material in clear. */
export interface KeyDoc {
	_id: string;
	ID: string;
	Label: string;
	Owner: string;
	CreationDate: number;
	Sealed: string;
	Info: KeyInfo;
	[key: string]: unknown;
}
/** encryptionKey as the API returns it. */
export interface ApiKey {
	ID: string;
	Label?: string;
	Owner?: string;
	CreationDate?: number;
	Content?: string;
	Info?: { Exports?: KeyExport[]; Imports?: KeyExport[] };
}

export function checkKeyId(id: unknown): string {
	if (typeof id !== "string" || id === "") throw new BadRequestError("A KeyID is required");
	if (id.length > 255) throw new BadRequestError("KeyID is too long (at most 255 characters)");
	if (CONTROL.test(id) || id.includes("/") || id.includes("\\") || id.includes("..")) throw new BadRequestError("KeyID contains forbidden characters (/, \\, .., control characters)");
	if (id.trim() !== id) throw new BadRequestError("KeyID cannot start or end with spaces");
	return id;
}

export function checkLabel(label: unknown, fallback: string): string {
	if (label === undefined || label === null || label === "") return fallback;
	if (typeof label !== "string") throw new BadRequestError("Label must be a string");
	if (label.length > 255) throw new BadRequestError("Label is too long (at most 255 characters)");
	if (CONTROL.test(label)) throw new BadRequestError("Label contains control characters");
	return label;
}

export function newKeyMaterial(): Buffer {
	return randomBytes(KEY_BYTES);
}

/** The key list entry: everything but the material. */
export function presentKey(doc: KeyDoc): ApiKey {
	return {
		ID: doc.ID,
		Label: doc.Label,
		Owner: doc.Owner,
		CreationDate: doc.CreationDate,
		Info: { Exports: doc.Info?.Exports ?? [], Imports: doc.Info?.Imports ?? [] },
	};
}

// ---- sealing at rest ----

function checkMaster(master: Buffer): void {
	if (master.length !== 32) throw new Error("The master key of the key store must be 32 bytes");
}

export function seal(material: Buffer, id: string, master: Buffer): string {
	checkMaster(master);
	const nonce = randomBytes(12);
	const c = createCipheriv("aes-256-gcm", master, nonce);
	c.setAAD(Buffer.from(`cellar-key:${id}`));
	const ct = Buffer.concat([c.update(material), c.final()]);
	return `v1.${Buffer.concat([nonce, c.getAuthTag(), ct]).toString("base64")}`;
}

export function unseal(sealed: string, id: string, master: Buffer): Buffer {
	checkMaster(master);
	const fail = () =>
		new CellarError(`Encryption key ${id} cannot be opened: the key store was sealed with another JWT_SECRET, or it was modified`, 500, "encryption.key.unreadable");
	if (typeof sealed !== "string" || !sealed.startsWith("v1.")) throw fail();
	const buf = Buffer.from(sealed.slice(3), "base64");
	if (buf.length !== 12 + 16 + KEY_BYTES) throw fail();
	try {
		const d = createDecipheriv("aes-256-gcm", master, buf.subarray(0, 12));
		d.setAAD(Buffer.from(`cellar-key:${id}`));
		d.setAuthTag(buf.subarray(12, 28));
		return Buffer.concat([d.update(buf.subarray(28)), d.final()]);
	} catch {
		throw fail();
	}
}

// ---- password-protected export ----

export interface ScryptParams {
	log2N: number;
	r: number;
	p: number;
}
/** 2^15 * 8 * 128 = 32 MiB, about 0.1 s: an export is rare and a backup must resist guessing. */
export const EXPORT_SCRYPT: ScryptParams = { log2N: 15, r: 8, p: 1 };
const PREFIX = 20; // version, log2N, r, p, salt
const EXPORT_LEN = PREFIX + 12 + 16 + KEY_BYTES;

function derive(password: string, salt: Buffer, prm: ScryptParams): Promise<Buffer> {
	const opts: ScryptOptions = { N: 2 ** prm.log2N, r: prm.r, p: prm.p, maxmem: 128 * 2 ** prm.log2N * prm.r * 2 + 1024 * 1024 };
	return new Promise((resolve, reject) => scrypt(password.normalize("NFC"), salt, 32, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

function checkPassword(password: unknown): string {
	if (typeof password !== "string" || password === "") throw new BadRequestError("StrPassword is required: the exported key is protected by this password");
	if (password.length > 1024) throw new BadRequestError("StrPassword is too long (at most 1024 characters)");
	return password;
}

export async function exportKey(material: Buffer, password: string, prm: ScryptParams = EXPORT_SCRYPT): Promise<string> {
	checkPassword(password);
	const head = Buffer.alloc(PREFIX);
	head[0] = 1;
	head[1] = prm.log2N;
	head[2] = prm.r;
	head[3] = prm.p;
	randomBytes(16).copy(head, 4);
	const key = await derive(password, head.subarray(4, 20), prm);
	const nonce = randomBytes(12);
	const c = createCipheriv("aes-256-gcm", key, nonce);
	c.setAAD(head);
	const ct = Buffer.concat([c.update(material), c.final()]);
	return Buffer.concat([head, nonce, c.getAuthTag(), ct]).toString("base64");
}

/** The key material in an export blob; a wrong password or damaged content is a 400, never a 500. */
export async function importKey(content: unknown, password: unknown): Promise<Buffer> {
	const pwd = checkPassword(password);
	if (typeof content !== "string" || content === "") throw new BadRequestError("Key.Content is required (the exported key)");
	if (content.length > 1024 || !/^[A-Za-z0-9+/]+={0,2}$/.test(content.trim())) throw new BadRequestError("Key.Content is not an exported key (base64 expected)");
	const buf = Buffer.from(content.trim(), "base64");
	if (buf.length !== EXPORT_LEN || buf[0] !== 1) throw new BadRequestError("Key.Content is not a key exported by this server (unknown format)");
	const prm: ScryptParams = { log2N: buf[1], r: buf[2], p: buf[3] };
	// Bounded so that a crafted blob cannot make the server spend gigabytes.
	if (prm.log2N < 10 || prm.log2N > 20 || prm.r < 1 || prm.r > 16 || prm.p < 1 || prm.p > 4 || 128 * 2 ** prm.log2N * prm.r > 256 * 1024 * 1024) {
		throw new BadRequestError("Key.Content has unsupported key derivation parameters");
	}
	const key = await derive(pwd, buf.subarray(4, 20), prm);
	try {
		const d = createDecipheriv("aes-256-gcm", key, buf.subarray(PREFIX, PREFIX + 12));
		d.setAAD(buf.subarray(0, PREFIX));
		d.setAuthTag(buf.subarray(PREFIX + 12, PREFIX + 28));
		return Buffer.concat([d.update(buf.subarray(PREFIX + 28)), d.final()]);
	} catch {
		throw new BadRequestError("Cannot decrypt the key: wrong password, or the exported content was altered");
	}
}
