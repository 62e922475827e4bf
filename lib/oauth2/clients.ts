// OAuth2 clients: the apps Cells ships with (read-only, listed first) and the ones admins register. A registered
// client's secret is kept only as a scrypt hash (lib/auth/password) and never answered: the admin chooses it and
// sends it in the PUT (Cells' answer to that PUT, entOAuth2ClientResponse, has no field that could carry a
// generated one, and the gateway answers only what the message defines). Cellar signs users in itself (POST /a/frontend/session) and runs no OAuth2
// authorization server (/oidc/oauth2/auth, /oidc/oauth2/token): the clients are kept, validated as an
// authorization server would need them, for the admin console and for exports to a Cells server.
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import { hashPassword } from "../auth/password";
import type { OAuth2Repo } from "../db/oauth2";
import type { ClientInput, OAuth2Client } from "./model";

export const GRANT_TYPES = new Set([
	"authorization_code",
	"refresh_token",
	"client_credentials",
	"implicit",
	"password",
	"urn:ietf:params:oauth:grant-type:jwt-bearer",
	"urn:ietf:params:oauth:grant-type:device_code",
]);
const RESPONSE_TYPE_PARTS = new Set(["code", "token", "id_token", "none"]);
const MIN_SECRET = 8;
const MAX_LIST = 100;

/** The clients Cells creates at install (pydio/cells: the web front end, Cells Sync, the mobile apps, cec). */
export function builtinClients(publicUrl?: string): OAuth2Client[] {
	const site = (path: string) => (publicUrl ? [`${publicUrl}${path}`] : []);
	const code = ["authorization_code", "refresh_token"];
	const scope = "openid email profile pydio offline";
	return [
		{ client_id: "cells-client", client_name: "Cells Client", grant_types: code, redirect_uris: ["http://localhost:3000/servers/callback", ...site("/oauth2/oob")], response_types: ["code"], scope },
		{ client_id: "cells-frontend", client_name: "Cells Web Interface", grant_types: code, redirect_uris: site("/auth/callback"), response_types: ["code", "token", "id_token"], scope },
		{ client_id: "cells-mobile", client_name: "Cells Mobile", grant_types: code, redirect_uris: ["cellsauth://callback"], response_types: ["code"], scope },
		{ client_id: "cells-sync", client_name: "Cells Sync", grant_types: code, redirect_uris: ["http://localhost:3000/servers/callback", "http://localhost:[3636-3666]/servers/callback"], response_types: ["code"], scope },
	];
}

const CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._:~-]{0,127}$/;
// Schemes a browser would run instead of redirecting to: never a place to send an authorization code.
const UNSAFE_SCHEMES = new Set(["javascript:", "data:", "vbscript:", "file:", "blob:", "about:"]);
// RFC 6749 §3.3: scope tokens are printable ASCII without space, `"` or `\`.
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

export function checkClientId(id: unknown): string {
	if (typeof id !== "string" || !CLIENT_ID.test(id)) throw new BadRequestError("client_id must be 1 to 128 letters, digits or . _ : ~ - (starting with a letter or digit)");
	return id;
}

function list(what: string, value: string[] | undefined): string[] {
	const out = [...new Set((value ?? []).map((v) => v.trim()).filter((v) => v !== ""))];
	if (out.length > MAX_LIST) throw new BadRequestError(`${what}: at most ${MAX_LIST} entries`);
	return out;
}

/** Absolute: http(s) with a host, or a custom scheme (native apps, RFC 8252 §7.1); never with a fragment. */
export function checkRedirectUri(uri: string): string {
	let url: URL;
	try {
		url = new URL(uri);
	} catch {
		throw new BadRequestError(`redirect_uris: "${uri}" is not an absolute URL`);
	}
	if (UNSAFE_SCHEMES.has(url.protocol)) throw new BadRequestError(`redirect_uris: the ${url.protocol} scheme is not allowed`);
	if ((url.protocol === "http:" || url.protocol === "https:") && !url.hostname) throw new BadRequestError(`redirect_uris: "${uri}" has no host`);
	if (url.hash || uri.includes("#")) throw new BadRequestError(`redirect_uris: "${uri}" must not have a fragment (RFC 6749 §3.1.2)`);
	if (url.username || url.password) throw new BadRequestError(`redirect_uris: "${uri}" must not carry credentials`);
	return uri;
}

function checkResponseType(rt: string): string {
	const parts = rt.split(/\s+/);
	if (parts.some((p) => !RESPONSE_TYPE_PARTS.has(p)) || new Set(parts).size !== parts.length || (parts.includes("none") && parts.length > 1)) {
		throw new BadRequestError(`response_types: "${rt}" is not a response type (code, token, id_token, or a combination such as "code id_token", or none)`);
	}
	return parts.join(" ");
}

function text(what: string, value: string | undefined, max: number): string | undefined {
	const v = value?.trim();
	if (v && v.length > max) throw new BadRequestError(`${what} is too long (at most ${max} characters)`);
	return v || undefined;
}

/** The client as it will be stored; `needsSecret` when a grant type authenticates the client itself. */
export function checkClient(id: string, input: ClientInput): { client: OAuth2Client; needsSecret: boolean } {
	const grants = list("grant_types", input.grant_types);
	const unknownGrant = grants.find((g) => !GRANT_TYPES.has(g));
	if (unknownGrant) throw new BadRequestError(`grant_types: "${unknownGrant}" is not a known grant type (${[...GRANT_TYPES].join(", ")})`);
	if (!grants.length) grants.push("authorization_code", "refresh_token");
	const responseTypes = list("response_types", input.response_types).map(checkResponseType);
	if (!responseTypes.length && grants.includes("authorization_code")) responseTypes.push("code");
	const redirects = list("redirect_uris", input.redirect_uris).map(checkRedirectUri);
	const browserFlow = grants.includes("authorization_code") || grants.includes("implicit");
	if (browserFlow && !redirects.length) throw new BadRequestError("redirect_uris: the authorization_code and implicit grants need at least one redirect URI");
	if (responseTypes.some((r) => r.split(" ").includes("code")) && !grants.includes("authorization_code")) throw new BadRequestError('response_types: "code" needs the authorization_code grant');
	if (responseTypes.some((r) => /\b(token|id_token)\b/.test(r)) && !grants.includes("implicit") && !grants.includes("authorization_code")) {
		throw new BadRequestError("response_types: token and id_token need the implicit or authorization_code grant");
	}
	if (grants.includes("refresh_token") && grants.length === 1) throw new BadRequestError("grant_types: refresh_token alone gives no way to get a first token");
	const scope = text("scope", input.scope, 1024);
	if (scope && scope.split(/\s+/).some((s) => !SCOPE_TOKEN.test(s))) throw new BadRequestError('scope: space-separated tokens of printable characters, without " or \\');
	const audience = list("audience", input.audience);
	const name = text("client_name", input.client_name, 255);
	const client: OAuth2Client = {
		client_id: id,
		...(name ? { client_name: name } : {}),
		grant_types: grants,
		...(redirects.length ? { redirect_uris: redirects } : {}),
		...(responseTypes.length ? { response_types: responseTypes } : {}),
		...(scope ? { scope: scope.split(/\s+/).join(" ") } : {}),
		...(audience.length ? { audience } : {}),
	};
	return { client, needsSecret: grants.includes("client_credentials") || grants.includes("password") || grants.includes("urn:ietf:params:oauth:grant-type:jwt-bearer") };
}

export interface ClientsDeps {
	repo: OAuth2Repo;
	publicUrl?: string;
}

export class OAuth2Clients {
	constructor(private readonly deps: ClientsDeps) {}

	private builtin(id: string): OAuth2Client | undefined {
		return builtinClients(this.deps.publicUrl).find((c) => c.client_id === id);
	}

	private refuseBuiltin(id: string): void {
		if (this.builtin(id)) throw new ForbiddenError(`${id} is a client Cells ships with: it is read-only`);
	}

	/** The built-in clients, then the registered ones: never a secret. */
	async list(): Promise<OAuth2Client[]> {
		return [...builtinClients(this.deps.publicUrl), ...(await this.deps.repo.clients()).map((c) => c.client)];
	}

	/**
	 * Creates or replaces a registered client. A client whose grants authenticate it needs a secret: the one sent,
	 * else the one it has. Whether this call set one.
	 */
	async put(rawId: string, input: ClientInput): Promise<{ client: OAuth2Client; secretSet: boolean }> {
		const id = checkClientId(rawId);
		this.refuseBuiltin(id);
		const { client, needsSecret } = checkClient(id, input);
		const secret = input.client_secret || undefined;
		if (secret !== undefined && (secret.length < MIN_SECRET || secret.length > 1024)) throw new BadRequestError(`client_secret must be ${MIN_SECRET} to 1024 characters`);
		const existing = await this.deps.repo.client(id);
		if (secret === undefined && needsSecret && !existing?.secretHash) throw new BadRequestError(`client_secret is required: the ${client.grant_types?.join(", ")} grant authenticates the client with it`);
		const secretHash = secret !== undefined ? await hashPassword(secret) : existing?.secretHash;
		await this.deps.repo.putClient({ client, ...(secretHash ? { secretHash } : {}) }, Date.now());
		return { client, secretSet: secret !== undefined };
	}

	async delete(rawId: string): Promise<void> {
		const id = checkClientId(rawId);
		this.refuseBuiltin(id);
		if (!(await this.deps.repo.deleteClient(id))) throw new NotFoundError(`OAuth2 client ${id} not found`);
	}
}
