/**
 * oauth2 — Cells' enterprise OAuth2 settings, for administrators: the clients that may ask for tokens
 * (`GET /config/oauth2clients`, `PUT|DELETE /config/oauth2clients/{client_id}`; the ones Cells ships with are
 * listed and read-only; a secret, chosen by the admin, is stored as a scrypt hash and never answered)
 * and the external identity providers (`GET|PUT /config/oauth2connectors`, `PUT|DELETE
 * /config/oauth2connectors/{id}`; checked per type, secrets masked in answers).
 * Which flows use them: Cellar has no OAuth2 authorization server (no /oidc/oauth2/auth or /oidc/oauth2/token;
 * users sign in with `POST /frontend/session`), so no flow authenticates a registered client yet; they are kept
 * and validated as such a server needs them. The connectors are offered by `GET /frontend/login/connectors`
 * (through `oauth2.loginConnectors`), after Cellar's own password login; signing in through one is not wired in.
 * Emits `audit.log` (oauth2.update, oauth2.delete) after each write. Consumes no events.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { OAuth2Repo } from "../lib/db";
import { OAuth2Clients } from "../lib/oauth2/clients";
import { OAuth2Connectors } from "../lib/oauth2/connectors";
import type { ClientInput, OAuth2Connector } from "../lib/oauth2/model";
import { APPLICATION_TITLE } from "../lib/frontend/bootconf";
import { loadConfig } from "../lib/config";
import { audit } from "../lib/logs/audit";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";

const strings = { type: "array", optional: true, max: 100, items: { type: "string", max: 2048 } } as const;
const text = (max: number) => ({ type: "string", optional: true, max }) as const;
const config = { type: "object", optional: true } as const;
/** authOAuth2ConnectorConfig without its id: the body of PUT /config/oauth2connectors/{id}. */
const connectorProps = {
	type: text(64),
	name: text(255),
	sites: strings,
	mappingRules: { type: "array", optional: true, max: 100, items: { type: "object", props: { LeftAttribute: text(255), LeftSplit: text(64), NoUpdate: { type: "boolean", optional: true }, RightAttribute: text(255), RightValueTemplate: text(1024), RuleString: text(4096) } } },
	...Object.fromEntries(["bitbucket", "github", "gitlab", "ldap", "linkedin", "microsoft", "mock", "oauth", "oidc", "pydio", "saml"].map((t) => [`config${t}`, config])),
} as const;

interface Vars extends DatabaseVars {
	clients: OAuth2Clients;
	connectors: OAuth2Connectors;
}
type This = Service & Vars;

const OAuth2Service: ServiceSchema<ServiceSettingSchema, Record<string, never>, Vars> = {
	name: "oauth2",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		listClients: {
			rest: "GET /config/oauth2clients",
			params: {},
			async handler(this: This, ctx: Context<Record<string, never>, Meta>) {
				requireAdmin(ctx);
				return { staticClients: await this.clients.list() };
			},
		},
		// interface.md spells the path parameter {ClientID} and {client_id}: one URL shape, one route.
		putClient: {
			rest: "PUT /config/oauth2clients/:client_id",
			params: {
				client_id: { type: "string", min: 1, max: 255 },
				client_name: text(255),
				client_secret: text(1024),
				grant_types: strings,
				redirect_uris: strings,
				response_types: strings,
				scope: text(1024),
				audience: strings,
			},
			async handler(this: This, ctx: Context<ClientInput & { client_id: string }, Meta>) {
				requireAdmin(ctx);
				const { client_id, ...input } = ctx.params;
				const { secretSet } = await this.clients.put(client_id, input);
				audit(ctx, "oauth2.update", { target: `client ${client_id}`, ...(secretSet ? { detail: "secret set" } : {}) });
				return { Success: true };
			},
		},
		deleteClient: {
			rest: "DELETE /config/oauth2clients/:client_id",
			params: { client_id: { type: "string", min: 1, max: 255 } },
			async handler(this: This, ctx: Context<{ client_id: string }, Meta>) {
				requireAdmin(ctx);
				await this.clients.delete(ctx.params.client_id);
				audit(ctx, "oauth2.delete", { target: `client ${ctx.params.client_id}` });
				return { Success: true };
			},
		},
		listConnectors: {
			rest: "GET /config/oauth2connectors",
			params: {},
			async handler(this: This, ctx: Context<Record<string, never>, Meta>) {
				requireAdmin(ctx);
				return { connectors: await this.connectors.list() };
			},
		},
		putConnectors: {
			rest: "PUT /config/oauth2connectors",
			// Required, even empty: a body that forgot it must not remove every connector.
			params: { connectors: { type: "array", max: 100, items: { type: "object", props: { id: text(64), ...connectorProps } } } },
			async handler(this: This, ctx: Context<{ connectors: OAuth2Connector[] }, Meta>) {
				requireAdmin(ctx);
				await this.connectors.replace(ctx.params.connectors);
				audit(ctx, "oauth2.update", { target: "connectors", detail: ctx.params.connectors.map((c) => c.id).join(", ") });
				return { Success: true };
			},
		},
		putConnector: {
			rest: "PUT /config/oauth2connectors/:id",
			params: { id: { type: "string", min: 1, max: 64 }, ...connectorProps },
			async handler(this: This, ctx: Context<OAuth2Connector, Meta>) {
				requireAdmin(ctx);
				const { id, ...input } = ctx.params;
				await this.connectors.put(id, input);
				audit(ctx, "oauth2.update", { target: `connector ${id}` });
				return { Success: true };
			},
		},
		deleteConnector: {
			rest: "DELETE /config/oauth2connectors/:id",
			params: { id: { type: "string", min: 1, max: 64 } },
			async handler(this: This, ctx: Context<{ id: string }, Meta>) {
				requireAdmin(ctx);
				await this.connectors.delete(ctx.params.id);
				audit(ctx, "oauth2.delete", { target: `connector ${ctx.params.id}` });
				return { Success: true };
			},
		},
		loginConnectors: {
			visibility: "public",
			params: {},
			async handler(this: This) {
				return this.connectors.login();
			},
		},
	},
	started(this: This) {
		const repo = new OAuth2Repo(this.db);
		this.clients = new OAuth2Clients({ repo, publicUrl: loadConfig().publicUrl });
		this.connectors = new OAuth2Connectors({ repo, title: APPLICATION_TITLE });
	},
};

export = OAuth2Service;
