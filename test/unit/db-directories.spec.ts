// DirectoriesRepo on SQLite and PostgreSQL: configurations upserted by ConfigId and read back whole (fields
// Cellar does not interpret included), listed in ConfigId order, deleted once.
import assert from "node:assert/strict";
import { DirectoriesRepo } from "../../lib/db/directories";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("DirectoriesRepo", (h) => {
	let repo: DirectoriesRepo;
	before(() => {
		repo = new DirectoriesRepo(h().db);
	});

	it("creates, replaces, lists in ConfigId order and deletes", async () => {
		await repo.put({ ConfigId: "zeta", Host: "ldap.z:389", BindPW: "secret", MappingRules: [{ LeftAttribute: "cn", RightAttribute: "displayName" }] }, 1);
		await repo.put({ ConfigId: "alpha", Host: "ldap.a:389" }, 1);
		assert.deepEqual((await repo.all()).map((c) => c.ConfigId), ["alpha", "zeta"]);
		const z = await repo.get("zeta");
		assert.equal(z?.BindPW, "secret", "the password is stored: binding needs it");
		assert.deepEqual(z?.MappingRules, [{ LeftAttribute: "cn", RightAttribute: "displayName" }]);
		await repo.put({ ConfigId: "zeta", Host: "ldap.z2:636" }, 2);
		assert.deepEqual(await repo.get("zeta"), { ConfigId: "zeta", Host: "ldap.z2:636" });
		assert.equal(await repo.delete("zeta"), true);
		assert.equal(await repo.delete("zeta"), false);
		assert.equal(await repo.get("zeta"), null);
		assert.deepEqual((await repo.all()).map((c) => c.ConfigId), ["alpha"]);
	});
});
