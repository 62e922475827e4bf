// lib/identity/user-gone, the identity.changed rule the mfa and binaries services share: a user's data is
// forgotten when a deletion names the user (alone or with a group's tree), or when the users service no longer
// knows them; never on a failed check or another kind of change.
import assert from "node:assert/strict";
import type { Caller } from "../../lib/contracts";
import { forgetGoneUsers } from "../../lib/identity/user-gone";

describe("forgetGoneUsers (lib/identity/user-gone)", () => {
	const known = new Set(["u-alive"]);
	let asked: string[] = [];
	const caller: Caller = {
		async call<T, P>(action: string, params?: P): Promise<T> {
			assert.equal(action, "users.authInfo");
			const uuid = (params as { uuid: string }).uuid;
			asked.push(uuid);
			if (uuid === "u-unreachable") throw new Error("users service unreachable");
			return (known.has(uuid) ? { Uuid: uuid, Login: "alive" } : null) as T;
		},
	};
	const logged: string[] = [];
	const log = { debug: (m: string) => void logged.push(m), warn: (m: string) => void logged.push(`warn: ${m}`) };

	beforeEach(() => {
		asked = [];
		logged.length = 0;
	});

	it("forgets a changed user the users service no longer knows, and only them", async () => {
		const forgotten: string[][] = [];
		const forget = async (uuids: string[]) => void forgotten.push(uuids);
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "user", uuid: "u-gone" }, forget, log), ["u-gone"]);
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "user", uuid: "u-alive" }, forget, log), []);
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "group", path: "/g" }, forget, log), []);
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "role", uuid: "u-gone" }, forget, log), []);
		// A check that fails keeps the data and says why.
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "user", uuid: "u-unreachable" }, forget, log), []);
		assert.deepEqual(forgotten, [["u-gone"]]);
		assert.deepEqual(asked, ["u-gone", "u-alive", "u-unreachable"]);
		assert.match(logged.join("\n"), /u-unreachable.*unreachable/);
	});

	it("forgets every user a deletion names, a group's tree included, at once and without asking", async () => {
		const forgotten: string[][] = [];
		const forget = async (uuids: string[]) => void forgotten.push(uuids);
		const group = { kind: "group" as const, path: "/ops", deleted: ["gus", "hal"], deletedUuids: ["u-gus", "u-hal"] };
		assert.deepEqual(await forgetGoneUsers(caller, group, forget, log), ["u-gus", "u-hal"]);
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "user", uuid: "u-ivy", deleted: ["ivy"], deletedUuids: ["u-ivy"] }, forget, log), ["u-ivy"]);
		// A group deleted without users in it: nothing to forget, nobody asked about.
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "group", path: "/empty", deleted: [], deletedUuids: [] }, forget, log), []);
		assert.deepEqual(forgotten, [["u-gus", "u-hal"], ["u-ivy"]]);
		assert.deepEqual(asked, []);
	});

	it("warns, and says nothing was forgotten, when forgetting fails", async () => {
		const failing = async () => {
			throw new Error("store down");
		};
		assert.deepEqual(await forgetGoneUsers(caller, { kind: "group", path: "/ops", deletedUuids: ["u-gus"] }, failing, log), []);
		assert.match(logged.join("\n"), /^warn: .*1 deleted user.*u-gus.*store down/);
	});
});
