// lib/oauth2 checks without a broker: redirect URIs, grant and response types that fit together, connectors per
// type with the mask standing for the stored secret, and answers that never carry a secret.
import assert from "node:assert/strict";
import { builtinClients, checkClient, checkRedirectUri } from "../../lib/oauth2/clients";
import { MASK, checkConnector, maskConnector } from "../../lib/oauth2/connectors";
import type { OAuth2Connector } from "../../lib/oauth2/model";

describe("lib/oauth2 clients", () => {
	it("takes absolute http(s) URLs and native apps' own schemes as redirect URIs, nothing a browser would run", () => {
		for (const ok of ["https://app.example.com/cb?x=1", "http://127.0.0.1:8400/cb", "com.example.app:/oauth2redirect", "cellsauth://callback"]) assert.equal(checkRedirectUri(ok), ok);
		for (const [bad, why] of [
			["/cb", /absolute/],
			["example.com/cb", /absolute/],
			["javascript:alert(1)", /scheme/],
			["data:text/html,x", /scheme/],
			["https://app.example.com/cb#x", /fragment/],
			["https://user:pw@app.example.com/cb", /credentials/],
		] as const) {
			assert.throws(() => checkRedirectUri(bad), why, bad);
		}
	});

	it("defaults a browser app to the code flow and keeps combined response types", () => {
		assert.deepEqual(checkClient("web", { redirect_uris: ["https://a.example.com/cb"] }), {
			client: { client_id: "web", grant_types: ["authorization_code", "refresh_token"], redirect_uris: ["https://a.example.com/cb"], response_types: ["code"] },
			needsSecret: false,
		});
		const hybrid = checkClient("spa", { redirect_uris: ["https://a.example.com/cb"], grant_types: ["authorization_code", "implicit"], response_types: ["code  id_token", "token"], scope: " openid  profile " });
		assert.deepEqual(hybrid.client.response_types, ["code id_token", "token"]);
		assert.equal(hybrid.client.scope, "openid profile");
		assert.equal(checkClient("robot", { grant_types: ["client_credentials"] }).needsSecret, true);
		assert.throws(() => checkClient("x", { grant_types: ["refresh_token"] }), /refresh_token alone/);
		assert.throws(() => checkClient("x", { redirect_uris: ["https://a.example.com/cb"], response_types: ["code code"] }), /not a response type/);
		assert.throws(() => checkClient("x", { redirect_uris: ["https://a.example.com/cb"], response_types: ["none token"] }), /not a response type/);
		assert.throws(() => checkClient("x", { grant_types: ["client_credentials"], response_types: ["token"] }), /implicit or authorization_code/);
	});

	it("knows the clients Cells ships with, the web front end's callback on PUBLIC_URL when known", () => {
		assert.deepEqual(builtinClients().map((c) => c.client_id), ["cells-client", "cells-frontend", "cells-mobile", "cells-sync"]);
		assert.equal(builtinClients().find((c) => c.client_id === "cells-frontend")?.redirect_uris?.length, 0);
		assert.deepEqual(builtinClients("https://files.example.com").find((c) => c.client_id === "cells-frontend")?.redirect_uris, ["https://files.example.com/auth/callback"]);
	});
});

describe("lib/oauth2 connectors", () => {
	const github: OAuth2Connector = { id: "gh", type: "github", configgithub: { clientID: "id", clientSecret: "s3cret", redirectURI: "https://f.example.com/cb" } };

	it("masks secrets in answers and takes the stored value back for the mask, of the same type only", () => {
		const masked = maskConnector(github);
		assert.equal(masked.configgithub?.clientSecret, MASK);
		assert.equal(github.configgithub?.clientSecret, "s3cret", "the stored object is left alone");
		assert.equal(checkConnector(masked, github).configgithub?.clientSecret, "s3cret");
		assert.throws(() => checkConnector({ id: "gh", type: "gitlab", configgitlab: { clientID: "id", clientSecret: MASK, redirectURI: "https://f.example.com/cb" } }, github), /no stored value behind the mask/);
		const ldap: OAuth2Connector = { id: "dir", type: "ldap", configldap: { Host: "ldap:636", BindDN: "cn=a", BindPW: "pw" } };
		assert.equal(maskConnector(ldap).configldap?.BindPW, MASK);
	});

	it("names a connector after its id when it has no name, and checks its type's URLs", () => {
		assert.equal(checkConnector(github).name, "gh");
		assert.throws(() => checkConnector({ ...github, configgithub: undefined, configgitlab: {} }), /configgitlab does not belong/);
		assert.throws(() => checkConnector({ id: "gl", type: "gitlab", configgitlab: { clientID: "a", clientSecret: "b", redirectURI: "https://f.example.com/cb", baseURL: "gitlab.local" } }), /baseURL.*absolute/);
		assert.throws(() => checkConnector({ ...github, sites: ["not a url"] }), /sites/);
		assert.ok(checkConnector({ id: "anon", type: "ldap", configldap: { Host: "ldap:389", BindAnonymous: true } }));
		assert.ok(checkConnector({ id: "s", type: "saml", configsaml: { ssoURL: "https://idp/sso", redirectURI: "https://f/cb", insecureSkipSignatureValidation: true } }));
	});
});
