// Password hashing with scrypt (Node's own, run on the libuv pool so a login storm does not block the event
// loop). Stored as `scrypt$N$r$p$salt$hash`, so the cost can be raised later without breaking old hashes.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { loadConfig } from "../config";

const R = 8;
const P = 1;
const KEYLEN = 32;

// At most KDF_PARALLEL derivations at once (cores-1 by default): a login storm keeps one core for everything else.
// Read per hash, not per process: a test process runs nodes with different settings (a hash costs far more).
const kdf = () => {
	const cfg = loadConfig();
	return { n: cfg.scryptN, parallel: cfg.kdfParallel };
};
let running = 0;
const waiting: (() => void)[] = [];

async function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
	if (running >= kdf().parallel) await new Promise<void>((resolve) => waiting.push(resolve));
	running++;
	try {
		return await new Promise<Buffer>((resolve, reject) =>
			scrypt(password.normalize("NFC"), salt, KEYLEN, { ...opts, maxmem: 256 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
		);
	} finally {
		running--;
		waiting.shift()?.();
	}
}

export async function hashPassword(password: string): Promise<string> {
	const salt = randomBytes(16);
	const N = kdf().n;
	const key = await derive(password, salt, { N, r: R, p: P });
	return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`;
}

export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
	if (!stored) {
		// Same cost whether or not the account exists, so timing does not reveal logins.
		await derive(password, randomBytes(16), { N: kdf().n, r: R, p: P });
		return false;
	}
	const [alg, n, r, p, salt, hash] = stored.split("$");
	if (alg !== "scrypt" || !salt || !hash) return false;
	const expected = Buffer.from(hash, "base64");
	const key = await derive(password, Buffer.from(salt, "base64"), { N: Number(n), r: Number(r), p: Number(p) });
	return key.length === expected.length && timingSafeEqual(key, expected);
}

export function generatePassword(): string {
	return randomBytes(12).toString("base64url");
}
