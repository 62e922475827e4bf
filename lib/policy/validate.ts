// Checks of what an administrator sends to PUT /policy and POST /policy/iplists, so that nothing stored can
// make the gateway's policy evaluation throw or silently match everything.
import { randomUUID } from "node:crypto";
import { BadRequestError } from "../errors";
import { CONDITION_TYPES, type Policy, type PolicyCondition } from "./engine";
import type { PolicyGroup, ResourceGroup } from "./defaults";
import { isIpOrCidr } from "./ipban";

const RESOURCE_GROUPS: ResourceGroup[] = ["rest", "acl", "oidc"];
const MAX_PATTERNS = 500;
const MAX_POLICIES = 500;

/** Ids, list names and the like: no path tricks, no control characters, not overlong. */
export function checkId(value: unknown, what: string): string {
	if (typeof value !== "string" || !value.trim()) throw new BadRequestError(`${what} is required`);
	if (value.length > 255) throw new BadRequestError(`${what} is too long (255 characters at most)`);
	// eslint-disable-next-line no-control-regex
	if (/[\u0000-\u001f\u007f/\\]/.test(value) || value.includes("..")) throw new BadRequestError(`${what} contains forbidden characters`);
	return value;
}

function checkText(value: unknown, what: string, max = 4096): string | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value !== "string") throw new BadRequestError(`${what} must be a string`);
	if (value.length > max) throw new BadRequestError(`${what} is too long`);
	return value;
}

function checkPattern(p: unknown, what: string): string {
	if (typeof p !== "string" || p === "") throw new BadRequestError(`${what} must be non-empty strings`);
	if (p.length > 1024) throw new BadRequestError(`${what} "${p.slice(0, 40)}…" is too long`);
	// Every <...> part is a regular expression: it must compile.
	let i = 0;
	while (i < p.length) {
		const open = p.indexOf("<", i);
		if (open < 0) break;
		const close = p.indexOf(">", open);
		if (close < 0) throw new BadRequestError(`${what} "${p}" has a "<" without its closing ">"`);
		try {
			new RegExp(p.slice(open + 1, close));
		} catch {
			throw new BadRequestError(`${what} "${p}" contains an invalid regular expression`);
		}
		i = close + 1;
	}
	return p;
}

function checkPatterns(value: unknown, what: string): string[] {
	if (!Array.isArray(value) || value.length === 0) throw new BadRequestError(`${what} must be a non-empty array of strings`);
	if (value.length > MAX_PATTERNS) throw new BadRequestError(`${what} has too many entries`);
	return value.map((p) => checkPattern(p, what));
}

function options(c: PolicyCondition, at: string): Record<string, unknown> {
	if (c.jsonOptions === undefined || c.jsonOptions === "") return {};
	if (typeof c.jsonOptions !== "string") throw new BadRequestError(`${at}.jsonOptions must be a JSON string`);
	let v: unknown;
	try {
		v = JSON.parse(c.jsonOptions);
	} catch {
		throw new BadRequestError(`${at}.jsonOptions is not valid JSON`);
	}
	if (!v || typeof v !== "object" || Array.isArray(v)) throw new BadRequestError(`${at}.jsonOptions must be a JSON object`);
	return v as Record<string, unknown>;
}

function needString(o: Record<string, unknown>, key: string, at: string): string {
	const v = o[key];
	if (typeof v !== "string" || !v) throw new BadRequestError(`${at}.jsonOptions needs a "${key}" string`);
	return v;
}

function checkDate(v: unknown, what: string): void {
	if (typeof v !== "string" || Number.isNaN(Date.parse(v))) throw new BadRequestError(`${what} must be a date (ISO 8601)`);
}

function checkRegex(v: string, what: string): void {
	try {
		new RegExp(v);
	} catch {
		throw new BadRequestError(`${what} is not a valid regular expression`);
	}
}

const HHMM = /^([01]?\d|2[0-4]):([0-5]\d)$/;

/** One condition, against the option shape lib/policy/engine.ts evaluates. */
export function checkCondition(key: string, c: unknown, at: string): PolicyCondition {
	if (!/^[A-Za-z][A-Za-z0-9_:-]{0,127}$/.test(key)) throw new BadRequestError(`${at}: condition keys are letters, digits, "_", ":" or "-"`);
	if (!c || typeof c !== "object" || Array.isArray(c)) throw new BadRequestError(`${at} must be an object`);
	const cond = c as PolicyCondition;
	if (typeof cond.type !== "string" || !(CONDITION_TYPES as readonly string[]).includes(cond.type)) {
		throw new BadRequestError(`${at}.type must be one of ${CONDITION_TYPES.join(", ")}`);
	}
	const o = options(cond, at);
	switch (cond.type) {
		case "CIDRCondition":
			if (!isIpOrCidr(needString(o, "cidr", at))) throw new BadRequestError(`${at}: "${String(o.cidr)}" is not an IP address or CIDR network`);
			break;
		case "StringMatchCondition":
		case "StringNotMatchCondition":
			checkRegex(needString(o, "matches", at), `${at}.matches`);
			break;
		case "StringEqualCondition":
			needString(o, "equals", at);
			break;
		case "OfficeHoursCondition":
			if (o.days !== undefined && (!Array.isArray(o.days) || !o.days.every((d) => Number.isInteger(d) && d >= 0 && d <= 6))) {
				throw new BadRequestError(`${at}: "days" must be an array of week days 0 (Sunday) to 6`);
			}
			for (const k of ["start", "end"]) if (o[k] !== undefined && (typeof o[k] !== "string" || !HHMM.test(o[k] as string))) throw new BadRequestError(`${at}: "${k}" must be HH:MM`);
			if (o.utcOffset !== undefined && (typeof o.utcOffset !== "number" || Math.abs(o.utcOffset) > 24 * 60)) throw new BadRequestError(`${at}: "utcOffset" must be minutes`);
			break;
		case "WithinPeriodCondition":
			if (o.start === undefined && o.end === undefined) throw new BadRequestError(`${at}.jsonOptions needs "start" and/or "end"`);
			if (o.start !== undefined) checkDate(o.start, `${at}.start`);
			if (o.end !== undefined) checkDate(o.end, `${at}.end`);
			break;
		case "DateAfterCondition":
		case "DateBeforeCondition":
			checkDate(o.date, `${at}.date`);
			break;
		case "IPListCondition":
			checkId(needString(o, "list", at), `${at}.list`);
			if (o.negate !== undefined && typeof o.negate !== "boolean") throw new BadRequestError(`${at}: "negate" must be true or false`);
			break;
	}
	const out: PolicyCondition = { type: cond.type };
	if (cond.jsonOptions) out.jsonOptions = cond.jsonOptions;
	return out;
}

export function checkPolicy(raw: unknown, at: string): Policy {
	if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new BadRequestError(`${at} must be an object`);
	const p = raw as Policy;
	if (p.effect !== "allow" && p.effect !== "deny") throw new BadRequestError(`${at}.effect must be "allow" or "deny"`);
	const out: Policy = {
		id: p.id === undefined || p.id === "" ? randomUUID() : checkId(p.id, `${at}.id`),
		description: checkText(p.description, `${at}.description`) ?? "",
		subjects: checkPatterns(p.subjects, `${at}.subjects`),
		resources: checkPatterns(p.resources, `${at}.resources`),
		actions: checkPatterns(p.actions, `${at}.actions`),
		effect: p.effect,
	};
	if (p.conditions !== undefined && p.conditions !== null) {
		if (typeof p.conditions !== "object" || Array.isArray(p.conditions)) throw new BadRequestError(`${at}.conditions must be an object`);
		const conds: Record<string, PolicyCondition> = {};
		for (const [k, c] of Object.entries(p.conditions)) conds[k] = checkCondition(k, c, `${at}.conditions.${k}`);
		if (Object.keys(conds).length) out.conditions = conds;
	}
	return out;
}

/** A group as PUT /policy receives it, checked and normalised; Uuid generated when missing. */
export function checkPolicyGroup(raw: unknown): Omit<PolicyGroup, "LastUpdated"> {
	if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new BadRequestError("The policy group must be an object");
	const g = raw as Partial<PolicyGroup>;
	const rg = g.ResourceGroup ?? "rest";
	if (!RESOURCE_GROUPS.includes(rg)) throw new BadRequestError(`ResourceGroup must be one of ${RESOURCE_GROUPS.join(", ")}`);
	const policies = g.Policies ?? [];
	if (!Array.isArray(policies)) throw new BadRequestError("Policies must be an array");
	if (policies.length > MAX_POLICIES) throw new BadRequestError("Too many policies in one group");
	const checked = policies.map((p, i) => checkPolicy(p, `Policies[${i}]`));
	const ids = new Set<string>();
	for (const p of checked) {
		if (ids.has(p.id!)) throw new BadRequestError(`Policy id "${p.id}" is used twice in the group`);
		ids.add(p.id!);
	}
	const out: Omit<PolicyGroup, "LastUpdated"> = {
		Uuid: g.Uuid === undefined || g.Uuid === "" ? randomUUID() : checkId(g.Uuid, "Uuid"),
		Name: checkText(g.Name, "Name", 255) ?? "",
		Description: checkText(g.Description, "Description") ?? "",
		ResourceGroup: rg,
		Policies: checked,
	};
	const owner = checkText(g.OwnerUuid, "OwnerUuid", 255);
	if (owner) out.OwnerUuid = owner;
	return out;
}

/** Cells' ListPolicyGroups filter: `resource_group:<rest|acl|oidc>`, `uuid:<id>`, `like:<text>` (name or description); anything else lists all. */
export function matchesFilter(g: PolicyGroup, filter: string | undefined): boolean {
	if (!filter) return true;
	if (filter.startsWith("resource_group:")) {
		const rg = filter.slice("resource_group:".length);
		return !(RESOURCE_GROUPS as string[]).includes(rg) || g.ResourceGroup === rg;
	}
	if (filter.startsWith("uuid:")) return g.Uuid === filter.slice(5);
	if (filter.startsWith("like:")) {
		const s = filter.slice(5).toLowerCase();
		return g.Name.toLowerCase().includes(s) || g.Description.toLowerCase().includes(s);
	}
	return true;
}

/** The entries of an IP list: addresses or CIDR networks, trimmed, without duplicates. */
export function checkIpList(ips: unknown): string[] {
	if (ips === undefined || ips === null) return [];
	if (!Array.isArray(ips)) throw new BadRequestError("IPs must be an array of strings");
	if (ips.length > 10_000) throw new BadRequestError("Too many entries in the list");
	const out: string[] = [];
	for (const ip of ips) {
		if (!isIpOrCidr(ip)) throw new BadRequestError(`"${String(ip).slice(0, 80)}" is not an IP address or CIDR network`);
		const v = ip.trim();
		if (!out.includes(v)) out.push(v);
	}
	return out;
}
