// A DATA_DIR written by the NeDB versions of Cellar (test/fixtures/nedb-datadir, made by make-nedb-datadir.ts)
// starts with everything in it: logins, groups, roles, workspaces, policies, files and their contents, metadata,
// versions, the recycle bin, tokens, encryption keys and jobs. Whatever store each collection lives in now.
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";

const FIXTURE = join(__dirname, "..", "fixtures", "nedb-datadir");
const manifest = JSON.parse(readFileSync(join(FIXTURE, "MANIFEST.json"), "utf8")) as {
	adminPassword: string;
	jwtSecret: string;
	users: string[];
	groups: string[];
	roles: string[];
	workspace: { slug: string; uuid: string };
	policy: string;
	files: Record<string, string>;
	versionsOf: Record<string, number>;
	meta: { path: string; uuid: string; namespace: string; value: string };
	recycled: string;
	pat: { token: string };
	encryptionKey: string;
	job: string;
};

describe("upgrade: a DATA_DIR of the NeDB versions", function () {
	this.timeout(60_000);
	let node: TestNode;
	let admin: string;

	before(async () => {
		// startNode makes a fresh DATA_DIR: the fixture is copied into it before the services start.
		const dataDir = mkdtempSync(join(tmpdir(), "cellar-upgrade-"));
		cpSync(FIXTURE, dataDir, { recursive: true });
		node = await startNode({ env: { DATA_DIR: dataDir, JWT_SECRET: manifest.jwtSecret, ADMIN_PASSWORD: manifest.adminPassword } });
		admin = await node.login("admin", manifest.adminPassword);
	});
	after(() => node.stop());

	it("keeps the logins, groups and role assignments", async () => {
		assert.ok(await node.login("alice", "Alice-Pass-1234"));
		assert.ok(await node.login("bob", "Bob-Pass-12345"));
		const alice = await node.api("GET", "/a/user/alice", undefined, admin);
		assert.equal(alice.body.GroupPath, "/sales");
		assert.equal(alice.body.Attributes.email, "alice@example.org");
		const groups = await node.api("POST", "/a/user", { Queries: [{ NodeType: "GROUP" }] }, admin);
		assert.ok(groups.body.Groups.some((g: { GroupLabel: string }) => g.GroupLabel === "sales"));
		const bob = await node.api("GET", "/a/user/bob", undefined, admin);
		assert.ok(bob.body.Roles.some((r: { Uuid: string }) => r.Uuid === "role-editors"));
		assert.equal((await node.api("GET", "/a/role/role-editors", undefined, admin)).body.Label, "Editors");
	});

	it("keeps workspaces and policies", async () => {
		const ws = await node.api("POST", "/a/workspace", { Queries: [{ slug: manifest.workspace.slug }] }, admin);
		assert.equal(ws.body.Workspaces?.[0]?.UUID, manifest.workspace.uuid);
		const policies = await node.api("POST", "/a/policy", {}, admin);
		assert.ok(policies.body.PolicyGroups.some((p: { Uuid: string }) => p.Uuid === manifest.policy));
	});

	it("keeps the files, their contents, metadata, versions and the recycle bin", async () => {
		for (const [path, content] of Object.entries(manifest.files)) {
			const r = await fetch(`${node.url}/io/${path}`, { headers: { "X-Pydio-Bearer": path.startsWith("personal-files/") ? await node.login("alice", "Alice-Pass-1234") : admin } });
			assert.equal(r.status, 200, path);
			assert.equal(await r.text(), content, path);
		}
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent(manifest.meta.path)}`, undefined, admin);
		assert.equal(stat.body.Node.Uuid, manifest.meta.uuid);
		assert.equal(stat.body.Node.MetaStore[manifest.meta.namespace], JSON.stringify(manifest.meta.value));
		for (const [path, n] of Object.entries(manifest.versionsOf)) {
			const v = await node.api("POST", "/a/tree/stats", { NodePaths: [path], Versions: true }, admin);
			assert.equal(v.status, 200, v.text);
			assert.ok(v.body.Nodes.length >= n, `${path}: ${v.body.Nodes.length} versions`);
		}
		const [old] = (await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/docs/report.txt"], Versions: true }, admin)).body.Nodes;
		const r = await fetch(`${node.url}/io/common-files/docs/report.txt?versionId=${old.Commits[0].Uuid}`, { headers: { "X-Pydio-Bearer": admin } });
		assert.equal(await r.text(), "first version");
		assert.equal((await node.api("GET", `/a/tree/stat/${encodeURIComponent(manifest.recycled)}`, undefined, admin)).status, 200);
	});

	it("keeps tokens, encryption keys and jobs", async () => {
		assert.equal((await node.api("GET", "/a/user/admin", undefined, manifest.pat.token)).status, 200);
		const keys = await node.api("POST", "/a/config/encryption/list", {}, admin);
		assert.ok(keys.body.Keys.some((k: { ID: string }) => k.ID === manifest.encryptionKey), keys.text);
		const jobs = await node.api("POST", "/a/jobs/user", { JobIDs: [manifest.job] }, admin);
		assert.equal(jobs.body.Jobs?.[0]?.ID, manifest.job);
		assert.equal(jobs.body.Jobs[0].Tasks?.[0]?.Status, "Finished");
	});
});
