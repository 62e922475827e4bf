// TOTP (RFC 6238 test vectors for SHA-1), base32, sealing, and the second-factor rules over an in-memory store.
import assert from "node:assert/strict";
import { base32Decode, base32Encode, hotp, otpauthUri, seal, totp, unseal, verifyTotp } from "../../lib/auth/totp";
import { SecondFactor, type TotpState, type TotpStore } from "../../lib/auth/second-factor";

// RFC 6238 appendix B: the SHA-1 secret is the ASCII "12345678901234567890"; codes are the last 6 of the 8 digits.
const RFC_SECRET = base32Encode(Buffer.from("12345678901234567890"));
const RFC_VECTORS: [number, string][] = [
	[59, "94287082"],
	[1111111109, "07081804"],
	[1111111111, "14050471"],
	[1234567890, "89005924"],
	[2000000000, "69279037"],
	[20000000000, "65353130"],
];

class MemoryStore implements TotpStore {
	rows = new Map<string, TotpState>();
	async get(u: string) {
		return this.rows.get(u) ?? null;
	}
	async startPending(u: string, secret: string) {
		if (this.rows.get(u)?.status === "active") return false;
		this.rows.set(u, { secret, status: "pending", lastStep: 0, blockedUntil: 0, failures: 0 } as TotpState);
		return true;
	}
	async activate(u: string, step: number) {
		const r = this.rows.get(u);
		if (r?.status !== "pending") return false;
		this.rows.set(u, { ...r, status: "active", lastStep: step });
		return true;
	}
	async useStep(u: string, step: number) {
		const r = this.rows.get(u);
		if (r?.status !== "active" || r.lastStep >= step) return false;
		r.lastStep = step;
		(r as TotpState & { failures: number }).failures = 0;
		return true;
	}
	async recordFailure(u: string, limit: number, until: number) {
		const r = this.rows.get(u) as (TotpState & { failures: number }) | undefined;
		if (!r) return false;
		r.failures++;
		if (r.failures < limit) return false;
		r.failures = 0;
		r.blockedUntil = until;
		return true;
	}
	async remove(u: string) {
		return this.rows.delete(u);
	}
	async removeMany(us: string[]) {
		return us.filter((u) => this.rows.delete(u)).length;
	}
}

describe("TOTP", () => {
	// Sealing derives its key from JWT_SECRET; the suite sets one and gives the environment back as it found it.
	let saved: string | undefined;
	before(() => {
		saved = process.env.JWT_SECRET;
		process.env.JWT_SECRET ??= "unit-test-secret-for-totp-sealing";
	});
	after(() => {
		if (saved === undefined) delete process.env.JWT_SECRET;
		else process.env.JWT_SECRET = saved;
	});

	it("matches RFC 6238's SHA-1 test vectors", () => {
		for (const [t, code] of RFC_VECTORS) assert.equal(totp(RFC_SECRET, t), code.slice(-6), String(t));
		assert.equal(hotp(RFC_SECRET, 1), "287082");
	});

	it("round-trips base32 and ignores case, spaces and padding", () => {
		const buf = Buffer.from([0, 1, 2, 250, 251, 252, 253]);
		assert.ok(base32Decode(base32Encode(buf)).equals(buf));
		assert.equal(base32Encode(Buffer.from("foobar")), "MZXW6YTBOI");
		assert.ok(base32Decode("mzxw 6ytb oi======").equals(Buffer.from("foobar")));
		assert.throws(() => base32Decode("MZ1"));
	});

	it("accepts a code one step either side of now, and nothing else", () => {
		const now = 1_700_000_000;
		assert.equal(verifyTotp(RFC_SECRET, totp(RFC_SECRET, now - 30), now), Math.floor(now / 30) - 1);
		assert.equal(verifyTotp(RFC_SECRET, totp(RFC_SECRET, now + 30), now), Math.floor(now / 30) + 1);
		assert.equal(verifyTotp(RFC_SECRET, totp(RFC_SECRET, now - 90), now), null);
		assert.equal(verifyTotp(RFC_SECRET, "12345", now), null);
		assert.equal(verifyTotp(RFC_SECRET, "abcdef", now), null);
	});

	it("writes the otpauth URI authenticator apps read", () => {
		assert.equal(otpauthUri("Cellar", "jo@x", "ABC"), "otpauth://totp/Cellar:jo%40x?secret=ABC&issuer=Cellar&algorithm=SHA1&digits=6&period=30");
	});

	it("seals secrets (different each time, authenticated)", () => {
		const a = seal("SECRET");
		assert.notEqual(a, seal("SECRET"));
		assert.ok(!a.includes("SECRET"));
		assert.equal(unseal(a), "SECRET");
		const parts = a.split(".");
		parts[3] = Buffer.from("TAMPER").toString("base64url");
		assert.throws(() => unseal(parts.join(".")));
	});

	it("enrols, then requires a fresh code at login, each code once", async () => {
		let clock = 1_700_000_000;
		const store = new MemoryStore();
		const f = new SecondFactor(store, "Cellar", () => clock);
		const user = { Uuid: "u1", Login: "jo" };
		assert.deepEqual(await f.checkLogin("u1", undefined), { required: false });
		const info = await f.setup(user);
		assert.ok(!store.rows.get("u1")?.secret.includes(info.Secret));
		await assert.rejects(f.verify(user, "000000"), /does not match/);
		await f.verify(user, totp(info.Secret, clock));
		await assert.rejects(f.setup(user), /already enrolled/);
		await assert.rejects(f.checkLogin("u1", undefined), (e: Error & { type?: string }) => e.type === "totp.required");
		// The code that enrolled cannot log in: its step is used.
		await assert.rejects(f.checkLogin("u1", totp(info.Secret, clock)), (e: Error & { type?: string }) => e.type === "totp.invalid");
		clock += 30;
		assert.deepEqual(await f.checkLogin("u1", totp(info.Secret, clock)), { required: true });
		await assert.rejects(f.checkLogin("u1", totp(info.Secret, clock)));
		await assert.rejects(f.disable(user, "000000", false), /valid current code/);
		clock += 30;
		assert.deepEqual(await f.disable(user, totp(info.Secret, clock), false), { Status: "none" });
		assert.equal(await f.status("u1"), "none");
	});

	it("blocks codes for a while after five wrong ones in a row, whatever comes next", async () => {
		let clock = 1_700_000_000;
		const store = new MemoryStore();
		const f = new SecondFactor(store, "Cellar", () => clock);
		const user = { Uuid: "u2", Login: "al" };
		const { Secret } = await f.setup(user);
		await f.verify(user, totp(Secret, clock));
		clock += 30;
		const wrong = totp(Secret, clock) === "000000" ? "111111" : "000000";
		for (let i = 0; i < 4; i++) await assert.rejects(f.checkLogin("u2", wrong), (e: Error & { code?: number }) => e.code === 401);
		await assert.rejects(f.checkLogin("u2", wrong), (e: Error & { code?: number }) => e.code === 429);
		// Even the right code waits out the block.
		await assert.rejects(f.checkLogin("u2", totp(Secret, clock)), (e: Error & { code?: number; data?: { retryAfter?: number } }) => e.code === 429 && e.data?.retryAfter === 300);
		clock += 301;
		assert.deepEqual(await f.checkLogin("u2", totp(Secret, clock)), { required: true });
	});
});
