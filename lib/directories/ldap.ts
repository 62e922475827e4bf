// Talking to an LDAP server with a directory's configuration (ldapts): connect (plain, LDAPS or StartTLS) and
// bind, search its users, and verify a user's password by binding as them. Every operation has a short timeout:
// a directory that hangs makes its test or a login fail, never wait.
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { Client, InvalidCredentialsError, ResultCodeError, type Entry } from "ldapts";
import type { ExternalOutcome } from "../identity/external-auth";
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

/** The entries under each of the configuration's base DNs that match `filter`. */
async function searchEntries(client: Client, cfg: CheckedConfig, filter: string): Promise<Entry[]> {
	const out: Entry[] = [];
	for (const base of cfg.User.DNs) {
		const { searchEntries } = await client.search(base, { scope: cfg.User.Scope, filter, ...(cfg.PageSize ? { paged: { pageSize: cfg.PageSize } } : {}) });
		out.push(...searchEntries);
	}
	return out;
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
	try {
		entries = await withClient(cfg, timeoutMs, async (client) => {
			await bindService(client, cfg);
			return searchEntries(client, cfg, userFilter(cfg, `(${cfg.User.IDAttribute}=${escapeValue(login)})`));
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
	const displayName = first(entry, cfg.User.DisplayAttribute);
	const email = first(entry, "mail");
	return {
		status: "ok",
		account: {
			source: cfg.ConfigId,
			dn: entry.dn,
			login: first(entry, cfg.User.IDAttribute) ?? login,
			...(displayName ? { displayName } : {}),
			...(email ? { email } : {}),
			...(cfg.DomainName ? { groupLabel: cfg.DomainName } : {}),
		},
	};
}
