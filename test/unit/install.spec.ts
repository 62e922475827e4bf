import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker, type ServiceSchema } from "moleculer";
import InstallService from "../../services/install.service";
import { runSetup, type SetupDeps } from "../../lib/install/setup";
import { installDefaults } from "../../lib/install/defaults";
import { performCheck } from "../../lib/install/checks";
import { formatBanner } from "../../lib/install/banner";
import { readRecord } from "../../lib/install/record";
import { loadConfig } from "../../lib/config";
import type { Identity } from "../../lib/auth/identity";

interface Counts {
	roles: number;
	admin: Array<Record<string, unknown>>;
	workspaces: number;
}

/** Fake identity services that count calls; `fail` makes a step throw while it returns true. */
function fakes(counts: Counts, opts: { generated?: string; fail?: () => boolean; adminExists?: () => boolean } = {}): ServiceSchema[] {
	return [
		{ name: "roles", actions: { ensureDefaults: { handler: () => (counts.roles++, { created: 1 }) } } },
		{
			name: "users",
			actions: {
				ensureAdmin(ctx) {
					counts.admin.push({ ...(ctx.params as object) });
					if (opts.fail?.()) throw new Error("users store unavailable");
					if (opts.adminExists?.()) return { created: false };
					const p = ctx.params as { password?: string };
					return p.password ? { created: true } : { created: true, password: opts.generated ?? "Generated-Pass-42" };
				},
			},
		},
		{ name: "workspaces", actions: { ensureDefaults: { handler: () => (counts.workspaces++, { created: 2 }) } } },
	];
}

const admin: Identity = { Uuid: "u-admin", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP", "ADMINS", "u-admin"], TokenKind: "session", ExpiresAt: 2e9 };
const standard: Identity = { ...admin, Uuid: "u-bob", Login: "bob", Profile: "standard", Roles: ["ROOT_GROUP", "u-bob"] };

describe("install service", () => {
	let dataDir: string;
	const saved: Record<string, string | undefined> = {};
	const brokers: ServiceBroker[] = [];

	function setEnv(env: Record<string, string | undefined>) {
		for (const [k, v] of Object.entries(env)) {
			if (!(k in saved)) saved[k] = process.env[k];
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}

	async function node(counts: Counts, opts: Parameters<typeof fakes>[1] & { withFakes?: boolean } = {}) {
		const printed: string[] = [];
		const broker = new ServiceBroker({ logger: false });
		brokers.push(broker);
		if (opts.withFakes !== false) for (const s of fakes(counts, opts)) broker.createService(s);
		broker.createService({ name: "install", mixins: [InstallService], methods: { print: (t: string) => void printed.push(t) } } as ServiceSchema);
		await broker.start();
		return { broker, printed };
	}

	beforeEach(() => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-install-"));
		setEnv({ DATA_DIR: dataDir, ADMIN_LOGIN: "admin", ADMIN_PASSWORD: undefined, MONGO_URI: undefined, PORT: "8080", HOST: "0.0.0.0" });
	});
	afterEach(async () => {
		while (brokers.length) await brokers.pop()!.stop();
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
			delete saved[k];
		}
		rmSync(dataDir, { recursive: true, force: true });
	});

	it("performs the set-up once, records it and prints the generated password", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker, printed } = await node(counts);
		const ready = await broker.call<{ Installed: boolean }, object>("install.ready", { timeout: 5000 });
		assert.equal(ready.Installed, true);
		assert.deepEqual([counts.roles, counts.admin.length, counts.workspaces], [1, 1, 1]);
		assert.deepEqual(counts.admin[0], { login: "admin" });
		const rec = JSON.parse(readFileSync(join(dataDir, "install.json"), "utf8"));
		assert.equal(rec.adminLogin, "admin");
		assert.match(rec.installedAt, /^\d{4}-\d\d-\d\dT/);
		assert.deepEqual(rec.events.map((e: { Step: string }) => e.Step), ["services", "roles", "admin", "workspaces", "done"]);
		assert.equal(rec.events.at(-1).Progress, 100);
		assert.ok(!JSON.stringify(rec).includes("Generated-Pass-42"), "the password is never stored");
		assert.equal(printed.length, 1);
		assert.match(printed[0], /Login: {4}admin/);
		assert.match(printed[0], /Password: Generated-Pass-42/);
		assert.match(printed[0], /shown only this once/);
	});

	it("does nothing again on a restart with the same DATA_DIR", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const first = await node(counts);
		await first.broker.call("install.ready", { timeout: 5000 });
		await first.broker.stop();
		brokers.length = 0;
		const second = await node(counts);
		const status = await second.broker.call<{ Installed: boolean; State: string }, object>("install.ready", { timeout: 5000 });
		assert.equal(status.Installed, true);
		await new Promise((r) => setTimeout(r, 100));
		assert.deepEqual([counts.roles, counts.admin.length, counts.workspaces], [1, 1, 1]);
		assert.deepEqual(second.printed, [], "no gateway on this node, nothing to announce");
	});

	it("passes ADMIN_PASSWORD and never prints it", async () => {
		setEnv({ ADMIN_PASSWORD: "Operator-Secret-1", ADMIN_LOGIN: "root" });
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker, printed } = await node(counts);
		await broker.call("install.ready", { timeout: 5000 });
		assert.deepEqual(counts.admin[0], { login: "root", password: "Operator-Secret-1" });
		assert.equal(printed.length, 1);
		assert.match(printed[0], /Login: {4}root/);
		assert.match(printed[0], /the value of ADMIN_PASSWORD/);
		assert.ok(!printed[0].includes("Operator-Secret-1"));
	});

	it("says the account already existed when another node created it", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker, printed } = await node(counts, { adminExists: () => true });
		await broker.call("install.ready", { timeout: 5000 });
		assert.match(printed[0], /unchanged \(this administrator account already existed\)/);
	});

	it("waits for services that start later", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker } = await node(counts, { withFakes: false });
		const before = await broker.call<{ State: string }, object>("install.status", {});
		assert.equal(before.State, "running");
		await new Promise((r) => setTimeout(r, 300));
		for (const s of fakes(counts)) broker.createService(s);
		const ready = await broker.call<{ Installed: boolean }, object>("install.ready", { timeout: 5000 });
		assert.equal(ready.Installed, true);
		assert.equal(counts.roles, 1);
	});

	it("retries a failed set-up without repeating what other services already hold", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		let failures = 1;
		const { broker } = await node(counts, { fail: () => failures-- > 0 });
		const ready = await broker.call<{ Installed: boolean }, object>("install.ready", { timeout: 8000 });
		assert.equal(ready.Installed, true);
		assert.equal(counts.admin.length, 2);
		assert.equal(counts.workspaces, 1);
	});

	it("lets POST /install complete a failed set-up with the installer's login, then refuses it", async () => {
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		let failing = true;
		const { broker, printed } = await node(counts, { fail: () => failing });
		for (let i = 0; i < 100; i++) {
			const s = await broker.call<{ State: string }, object>("install.status", {});
			if (s.State === "failed") break;
			await new Promise((r) => setTimeout(r, 20));
		}
		await assert.rejects(broker.call("install.postInstall", { config: { frontendLogin: "boss", frontendPassword: "short" } }), { code: 400 });
		await assert.rejects(broker.call("install.postInstall", { config: { frontendLogin: "../x", frontendPassword: "Long-Enough-1" } }), { code: 400 });
		await assert.rejects(broker.call("install.postInstall", { config: { frontendPassword: "Long-Enough-1", frontendRepeatPassword: "other" } }), { code: 400 });
		failing = false;
		const answer = await broker.call("install.postInstall", { config: { frontendLogin: "boss", frontendPassword: "Long-Enough-1", frontendRepeatPassword: "Long-Enough-1" } });
		assert.deepEqual(answer, { success: true });
		assert.deepEqual(counts.admin.at(-1), { login: "boss", password: "Long-Enough-1" });
		assert.equal(readRecord(dataDir).record?.adminLogin, "boss");
		assert.match(printed.at(-1)!, /the one given to POST \/a\/install/);
		await assert.rejects(broker.call("install.postInstall", { config: {} }), (e: { code: number; message: string }) => e.code === 409 && e.message === "Already installed");
	});

	it("answers the install routes without leaking anything once installed", async () => {
		setEnv({ ADMIN_PASSWORD: "Operator-Secret-1", MONGO_URI: undefined });
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker } = await node(counts);
		await broker.call("install.ready", { timeout: 5000 });

		const anon = await broker.call<{ config: Record<string, unknown> }, object>("install.getInstall", {}, { meta: { user: null } });
		assert.equal(anon.config.frontendApplicationTitle, "Cellar");
		assert.equal(anon.config.dsType, "LOCAL");
		assert.equal(anon.config.dbConnectionType, "embedded");
		assert.equal(anon.config.frontendLogin, undefined);
		assert.equal(anon.config.dsFolder, undefined);
		assert.ok(!JSON.stringify(anon).includes("Operator-Secret-1"));
		const asAdmin = await broker.call<{ config: Record<string, unknown> }, object>("install.getInstall", {}, { meta: { user: admin } });
		assert.equal(asAdmin.config.frontendLogin, "admin");
		assert.equal(asAdmin.config.dsFolder, dataDir);

		await assert.rejects(broker.call("install.postInstall", { config: { frontendLogin: "evil", frontendPassword: "Evil-Password-1" } }, { meta: { user: null } }), { code: 409 });
		await assert.rejects(broker.call("install.check", { Name: "DATA_DIR" }, { meta: { user: null } }), { code: 409 });
		await assert.rejects(broker.call("install.check", { Name: "DATA_DIR" }, { meta: { user: standard } }), { code: 409 });

		const dir = await broker.call<{ Result: { Name: string; Success: boolean; JsonResult: string } }, object>("install.check", { Name: "DATA_DIR" }, { meta: { user: admin } });
		assert.equal(dir.Result.Success, true);
		assert.equal(JSON.parse(dir.Result.JsonResult).writable, true);
		const db = await broker.call<{ Result: { Success: boolean; JsonResult: string } }, object>("install.check", { Name: "DB" }, { meta: { user: admin } });
		assert.equal(db.Result.Success, true, db.Result.JsonResult);
		assert.equal(JSON.parse(db.Result.JsonResult).type, "sqlite");
		assert.match(JSON.parse(db.Result.JsonResult).serverVersion, /^3\./);
		await assert.rejects(broker.call("install.check", { Name: "S3_KEYS" }, { meta: { user: admin } }), (e: { code: number; message: string }) => e.code === 400 && /checked when an S3 datasource is created/.test(e.message));
		await assert.rejects(broker.call("install.check", { Name: "PHP" }, { meta: { user: admin } }), (e: { code: number; message: string }) => e.code === 400 && /DATA_DIR/.test(e.message));

		const agreement = await broker.call<{ Text: string }, object>("install.agreement", {});
		assert.match(agreement.Text, /GNU Affero General Public License/);

		assert.deepEqual(await broker.call("install.events", {}), { Success: true });
		const status = await broker.call<{ Events: Array<{ Step: string; Progress: number }> }, object>("install.status", {});
		assert.equal(status.Events.at(-1)!.Progress, 100);
		assert.ok(!JSON.stringify(status).includes("Operator-Secret-1"));
	});

	it("re-runs the set-up over an unreadable record", async () => {
		writeFileSync(join(dataDir, "install.json"), "{not json");
		const counts: Counts = { roles: 0, admin: [], workspaces: 0 };
		const { broker } = await node(counts);
		await broker.call("install.ready", { timeout: 5000 });
		assert.equal(counts.roles, 1);
		assert.equal(readRecord(dataDir).record?.adminLogin, "admin");
	});
});

describe("install library", () => {
	it("stops at the first failing step and reports it as an event", async () => {
		const events: string[] = [];
		await assert.rejects(
			runSetup(
				{
					call: (async (a: string) => {
						if (a === "users.ensureAdmin") throw new Error("boom");
						return {};
					}) as SetupDeps["call"],
					waitForServices: async () => undefined,
					onEvent: (e) => events.push(`${e.Step}:${e.Success}`),
				},
				{ adminLogin: "admin", version: "1.0.0" },
			),
			/boom/,
		);
		assert.deepEqual(events, ["services:true", "roles:true", "admin:false"]);
	});

	it("never reports an operator's password as generated", async () => {
		const out = await runSetup(
			{ call: (async (a: string) => (a === "users.ensureAdmin" ? { created: true, password: "leak" } : {})) as SetupDeps["call"], waitForServices: async () => undefined },
			{ adminLogin: "admin", adminPassword: "Operator-1", version: "1.0.0" },
		);
		assert.equal(out.admin.generatedPassword, undefined);
		assert.equal(out.admin.created, true);
	});

	it("checks the configured SQL store, never an address from the request, without its credentials", async () => {
		const pgCfg = { ...loadConfig(), databaseUrl: "postgres://u:pw@db.example:5432/cellar" };
		const ko = await performCheck("DB", pgCfg, async () => {
			throw new Error("connect ECONNREFUSED postgres://u:pw@db.example:5432/cellar");
		});
		assert.equal(ko.Success, false);
		assert.match(JSON.parse(ko.JsonResult).error, /ECONNREFUSED/);
		assert.equal(JSON.parse(ko.JsonResult).location, "db.example:5432/cellar");
		assert.ok(!ko.JsonResult.includes("pw@"));
		const d = installDefaults(pgCfg, { detailed: true });
		assert.equal(d.dbConnectionType, "embedded");
		assert.ok(!JSON.stringify(d).includes("pw@"));
	});

	it("says MongoDB is not a store of this version when asked to check it", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-check-"));
		try {
			const r = await performCheck("mongo", { ...loadConfig(), dataDir: dir });
			assert.equal(r.Success, false);
			assert.equal(JSON.parse(r.JsonResult).type, "sqlite");
			assert.match(JSON.parse(r.JsonResult).error, /MongoDB is not a supported store in this version/);
			const d = await performCheck("DATA_DIR", { ...loadConfig(), dataDir: join(dir, "sub") });
			assert.equal(d.Success, true);
			assert.ok(existsSync(join(dir, "sub")));
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("formats the banner", () => {
		const text = formatBanner({ url: "http://127.0.0.1:8080", adminLogin: "admin", password: { kind: "generated", value: "abc" } });
		assert.equal(
			text,
			[
				"========================================================================",
				"Cellar is installed and ready.",
				"  URL:      http://127.0.0.1:8080   (REST API under http://127.0.0.1:8080/a)",
				"  Login:    admin",
				"  Password: abc",
				"  This password was generated and is shown only this once: note it, then change it.",
				"========================================================================",
			].join("\n"),
		);
	});
});
