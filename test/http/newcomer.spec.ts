// What a newcomer trips on with curl and a freshly started node: bodies without a JSON Content-Type, trailing
// slashes, and a node that is still starting (503 + Retry-After, never a 404 for a route that exists; the
// banner only once it serves).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { useNode } from "../helpers/node";
import { startProc } from "../helpers/cluster";

function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.once("error", reject);
		s.listen(0, "127.0.0.1", () => {
			const port = (s.address() as { port: number }).port;
			s.close(() => resolve(port));
		});
	});
}

describe("HTTP: what a newcomer sends", function () {
	this.timeout(30_000);
	const node = useNode();

	it("reads a body sent as a form (curl -d) as JSON when it parses, and says so when it does not", async () => {
		const form = { "Content-Type": "application/x-www-form-urlencoded" };
		const login = await fetch(`${node.url}/a/frontend/session`, { method: "POST", headers: form, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: node.adminPassword } }) });
		assert.equal(login.status, 200, await login.clone().text());
		assert.ok(((await login.json()) as { JWT?: string }).JWT);
		// The query is used, not ignored: a search for a name that matches nothing finds nothing.
		const search = await fetch(`${node.url}/a/search/nodes`, { method: "POST", headers: { ...form, Authorization: `Bearer ${node.admin}` }, body: JSON.stringify({ Query: { FileName: "no-such-file-anywhere" } }) });
		assert.equal(search.status, 200);
		const found = (await search.json()) as { Results?: unknown[]; Total?: number };
		assert.ok(!found.Results?.length);
		// No Content-Type at all (a Blob without type).
		const bare = await fetch(`${node.url}/a/user`, { method: "POST", headers: { Authorization: `Bearer ${node.admin}` }, body: new Blob([JSON.stringify({ Queries: [{ Login: "admin" }] })]) });
		assert.equal(bare.status, 200);
		assert.equal(((await bare.json()) as { Users: { Login: string }[] }).Users[0].Login, "admin");
		const broken = await fetch(`${node.url}/a/user`, { method: "POST", headers: { ...form, Authorization: `Bearer ${node.admin}` }, body: "Queries=admin" });
		assert.equal(broken.status, 400);
		const err = (await broken.json()) as { Code: string; Title: string };
		assert.ok(err.Code && err.Title, JSON.stringify(err));
	});

	it("shows a standard user only other users' public attributes (no failed logins, no lock state)", async () => {
		for (const [login, name] of [["alice", "Alice A"], ["bob", "Bob B"]]) {
			const r = await node.api("PUT", `/a/user/${login}`, { Password: `${login}-Pass-1234`, Attributes: { profile: "standard", displayName: name, email: `${login}@example.org` } }, node.admin);
			assert.equal(r.status, 200, r.text);
		}
		const wrong = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: "alice", password: "wrong-password" } });
		assert.equal(wrong.status, 401);
		const bob = await node.login("bob", "bob-Pass-1234");
		const seen = await node.api("POST", "/a/user", { Queries: [{ Login: "alice" }] }, bob);
		assert.equal(seen.status, 200, seen.text);
		assert.deepEqual(seen.body.Users[0].Attributes, { displayName: "Alice A", profile: "standard", hasEmail: "true" });
		// Their own record, and an administrator's view, keep everything.
		const self = await node.api("POST", "/a/user", { Queries: [{ Login: "bob" }] }, bob);
		assert.equal(self.body.Users[0].Attributes.email, "bob@example.org");
		const byAdmin = await node.api("GET", "/a/user/alice", undefined, node.admin);
		assert.equal(byAdmin.body.Attributes.failedConnections, "1");
		assert.equal((await node.api("GET", "/a/user/alice", undefined, bob)).body.Attributes.failedConnections, undefined);
	});

	it("searches without regard to accents or case: resume finds Résumé, cafe finds a text saying Café", async () => {
		for (const [path, body] of [["common-files/cv/Résumé 2026.txt", "Worked at the Café de Flore"], ["common-files/cv/resume-old.txt", "plain"], ["common-files/cv/other.txt", "nothing here"]]) {
			const r = await fetch(`${node.url}/io/${encodeURI(path)}`, { method: "PUT", headers: { "X-Pydio-Bearer": node.admin }, body });
			assert.equal(r.status, 200, await r.text());
		}
		const paths = async (Query: Record<string, unknown>) => {
			const r = await node.api("POST", "/a/search/nodes", { Query }, node.admin);
			assert.equal(r.status, 200, r.text);
			return ((r.body.Results ?? []) as { Path: string }[]).map((n) => n.Path).sort();
		};
		const until = Date.now() + 10_000;
		while ((await paths({ Content: "cafe" })).length === 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 100));
		assert.deepEqual(await paths({ FileName: "resume" }), ["common-files/cv/Résumé 2026.txt", "common-files/cv/resume-old.txt"]);
		assert.deepEqual(await paths({ FileName: "RÉSUMÉ" }), ["common-files/cv/Résumé 2026.txt", "common-files/cv/resume-old.txt"]);
		assert.deepEqual(await paths({ FileName: "rés*2026*" }), ["common-files/cv/Résumé 2026.txt"]);
		assert.deepEqual(await paths({ Content: "cafe" }), ["common-files/cv/Résumé 2026.txt"]);
		assert.deepEqual(await paths({ Content: "CAFÉ" }), ["common-files/cv/Résumé 2026.txt"]);
	});

	it("reaches the same route with a trailing slash", async () => {
		const r = await node.api("POST", "/a/frontend/session/", { AuthInfo: { type: "credentials", login: "admin", password: node.adminPassword } });
		assert.equal(r.status, 200, r.text);
		const state = await node.api("GET", "/a/frontend/state/", undefined, node.admin);
		assert.equal(state.status, 200);
		const ws = await node.api("GET", "/a/workspace/?x=1", undefined, node.admin);
		assert.notEqual(ws.status, 401);
		assert.equal((await node.api("GET", "/a/no/such/route/", undefined, node.admin)).status, 404);
	});
});

describe("a starting node", function () {
	this.timeout(60_000);

	it("answers 503 with Retry-After until it serves every route, never 404, and prints the banner once it does", async () => {
		const port = await freePort();
		const dataDir = mkdtempSync(join(tmpdir(), "cellar-start-"));
		const proc = startProc("start-test", [], { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, ADMIN_PASSWORD: "Start-Pass-1234", SCRYPT_N: "1024", LOG_LEVEL: "warn", TRANSPORTER: "" });
		const seen = new Map<number, number>();
		try {
			let bannerAt = -1;
			const deadline = Date.now() + 45_000;
			while (Date.now() < deadline) {
				const printed = proc.out.join("").includes("Cellar is installed and ready");
				const r = await fetch(`http://127.0.0.1:${port}/a/frontend/bootconf`).catch(() => null);
				if (r) {
					seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
					if (r.status === 503) assert.equal(r.headers.get("retry-after"), "1");
					await r.arrayBuffer();
				}
				if (printed) {
					bannerAt = Date.now();
					break;
				}
				await new Promise((res) => setTimeout(res, 20));
			}
			assert.ok(bannerAt > 0, `no banner: ${proc.out.join("")}`);
			assert.ok(!seen.has(404), `a 404 during start: ${[...seen].join(" ")}`);
			// Once the banner is out, every service's routes answer: a login works at once.
			const login = await fetch(`http://127.0.0.1:${port}/a/frontend/session`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ AuthInfo: { type: "credentials", login: "admin", password: "Start-Pass-1234" } }) });
			assert.equal(login.status, 200, await login.text());
			const io = await fetch(`http://127.0.0.1:${port}/io/common-files/x.txt`);
			assert.notEqual(io.status, 503);
		} finally {
			proc.child.kill("SIGTERM");
			await new Promise((res) => proc.child.once("exit", res));
			rmSync(dataDir, { recursive: true, force: true });
		}
	});
});
