// lib/gateway/health's readiness: every reason a node is not ready, at once, and nothing secret in them.
import assert from "node:assert/strict";
import { REQUIRED_SERVICES, readiness, type HealthDeps } from "../../lib/gateway/health";

const deps = (over: Partial<HealthDeps> = {}): HealthDeps => ({
	started: () => true,
	serving: () => true,
	services: () => [...REQUIRED_SERVICES, "api"],
	pingStore: async () => {},
	...over,
});

describe("readiness (lib/gateway/health)", () => {
	it("is ready when the broker runs, the gateway serves, the required services run somewhere and the store answers", async () => {
		assert.deepEqual(await readiness(deps()), { Ready: true });
	});

	it("lists every reason at once", async () => {
		const err = Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:5432 password=hunter2"), { code: "ECONNREFUSED" });
		const r = await readiness(deps({ started: () => false, services: () => ["api", "tree"], pingStore: async () => Promise.reject(err) }));
		assert.equal(r.Ready, false);
		assert.deepEqual(r.Reasons, ["the broker is not started", "required services run on no node: auth, policy, tokens, users, roles, workspaces, acl, datasources", "the store is unreachable (ECONNREFUSED)"]);
		assert.doesNotMatch(JSON.stringify(r), /10\.1\.2\.3|hunter2/);
	});

	it("says the gateway is still starting, and a store that does not answer in time", async () => {
		const r = await readiness(deps({ serving: () => false, pingStore: () => new Promise(() => {}) }));
		assert.deepEqual(r.Reasons, ["the gateway is starting (its routes are not published yet)", "the store did not answer within 2 s"]);
	});
});
