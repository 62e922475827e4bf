// OAuth2Repo on SQLite and PostgreSQL: clients upserted by id with their secret hash readable only one client at
// a time (listings never carry it), connectors kept in the order given (a new one last, a replaced one in its
// place), the collection replaced whole in one go.
import assert from "node:assert/strict";
import { OAuth2Repo } from "../../lib/db/oauth2";
import type { OAuth2Connector } from "../../lib/oauth2/model";
import { onEveryBackend } from "../helpers/db";

const oidc = (id: string, name = id): OAuth2Connector => ({ id, name, type: "oidc", configoidc: { issuer: "https://idp.example.com", clientID: id, clientSecret: `secret-${id}`, redirectURI: "https://cellar.example.com/auth/callback" } });

onEveryBackend("OAuth2Repo", (h) => {
	let repo: OAuth2Repo;
	before(() => {
		repo = new OAuth2Repo(h().db);
	});

	it("upserts clients by id, the secret hash only in the single read", async () => {
		await repo.putClient({ client: { client_id: "b-app", grant_types: ["client_credentials"] }, secretHash: "scrypt$hash" }, 1);
		await repo.putClient({ client: { client_id: "a-app", redirect_uris: ["https://a.example.com/cb"], grant_types: ["authorization_code"] } }, 1);
		const all = await repo.clients();
		assert.deepEqual(all.map((c) => c.client.client_id), ["a-app", "b-app"]);
		assert.ok(all.every((c) => c.secretHash === undefined));
		assert.equal((await repo.client("b-app"))?.secretHash, "scrypt$hash");
		assert.equal((await repo.client("a-app"))?.secretHash, undefined);
		await repo.putClient({ client: { client_id: "b-app", client_name: "B", grant_types: ["client_credentials"] }, secretHash: "scrypt$other" }, 2);
		assert.deepEqual((await repo.client("b-app"))?.client, { client_id: "b-app", client_name: "B", grant_types: ["client_credentials"] });
		assert.equal((await repo.client("b-app"))?.secretHash, "scrypt$other");
		assert.equal(await repo.deleteClient("b-app"), true);
		assert.equal(await repo.deleteClient("b-app"), false);
		assert.equal(await repo.client("b-app"), null);
	});

	it("keeps connectors in order: new ones last, replaced ones in place", async () => {
		await repo.putConnector(oidc("zeta"), 1);
		await repo.putConnector(oidc("alpha"), 1);
		await repo.putConnector(oidc("zeta", "Zeta renamed"), 2);
		const list = await repo.connectors();
		assert.deepEqual(list.map((c) => [c.id, c.name]), [["zeta", "Zeta renamed"], ["alpha", "alpha"]]);
		assert.deepEqual(list[1], oidc("alpha"));
		assert.deepEqual(await repo.connector("alpha"), oidc("alpha"));
		assert.equal(await repo.connector("none"), null);
	});

	it("replaces the collection whole, in the order given", async () => {
		await repo.replaceConnectors([oidc("c3"), oidc("alpha"), oidc("c1")], 3);
		assert.deepEqual((await repo.connectors()).map((c) => c.id), ["c3", "alpha", "c1"]);
		await assert.rejects(repo.replaceConnectors([oidc("x"), oidc("x")], 4));
		assert.deepEqual((await repo.connectors()).map((c) => c.id), ["c3", "alpha", "c1"], "a failed replacement changes nothing");
		assert.equal(await repo.deleteConnector("alpha"), true);
		assert.equal(await repo.deleteConnector("alpha"), false);
		await repo.replaceConnectors([], 5);
		assert.deepEqual(await repo.connectors(), []);
	});
});
