// Talking to an LDAP server with a directory's configuration (ldapts): connect (plain, LDAPS or StartTLS) and
// bind, search its users, and verify a user's password by binding as them. Every operation has a short timeout:
// a directory that hangs makes its test or a login fail, never wait.
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { Client, InvalidCredentialsError, ResultCodeError, type Entry } from "ldapts";
import type { ExternalAccount, ExternalOutcome } from "../identity/external-auth";
import { mapEntry, rdnValue } from "./mapping";
import type { CheckedConfig } from "./model";

export const DEFAULT_TIMEOUT_MS = 5000;

/** A user entry as the directory tests show it. */
export interface DirectoryUser {
	DN: string;
	Login: string;
	DisplayName?: string;
	Attributes: Record<string, string>;
}

/** What an error from the server or the network says, for an admin. */
export function describeError(e: unknown): string {
	if (e instanceof ResultCodeError) return `${e.message || e.name} (LDAP result ${e.code})`;
	const err = e as NodeJS.ErrnoException;
	return err.code ? `${err.message} (${err.code})` : err.message || String(e);
}

/** RFC 4515 escaping of a value inside a filter. */
export function escapeValue(value: string): string {
	return value.replace(/[\\*()\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function tlsOptions(cfg: CheckedConfig): ConnectionOptions {
	const host = cfg.Host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
	let ca: string | undefined;
	if (cfg.RootCAData) ca = cfg.RootCAData.includes("-----BEGIN") ? cfg.RootCAData : Buffer.from(cfg.RootCAData, "base64").toString("utf8");
	// SNI takes names only.
	return { ...(isIP(host) ? {} : { servername: host }), rejectUnauthorized: !cfg.SkipVerifyCertificate, ...(ca ? { ca } : {}) };
}

/** A connected client (StartTLS done when configured), not yet bound. */
async function open(cfg: CheckedConfig, timeoutMs: number): Promise<Client> {
	const client = new Client({
		url: `${cfg.Connection === "ssl" ? "ldaps" : "ldap"}://${cfg.Host}`,
		timeout: timeoutMs,
		connectTimeout: timeoutMs,
		// ldapts speaks TLS from the start whenever it is given TLS options: only LDAPS gets them here.
		...(cfg.Connection === "ssl" ? { tlsOptions: tlsOptions(cfg) } : {}),
	});
	if (cfg.Connection === "starttls") {
		try {
			await client.startTLS(tlsOptions(cfg));
		} catch (e) {
			await close(client);
			throw e;
		}
	}
	return client;
}

async function close(client: Client): Promise<void> {
	await client.unbind().catch(() => undefined);
}

/** Binds as the configured service account, or anonymously. */
async function bindService(client: Client, cfg: CheckedConfig, anonymous = !!cfg.BindAnonymous): Promise<void> {
	await client.bind(anonymous ? "" : (cfg.BindDN ?? ""), anonymous ? "" : (cfg.BindPW ?? ""));
}

async function withClient<T>(cfg: CheckedConfig, timeoutMs: number, use: (client: Client) => Promise<T>): Promise<T> {
	const client = await open(cfg, timeoutMs);
	try {
		return await use(client);
	} finally {
		await close(client);
	}
}

function values(entry: Entry, attribute: string): string[] {
	const key = Object.keys(entry).find((k) => k.toLowerCase() === attribute.toLowerCase());
	const v = key ? entry[key] : undefined;
	if (v === undefined) return [];
	return (Array.isArray(v) ? v : [v]).map((x) => (Buffer.isBuffer(x) ? x.toString("utf8") : x));
}

function first(entry: Entry, attribute: string | undefined): string | undefined {
	return attribute ? values(entry, attribute)[0] : undefined;
}

/** The entries under each of the configuration's base DNs that match `filter`, read `pageSize` at a time. */
async function searchEntries(client: Client, cfg: CheckedConfig, filter: string, pageSize = cfg.PageSize, bases: { DNs: string[]; Scope: string } = cfg.User): Promise<Entry[]> {
	const out: Entry[] = [];
	for (const base of bases.DNs) {
		const { searchEntries } = await client.search(base, { scope: bases.Scope as CheckedConfig["User"]["Scope"], filter, ...(pageSize ? { paged: { pageSize } } : {}) });
		out.push(...searchEntries);
	}
	return out;
}

/** Directory DNs compared as the same entry whatever their spacing and case. */
const sameDn = (dn: string) => dn.replace(/\s*([,=+])\s*/g, "$1").trim().toLowerCase();

/**
 * The groups (MemberOfMapping) of each of `entries`, as the values of Mapping.LeftAttribute: read from the
 * user's own RealMemberOfAttribute (group DNs, whose first RDN gives the value), or found by the GroupFilter
 * search of the groups whose PydioMemberOfAttribute lists the user's DN.
 */
async function groupsOf(client: Client, cfg: CheckedConfig, entries: Entry[], pageSize?: number): Promise<Map<Entry, string[]>> {
	const out = new Map<Entry, string[]>();
	const m = cfg.MemberOfMapping;
	const left = m?.Mapping?.LeftAttribute;
	if (!m || !left) return out;
	if (m.RealMemberOf) {
		for (const e of entries) out.set(e, values(e, m.RealMemberOfAttribute || "memberOf").map((dn) => rdnValue(dn, left) ?? "").filter(Boolean));
		return out;
	}
	const memberAttr = m.PydioMemberOfAttribute || "member";
	const bases = { DNs: m.GroupFilter?.DNs ?? [], Scope: (m.GroupFilter?.Scope || "sub").toLowerCase() };
	const base = m.GroupFilter?.Filter ?? "(objectClass=*)";
	// One user: only its groups; many (a synchronisation): every group once.
	const filter = entries.length === 1 ? `(&${base}(${memberAttr}=${escapeValue(entries[0].dn)}))` : base;
	const byMember = new Map<string, string[]>();
	for (const g of await searchEntries(client, cfg, filter, pageSize, bases)) {
		const name = first(g, left);
		if (!name) continue;
		for (const member of values(g, memberAttr)) byMember.set(sameDn(member), [...(byMember.get(sameDn(member)) ?? []), name]);
	}
	for (const e of entries) out.set(e, byMember.get(sameDn(e.dn)) ?? []);
	return out;
}

/** The local account an entry stands for: its login, display name, mail and mapped roles. */
function accountOf(cfg: CheckedConfig, entry: Entry, groups: string[], login?: string): ExternalAccount {
	const mapped = mapEntry(cfg, (a) => values(entry, a), groups);
	const displayName = mapped.displayName ?? first(entry, cfg.User.DisplayAttribute);
	const email = mapped.email ?? first(entry, "mail");
	return {
		source: cfg.ConfigId,
		dn: entry.dn,
		login: first(entry, cfg.User.IDAttribute) ?? login ?? "",
		...(displayName ? { displayName } : {}),
		...(email ? { email } : {}),
		...(cfg.DomainName ? { groupLabel: cfg.DomainName } : {}),
		...(mapped.roles ? { roles: mapped.roles } : {}),
	};
}

/** Paging of a synchronisation when the configuration sets none. */
export const SYNC_PAGE_SIZE = 500;

/**
 * Every account of the directory, at most `cap`: `complete` false when it has more (those beyond are not
 * listed, and a synchronisation must not take them for gone).
 */
export async function listAccounts(cfg: CheckedConfig, cap: number, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<{ accounts: ExternalAccount[]; complete: boolean }> {
	return withClient(cfg, timeoutMs, async (client) => {
		await bindService(client, cfg);
		const pageSize = cfg.PageSize || SYNC_PAGE_SIZE;
		const entries = (await searchEntries(client, cfg, cfg.User.Filter, pageSize)).filter((e) => first(e, cfg.User.IDAttribute));
		const kept = entries.slice(0, cap);
		const groups = await groupsOf(client, cfg, kept, pageSize);
		return { accounts: kept.map((e) => accountOf(cfg, e, groups.get(e) ?? [])), complete: entries.length <= cap };
	});
}

/** The user filter of the configuration, narrowed by `extra` (a filter). */
function userFilter(cfg: CheckedConfig, extra?: string): string {
	return extra ? `(&${cfg.User.Filter}${extra})` : cfg.User.Filter;
}

/** Connects and binds (as the service account, or anonymously when `bind` is false); what the server said. */
export async function ping(cfg: CheckedConfig, bind: boolean, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<{ ok: boolean; message: string }> {
	try {
		await withClient(cfg, timeoutMs, (client) => bindService(client, cfg, !bind || !!cfg.BindAnonymous));
		return { ok: true, message: `Connected to ${cfg.Host}${bind && !cfg.BindAnonymous ? ` and bound as ${cfg.BindDN}` : " (anonymous bind)"}` };
	} catch (e) {
		return { ok: false, message: describeError(e) };
	}
}

// Never shown by the search test: hashes and secrets some schemas keep readable to the service account.
const HIDDEN_ATTRIBUTE = /password|secret|^krb|^sambaN?T?L?M?Password/i;

/** The configuration's users that also match `extra`, `offset` skipped, at most `limit`. */
export async function searchUsers(cfg: CheckedConfig, extra: string | undefined, offset: number, limit: number, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<{ users: DirectoryUser[]; total: number }> {
	return withClient(cfg, timeoutMs, async (client) => {
		await bindService(client, cfg);
		const entries = await searchEntries(client, cfg, userFilter(cfg, extra));
		const users = entries.slice(offset, offset + limit).map((e) => {
			const attributes: Record<string, string> = {};
			for (const k of Object.keys(e)) if (k !== "dn" && !HIDDEN_ATTRIBUTE.test(k)) attributes[k] = values(e, k).join(", ");
			const display = first(e, cfg.User.DisplayAttribute);
			return { DN: e.dn, Login: first(e, cfg.User.IDAttribute) ?? "", ...(display ? { DisplayName: display } : {}), Attributes: attributes };
		});
		return { users, total: entries.length };
	});
}

/**
 * Verifies a password against one directory: finds the login's entry with the service account, then binds as
 * that entry. An empty password is refused here: LDAP takes a simple bind without one as anonymous, a success.
 */
export async function authenticate(cfg: CheckedConfig, login: string, password: string, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<ExternalOutcome> {
	let entries: Entry[];
	let groups: string[] = [];
	try {
		entries = await withClient(cfg, timeoutMs, async (client) => {
			await bindService(client, cfg);
			const found = await searchEntries(client, cfg, userFilter(cfg, `(${cfg.User.IDAttribute}=${escapeValue(login)})`));
			if (found.length === 1) groups = (await groupsOf(client, cfg, found)).get(found[0]) ?? [];
			return found;
		});
	} catch (e) {
		return { status: "unavailable", reason: `directory ${cfg.ConfigId}: ${describeError(e)}` };
	}
	// Two entries for one login: which one is meant is unknowable, so neither logs in.
	if (entries.length !== 1) return entries.length ? { status: "unavailable", reason: `directory ${cfg.ConfigId}: ${entries.length} entries for login ${login}` } : { status: "unknown" };
	const [entry] = entries;
	if (!password) return { status: "rejected" };
	try {
		await withClient(cfg, timeoutMs, (client) => client.bind(entry.dn, password));
	} catch (e) {
		if (e instanceof InvalidCredentialsError) return { status: "rejected" };
		return { status: "unavailable", reason: `directory ${cfg.ConfigId}: ${describeError(e)}` };
	}
	return { status: "ok", account: accountOf(cfg, entry, groups, login) };
}
