// OAuth2 connectors: the external identity providers (Dex connectors in Cells) an admin configures, each checked
// for what its type needs to work. Their secrets are kept as sent (Cellar would need them to talk to the
// provider) and masked in every answer; a client sending the mask back keeps the stored value. The login page
// lists them (GET /a/frontend/login/connectors) after Cellar's own password login, the built-in "pydio" one.
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import { checkIdentifier } from "../identity/validate";
import type { OAuth2Repo } from "../db/oauth2";
import type { ConnectorTypeConfig, LoginConnector, OAuth2Connector } from "./model";
import { SECRET_MASK as MASK } from "../strings";

/** What answers show instead of a secret, and what a client sends back to keep it. */
export { MASK };
export const BUILTIN_CONNECTOR = "pydio";

interface TypeRules {
	/** Fields that must be non-empty strings. */
	required: string[];
	/** Fields that must be http(s) URLs when present. */
	urls: string[];
	secrets: string[];
	/** Extra checks of the type. */
	check?: (c: ConnectorTypeConfig) => void;
}

const OAUTH_APP = { required: ["clientID", "clientSecret", "redirectURI"], urls: ["redirectURI"], secrets: ["clientSecret"] };

// Per type, from the swagger's config objects and what Dex needs of each.
const TYPES: Record<string, TypeRules> = {
	oidc: { required: ["issuer", ...OAUTH_APP.required], urls: ["issuer", "redirectURI"], secrets: OAUTH_APP.secrets },
	oauth: { required: [...OAUTH_APP.required, "authorizeURL", "tokenURL", "userInfoURL"], urls: ["redirectURI", "authorizeURL", "tokenURL", "userInfoURL", "baseURL"], secrets: OAUTH_APP.secrets },
	github: { ...OAUTH_APP, urls: ["redirectURI"] },
	gitlab: { ...OAUTH_APP, urls: ["redirectURI", "baseURL"] },
	microsoft: OAUTH_APP,
	linkedin: OAUTH_APP,
	bitbucket: OAUTH_APP,
	saml: {
		required: ["ssoURL", "redirectURI"],
		urls: ["ssoURL", "redirectURI"],
		secrets: [],
		check: (c) => {
			if (!c.insecureSkipSignatureValidation && !str(c.ca) && !str(c.caData)) throw new BadRequestError("configsaml: ca or caData is required to check the provider's signatures");
		},
	},
	ldap: {
		required: ["Host"],
		urls: [],
		secrets: ["BindPW"],
		check: (c) => {
			if (!c.BindAnonymous && (!str(c.BindDN) || !str(c.BindPW))) throw new BadRequestError("configldap: BindDN and BindPW are required unless BindAnonymous");
			if (c.Connection !== undefined && !["normal", "ssl", "starttls"].includes(String(c.Connection))) throw new BadRequestError("configldap: Connection must be normal, ssl or starttls");
		},
	},
	mock: { required: [], urls: [], secrets: [] },
};
export const CONNECTOR_TYPES = Object.keys(TYPES);

const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

function checkUrl(what: string, value: string): void {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new BadRequestError(`${what}: "${value}" is not an absolute URL`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") throw new BadRequestError(`${what}: "${value}" must be an http or https URL`);
}

/**
 * The connector as it will be stored. A masked secret takes the stored connector's value (same id and type);
 * a mask with nothing behind it is refused, not stored as the secret.
 */
export function checkConnector(input: OAuth2Connector, stored?: OAuth2Connector): OAuth2Connector {
	const id = checkIdentifier("id", input.id, 64);
	if (id === BUILTIN_CONNECTOR) throw new ForbiddenError(`${BUILTIN_CONNECTOR} is Cellar's own login: it is read-only`);
	const type = str(input.type);
	if (!type) throw new BadRequestError(`type is required (${CONNECTOR_TYPES.join(", ")})`);
	const rules = TYPES[type];
	if (!rules) throw new BadRequestError(`type "${type}" is not a connector type (${CONNECTOR_TYPES.join(", ")})`);
	const key = `config${type}` as const;
	const other = Object.keys(input).find((k) => k.startsWith("config") && k !== key && input[k as `config${string}`] !== undefined);
	if (other) throw new BadRequestError(`${other} does not belong to a connector of type ${type} (send ${key})`);
	const config: ConnectorTypeConfig = { ...(input[key] ?? {}) };
	for (const s of rules.secrets) {
		if (config[s] !== MASK) continue;
		const kept = stored?.type === type ? stored[key]?.[s] : undefined;
		if (typeof kept !== "string" || !kept) throw new BadRequestError(`${key}.${s}: no stored value behind the mask, send the secret`);
		config[s] = kept;
	}
	for (const f of rules.required) if (!str(config[f])) throw new BadRequestError(`${key}.${f} is required for a connector of type ${type}`);
	for (const f of rules.urls) if (str(config[f])) checkUrl(`${key}.${f}`, str(config[f]));
	rules.check?.(config);
	const name = str(input.name) || id;
	if (name.length > 255) throw new BadRequestError("name is too long (at most 255 characters)");
	for (const site of input.sites ?? []) checkUrl("sites", site);
	return {
		id,
		name,
		type,
		...(input.sites?.length ? { sites: input.sites } : {}),
		...(input.mappingRules?.length ? { mappingRules: input.mappingRules } : {}),
		[key]: config,
	};
}

/** The connector as answered: its secrets replaced by the mask. */
export function maskConnector(c: OAuth2Connector): OAuth2Connector {
	const key = `config${c.type}` as const;
	const config = c[key];
	const rules = TYPES[c.type];
	if (!config || !rules) return c;
	const masked = { ...config };
	for (const s of rules.secrets) if (typeof masked[s] === "string" && masked[s]) masked[s] = MASK;
	return { ...c, [key]: masked };
}

export interface ConnectorsDeps {
	repo: OAuth2Repo;
	/** The name of Cellar's own login (the application title). */
	title: string;
}

export class OAuth2Connectors {
	constructor(private readonly deps: ConnectorsDeps) {}

	private builtin(): OAuth2Connector {
		return { id: BUILTIN_CONNECTOR, name: this.deps.title, type: "pydio" };
	}

	/** Cellar's own login first, then the configured ones, secrets masked. */
	async list(): Promise<OAuth2Connector[]> {
		return [this.builtin(), ...(await this.deps.repo.connectors()).map(maskConnector)];
	}

	async login(): Promise<LoginConnector[]> {
		return (await this.list()).map((c) => ({ Id: c.id, Name: c.name ?? c.id, Type: c.type }));
	}

	async put(id: string, input: Omit<OAuth2Connector, "id">): Promise<OAuth2Connector> {
		const stored = await this.deps.repo.connector(id);
		const c = checkConnector({ ...input, id }, stored ?? undefined);
		await this.deps.repo.putConnector(c, Date.now());
		return maskConnector(c);
	}

	/** Replaces them all, in the order given; the built-in one, sent back as listed, is left as it is. */
	async replace(list: OAuth2Connector[]): Promise<void> {
		const stored = new Map((await this.deps.repo.connectors()).map((c) => [c.id, c]));
		const mine = list.filter((c) => !(c.id === BUILTIN_CONNECTOR && (c.type === "pydio" || !c.type)));
		const checked = mine.map((c) => checkConnector(c, stored.get(c.id)));
		const dup = checked.find((c, i) => checked.findIndex((o) => o.id === c.id) !== i);
		if (dup) throw new BadRequestError(`connectors: id ${dup.id} appears twice`);
		await this.deps.repo.replaceConnectors(checked, Date.now());
	}

	async delete(id: string): Promise<void> {
		if (id === BUILTIN_CONNECTOR) throw new ForbiddenError(`${BUILTIN_CONNECTOR} is Cellar's own login: it is read-only`);
		if (!(await this.deps.repo.deleteConnector(id))) throw new NotFoundError(`OAuth2 connector ${id} not found`);
	}
}
