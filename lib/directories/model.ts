// External (LDAP) directories as admins configure them: Cells' authLdapServerConfig, its checks, and how it is
// shown (the bind password never leaves the server in clear: answers carry MASK, and a PUT that sends MASK back
// keeps the stored password).
import { FilterParser } from "ldapts";
import { BadRequestError } from "../errors";
import { checkIdentifier } from "../identity/validate";
import { parseSchedule } from "../scheduler/schedule";
import { SECRET_MASK as MASK } from "../strings";

/** Cells' authLdapSearchFilter. */
export interface LdapSearchFilter {
	DNs?: string[];
	Filter?: string;
	IDAttribute?: string;
	DisplayAttribute?: string;
	Scope?: string;
}

/** Cells' authLdapMapping. */
export interface LdapMapping {
	LeftAttribute?: string;
	RightAttribute?: string;
	RolePrefix?: string;
	RuleString?: string;
}

/** Cells' authLdapMemberOfMapping: the LDAP groups a user is a member of, as roles. */
export interface LdapMemberOfMapping {
	GroupFilter?: LdapSearchFilter;
	Mapping?: LdapMapping;
	PydioMemberOfAttribute?: string;
	PydioMemberOfValueFormat?: string;
	RealMemberOf?: boolean;
	RealMemberOfAttribute?: string;
	RealMemberOfValueFormat?: string;
	SupportNestedGroup?: boolean;
}

/** The user attributes MappingRules may write (RightAttribute); `Roles` gives roles. */
export const MAPPED_ATTRIBUTES = ["displayName", "email", "Roles"] as const;

/** Cells' authLdapServerConfig. */
export interface DirectoryConfig {
	ConfigId?: string;
	DomainName?: string;
	Host?: string;
	Connection?: string;
	BindAnonymous?: boolean;
	BindDN?: string;
	BindPW?: string;
	SkipVerifyCertificate?: boolean;
	RootCA?: string;
	RootCAData?: string;
	PageSize?: number;
	User?: LdapSearchFilter;
	MappingRules?: LdapMapping[];
	MemberOfMapping?: LdapMemberOfMapping;
	RolePrefix?: string;
	Schedule?: string;
	SchedulerDetails?: string;
	SyncOnly?: boolean;
}

/** A configuration whose connection and user search were checked (what the LDAP client is given). */
export interface CheckedConfig extends DirectoryConfig {
	ConfigId: string;
	Host: string;
	Connection: Connection;
	User: Required<Pick<LdapSearchFilter, "DNs" | "Filter" | "IDAttribute">> & LdapSearchFilter & { Scope: Scope };
}

export type Connection = "normal" | "ssl" | "starttls";
export type Scope = "sub" | "one" | "base";

/** What answers carry instead of a bind password. */
export { MASK };

const CONFIG_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
// host:port, the host a name, an IPv4 address or a bracketed IPv6 address.
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/;
// An attribute description: a name (with options) or an OID.
const ATTRIBUTE = /^([A-Za-z][A-Za-z0-9-]*|\d+(\.\d+)+)(;[A-Za-z0-9-]+)*$/;
// One RDN or more, each type=value (escaped commas allowed inside values).
const DN = /^\s*[A-Za-z0-9.-]+\s*=(\\.|[^,\\])+(,\s*[A-Za-z0-9.-]+\s*=(\\.|[^,\\])+)*$/;

export function checkConfigId(id: unknown): string {
	if (typeof id !== "string" || !CONFIG_ID.test(id)) throw new BadRequestError("ConfigId must be 1 to 64 letters, digits, '.', '_' or '-' (starting with a letter or digit)");
	return id;
}

/** An LDAP filter as RFC 4515 writes it; BadRequest naming the field otherwise. */
export function checkFilter(field: string, filter: string): string {
	const f = filter.trim();
	try {
		if (!f.startsWith("(")) throw new Error("it must be enclosed in parentheses");
		// The parser stops at the end of the string without checking that every group closed; a parenthesis
		// inside a value is escaped (\28, \29), so every literal one counts.
		let depth = 0;
		for (let i = 0; i < f.length; i++) {
			depth += f[i] === "(" ? 1 : f[i] === ")" ? -1 : 0;
			if (depth < 0 || (depth === 0 && i < f.length - 1)) throw new Error("unbalanced parentheses");
		}
		if (depth !== 0) throw new Error("unbalanced parentheses");
		FilterParser.parseString(f);
	} catch (e) {
		throw new BadRequestError(`${field} is not a valid LDAP filter (${(e as Error).message})`);
	}
	return f;
}

function checkAttribute(field: string, value: string | undefined, required: boolean): string | undefined {
	if (!value) {
		if (required) throw new BadRequestError(`${field} is required`);
		return undefined;
	}
	if (!ATTRIBUTE.test(value)) throw new BadRequestError(`${field} is not an LDAP attribute name`);
	return value;
}

export function checkScope(scope: string | undefined, field = "User.Scope"): Scope {
	const s = (scope || "sub").toLowerCase();
	if (s !== "sub" && s !== "one" && s !== "base") throw new BadRequestError(`${field} must be sub, one or base`);
	return s;
}

export function checkDNs(field: string, dns: string[] | undefined): string[] {
	const out = (dns ?? []).map((d) => d.trim()).filter(Boolean);
	if (!out.length) throw new BadRequestError(`${field} needs at least one base DN`);
	for (const d of out) if (!DN.test(d)) throw new BadRequestError(`${field}: "${d}" is not a DN such as ou=people,dc=example,dc=org`);
	return out;
}

/**
 * A complete, usable configuration, or BadRequest saying what is wrong. `id` is the ConfigId it is saved or
 * tested under (the body's own ConfigId, when there is one, must agree).
 */
export function checkConfig(raw: DirectoryConfig, id: string): CheckedConfig {
	if (raw.ConfigId && raw.ConfigId !== id) throw new BadRequestError(`Config.ConfigId (${raw.ConfigId}) differs from the ConfigId of the path (${id})`);
	const host = HOST.exec(raw.Host ?? "");
	const port = host ? Number(host[3]) : 0;
	if (!host || port < 1 || port > 65535) throw new BadRequestError('Host must be "host:port", e.g. "ldap.example.org:389"');
	const connection = (raw.Connection || "normal").toLowerCase();
	if (connection !== "normal" && connection !== "ssl" && connection !== "starttls") throw new BadRequestError("Connection must be normal, ssl or starttls");
	if (!raw.BindAnonymous) {
		if (!raw.BindDN) throw new BadRequestError("BindDN is required unless BindAnonymous is set");
		checkDNs("BindDN", [raw.BindDN]);
		if (!raw.BindPW) throw new BadRequestError("BindPW is required unless BindAnonymous is set");
	}
	if (raw.DomainName) checkIdentifier("DomainName", raw.DomainName, 255);
	if (raw.PageSize !== undefined && (!Number.isInteger(raw.PageSize) || raw.PageSize < 0)) throw new BadRequestError("PageSize must be a positive integer");
	const user = raw.User ?? {};
	const checked: CheckedConfig = {
		...raw,
		ConfigId: id,
		Host: raw.Host as string,
		Connection: connection,
		User: {
			...user,
			DNs: checkDNs("User.DNs", user.DNs),
			Filter: checkFilter("User.Filter", user.Filter || ""),
			IDAttribute: checkAttribute("User.IDAttribute", user.IDAttribute, true) as string,
			Scope: checkScope(user.Scope),
		},
	};
	checkAttribute("User.DisplayAttribute", user.DisplayAttribute, false);
	if (raw.Schedule) {
		try {
			parseSchedule(raw.Schedule);
		} catch (e) {
			throw new BadRequestError(`Schedule: ${raw.Schedule} is not a repeating interval such as R/2024-01-01T00:00:00Z/PT10M (${(e as Error).message})`);
		}
	}
	// Users come only from the synchronisation: without a schedule none would ever come.
	if (raw.SyncOnly && !raw.Schedule) throw new BadRequestError("SyncOnly needs a Schedule: its users are created by the synchronisation only");
	(raw.MappingRules ?? []).forEach((rule, i) => checkRule(`MappingRules[${i}]`, rule, false));
	if (raw.MemberOfMapping) checkMemberOf(raw.MemberOfMapping);
	return checked;
}

function checkRule(field: string, rule: LdapMapping, roles: boolean): void {
	checkAttribute(`${field}.LeftAttribute`, rule.LeftAttribute, true);
	const right = rule.RightAttribute || (roles ? "Roles" : "");
	if (roles ? right !== "Roles" : !(MAPPED_ATTRIBUTES as readonly string[]).includes(right))
		throw new BadRequestError(`${field}.RightAttribute ${right || "(empty)"} is not supported yet: ${roles ? "Roles" : MAPPED_ATTRIBUTES.join(", ")}`);
}

function checkMemberOf(m: LdapMemberOfMapping): void {
	if (!m.Mapping) throw new BadRequestError("MemberOfMapping.Mapping is required (its LeftAttribute names the group attribute that gives the role, e.g. cn)");
	checkRule("MemberOfMapping.Mapping", m.Mapping, true);
	if (m.SupportNestedGroup) throw new BadRequestError("MemberOfMapping.SupportNestedGroup is not supported yet");
	if (m.RealMemberOf) {
		checkAttribute("MemberOfMapping.RealMemberOfAttribute", m.RealMemberOfAttribute, false);
		if ((m.RealMemberOfValueFormat || "dn").toLowerCase() !== "dn") throw new BadRequestError("MemberOfMapping.RealMemberOfValueFormat: only dn is supported yet");
		return;
	}
	checkDNs("MemberOfMapping.GroupFilter.DNs", m.GroupFilter?.DNs);
	checkFilter("MemberOfMapping.GroupFilter.Filter", m.GroupFilter?.Filter || "");
	checkScope(m.GroupFilter?.Scope, "MemberOfMapping.GroupFilter.Scope");
	checkAttribute("MemberOfMapping.PydioMemberOfAttribute", m.PydioMemberOfAttribute, false);
	if ((m.PydioMemberOfValueFormat || "dn").toLowerCase() !== "dn") throw new BadRequestError("MemberOfMapping.PydioMemberOfValueFormat: only dn is supported yet");
}

/**
 * The configuration a request means: `MASK` (or nothing) as BindPW stands for the password stored under the
 * same ConfigId, so the forms that show a masked password can send it back unchanged.
 */
export function unmask(raw: DirectoryConfig, stored: DirectoryConfig | null): DirectoryConfig {
	const wantsStored = raw.BindPW === MASK || (!raw.BindPW && !raw.BindAnonymous);
	// The stored password only goes to the server and account it was given for: a request naming another host or
	// bind DN must carry the password itself (else the masked one could be sent to a server of the caller's choice).
	if (wantsStored && stored?.BindPW && (raw.Host !== stored.Host || raw.BindDN !== stored.BindDN)) {
		throw new BadRequestError("BindPW is masked but Host or BindDN differ from the saved directory: send the password");
	}
	if (wantsStored && stored?.BindPW) return { ...raw, BindPW: stored.BindPW };
	if (raw.BindPW === MASK) throw new BadRequestError("BindPW is masked but no password is stored for this directory: send the password");
	return raw;
}

/** Removes zero values (Cells' JSON omits them), recursively. */
function omitZero<T>(value: T): T | undefined {
	if (value === "" || value === false || value === 0 || value === null || value === undefined) return undefined;
	if (Array.isArray(value)) return value.length ? (value.map((v) => omitZero(v) ?? v) as T) : undefined;
	if (typeof value === "object") {
		const out: Record<string, unknown> = {};
		for (const [k, v] of Object.entries(value)) {
			const kept = omitZero(v);
			if (kept !== undefined) out[k] = kept;
		}
		return Object.keys(out).length ? (out as T) : undefined;
	}
	return value;
}

/** A stored configuration as answers show it: the password masked, zero values omitted. */
export function present(config: DirectoryConfig): DirectoryConfig {
	return omitZero({ ...config, ...(config.BindPW ? { BindPW: MASK } : {}) }) ?? {};
}
