// lib/identity/user-gone, the identity.changed rule the mfa and binaries services share: a user's data is
// forgotten only when the users service no longer knows them, never on a failed check or another kind of change.
import assert from "node:assert/strict";
import type { Caller } from "../../lib/contracts";
import { forgetGoneUser } from "../../lib/identity/user-gone";

describe("forgetGoneUser (lib/identity/user-gone)", () => {
	const known = new Set(["u-alive"]);
	const asked: string[] = [];
	const caller: Caller = {
		async call<T, P>(action: string, params?: P): Promise<T> {
			assert.equal(action, "users.authInfo");
			const uuid = (params as { uuid: string }).uuid;
			asked.push(uuid);
			if (uuid === "u-unreachable") throw new Error("users service unreachable");
			return (known.has(uuid) ? { Uuid: uuid, Login: "alive" } : null) as T;
		},
	};

	it("forgets a user the users service no longer knows, and only them", async () => {
		const forgotten: string[] = [];
		const logged: string[] = [];
		const forget = async (uuid: string) => void forgotten.push(uuid);
		const log = { debug: (m: string) => void logged.push(m) };
		assert.equal(await forgetGoneUser(caller, { kind: "user", uuid: "u-gone" }, forget, log), true);
		assert.equal(await forgetGoneUser(caller, { kind: "user", uuid: "u-alive" }, forget, log), false);
		assert.equal(await forgetGoneUser(caller, { kind: "group", path: "/g" }, forget, log), false);
		assert.equal(await forgetGoneUser(caller, { kind: "role", uuid: "u-gone" }, forget, log), false);
		// A check that fails keeps the data and says why.
		assert.equal(await forgetGoneUser(caller, { kind: "user", uuid: "u-unreachable" }, forget, log), false);
		assert.deepEqual(forgotten, ["u-gone"]);
		assert.deepEqual(asked, ["u-gone", "u-alive", "u-unreachable"]);
		assert.match(logged.join("\n"), /u-unreachable.*unreachable/);
	});
});
