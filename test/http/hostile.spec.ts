// Issue 7 §6, "what a hostile user found", through the real HTTP API: bans that lock out everyone behind an
// address, account locks anyone can set, scoped tokens used as full identities, slow bodies, roles dropped
// without a word, and archive entries larger than their headers say. The node believes X-Forwarded-For from
// 127.0.0.1 (TRUSTED_PROXIES), so each test speaks from the addresses it needs.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { request as httpRequest } from "node:http";
import { crc32, deflateRawSync } from "node:zlib";
import { useNode, type ApiResponse } from "../helpers/node";
import { craftZip } from "../helpers/crafted-zip";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(fn: () => Promise<ApiResponse>, ok: (r: ApiResponse) => boolean, what: string): Promise<ApiResponse> {
	let last: ApiResponse | undefined;
	for (let i = 0; i < 100; i++) {
		last = await fn();
		if (ok(last)) return last;
		await sleep(30);
	}
	throw new Error(`timed out waiting for ${what}: last answer ${last?.status} ${last?.text}`);
}

/** What a raw connection received, and when the server closed it (ms after the start), if it did within `waitMs`. */
async function rawExchange(port: number, head: string, feed: (s: Socket) => Promise<void>, waitMs: number): Promise<{ text: string; closedAfter?: number }> {
	const started = Date.now();
	const socket = connect(port, "127.0.0.1");
	let text = "";
	let closedAfter: number | undefined;
	socket.on("data", (d) => (text += d.toString("latin1")));
	socket.on("error", () => undefined);
	const closed = new Promise<void>((r) => socket.on("close", () => ((closedAfter = Date.now() - started), r())));
	await new Promise<void>((r) => socket.once("connect", () => r()));
	socket.write(head);
	const feeding = feed(socket).catch(() => undefined);
	await Promise.race([closed, sleep(waitMs)]);
	socket.destroy();
	await feeding;
	return { text, closedAfter };
}

/** Writes one byte every `everyMs` until `n` bytes were sent or the socket closed. */
async function trickle(s: Socket, n: number, everyMs: number): Promise<void> {
	for (let i = 0; i < n && !s.destroyed; i++) {
		await sleep(everyMs);
		if (!s.destroyed) s.write("x");
	}
}

describe("HTTP: what a hostile user found (issue 7 §6)", function () {
	this.timeout(60_000);
	const node = useNode({
		env: {
			TRUSTED_PROXIES: "127.0.0.1",
			IP_BAN_THRESHOLD: "8",
			IP_BAN_WINDOW: "60",
			IP_BAN_DURATION: "600",
			MAX_FAILED_LOGINS: "5",
			LOGIN_DELAY_MAX: "1",
			LOGIN_LOCK_DURATION: "3",
			BODY_TIMEOUT: "2",
			IDLE_TIMEOUT: "2",
		},
	});
	let port: number;
	let alice: string;
	let aliceUuid: string;

	const from = (ip: string) => ({ "X-Forwarded-For": ip });
	const login = (user: string, password: string, ip: string) => node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login: user, password } }, undefined, from(ip));
	const ioPut = (token: string, key: string, body: Buffer | string) => fetch(`${node.url}/io/${key}`, { method: "PUT", headers: { "X-Pydio-Bearer": token }, body: typeof body === "string" ? body : new Uint8Array(body) });

	before(async () => {
		port = Number(new URL(node.url).port);
		for (const [login, password] of [["alice", "Alice-Pass-1234"], ["bob", "Bob-Pass-12345"], ["carol", "Carol-Pass-1234"]]) {
			const r = await node.api("PUT", `/a/user/${login}`, { Password: password, Attributes: { profile: "standard" } }, node.admin);
			assert.equal(r.status, 200, r.text);
		}
		alice = await node.login("alice", "Alice-Pass-1234");
		aliceUuid = (await node.api("GET", "/a/user/alice", undefined, alice)).body.Uuid;
		assert.equal((await ioPut(alice, "common-files/hostile/doc.txt", "the document")).status, 200);
		assert.equal((await ioPut(alice, "common-files/hostile/other.txt", "another file")).status, 200);
	});

	describe("1. an IP ban refuses logins from the address, not the people behind it", () => {
		const attacker = "203.0.113.66";

		it("bans the forwarded client address after failed logins; its valid tokens, other routes and other addresses keep working", async () => {
			// Logins that do not exist: each fails once, so only the address's count grows.
			for (let i = 0; i < 8; i++) assert.equal((await login(`nobody-${i}`, "wrong-password", attacker)).status, 401);
			const banned = await until(() => login("admin", node.adminPassword, attacker), (r) => r.status === 403, "the ban");
			assert.equal(banned.body.Code, "ip.banned");
			// Prepending a made-up hop changes nothing: the proxy's own entry (the right-most) is the address.
			assert.equal((await login("admin", node.adminPassword, `198.51.100.50, ${attacker}`)).status, 403);
			assert.equal((await node.api("PUT", "/a/auth/reset-password-token/alice", {}, undefined, from(attacker))).status, 403);
			assert.equal((await node.api("POST", "/a/auth/reset-password", { ResetPasswordToken: "x", UserLogin: "alice", NewPassword: "whatever-123" }, undefined, from(attacker))).status, 403);

			assert.equal((await node.api("POST", "/a/policy", {}, node.admin, from(attacker))).status, 200, "an administrator's token from the banned address");
			assert.equal((await node.api("GET", "/a/frontend/bootconf", undefined, undefined, from(attacker))).status, 200, "anonymous boot data");
			const io = await fetch(`${node.url}/io/common-files/hostile/doc.txt`, { headers: { "X-Pydio-Bearer": alice, ...from(attacker) } });
			assert.equal(io.status, 200, "/io with a valid token");
			assert.equal((await login("bob", "Bob-Pass-12345", "198.51.100.51")).status, 200, "another address logs in");

			const bans = await node.api("GET", "/a/policy/ipbans", undefined, node.admin);
			const ips = bans.body.Bans.map((b: { IP: string }) => b.IP);
			assert.ok(ips.includes(attacker), JSON.stringify(ips));
			assert.ok(!ips.includes("127.0.0.1"), "the proxy itself is not banned");
		});
	});

	describe("2. a stranger's wrong passwords cost the stranger", () => {
		const home = "198.51.100.7";
		const stranger = "203.0.113.20";

		it("makes the guessing address wait, locks the account against new addresses for LOGIN_LOCK_DURATION, and leaves the owner alone", async () => {
			const carol = await login("carol", "Carol-Pass-1234", home);
			assert.equal(carol.status, 200, carol.text);
			const carolToken = carol.body.JWT as string;

			for (let i = 0; i < 3; i++) assert.equal((await login("carol", `guess-${i}`, stranger)).status, 401);
			const wait = await login("carol", "guess-3", stranger);
			assert.equal(wait.status, 429, wait.text);
			assert.equal(wait.body.Code, "too.many.requests");
			assert.equal(wait.headers.get("retry-after"), "1");
			assert.equal((await login("carol", "Carol-Pass-1234", home)).status, 200, "the owner does not wait for the stranger");
			await sleep(1100);
			assert.equal((await login("carol", "guess-4", stranger)).status, 401, "after its wait, the stranger may try again");
			assert.equal((await login("carol", "guess-5", stranger)).status, 429, "and waits again");

			// Guesses spread over addresses: five failures in a row (since carol's last login) lock the account.
			for (let i = 0; i < 4; i++) assert.equal((await login("carol", `spread-${i}`, `203.0.113.${30 + i}`)).status, 401);
			const locked = await login("carol", "Carol-Pass-1234", stranger);
			assert.equal(locked.status, 401);
			assert.equal(locked.body.Code, "user.locked");
			assert.match(locked.body.Title, /new addresses/);
			assert.equal((await login("carol", "Carol-Pass-1234", "203.0.113.21")).status, 401, "any address carol never used");
			assert.equal((await login("carol", "Carol-Pass-1234", home)).status, 200, "carol, from where she always logs in");
			assert.equal((await node.api("GET", "/a/user/carol", undefined, carolToken)).status, 200, "her sessions were never ended");

			await sleep(3200);
			assert.equal((await login("carol", "Carol-Pass-1234", "203.0.113.21")).status, 200, "the lock lifted by itself");
		});
	});

	describe("3. a scoped token reaches its nodes and nothing else", () => {
		let doc: string;

		before(async () => {
			const r = await node.api("POST", "/a/auth/token/document", { Path: "common-files/hostile/doc.txt" }, alice);
			assert.equal(r.status, 200, r.text);
			doc = r.body.AccessToken;
		});

		it("refuses user, token, search and other non-node routes with 403", async () => {
			const refused: [string, string, unknown][] = [
				["POST", "/a/user", {}],
				["GET", "/a/user/alice", undefined],
				["PUT", "/a/user/alice", { Uuid: aliceUuid, Attributes: { displayName: "owned" } }],
				["POST", "/a/auth/token/personal", { Label: "x", AutoRefresh: 60 }],
				["POST", "/a/auth/tokens", {}],
				["POST", "/a/search/nodes", { Query: { FileName: "doc" } }],
				["POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/hostile/doc.txt" }] }],
				["GET", "/a/frontend/state", undefined],
				["POST", "/a/role", {}],
			];
			for (const [m, p, b] of refused) {
				const r = await node.api(m, p, b, doc);
				assert.equal(r.status, 403, `${m} ${p}: ${r.text}`);
				assert.equal(r.body.Code, "token.scope.route", `${m} ${p}`);
				assert.match(r.body.Title, /limited to some files/);
			}
			assert.equal((await node.api("POST", "/a/user", {}, alice)).status, 200, "the owner's own session is not limited");
		});

		it("reads and writes its node, its metadata and its own session state", async () => {
			assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fhostile%2Fdoc.txt", undefined, doc)).status, 200);
			assert.equal((await node.api("POST", "/a/meta/get/common-files/hostile/doc.txt", {}, doc)).status, 200);
			assert.equal((await node.api("GET", "/a/frontend/auth/state", undefined, doc)).status, 200);
			assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fhostile%2Fother.txt", undefined, doc)).status, 403, "another node: the resolver's refusal");
			assert.equal((await ioPut(doc, "common-files/hostile/doc.txt", "edited")).status, 200);
			assert.equal(await (await fetch(`${node.url}/io/common-files/hostile/doc.txt`, { headers: { "X-Pydio-Bearer": doc } })).text(), "edited");
		});

		it("a scoped personal token is held to the same routes, and a token may revoke itself only", async () => {
			const folder = (await node.api("GET", "/a/tree/stat/common-files%2Fhostile", undefined, alice)).body.Node.Uuid;
			const r = await node.api("POST", "/a/auth/token/personal", { Label: "scoped", AutoRefresh: 3600, Scopes: [`node:${folder}:rw`] }, alice);
			assert.equal(r.status, 200, r.text);
			const pat = r.body.AccessToken as string;
			assert.equal((await node.api("POST", "/a/user", {}, pat)).status, 403);
			assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/hostile/*"] }, pat)).status, 200);
			assert.equal((await node.api("POST", "/a/auth/token/revoke", { TokenId: doc }, pat)).status, 403, "not another token");
			assert.equal((await node.api("POST", "/a/auth/token/revoke", { TokenId: pat }, pat)).status, 200);
			assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fhostile", undefined, pat)).status, 401);
		});
	});

	describe("4. slow bodies", () => {
		it("a JSON body that does not arrive within BODY_TIMEOUT gets a 408 in Cells' shape, and the connection is closed", async () => {
			for (const [path, extra] of [["/a/frontend/session", ""], ["/a/tree/stats", `Authorization: Bearer ${alice}\r\n`]] as const) {
				const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}Content-Length: 100000\r\n\r\n{`;
				const r = await rawExchange(port, head, (s) => trickle(s, 20, 1000), 8000);
				assert.match(r.text, /^HTTP\/1\.1 408 /, `${path}: ${r.text}`);
				const body = JSON.parse(r.text.slice(r.text.indexOf("\r\n\r\n") + 4));
				assert.equal(body.Code, "request.timeout");
				assert.match(body.Detail, /^Request Timeout: /);
				assert.ok(r.closedAfter !== undefined && r.closedAfter < 5000, `${path}: closed after ${r.closedAfter} ms`);
			}
		});

		it("an /io upload may take longer than BODY_TIMEOUT and IDLE_TIMEOUT while bytes keep coming", async () => {
			const head = `PUT /io/common-files/hostile/slow.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pydio-Bearer: ${alice}\r\nContent-Length: 8\r\n\r\n`;
			const r = await rawExchange(port, head, (s) => trickle(s, 8, 600), 10_000);
			assert.match(r.text, /^HTTP\/1\.1 200 /, r.text);
			assert.equal(await (await fetch(`${node.url}/io/common-files/hostile/slow.txt`, { headers: { "X-Pydio-Bearer": alice } })).text(), "xxxxxxxx");
		});

		it("an /io upload that stalls is cut after IDLE_TIMEOUT of silence", async () => {
			const head = `PUT /io/common-files/hostile/stalled.txt HTTP/1.1\r\nHost: x\r\nX-Pydio-Bearer: ${alice}\r\nContent-Length: 1000\r\n\r\nxx`;
			const r = await rawExchange(port, head, async () => undefined, 10_000);
			assert.ok(r.closedAfter !== undefined && r.closedAfter >= 1500 && r.closedAfter < 6000, `closed after ${r.closedAfter} ms`);
			assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fhostile%2Fstalled.txt", undefined, alice)).status, 404, "nothing half-written is indexed");
		});
	});

	describe("5. roles a caller may not assign", () => {
		it("answers 403 for another user's or a group's role, instead of dropping it", async () => {
			const bob = await node.api("GET", "/a/user/bob", undefined, node.admin);
			assert.equal((await node.api("PUT", "/a/user/ops", { IsGroup: true, GroupPath: "/", GroupLabel: "ops" }, node.admin)).status, 200);
			const ops = (await node.api("POST", "/a/user", { Queries: [{ NodeType: "GROUP", FullPath: "/ops" }] }, node.admin)).body.Groups[0];
			const me = await node.api("GET", "/a/user/alice", undefined, alice);
			const shown = me.body.Roles.map((r: { Uuid: string }) => ({ Uuid: r.Uuid }));
			for (const role of [bob.body.Uuid, ops.Uuid]) {
				const r = await node.api("PUT", "/a/user/roles/alice", { Uuid: aliceUuid, Login: "alice", Roles: [...shown, { Uuid: role }] }, alice);
				assert.equal(r.status, 403, r.text);
				assert.equal(r.body.Code, "role.not.assignable");
			}
			assert.equal((await node.api("PUT", "/a/role/hostile-team", { Label: "Team", IsTeam: true }, node.admin)).status, 200);
			const team = await node.api("PUT", "/a/user/roles/alice", { Uuid: aliceUuid, Login: "alice", Roles: [...shown, { Uuid: "hostile-team" }] }, alice);
			assert.equal(team.status, 403, "a role only administrators may give");
			const same = await node.api("PUT", "/a/user/roles/alice", { Uuid: aliceUuid, Login: "alice", Roles: shown }, alice);
			assert.equal(same.status, 200, "the roles she was shown, sent back, are no change");
			const after = await node.api("GET", "/a/user/alice", undefined, node.admin);
			assert.deepEqual(after.body.Roles.map((r: { Uuid: string }) => r.Uuid), me.body.Roles.map((r: { Uuid: string }) => r.Uuid));
		});
	});

	describe("6. archive entries larger than their header says", () => {
		const small = Buffer.from("0123456789".repeat(100));
		const big = Buffer.alloc(3 * 1024 * 1024, "z");

		before(async () => {
			const zip = craftZip([
				{ name: "liar.txt", method: 8, data: deflateRawSync(small), size: 10, crc: crc32(small.subarray(0, 10)) },
				{ name: "big-liar.bin", method: 8, data: deflateRawSync(big), size: 2 * 1024 * 1024, crc: 0 },
				{ name: "stored-liar.txt", method: 0, data: small, size: 10, crc: crc32(small) },
				{ name: "honest.txt", method: 8, data: deflateRawSync(small), size: small.length, crc: crc32(small) },
			]);
			assert.equal((await ioPut(alice, "common-files/hostile/crafted.zip", zip)).status, 200);
		});

		const get = (entry: string) => fetch(`${node.url}/io/common-files/hostile/crafted.zip/${entry}`, { headers: { "X-Pydio-Bearer": alice } });

		it("answers an error the client can read when the lie is found before the answer starts", async () => {
			for (const entry of ["liar.txt", "stored-liar.txt"]) {
				const r = await get(entry);
				assert.equal(r.status, 400, entry);
				assert.match(await r.text(), /<Code>InvalidArgument<\/Code>.*(declared size|size mismatch)/s, entry);
			}
			const ok = await get("honest.txt");
			assert.equal(ok.status, 200);
			assert.deepEqual(Buffer.from(await ok.arrayBuffer()), small);
		});

		it("past the read-ahead, stops short of the declared size and closes: the client sees a truncated body", async () => {
			const { status, declared, received, complete } = await new Promise<{ status: number; declared: number; received: number; complete: boolean }>((resolve, reject) => {
				const req = httpRequest(`${node.url}/io/common-files/hostile/crafted.zip/big-liar.bin`, { headers: { "X-Pydio-Bearer": alice } }, (res) => {
					let received = 0;
					res.on("data", (c: Buffer) => (received += c.length));
					const done = () => resolve({ status: res.statusCode ?? 0, declared: Number(res.headers["content-length"]), received, complete: res.complete });
					res.on("end", done);
					res.on("aborted", done);
					res.on("error", done);
				});
				req.on("error", reject);
				req.end();
			});
			assert.equal(status, 200);
			assert.equal(declared, 2 * 1024 * 1024);
			assert.ok(received < declared, `received ${received} of ${declared}`);
			assert.equal(complete, false);
		});
	});
});
