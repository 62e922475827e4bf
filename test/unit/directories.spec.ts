// lib/directories against an LDAP server in the test process (test/helpers/ldap): configurations checked
// (host:port, connection, DNs, filter syntax, attributes), the bind password masked in answers and kept when a
// form sends the mask back; ping (bound, wrong password, nothing listening), the user search (filter or login,
// capped, secrets hidden) and password checks across directories (known, refused, unknown, one down).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { DirectoriesAdmin } from "../../lib/directories/admin";
import { checkConfig, MASK, type DirectoryConfig } from "../../lib/directories/model";
import { BASE, BIND_DN, BIND_PW, MemDirectoryStore, startDirectory, type TestDirectory } from "../helpers/ldap";

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
	const s = createServer();
	await new Promise<void>((res) => s.listen(0, "127.0.0.1", () => res()));
	const port = (s.address() as { port: number }).port;
	await new Promise<void>((res) => s.close(() => res()));
	return port;
}

const configFor = (host: string, over: DirectoryConfig = {}): DirectoryConfig => ({
	Host: host,
	Connection: "normal",
	BindDN: BIND_DN,
	BindPW: BIND_PW,
	User: { DNs: [BASE], Filter: "(objectClass=person)", IDAttribute: "uid", DisplayAttribute: "cn" },
	...over,
});

describe("external directories (lib/directories)", function () {
	this.timeout(20_000);
	let ldap: TestDirectory;
	let store: MemDirectoryStore;
	let dirs: DirectoriesAdmin;

	before(async () => {
		ldap = await startDirectory([
			{ uid: "alice", password: "Alice-Ldap-1", cn: "Alice Liddell", mail: "alice@example.org" },
			{ uid: "bob", password: "Bob-Ldap-1" },
			{ uid: "carol*", password: "Carol-Ldap-1" },
		]);
	});
	after(() => ldap.stop());
	beforeEach(() => {
		store = new MemDirectoryStore();
		dirs = new DirectoriesAdmin(store, 2000);
	});

	it("refuses configurations it could not use, saying which field is wrong", () => {
		const bad: [DirectoryConfig, RegExp][] = [
			[configFor("ldap.example.org"), /Host must be "host:port"/],
			[configFor("ldap.example.org:99999"), /Host must be/],
			[configFor("h:389", { Connection: "tls" }), /Connection must be normal, ssl or starttls/],
			[configFor("h:389", { User: { DNs: [], Filter: "(uid=*)", IDAttribute: "uid" } }), /User.DNs needs at least one base DN/],
			[configFor("h:389", { User: { DNs: ["people"], Filter: "(uid=*)", IDAttribute: "uid" } }), /is not a DN/],
			[configFor("h:389", { User: { DNs: [BASE], Filter: "(&(uid=*)", IDAttribute: "uid" } }), /User.Filter is not a valid LDAP filter/],
			[configFor("h:389", { User: { DNs: [BASE], Filter: "uid=*", IDAttribute: "uid" } }), /User.Filter is not a valid LDAP filter/],
			[configFor("h:389", { User: { DNs: [BASE], Filter: "(uid=*)", IDAttribute: "" } }), /User.IDAttribute is required/],
			[configFor("h:389", { User: { DNs: [BASE], Filter: "(uid=*)", IDAttribute: "u id" } }), /not an LDAP attribute name/],
			[configFor("h:389", { User: { DNs: [BASE], Filter: "(uid=*)", IDAttribute: "uid", Scope: "tree" } }), /Scope must be sub, one or base/],
			[configFor("h:389", { BindPW: "" }), /BindPW is required/],
			[configFor("h:389", { DomainName: "../x" }), /DomainName contains forbidden characters/],
			[configFor("h:389", { ConfigId: "other" }), /differs from the ConfigId of the path/],
		];
		for (const [cfg, why] of bad) assert.throws(() => checkConfig(cfg, "main"), why, JSON.stringify(cfg));
		const ok = checkConfig(configFor("[::1]:636", { Connection: "SSL", BindAnonymous: true, BindDN: "", BindPW: "" }), "main");
		assert.equal(ok.Connection, "ssl");
		assert.equal(ok.User.Scope, "sub");
	});

	it("stores the password but shows it masked, keeps it when the mask comes back, replaces it when a new one does", async () => {
		const shown = await dirs.put("main", configFor(ldap.host, { DomainName: "example.org", SyncOnly: false }));
		assert.equal(shown.BindPW, MASK);
		assert.equal("SyncOnly" in shown, false, "zero values are omitted");
		assert.equal(store.rows.get("main")?.BindPW, BIND_PW);
		const [listed] = await dirs.list();
		assert.equal(listed.BindPW, MASK);
		assert.equal(listed.ConfigId, "main");
		await dirs.put("main", { ...listed, DomainName: "corp.example.org" });
		assert.equal(store.rows.get("main")?.BindPW, BIND_PW, "the mask stands for the stored password");
		assert.equal(store.rows.get("main")?.DomainName, "corp.example.org");
		// Another server (or account) gets the stored password only if the request carries it.
		await assert.rejects(dirs.put("main", { ...listed, Host: "other.example.org:389" }), /Host or BindDN differ from the saved directory/);
		await dirs.put("main", { ...listed, Host: "other.example.org:389", BindPW: BIND_PW });
		assert.equal(store.rows.get("main")?.Host, "other.example.org:389");
		await dirs.put("main", { ...listed, BindPW: "New-Secret-2" });
		assert.equal(store.rows.get("main")?.BindPW, "New-Secret-2");
		await assert.rejects(dirs.put("fresh", { ...listed, ConfigId: "fresh" }), /BindPW is masked but no password is stored/);
		await assert.rejects(dirs.put("bad id!", configFor(ldap.host)), /ConfigId must be/);
		await dirs.delete("main");
		await assert.rejects(dirs.delete("main"), { code: 404 });
	});

	it("pings: bound, wrong password, nothing listening", async () => {
		const ok = await dirs.ping(configFor(ldap.host), true);
		assert.equal(ok.Success, true);
		assert.match(JSON.parse(ok.DirectoryResponseJSON).Message, /bound as cn=admin/);
		const wrong = await dirs.ping(configFor(ldap.host, { BindPW: "nope" }), true);
		assert.equal(wrong.Success, false);
		assert.match(JSON.parse(wrong.DirectoryResponseJSON).Error, /LDAP result 49/);
		const port = await closedPort();
		const down = await dirs.ping(configFor(`127.0.0.1:${port}`), true);
		assert.equal(down.Success, false);
		assert.match(JSON.parse(down.DirectoryResponseJSON).Error, /ECONNREFUSED/);
	});

	it("pings with a saved directory's masked password", async () => {
		await dirs.put("main", configFor(ldap.host));
		const [listed] = await dirs.list();
		assert.equal((await dirs.ping(listed, true)).Success, true);
	});

	it("searches the users a configuration finds, narrowed by a filter or a login, capped, secrets hidden", async () => {
		const all = await dirs.search(configFor(ldap.host), undefined);
		assert.equal(all.Success, true);
		const found = JSON.parse(all.DirectoryResponseJSON);
		assert.equal(found.Total, 3);
		const alice = found.Users.find((u: { Login: string }) => u.Login === "alice");
		assert.deepEqual([alice.DN, alice.DisplayName, alice.Attributes.mail], [`uid=alice,${BASE}`, "Alice Liddell", "alice@example.org"]);
		assert.equal(alice.Attributes.userpassword, undefined, "password hashes are not shown");
		const byFilter = JSON.parse((await dirs.search(configFor(ldap.host), { Filter: "(mail=*)" })).DirectoryResponseJSON);
		assert.deepEqual(byFilter.Users.map((u: { Login: string }) => u.Login), ["alice"]);
		const byLogin = JSON.parse((await dirs.search(configFor(ldap.host), { Filter: "bo*" })).DirectoryResponseJSON);
		assert.deepEqual(byLogin.Users.map((u: { Login: string }) => u.Login), ["bob"]);
		// A login is a value, never a piece of filter: this one would otherwise match everyone.
		const injected = await dirs.search(configFor(ldap.host), { Filter: "x)(uid=*" });
		assert.equal(injected.Success, true, injected.DirectoryResponseJSON);
		assert.deepEqual(JSON.parse(injected.DirectoryResponseJSON).Users, []);
		const capped = JSON.parse((await dirs.search(configFor(ldap.host), undefined, 1, 1)).DirectoryResponseJSON);
		assert.deepEqual([capped.Users.length, capped.Total], [1, 3]);
		await assert.rejects(dirs.search(configFor(ldap.host), { Filter: "(mail=*" }), /Filter.Filter is not a valid LDAP filter/);
		const refused = await dirs.search(configFor(ldap.host, { BindPW: "nope" }), undefined);
		assert.equal(refused.Success, false);
		assert.match(JSON.parse(refused.DirectoryResponseJSON).Error, /49/);
	});

	it("checks passwords: known, refused, unknown; a directory that is down does not stop the next", async () => {
		const port = await closedPort();
		await dirs.put("a-down", configFor(`127.0.0.1:${port}`));
		await dirs.put("b-main", configFor(ldap.host, { DomainName: "example.org" }));
		const ok = await dirs.authenticate("alice", "Alice-Ldap-1");
		assert.deepEqual(ok, {
			status: "ok",
			account: { source: "b-main", dn: `uid=alice,${BASE}`, login: "alice", displayName: "Alice Liddell", email: "alice@example.org", groupLabel: "example.org" },
		});
		assert.deepEqual(await dirs.authenticate("alice", "wrong"), { status: "rejected" });
		assert.deepEqual(await dirs.authenticate("alice", ""), { status: "rejected" }, "an empty password is no anonymous bind");
		assert.equal((await dirs.authenticate("nobody", "x")).status, "unavailable", "the directory that is down might have known it");
		assert.deepEqual(await dirs.authenticate("carol", "Carol-Ldap-1", "b-main"), { status: "unknown" }, "a login is matched exactly, never as a pattern");
		assert.equal((await dirs.authenticate("alice", "Alice-Ldap-1", "a-down")).status, "unavailable");
		assert.equal((await dirs.authenticate("alice", "Alice-Ldap-1", "gone")).status, "unavailable");
	});
});
