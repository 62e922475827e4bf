// OAuth2 clients and connectors through the real gateway, as an admin uses them: CRUD of both kinds, the 400s of
// bad input, secrets never listed (a client's shown once, a connector's masked and kept when the mask comes back),
// the clients Cells ships read-only, the login page listing the connectors, and /a/config/* for admins only.
import assert from "node:assert/strict";
import { verifyPassword } from "../../lib/auth/password";
import { OAuth2Repo } from "../../lib/db";
import { openDatabase } from "../../lib/db";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

const BUILTINS = ["cells-client", "cells-frontend", "cells-mobile", "cells-sync"];

const oidc = { issuer: "https://idp.example.com/realms/main", clientID: "cellar", clientSecret: "oidc-Secret-1", redirectURI: "https://files.example.com/auth/callback" };

describe("HTTP: OAuth2 clients and connectors", function () {
	this.timeout(30_000);
	const node = useNode({ services: ["api", "auth", "mfa", "users", "roles", "tokens", "frontend", "install", "policy", "workspaces", "acl", "oauth2"] });
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	const clients = async () => {
		const r = await node.api("GET", "/a/config/oauth2clients", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		return r.body.staticClients as Record<string, unknown>[];
	};
	const connectors = async () => {
		const r = await node.api("GET", "/a/config/oauth2connectors", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		return r.body.connectors as Record<string, unknown>[];
	};
	/** The stored hash, read as the service stores it (never over the API). */
	const storedHash = async (id: string) => {
		const db = await openDatabase({ dataDir: node.dataDir });
		try {
			return (await new OAuth2Repo(db).client(id))?.secretHash;
		} finally {
			await db.close();
		}
	};

	it("lists the clients Cells ships with, read-only", async () => {
		const list = await clients();
		assert.deepEqual(list.map((c) => c.client_id), BUILTINS);
		assert.ok(list.every((c) => !("client_secret" in c)));
		for (const id of ["cells-frontend", "cells-sync"]) {
			const put = await node.api("PUT", `/a/config/oauth2clients/${id}`, { redirect_uris: ["https://evil.example.com/cb"] }, node.admin);
			assert.equal(put.status, 403, put.text);
			assert.match(put.body.Title, /ships with.*read-only/);
			assert.equal((await node.api("DELETE", `/a/config/oauth2clients/${id}`, undefined, node.admin)).status, 403);
		}
		assert.deepEqual((await clients()).map((c) => c.client_id), BUILTINS);
	});

	it("registers a web app client: its secret stored as a hash, never answered", async () => {
		const body = { client_name: "Reports", client_secret: "Reports-Secret-1", redirect_uris: ["https://reports.example.com/callback"], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], scope: "openid profile" };
		const put = await node.api("PUT", "/a/config/oauth2clients/reports", body, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body, { Success: true });
		const listed = (await clients()).find((c) => c.client_id === "reports");
		assert.deepEqual(listed, { client_id: "reports", client_name: "Reports", grant_types: ["authorization_code", "refresh_token"], redirect_uris: ["https://reports.example.com/callback"], response_types: ["code"], scope: "openid profile" });
		const hash = await storedHash("reports");
		assert.match(hash ?? "", /^scrypt\$/);
		assert.ok(await verifyPassword("Reports-Secret-1", hash));
		// An update without a secret keeps the stored one and does not show it.
		const again = await node.api("PUT", "/a/config/oauth2clients/reports", { ...body, client_secret: undefined, client_name: "Reports 2" }, node.admin);
		assert.deepEqual(again.body, { Success: true });
		assert.equal(await storedHash("reports"), hash);
		assert.equal((await clients()).find((c) => c.client_id === "reports")?.client_name, "Reports 2");
		assert.ok(!(await node.api("GET", "/a/config/oauth2clients", undefined, node.admin)).text.includes("Reports-Secret-1"));
	});

	it("registers a machine client (client_credentials) only with a secret; a native app with a custom scheme", async () => {
		const none = await node.api("PUT", "/a/config/oauth2clients/backup-robot", { grant_types: ["client_credentials"], scope: "pydio" }, node.admin);
		assert.equal(none.status, 400, none.text);
		assert.match(none.body.Title, /client_secret is required/);
		const secret = "Robot-Secret-1234";
		const put = await node.api("PUT", "/a/config/oauth2clients/backup-robot", { grant_types: ["client_credentials"], scope: "pydio", client_secret: secret }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body, { Success: true });
		assert.ok(await verifyPassword(secret, await storedHash("backup-robot")));
		const listing = await node.api("GET", "/a/config/oauth2clients", undefined, node.admin);
		assert.ok(!listing.text.includes(secret) && !listing.text.includes("client_secret"));
		assert.deepEqual(JSON.parse(listing.text).staticClients.find((c: { client_id: string }) => c.client_id === "backup-robot"), { client_id: "backup-robot", grant_types: ["client_credentials"], scope: "pydio" });
		const native = await node.api("PUT", "/a/config/oauth2clients/my.native-app", { redirect_uris: ["com.example.app:/oauth2redirect", "http://127.0.0.1:8400/cb"] }, node.admin);
		assert.equal(native.status, 200, native.text);
		assert.deepEqual(native.body, { Success: true }, "a public client has no secret");
		assert.deepEqual((await clients()).find((c) => c.client_id === "my.native-app"), { client_id: "my.native-app", grant_types: ["authorization_code", "refresh_token"], redirect_uris: ["com.example.app:/oauth2redirect", "http://127.0.0.1:8400/cb"], response_types: ["code"] });
	});

	it("refuses bad clients with a 400 that says why", async () => {
		const cases: [unknown, RegExp][] = [
			[{ redirect_uris: ["/relative/callback"] }, /not an absolute URL/],
			[{ redirect_uris: ["javascript:alert(1)"] }, /javascript: scheme/],
			[{ redirect_uris: ["https://a.example.com/cb#frag"] }, /fragment/],
			[{ redirect_uris: ["https://a.example.com/cb"], grant_types: ["authorization_code", "magic"] }, /"magic" is not a known grant type/],
			[{ redirect_uris: ["https://a.example.com/cb"], response_types: ["code", "tokenish"] }, /"tokenish" is not a response type/],
			[{ grant_types: ["authorization_code"] }, /need at least one redirect URI/],
			[{ grant_types: ["client_credentials"], response_types: ["code"] }, /needs the authorization_code grant/],
			[{ grant_types: ["client_credentials"], client_secret: "short" }, /client_secret must be/],
			[{ grant_types: ["client_credentials"], scope: 'bad"scope' }, /scope/],
			[{ redirect_uris: "https://a.example.com/cb" }, /redirect_uris/],
			[{}, /redirect URI/],
		];
		for (const [body, message] of cases) {
			const r = await node.api("PUT", "/a/config/oauth2clients/bad-client", body, node.admin);
			assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
			assert.match(r.body.Title, message, JSON.stringify(body));
		}
		const badId = await node.api("PUT", "/a/config/oauth2clients/%20spaced", { grant_types: ["client_credentials"] }, node.admin);
		assert.equal(badId.status, 400, badId.text);
		assert.ok(!(await clients()).some((c) => c.client_id === "bad-client"));
	});

	it("deletes a registered client; an unknown one is a 404", async () => {
		assert.equal((await node.api("DELETE", "/a/config/oauth2clients/backup-robot", undefined, node.admin)).status, 200);
		assert.ok(!(await clients()).some((c) => c.client_id === "backup-robot"));
		const gone = await node.api("DELETE", "/a/config/oauth2clients/backup-robot", undefined, node.admin);
		assert.equal(gone.status, 404, gone.text);
		assert.match(gone.text, /backup-robot not found/);
	});

	it("creates, lists (secrets masked), updates with the mask sent back, and deletes a connector", async () => {
		const put = await node.api("PUT", "/a/config/oauth2connectors/keycloak", { type: "oidc", name: "Company SSO", configoidc: oidc }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body, { Success: true });
		let list = await connectors();
		assert.deepEqual(list.map((c) => [c.id, c.type]), [["pydio", "pydio"], ["keycloak", "oidc"]]);
		const kc = list[1] as { configoidc: Record<string, string> };
		assert.equal(kc.configoidc.clientSecret, "********");
		assert.equal(kc.configoidc.issuer, oidc.issuer);
		assert.ok(!(await node.api("GET", "/a/config/oauth2connectors", undefined, node.admin)).text.includes(oidc.clientSecret));
		// The admin console sends back what it read: the mask keeps the secret.
		const renamed = await node.api("PUT", "/a/config/oauth2connectors/keycloak", { ...kc, id: undefined, name: "SSO" }, node.admin);
		assert.equal(renamed.status, 200, renamed.text);
		const db = await openDatabase({ dataDir: node.dataDir });
		try {
			const stored = await new OAuth2Repo(db).connector("keycloak");
			assert.equal(stored?.configoidc?.clientSecret, oidc.clientSecret);
			assert.equal(stored?.name, "SSO");
		} finally {
			await db.close();
		}
		const gh = await node.api("PUT", "/a/config/oauth2connectors/github", { type: "github", name: "GitHub", configgithub: { clientID: "gh", clientSecret: "gh-secret", redirectURI: "https://files.example.com/auth/callback" } }, node.admin);
		assert.equal(gh.status, 200, gh.text);
		list = await connectors();
		assert.deepEqual(list.map((c) => c.id), ["pydio", "keycloak", "github"]);
		assert.equal((await node.api("DELETE", "/a/config/oauth2connectors/github", undefined, node.admin)).status, 200);
		assert.equal((await node.api("DELETE", "/a/config/oauth2connectors/github", undefined, node.admin)).status, 404);
		assert.equal((await node.api("DELETE", "/a/config/oauth2connectors/pydio", undefined, node.admin)).status, 403);
	});

	it("refuses connectors missing what their type needs", async () => {
		const cases: [unknown, RegExp][] = [
			[{}, /type is required/],
			[{ type: "facebook" }, /not a connector type/],
			[{ type: "oidc", configoidc: { ...oidc, issuer: "" } }, /configoidc.issuer is required/],
			[{ type: "oidc", configoidc: { ...oidc, issuer: "not a url" } }, /not an absolute URL/],
			[{ type: "oidc", configoidc: { ...oidc, clientSecret: "********" } }, /no stored value behind the mask/],
			[{ type: "oidc", configsaml: { ssoURL: "https://x" } }, /configsaml does not belong/],
			[{ type: "saml", configsaml: { ssoURL: "https://idp.example.com/sso", redirectURI: "https://files.example.com/cb" } }, /ca or caData/],
			[{ type: "saml", configsaml: { ssoURL: "ftp://idp.example.com/sso", redirectURI: "https://files.example.com/cb", caData: "x" } }, /http or https/],
			[{ type: "oauth", configoauth: { clientID: "a", clientSecret: "b", redirectURI: "https://f.example.com/cb", authorizeURL: "https://o.example.com/auth" } }, /tokenURL is required/],
			[{ type: "ldap", configldap: { Host: "ldap.example.com:636" } }, /BindDN and BindPW/],
			[{ type: "microsoft", configmicrosoft: { clientID: "a", redirectURI: "https://f.example.com/cb" } }, /clientSecret is required/],
		];
		for (const [body, message] of cases) {
			const r = await node.api("PUT", "/a/config/oauth2connectors/bad", body, node.admin);
			assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
			assert.match(r.body.Title, message, JSON.stringify(body));
		}
		const builtin = await node.api("PUT", "/a/config/oauth2connectors/pydio", { type: "oidc", configoidc: oidc }, node.admin);
		assert.equal(builtin.status, 403, builtin.text);
		assert.deepEqual((await connectors()).map((c) => c.id), ["pydio", "keycloak"]);
	});

	it("replaces the whole collection, keeping masked secrets and ignoring the built-in login sent back", async () => {
		const current = await connectors();
		const saml = { id: "adfs", type: "saml", name: "ADFS", configsaml: { ssoURL: "https://adfs.example.com/adfs/ls", redirectURI: "https://files.example.com/auth/callback", caData: "LS0tLS1CRUdJTi..." } };
		const ldap = { id: "corp-ldap", type: "ldap", name: "Directory", configldap: { Host: "ldap.example.com:636", Connection: "ssl", BindDN: "cn=admin,dc=example,dc=com", BindPW: "Ldap-Pass" } };
		const put = await node.api("PUT", "/a/config/oauth2connectors", { connectors: [saml, ...current, ldap] }, node.admin);
		assert.equal(put.status, 200, put.text);
		const list = await connectors();
		assert.deepEqual(list.map((c) => c.id), ["pydio", "adfs", "keycloak", "corp-ldap"]);
		assert.equal((list[3] as { configldap: Record<string, string> }).configldap.BindPW, "********");
		const noKey = await node.api("PUT", "/a/config/oauth2connectors", {}, node.admin);
		assert.equal(noKey.status, 400, "a body without connectors does not remove them all: " + noKey.text);
		const bad = await node.api("PUT", "/a/config/oauth2connectors", { connectors: [saml, { ...ldap, configldap: { Host: "" } }] }, node.admin);
		assert.equal(bad.status, 400, bad.text);
		assert.deepEqual((await connectors()).map((c) => c.id), ["pydio", "adfs", "keycloak", "corp-ldap"], "a refused collection changes nothing");
	});

	it("offers the configured connectors on the login page, after Cellar's own login", async () => {
		const r = await node.api("GET", "/a/frontend/login/connectors");
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.body, {
			Connectors: [
				{ Id: "pydio", Name: "Cellar", Type: "pydio" },
				{ Id: "adfs", Name: "ADFS", Type: "saml" },
				{ Id: "keycloak", Name: "SSO", Type: "oidc" },
				{ Id: "corp-ldap", Name: "Directory", Type: "ldap" },
			],
		});
		assert.equal((await node.api("DELETE", "/a/config/oauth2connectors/adfs", undefined, node.admin)).status, 200);
		const after = await node.api("GET", "/a/frontend/login/connectors");
		assert.deepEqual(after.body.Connectors.map((c: { Id: string }) => c.Id), ["pydio", "keycloak", "corp-ldap"], "a removed connector leaves the login page at once");
	});

	it("keeps /a/config/oauth2* for administrators: 403 for a user, 401 anonymous", async () => {
		const ops: [string, string, unknown?][] = [
			["GET", "/a/config/oauth2clients"],
			["PUT", "/a/config/oauth2clients/sneaky", { grant_types: ["client_credentials"] }],
			["DELETE", "/a/config/oauth2clients/reports"],
			["GET", "/a/config/oauth2connectors"],
			["PUT", "/a/config/oauth2connectors", { connectors: [] }],
			["PUT", "/a/config/oauth2connectors/sneaky", { type: "oidc", configoidc: oidc }],
			["DELETE", "/a/config/oauth2connectors/keycloak"],
		];
		for (const [method, path, body] of ops) {
			assert.equal((await node.api(method, path, body, alice)).status, 403, `${method} ${path} as a user`);
			assert.equal((await node.api(method, path, body)).status, 401, `${method} ${path} anonymously`);
		}
		assert.ok((await clients()).some((c) => c.client_id === "reports"));
		assert.deepEqual((await connectors()).map((c) => c.id), ["pydio", "keycloak", "corp-ldap"]);
	});
});
