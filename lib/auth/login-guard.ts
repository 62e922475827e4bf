// Password guessing made to cost the guesser, not the account's owner. Cells locks an account after
// MAX_FAILED_LOGINS wrong passwords until an administrator unlocks it: anyone who knows a login can lock its
// owner out (and, since a locked account's tokens stop working, log them out everywhere). Here:
//  - each failure of one address on one account makes that address wait before its next try on that account
//    (none for the first FREE_FAILURES, then 1 s, 2 s, 4 s... up to a maximum): tries inside the wait are
//    refused unchecked, so parallel guessing gains nothing, and the owner, elsewhere, waits for nothing;
//  - MAX_FAILED_LOGINS consecutive failures (from anywhere) still lock the account, but only against addresses
//    it never logged in from, for a limited time, and without touching its sessions: the owner keeps logging in
//    from where they always do while a stranger (or a botnet) spreading guesses is refused.
// Plain functions over the state kept on the user record: the users service loads, applies and saves.
import ipaddr from "ipaddr.js";

export interface LoginGuard {
	/** Recent failures per address (IPv6: per /64, what one client usually holds): count, last one (ms). */
	Failures?: { IP: string; Count: number; Last: number }[];
	/** Addresses the account logged in from, with the last success (ms), newest first. */
	Known?: { IP: string; At: number }[];
	/** Until when (ms) logins from unknown addresses are refused; absent or past when not locked. */
	LockedUntil?: number;
}

export interface GuardSettings {
	/** Consecutive failures that lock the account (every multiple of it locks again); 0 or less: never. */
	maxFailed: number;
	/** Length of a lock in seconds; 0: until an administrator unlocks. */
	lockSeconds: number;
	/** Longest wait between two tries of one address on one account, in seconds; 0: no waits. */
	delayMaxSeconds: number;
}

export type Admission = { ok: true } | { ok: false; reason: "wait"; retryAfter: number } | { ok: false; reason: "locked"; until: number };

/** Failures of one address on an account before it has to wait. */
export const FREE_FAILURES = 3;
/** Addresses whose failures are remembered per account (the oldest go first). */
const KEEP_FAILURES = 100;
/** A failure older than this no longer counts toward an address's wait. */
const FAILURES_FORGOTTEN_MS = 24 * 3600_000;
/** Addresses remembered as the account's own, and for how long after their last success. */
const KEEP_KNOWN = 10;
const KNOWN_FOR_MS = 90 * 24 * 3600_000;
/** "Until an administrator unlocks": far enough, and still a finite number for JSON and databases. */
const UNTIL_UNLOCKED = 253402300799000;

/** The key an address is counted under: IPv4 as is, IPv6 by its /64 (one host gets a whole /64 to choose from). */
export function addressKey(ip: string | undefined): string {
	if (!ip) return "-";
	try {
		const a = ipaddr.process(ip);
		if (a.kind() === "ipv6") return `${(a as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(":")}::/64`;
		return a.toString();
	} catch {
		return ip;
	}
}

/** The wait (ms) after an address's `count`-th failure on an account. */
export function delayAfter(count: number, delayMaxSeconds: number): number {
	if (delayMaxSeconds <= 0 || count < FREE_FAILURES) return 0;
	return Math.min(delayMaxSeconds * 1000, 1000 * 2 ** (count - FREE_FAILURES));
}

export function lockedUntil(guard: LoginGuard | undefined, now: number): number {
	const until = guard?.LockedUntil ?? 0;
	return until > now ? until : 0;
}

function isKnown(guard: LoginGuard | undefined, key: string, now: number): boolean {
	return (guard?.Known ?? []).some((k) => k.IP === key && now - k.At < KNOWN_FOR_MS);
}

/** May `ip` try a password on this account now? Checked before the password, which a refusal never looks at. */
export function admit(guard: LoginGuard | undefined, ip: string | undefined, now: number, s: GuardSettings): Admission {
	const key = addressKey(ip);
	const until = lockedUntil(guard, now);
	if (until && !isKnown(guard, key, now)) return { ok: false, reason: "locked", until };
	const f = guard?.Failures?.find((x) => x.IP === key);
	if (f) {
		const wait = f.Last + delayAfter(f.Count, s.delayMaxSeconds) - now;
		if (wait > 0) return { ok: false, reason: "wait", retryAfter: Math.ceil(wait / 1000) };
	}
	return { ok: true };
}

/**
 * Records a wrong password from `ip`; `consecutive` is the account's count of failures since its last success,
 * this one included. Says whether this failure started a lock.
 */
export function recordFailure(guard: LoginGuard | undefined, ip: string | undefined, consecutive: number, now: number, s: GuardSettings): { guard: LoginGuard; locked: boolean } {
	const key = addressKey(ip);
	const recent = (guard?.Failures ?? []).filter((f) => f.IP !== key && now - f.Last < FAILURES_FORGOTTEN_MS);
	const previous = guard?.Failures?.find((f) => f.IP === key && now - f.Last < FAILURES_FORGOTTEN_MS);
	const count = (previous?.Count ?? 0) + 1;
	const next: LoginGuard = { ...guard, Failures: [{ IP: key, Count: count, Last: now }, ...recent].slice(0, KEEP_FAILURES) };
	const locked = s.maxFailed > 0 && consecutive > 0 && consecutive % s.maxFailed === 0;
	if (locked) next.LockedUntil = s.lockSeconds > 0 ? now + s.lockSeconds * 1000 : UNTIL_UNLOCKED;
	return { guard: next, locked };
}

/** A right password from `ip`: its failures are forgotten and it becomes one of the account's addresses. */
export function recordSuccess(guard: LoginGuard | undefined, ip: string | undefined, now: number): LoginGuard {
	const key = addressKey(ip);
	const Failures = (guard?.Failures ?? []).filter((f) => f.IP !== key);
	const Known = [{ IP: key, At: now }, ...(guard?.Known ?? []).filter((k) => k.IP !== key && now - k.At < KNOWN_FOR_MS)].slice(0, KEEP_KNOWN);
	return { ...guard, Failures, Known };
}

/** An administrator's unlock (or a password reset): the lock goes, and every address starts afresh. */
export function unlock(guard: LoginGuard | undefined): LoginGuard | undefined {
	if (!guard) return undefined;
	const { LockedUntil, Failures, ...rest } = guard;
	return rest;
}
