// The external directories as the directories service runs them: configurations saved checked, shown masked,
// tested with what a form sends (its masked password standing for the stored one), and tried in turn for the
// password logins the users service hands over (lib/identity/external-auth).
import { NotFoundError } from "../errors";
import type { ExternalAuthenticator, ExternalOutcome } from "../identity/external-auth";
import { authenticate, DEFAULT_TIMEOUT_MS, describeError, escapeValue, ping, searchUsers, type DirectoryUser } from "./ldap";
import { checkConfig, checkConfigId, checkFilter, checkDNs, checkScope, present, unmask, type DirectoryConfig, type LdapSearchFilter } from "./model";

/** Where configurations are kept (lib/db/directories). */
export interface DirectoryStore {
	all(): Promise<DirectoryConfig[]>;
	get(configId: string): Promise<DirectoryConfig | null>;
	put(config: DirectoryConfig & { ConfigId: string }, now: number): Promise<void>;
	delete(configId: string): Promise<boolean>;
}

/** Cells' entExternalDirectoryTestResponse: the outcome, details as a JSON string. */
export interface TestResponse {
	Success: boolean;
	DirectoryResponseJSON: string;
}

export const MAX_SEARCH_RESULTS = 100;
const DEFAULT_SEARCH_RESULTS = 20;

export class DirectoriesAdmin implements ExternalAuthenticator {
	constructor(
		private readonly store: DirectoryStore,
		private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
	) {}

	async list(): Promise<DirectoryConfig[]> {
		return (await this.store.all()).map(present);
	}

	/** Creates or replaces the directory `configId`; what is stored, masked. */
	async put(configId: string, raw: DirectoryConfig): Promise<DirectoryConfig> {
		const id = checkConfigId(configId);
		const config = checkConfig(unmask(raw, await this.store.get(id)), id);
		await this.store.put(config, Date.now());
		return present(config);
	}

	async delete(configId: string): Promise<void> {
		if (!(await this.store.delete(configId))) throw new NotFoundError(`No external directory ${configId}`, "directory.notfound");
	}

	/** The configuration a test request means: the stored password behind a mask. */
	private async testConfig(raw: DirectoryConfig) {
		const id = checkConfigId(raw.ConfigId || "test");
		return checkConfig(unmask(raw, raw.ConfigId ? await this.store.get(id) : null), id);
	}

	async ping(raw: DirectoryConfig, bind: boolean): Promise<TestResponse> {
		const out = await ping(await this.testConfig(raw), bind, this.timeoutMs);
		return { Success: out.ok, DirectoryResponseJSON: JSON.stringify(out.ok ? { Message: out.message } : { Error: out.message }) };
	}

	/**
	 * The configuration's users, narrowed by `filter`: its Filter is an LDAP filter, or a bare value taken as a
	 * login (IDAttribute=value, `*` wildcards kept); its DNs and Scope replace the configuration's when given.
	 */
	async search(raw: DirectoryConfig, filter: LdapSearchFilter | undefined, offset = 0, limit = DEFAULT_SEARCH_RESULTS): Promise<TestResponse> {
		const base = await this.testConfig(raw);
		const cfg = {
			...base,
			User: { ...base.User, ...(filter?.DNs?.length ? { DNs: checkDNs("Filter.DNs", filter.DNs) } : {}), ...(filter?.Scope ? { Scope: checkScope(filter.Scope) } : {}) },
		};
		const text = filter?.Filter?.trim();
		const extra = !text ? undefined : text.startsWith("(") ? checkFilter("Filter.Filter", text) : `(${cfg.User.IDAttribute}=${text.split("*").map(escapeValue).join("*")})`;
		const cap = Math.min(Math.max(limit || DEFAULT_SEARCH_RESULTS, 1), MAX_SEARCH_RESULTS);
		let found: { users: DirectoryUser[]; total: number };
		try {
			found = await searchUsers(cfg, extra, Math.max(offset, 0), cap, this.timeoutMs);
		} catch (e) {
			return { Success: false, DirectoryResponseJSON: JSON.stringify({ Error: describeError(e) }) };
		}
		return { Success: true, DirectoryResponseJSON: JSON.stringify({ Users: found.users, Total: found.total }) };
	}

	async authenticate(login: string, password: string, source?: string): Promise<ExternalOutcome> {
		const configs = source ? [await this.store.get(source)].filter((c): c is DirectoryConfig => !!c) : await this.store.all();
		if (source && !configs.length) return { status: "unavailable", reason: `directory ${source} is no longer configured` };
		let outcome: ExternalOutcome = { status: "unknown" };
		for (const raw of configs) {
			// SyncOnly: its users come from the synchronisation only, so a login it has not synchronised is not its.
			if (!source && raw.SyncOnly) continue;
			let cfg;
			try {
				cfg = checkConfig(raw, raw.ConfigId ?? "");
			} catch (e) {
				outcome = { status: "unavailable", reason: `directory ${raw.ConfigId}: ${(e as Error).message}` };
				continue;
			}
			const out = await authenticate(cfg, login, password, this.timeoutMs);
			// The first directory that knows the login decides; one that is down does not stop the others.
			if (out.status === "ok" || out.status === "rejected") return out;
			if (out.status === "unavailable") outcome = out;
		}
		return outcome;
	}
}
