// OAuth2 clients (apps that may ask for tokens) and connectors (external identity providers), in the shapes of
// Cells' authOAuth2ClientConfig and authOAuth2ConnectorConfig: field names as Cells spells them, zero values left
// out of answers.

/** authOAuth2ClientConfig, as answered: never with its secret. */
export interface OAuth2Client {
	client_id: string;
	client_name?: string;
	grant_types?: string[];
	redirect_uris?: string[];
	response_types?: string[];
	scope?: string;
	audience?: string[];
}

/** A registered client as stored: its secret only as a password hash (absent for a public client). */
export interface StoredClient {
	client: OAuth2Client;
	secretHash?: string;
}

/** What PUT /config/oauth2clients/{client_id} accepts. */
export interface ClientInput {
	client_name?: string;
	client_secret?: string;
	grant_types?: string[];
	redirect_uris?: string[];
	response_types?: string[];
	scope?: string;
	audience?: string[];
}

/** authOAuth2MappingRule. */
export interface MappingRule {
	LeftAttribute?: string;
	LeftSplit?: string;
	NoUpdate?: boolean;
	RightAttribute?: string;
	RightValueTemplate?: string;
	RuleString?: string;
}

/** One of the `config<type>` objects (authOAuth2Connector*Config, authLdapServerConfig): free-form per type. */
export type ConnectorTypeConfig = Record<string, unknown>;

/** authOAuth2ConnectorConfig. */
export interface OAuth2Connector {
	id: string;
	name?: string;
	type: string;
	sites?: string[];
	mappingRules?: MappingRule[];
	[config: `config${string}`]: ConnectorTypeConfig | undefined;
}

/** entConnector: what the login page shows. */
export interface LoginConnector {
	Id: string;
	Name: string;
	Type: string;
}
