// What a directory entry gives its local user beyond the login: MappingRules (an LDAP attribute → displayName,
// email or roles) and MemberOfMapping (the groups it is a member of → roles), role ids prefixed by the rule's
// RolePrefix, else the directory's. A RuleString is a comma-separated list of the values a rule keeps.
import type { DirectoryConfig, LdapMapping } from "./model";

/** The values of one attribute of an entry (any case). */
export type AttributeValues = (attribute: string) => string[];

export interface MappedAttributes {
	displayName?: string;
	email?: string;
	/** Role ids; undefined when the directory maps no roles. */
	roles?: string[];
}

function kept(rule: LdapMapping, value: string): boolean {
	if (!rule.RuleString?.trim()) return true;
	return rule.RuleString.split(",").some((v) => v.trim().toLowerCase() === value.toLowerCase());
}

function roleId(cfg: DirectoryConfig, rule: LdapMapping, value: string): string {
	return `${rule.RolePrefix ?? cfg.RolePrefix ?? ""}${value}`;
}

/** The value of `attribute` in the first RDN of `dn` ("cn=staff,ou=groups,…", "cn" → "staff"), unescaped. */
export function rdnValue(dn: string, attribute: string): string | undefined {
	const m = /^\s*([^=]+?)\s*=((?:\\.|[^,+\\])*)/.exec(dn);
	if (!m || m[1].toLowerCase() !== attribute.toLowerCase()) return undefined;
	return m[2].trim().replace(/\\([0-9a-fA-F]{2}|.)/g, (_, c: string) => (c.length === 2 ? String.fromCharCode(parseInt(c, 16)) : c));
}

/**
 * The mapped attributes of a user entry. `groups` are the values of MemberOfMapping.Mapping.LeftAttribute of
 * the groups it is a member of (read by the LDAP client, whichever way MemberOfMapping says).
 */
export function mapEntry(cfg: DirectoryConfig, get: AttributeValues, groups: string[]): MappedAttributes {
	const out: MappedAttributes = {};
	const roles = new Set<string>();
	for (const rule of cfg.MappingRules ?? []) {
		const values = get(rule.LeftAttribute ?? "").filter((v) => v && kept(rule, v));
		if (rule.RightAttribute === "Roles") for (const v of values) roles.add(roleId(cfg, rule, v));
		else if (values.length && (rule.RightAttribute === "displayName" || rule.RightAttribute === "email")) out[rule.RightAttribute] = values[0];
	}
	const member = cfg.MemberOfMapping?.Mapping;
	if (member) for (const g of groups) if (g && kept(member, g)) roles.add(roleId(cfg, member, g));
	if (member || (cfg.MappingRules ?? []).some((r) => r.RightAttribute === "Roles")) out.roles = [...roles].sort();
	return out;
}
