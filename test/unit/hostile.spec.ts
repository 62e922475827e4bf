// The pure parts of issue 7 §6 ("what a hostile user found"): which address a request comes from, the login
// throttle and its lock, which routes a ban or a scoped token closes, and archive entries that lie about their size.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { crc32, deflateRawSync } from "node:zlib";
import { ClientAddress } from "../../lib/gateway/client-address";
import { admit, addressKey, delayAfter, recordFailure, recordSuccess, unlock, type GuardSettings, type LoginGuard } from "../../lib/auth/login-guard";
import { triesCredentials } from "../../lib/gateway/credential-routes";
import { isScoped, scopedRouteAllowed } from "../../lib/gateway/scoped-tokens";
import { bufferSource, openEntry, openZip } from "../../lib/jobs/zip";
import { readAhead } from "../../lib/io/read-ahead";
import type { Identity } from "../../lib/auth/identity";
import { craftZip } from "../helpers/crafted-zip";

function request(peer: string, headers: Record<string, string> = {}): IncomingMessage {
	return { socket: { remoteAddress: peer }, headers } as unknown as IncomingMessage;
}

async function drain(s: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of s as AsyncIterable<Buffer>) chunks.push(c);
	return Buffer.concat(chunks);
}

describe("hostile: client addresses", () => {
	const behindProxy = new ClientAddress(["127.0.0.1", "10.0.0.0/8"]);

	it("believes forwarding headers only from trusted proxies", () => {
		assert.equal(new ClientAddress([]).of(request("::ffff:127.0.0.1", { "x-forwarded-for": "203.0.113.5" })), "127.0.0.1");
		assert.equal(behindProxy.of(request("198.51.100.9", { "x-forwarded-for": "203.0.113.5" })), "198.51.100.9", "a client talking directly cannot pick its address");
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": "203.0.113.5" })), "203.0.113.5");
		assert.equal(behindProxy.of(request("::ffff:127.0.0.1", { "x-real-ip": "203.0.113.6" })), "203.0.113.6");
		assert.equal(behindProxy.of(request("127.0.0.1")), "127.0.0.1");
	});

	it("takes the right-most hop that is not a trusted proxy: what the client wrote on the left proves nothing", () => {
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": "1.1.1.1, 203.0.113.5, 10.1.2.3" })), "203.0.113.5");
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": "10.0.0.7, 10.1.2.3" })), "10.0.0.7", "every hop trusted: the farthest one");
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": "203.0.113.5, not-an-ip, 10.1.2.3" })), "10.1.2.3", "no belief past a hop that is not an address");
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": "203.0.113.5:4711" })), "203.0.113.5");
		assert.equal(behindProxy.of(request("127.0.0.1", { "x-forwarded-for": '"[2001:db8::1]:443"' })), "2001:db8::1");
	});
});

describe("hostile: login throttling", () => {
	const s: GuardSettings = { maxFailed: 5, lockSeconds: 60, delayMaxSeconds: 8 };

	it("makes one address wait more after each failure on one account, and nobody else", () => {
		assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((n) => delayAfter(n, 8)), [0, 0, 1000, 2000, 4000, 8000, 8000]);
		assert.equal(delayAfter(9, 0), 0, "LOGIN_DELAY_MAX=0: no waits");
		let g: LoginGuard | undefined;
		const t0 = 1_000_000;
		for (let i = 1; i <= 3; i++) g = recordFailure(g, "203.0.113.5", i, t0, s).guard;
		const refused = admit(g, "203.0.113.5", t0 + 10, s);
		assert.deepEqual(refused, { ok: false, reason: "wait", retryAfter: 1 });
		assert.deepEqual(admit(g, "198.51.100.7", t0 + 10, s), { ok: true }, "another address does not wait");
		assert.deepEqual(admit(g, "203.0.113.5", t0 + 1000, s), { ok: true });
		assert.equal(addressKey("2001:db8:1:2:aaaa::1"), addressKey("2001:db8:1:2:bbbb::9"), "IPv6 counts per /64");
	});

	it("locks against unknown addresses only, for a while, and an unlock forgets the failures", () => {
		const t0 = 5_000_000;
		let g: LoginGuard | undefined = recordSuccess(undefined, "198.51.100.7", t0);
		let locked = false;
		for (let i = 1; i <= 5; i++) ({ guard: g, locked } = recordFailure(g, `203.0.113.${i}`, i, t0 + i, s));
		assert.ok(locked, "the 5th consecutive failure locks");
		assert.equal(admit(g, "203.0.113.99", t0 + 100, s).ok, false);
		assert.deepEqual(admit(g, "198.51.100.7", t0 + 100, s), { ok: true }, "the owner's address is not locked out");
		assert.deepEqual(admit(g, "203.0.113.99", t0 + 61_000, s), { ok: true }, "the lock lifts by itself");
		assert.deepEqual(admit(unlock(g), "203.0.113.99", t0 + 100, s), { ok: true });
		assert.equal(recordFailure(g, "203.0.113.1", 6, t0 + 70_000, s).locked, false, "the next lock needs a new series");
		const forever = recordFailure(undefined, "203.0.113.1", 5, t0, { ...s, lockSeconds: 0 }).guard;
		assert.equal(admit(forever, "203.0.113.1", t0 + 10 * 365 * 86400_000, s).ok, false, "LOGIN_LOCK_DURATION=0: until an admin unlocks");
	});
});

describe("hostile: routes closed by bans and scoped tokens", () => {
	it("a login ban closes the routes that try secrets, nothing else", () => {
		assert.equal(triesCredentials("auth.session", { AuthInfo: { type: "credentials" } }), true);
		assert.equal(triesCredentials("auth.session", { AuthInfo: { type: "refresh" } }), false);
		assert.equal(triesCredentials("auth.session", { Logout: true, AuthInfo: { type: "credentials" } }), false);
		assert.equal(triesCredentials("tokens.resetPasswordToken", {}), true);
		assert.equal(triesCredentials("tokens.resetPassword", {}), true);
		assert.equal(triesCredentials("policy.list", {}), false);
	});

	it("a scoped token reaches node routes and its own session only", () => {
		const base: Identity = { Uuid: "u", Login: "alice", Profile: "standard", GroupPath: "/", Roles: [], TokenKind: "personal", ExpiresAt: 0 };
		assert.equal(isScoped(base), false);
		assert.equal(isScoped({ ...base, Scopes: ["node:x:r"] }), true);
		assert.equal(isScoped({ ...base, TokenKind: "document" }), true);
		for (const a of ["tree.stat", "tree.stats", "tree.create", "meta.get", "meta.set", "meta.remove", "frontend.authState"]) assert.ok(scopedRouteAllowed(a, {}, "pat_x"), a);
		for (const a of ["users.search", "users.put", "tokens.generatePersonal", "search.query", "tree.remove", "jobs.create", "acl.search", undefined]) assert.ok(!scopedRouteAllowed(a, {}, "pat_x"), String(a));
		assert.ok(scopedRouteAllowed("auth.revoke", { TokenId: "pat_x" }, "pat_x"), "a token may end itself");
		assert.ok(!scopedRouteAllowed("auth.revoke", { TokenId: "pat_other" }, "pat_x"));
	});
});

describe("hostile: archive entries larger than their header says", () => {
	const text = Buffer.from("0123456789".repeat(10));

	it("a deflated entry that inflates past its declared size fails before its reader got all the declared bytes", async () => {
		const zip = craftZip([{ name: "liar.txt", method: 8, data: deflateRawSync(text), size: 5, crc: crc32(text.subarray(0, 5)) }]);
		const src = bufferSource(zip);
		const dir = await openZip(src);
		for await (const e of dir.entries()) {
			const body = await openEntry(src, e);
			const got: Buffer[] = [];
			body.on("data", (c: Buffer) => got.push(c));
			await assert.rejects(new Promise((res, rej) => (body.on("end", res), body.on("error", rej))), /more data than its declared size/);
			assert.ok(Buffer.concat(got).length < e.size, "never the whole declared size of a failing entry");
		}
	});

	it("a stored entry whose sizes disagree is refused before any byte; an intact one reads whole", async () => {
		const zip = craftZip([
			{ name: "stored.txt", method: 0, data: text, size: 5, crc: crc32(text) },
			{ name: "good.txt", method: 8, data: deflateRawSync(text), size: text.length, crc: crc32(text) },
		]);
		const src = bufferSource(zip);
		const entries = [];
		for await (const e of (await openZip(src)).entries()) entries.push(e);
		await assert.rejects(openEntry(src, entries[0]), /stored size mismatch/);
		assert.deepEqual(await drain(await openEntry(src, entries[1])), text);
	});

	it("readAhead reads a small body whole, or stops at its limit and leaves the rest", async () => {
		assert.deepEqual(await readAhead(Readable.from([Buffer.from("ab"), Buffer.from("c")]), 10), { head: [Buffer.from("ab"), Buffer.from("c")], ended: true });
		const big = Readable.from([Buffer.alloc(4), Buffer.alloc(4), Buffer.alloc(4)]);
		const r = await readAhead(big, 5);
		assert.equal(r.ended, false);
		assert.equal(Buffer.concat(r.head).length, 8);
		assert.equal((await drain(big)).length, 4);
		await assert.rejects(readAhead(Readable.from((async function* () {
			yield Buffer.from("x");
			throw new Error("boom");
		})()), 10), /boom/);
	});
});
