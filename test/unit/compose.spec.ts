import assert from "node:assert/strict";
import { VARIABLES } from "../../lib/config";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { expandServices } from "../../lib/runner";

const root = join(__dirname, "..", "..");
const SERVICES_DIR = join(root, "services");

interface ComposeService {
	image?: string;
	command?: string | string[];
	working_dir?: string;
	volumes?: string[];
	ports?: string[];
	environment?: Record<string, string | number | boolean | null>;
	depends_on?: Record<string, { condition?: string }> | string[];
	healthcheck?: { test: string[] | string };
}
interface Compose {
	services: Record<string, ComposeService>;
	volumes?: Record<string, unknown>;
}

describe("docker-compose.yml", () => {
	const text = readFileSync(join(root, "docker-compose.yml"), "utf8");
	const compose = parse(text) as Compose;
	const readme = readFileSync(join(root, "README.md"), "utf8");
	const nodes = ["cellar1", "cellar2"];

	it("declares the back ends and two Cellar nodes", () => {
		assert.deepEqual(Object.keys(compose.services).sort(), ["cellar1", "cellar2", "minio", "postgres", "redis"]);
		const redis = compose.services.redis;
		const cmd = Array.isArray(redis.command) ? redis.command.join(" ") : String(redis.command);
		assert.match(cmd, /--client-output-buffer-limit pubsub 256mb 64mb 60/);
		assert.match(compose.services.postgres.image ?? "", /^postgres:/);
		assert.match(compose.services.minio.image ?? "", /minio/);
	});

	it("runs each node from the mounted repository on Node 22", () => {
		for (const n of nodes) {
			const s = compose.services[n];
			assert.equal(s.image, "node:22", n);
			assert.equal(s.command, 'sh -c "npm ci && npm start"', n);
			assert.equal(s.working_dir, "/app", n);
			assert.ok(s.volumes?.includes(".:/app"), `${n} mounts the repository`);
			assert.ok(s.volumes?.some((v) => v.endsWith(":/app/node_modules")), `${n} has its own node_modules`);
		}
		assert.notEqual(
			compose.services.cellar1.volumes?.find((v) => v.endsWith(":/app/node_modules")),
			compose.services.cellar2.volumes?.find((v) => v.endsWith(":/app/node_modules")),
		);
	});

	it("forms one cluster: same transporter, database and JWT secret; distinct node ids and data", () => {
		const env = nodes.map((n) => compose.services[n].environment ?? {});
		for (const e of env) {
			assert.equal(e.TRANSPORTER, "redis://redis:6379");
			assert.match(String(e.DATABASE_URL), /^postgres:\/\/cellar:.*@postgres:5432\/cellar$/);
			assert.ok(e.JWT_SECRET, "JWT_SECRET is set");
			assert.ok(e.DATA_DIR && e.NODE_ID && e.SERVICES && e.LOG_LEVEL !== undefined && e.ADMIN_LOGIN && e.ADMIN_PASSWORD !== undefined);
		}
		assert.equal(env[0].JWT_SECRET, env[1].JWT_SECRET);
		assert.equal(env[0].DATABASE_URL, env[1].DATABASE_URL);
		assert.notEqual(env[0].NODE_ID, env[1].NODE_ID);
		const dataVolume = (n: string) => compose.services[n].volumes?.find((v) => v.endsWith(`:${compose.services[n].environment?.DATA_DIR}`));
		assert.ok(dataVolume("cellar1") && dataVolume("cellar2"));
		assert.notEqual(dataVolume("cellar1"), dataVolume("cellar2"));
	});

	it("splits services: the gateway, the set-up and the files on cellar1, identity services on both", () => {
		const names = (n: string) => String(compose.services[n].environment?.SERVICES).split(",").map((s) => s.trim());
		const one = names("cellar1");
		const two = names("cellar2");
		assert.ok(one.includes("api") && one.includes("install"));
		assert.ok(!two.includes("api") && !two.includes("install"), "only one node performs the set-up and prints the password");
		for (const s of ["auth", "users", "roles", "workspaces", "acl", "policy", "templates", "directories"]) {
			assert.ok(one.includes(s) && two.includes(s), `${s} on both nodes`);
		}
		// The file services next to the gateway and the LOCAL datasources' volume.
		for (const s of ["datasources", "tree", "meta", "jobs", "versions", "encryption", "selections", "search"]) assert.ok(one.includes(s), `${s} on cellar1`);
		// Every service runs somewhere.
		const all = readdirSync(SERVICES_DIR).filter((f) => f.endsWith(".service.ts")).map((f) => f.replace(".service.ts", ""));
		assert.deepEqual(all.filter((s) => !one.includes(s) && !two.includes(s)), []);
		// Every name is a service file (the start script resolves them; an unknown name is an error).
		for (const n of nodes) assert.ok(expandServices(String(compose.services[n].environment?.SERVICES), SERVICES_DIR)!.length > 0);
		assert.equal(compose.services.cellar1.environment?.PORT, "8080");
		assert.ok(compose.services.cellar1.ports?.includes("8080:8080"));
		assert.equal(compose.services.cellar2.ports, undefined);
	});

	it("refers only to declared services and volumes", () => {
		for (const [name, s] of Object.entries(compose.services)) {
			const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
			for (const d of deps) assert.ok(compose.services[d], `${name} depends on unknown ${d}`);
			for (const v of s.volumes ?? []) {
				const src = v.split(":")[0];
				if (!src.startsWith(".") && !src.startsWith("/")) assert.ok(compose.volumes && src in compose.volumes, `${name}: volume ${src} is not declared`);
			}
		}
	});

	it("documents in README.md every variable it uses", () => {
		const vars = new Set<string>();
		for (const s of Object.values(compose.services)) for (const k of Object.keys(s.environment ?? {})) vars.add(k);
		for (const m of text.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)) vars.add(m[1]);
		const missing = [...vars].filter((v) => !readme.includes(`\`${v}\``));
		assert.deepEqual(missing, [], `undocumented in README.md: ${missing.join(", ")}`);
	});

	it("documents in README.md every setting the configuration reads", () => {
		// lib/config lists what it reads (test/unit/config.spec.ts checks the table row by row).
		const missing = VARIABLES.filter((v) => !readme.includes(`\`${v}\``));
		assert.deepEqual(missing, [], `undocumented in README.md: ${missing.join(", ")}`);
	});
});

describe(".ci/run", () => {
	it("is an executable bash script that fails fast", () => {
		const file = join(root, ".ci", "run");
		assert.ok((statSync(file).mode & 0o111) !== 0, ".ci/run is executable");
		const text = readFileSync(file, "utf8");
		assert.match(text, /^#!\/usr\/bin\/env bash\n/);
		assert.match(text, /set -euo pipefail/);
		assert.match(text, /npm ci/);
		assert.match(text, /npm test/);
	});
});

describe("SERVICES for the start script", () => {
	it("turns short names into service files and refuses unknown ones", () => {
		assert.equal(expandServices(undefined, SERVICES_DIR), undefined);
		assert.equal(expandServices("all", SERVICES_DIR), undefined);
		assert.deepEqual(expandServices("api, frontend", SERVICES_DIR), [join(SERVICES_DIR, "api.service.ts"), join(SERVICES_DIR, "frontend.service.ts")]);
		const without = expandServices("!api", SERVICES_DIR)!;
		assert.ok(without.includes(join(SERVICES_DIR, "frontend.service.ts")) && !without.includes(join(SERVICES_DIR, "api.service.ts")));
		assert.throws(() => expandServices("api,nope", SERVICES_DIR), /unknown service\(s\): nope.*Available: .*api/);
		assert.throws(() => expandServices("../lib/config", SERVICES_DIR), /unknown/);
	});
});
