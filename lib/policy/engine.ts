// Ladon-style policy evaluation as Cells does it: subjects, resources and actions are patterns whose `<...>`
// parts are regular expressions; a matching deny wins over any allow; no match means deny. Conditions are
// checked against the request context (remote address, time), so "office hours" or "from this network only"
// policies really restrict access.
import ipaddr from "ipaddr.js";

export interface PolicyCondition {
	type: string;
	jsonOptions?: string;
}

export interface Policy {
	id?: string;
	description?: string;
	subjects?: string[];
	resources?: string[];
	actions?: string[];
	effect?: "unknown" | "deny" | "allow";
	conditions?: Record<string, PolicyCondition>;
}

export interface AccessRequest {
	subjects: string[];
	resource: string;
	action: string;
	context: { remoteAddress?: string; time?: Date; ipLists?: Record<string, string[]> };
}

const patternCache = new Map<string, RegExp>();

export function compilePattern(pattern: string): RegExp {
	let re = patternCache.get(pattern);
	if (re) return re;
	let src = "";
	let i = 0;
	while (i < pattern.length) {
		const open = pattern.indexOf("<", i);
		if (open < 0) {
			src += escape(pattern.slice(i));
			break;
		}
		// Nested angle brackets are not part of ladon's syntax; the first ">" closes.
		const close = pattern.indexOf(">", open);
		if (close < 0) {
			src += escape(pattern.slice(i));
			break;
		}
		src += escape(pattern.slice(i, open)) + `(?:${pattern.slice(open + 1, close)})`;
		i = close + 1;
	}
	try {
		re = new RegExp(`^${src}$`);
	} catch {
		re = /(?!)/; // an invalid pattern matches nothing rather than everything
	}
	if (patternCache.size > 10_000) patternCache.clear();
	patternCache.set(pattern, re);
	return re;
}

function escape(s: string): string {
	return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function anyMatch(patterns: string[] | undefined, values: string[]): boolean {
	if (!patterns?.length) return false;
	for (const p of patterns) {
		const re = compilePattern(p);
		for (const v of values) if (re.test(v)) return true;
	}
	return false;
}

function parseOptions(c: PolicyCondition): Record<string, unknown> {
	if (!c.jsonOptions) return {};
	try {
		const v = JSON.parse(c.jsonOptions);
		return v && typeof v === "object" ? v : {};
	} catch {
		return {};
	}
}

export function ipInCidr(ip: string | undefined, cidr: string): boolean {
	if (!ip) return false;
	try {
		let addr = ipaddr.parse(ip);
		if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
		if (!cidr.includes("/")) {
			let other = ipaddr.parse(cidr);
			if (other.kind() === "ipv6" && (other as ipaddr.IPv6).isIPv4MappedAddress()) other = (other as ipaddr.IPv6).toIPv4Address();
			return other.kind() === addr.kind() && other.toString() === addr.toString();
		}
		const [range, bits] = ipaddr.parseCIDR(cidr);
		return range.kind() === addr.kind() && addr.match([range, bits]);
	} catch {
		return false;
	}
}

function minutesOfDay(hhmm: unknown): number | undefined {
	if (typeof hhmm !== "string") return undefined;
	const m = /^(\d{1,2}):(\d{2})$/.exec(hhmm);
	return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/** The condition types we understand; an unknown type never matches, so a policy using it does not apply. */
export const CONDITION_TYPES = [
	"CIDRCondition",
	"StringMatchCondition",
	"StringNotMatchCondition",
	"StringEqualCondition",
	"OfficeHoursCondition",
	"WithinPeriodCondition",
	"DateAfterCondition",
	"DateBeforeCondition",
	"IPListCondition",
] as const;

export function conditionHolds(key: string, c: PolicyCondition, ctx: AccessRequest["context"]): boolean {
	const o = parseOptions(c);
	const now = ctx.time ?? new Date();
	const value = key === "remoteAddress" ? ctx.remoteAddress : undefined;
	switch (c.type) {
		case "CIDRCondition":
			return typeof o.cidr === "string" && ipInCidr(ctx.remoteAddress, o.cidr);
		case "StringMatchCondition":
			return typeof o.matches === "string" && value !== undefined && new RegExp(o.matches).test(value);
		case "StringNotMatchCondition":
			return typeof o.matches === "string" && value !== undefined && !new RegExp(o.matches).test(value);
		case "StringEqualCondition":
			return value !== undefined && o.equals === value;
		case "OfficeHoursCondition": {
			// Local time of the server unless a UTC offset in minutes is given.
			const offset = typeof o.utcOffset === "number" ? o.utcOffset : -now.getTimezoneOffset();
			const t = new Date(now.getTime() + offset * 60_000);
			const day = t.getUTCDay();
			const days = Array.isArray(o.days) ? (o.days as number[]) : [1, 2, 3, 4, 5];
			const start = minutesOfDay(o.start) ?? 0;
			const end = minutesOfDay(o.end) ?? 24 * 60;
			const m = t.getUTCHours() * 60 + t.getUTCMinutes();
			return days.includes(day) && m >= start && m < end;
		}
		case "WithinPeriodCondition": {
			const start = typeof o.start === "string" ? Date.parse(o.start) : -Infinity;
			const end = typeof o.end === "string" ? Date.parse(o.end) : Infinity;
			return now.getTime() >= start && now.getTime() <= end;
		}
		case "DateAfterCondition":
			return typeof o.date === "string" && now.getTime() > Date.parse(o.date);
		case "DateBeforeCondition":
			return typeof o.date === "string" && now.getTime() < Date.parse(o.date);
		case "IPListCondition": {
			const list = typeof o.list === "string" ? ctx.ipLists?.[o.list] : undefined;
			const inList = !!list?.some((cidr) => ipInCidr(ctx.remoteAddress, cidr));
			return o.negate === true ? !inList : inList;
		}
		default:
			return false;
	}
}

export function policyApplies(p: Policy, req: AccessRequest): boolean {
	if (!anyMatch(p.subjects, req.subjects)) return false;
	if (!anyMatch(p.resources, [req.resource])) return false;
	if (!anyMatch(p.actions, [req.action])) return false;
	for (const [key, c] of Object.entries(p.conditions ?? {})) if (!conditionHolds(key, c, req.context)) return false;
	return true;
}

export function isAllowed(policies: Policy[], req: AccessRequest): boolean {
	let allowed = false;
	for (const p of policies) {
		if (!policyApplies(p, req)) continue;
		if (p.effect === "deny") return false;
		if (p.effect === "allow") allowed = true;
	}
	return allowed;
}
