// IP banning after repeated failed logins, as plain functions over a per-IP state document: the policy service
// loads the state, applies one attempt, and stores the result. Failures are counted in a sliding window; a
// success or the start of a ban clears the count, so an expired ban is not re-triggered by old failures.
import ipaddr from "ipaddr.js";
import { ipInCidr } from "./engine";

/** One login attempt as Cells' `ipbanConnectionAttempt` shows it (connectionTime in unix seconds). */
export interface ConnectionAttempt {
	IP: string;
	connectionTime: number;
	IsSuccess: boolean;
	Details?: Record<string, string>;
}

/** What is kept per client address. */
export interface IpState {
	IP: string;
	/** Unix seconds; 0 when the address was never banned. */
	BanExpire: number;
	/** Times (ms) of the failures that count toward the next ban, oldest first. */
	Failures: number[];
	/** Last attempts, oldest first, for the admin's view. */
	History: ConnectionAttempt[];
}

export interface BanSettings {
	/** Failures within `window` seconds that start a ban; 0 or less disables banning. */
	threshold: number;
	window: number;
	/** Ban length in seconds. */
	duration: number;
	/** Attempts kept in History (default 20). */
	historySize?: number;
}

export interface AttemptResult {
	state: IpState;
	/** True when this attempt started a new ban. */
	banStarted: boolean;
}

/** `::ffff:1.2.3.4` → `1.2.3.4`, IPv6 in its canonical short form; undefined when not an address. */
export function normalizeIp(ip: unknown): string | undefined {
	if (typeof ip !== "string") return undefined;
	const s = ip.trim();
	if (!isStrictIp(s)) return undefined;
	return ipaddr.process(s).toString();
}

function isStrictIp(s: string): boolean {
	return ipaddr.IPv4.isValidFourPartDecimal(s) || ipaddr.IPv6.isValid(s);
}

/** An address (`10.0.0.1`, `::1`) or a network (`10.0.0.0/8`, `fd00::/8`) written the usual way. */
export function isIpOrCidr(value: unknown): value is string {
	if (typeof value !== "string" || value.length > 64) return false;
	const s = value.trim();
	if (!s.includes("/")) return isStrictIp(s);
	const parts = s.split("/");
	if (parts.length !== 2) return false;
	const [addr, bits] = parts;
	if (!/^\d{1,3}$/.test(bits)) return false;
	if (ipaddr.IPv4.isValidFourPartDecimal(addr)) return Number(bits) <= 32;
	if (ipaddr.IPv6.isValid(addr)) return Number(bits) <= 128;
	return false;
}

/** True when `ip` is one of `entries` (addresses or networks). */
export function inList(ip: string | undefined, entries: string[] | undefined): boolean {
	if (!ip || !entries?.length) return false;
	return entries.some((e) => e === ip || ipInCidr(ip, e));
}

export function emptyState(ip: string): IpState {
	return { IP: ip, BanExpire: 0, Failures: [], History: [] };
}

export function isBanned(state: IpState | null | undefined, nowMs: number): boolean {
	return !!state && state.BanExpire * 1000 > nowMs;
}

/**
 * Applies one login attempt from `ip` at `nowMs`. A failure is counted unless the address is already banned;
 * reaching `threshold` failures inside the window bans it for `duration` seconds. A success clears the count.
 */
export function recordAttempt(
	previous: IpState | null | undefined,
	ip: string,
	success: boolean,
	nowMs: number,
	settings: BanSettings,
	details?: Record<string, string>,
): AttemptResult {
	const state: IpState = previous
		? { IP: ip, BanExpire: previous.BanExpire ?? 0, Failures: [...(previous.Failures ?? [])], History: [...(previous.History ?? [])] }
		: emptyState(ip);
	const attempt: ConnectionAttempt = { IP: ip, connectionTime: Math.floor(nowMs / 1000), IsSuccess: success };
	if (details && Object.keys(details).length) attempt.Details = details;
	state.History.push(attempt);
	const keep = Math.max(1, settings.historySize ?? 20);
	if (state.History.length > keep) state.History = state.History.slice(-keep);

	let banStarted = false;
	if (success) {
		state.Failures = [];
	} else if (!isBanned(state, nowMs)) {
		const since = nowMs - settings.window * 1000;
		state.Failures = state.Failures.filter((t) => t > since);
		state.Failures.push(nowMs);
		if (settings.threshold > 0 && state.Failures.length >= settings.threshold) {
			state.BanExpire = Math.floor(nowMs / 1000) + Math.max(1, Math.floor(settings.duration));
			state.Failures = [];
			banStarted = true;
		}
	}
	return { state, banStarted };
}

/** The bans in force at `nowMs`, as the gateway's snapshot wants them. */
export function activeBans(states: IpState[], nowMs: number): { IP: string; BanExpire: number }[] {
	return states.filter((s) => isBanned(s, nowMs)).map((s) => ({ IP: s.IP, BanExpire: s.BanExpire }));
}

/** Runs `fn`s one after the other per key (e.g. per IP) inside this process, so read-modify-write is safe. */
export class KeyedSerializer {
	private tails = new Map<string, Promise<unknown>>();

	run<T>(key: string, fn: () => Promise<T>): Promise<T> {
		const prev = this.tails.get(key) ?? Promise.resolve();
		const next = prev.then(fn, fn);
		const tail = next.catch(() => undefined);
		this.tails.set(key, tail);
		void tail.then(() => {
			if (this.tails.get(key) === tail) this.tails.delete(key);
		});
		return next;
	}
}
