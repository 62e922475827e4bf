// i18n dictionaries, the plugins manifest and the admin console menu through the real gateway.
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { EN_US } from "../../lib/frontend/i18n/en-us";

describe("HTTP: frontend messages, plugins and settings menu", function () {
	this.timeout(60_000);
	const node = useNode();
	let dave: string;

	before(async () => {
		dave = await addUser(node, node.admin, "dave", "Some-Pass-1234");
	});

	it("serves the English dictionary as a flat key -> text map, to anonymous callers", async () => {
		const r = await node.api("GET", "/a/frontend/messages/en-us");
		assert.equal(r.status, 200, r.text);
		assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
		assert.equal(r.body["ajax_gui.login.title"], "Log in to Cellar");
		assert.deepEqual(Object.keys(r.body).sort(), Object.keys(EN_US).sort());
	});

	it("serves French, for fr and its regional variants", async () => {
		for (const code of ["fr", "fr-FR", "fr_ca"]) {
			const r = await node.api("GET", `/a/frontend/messages/${code}`);
			assert.equal(r.status, 200);
			assert.equal(r.body["ajax_gui.login.title"], "Connexion à Cellar", code);
			assert.equal(r.body["ajax_gui.action.delete"], "Supprimer");
			assert.equal(r.headers.get("content-language"), "fr");
		}
	});

	it("falls back to English for an unknown language, as Cells", async () => {
		const r = await node.api("GET", "/a/frontend/messages/xx-zz");
		assert.equal(r.status, 200);
		assert.equal(r.body["ajax_gui.login.title"], "Log in to Cellar");
		assert.equal(r.headers.get("content-language"), "en-us");
		assert.equal((await node.api("GET", "/a/frontend/bootconf")).body.availableLanguages.fr, "Français");
	});

	it("lists the plugins of the running services as XML, labels in the asked language", async () => {
		const en = await node.api("GET", "/a/frontend/plugins/en-us");
		assert.equal(en.status, 200);
		assert.match(en.headers.get("content-type") ?? "", /^text\/xml/);
		assert.match(en.text, /^<\?xml/);
		assert.match(en.text, /<ajxp_plugin id="authfront.totp" enabled="true" label="Two-step verification"/);
		assert.match(en.text, /<ajxp_plugin id="action.avatar"[^>]*>.*<param name="MAX_SIZE" value="5242880"\/>/s);
		assert.match(en.text, /id="access.gateway"/);
		const fr = await node.api("GET", "/a/frontend/plugins/fr");
		assert.match(fr.text, /label="Validation en deux étapes"/);
	});

	it("gives the settings menu to admins only", async () => {
		const denied = await node.api("GET", "/a/frontend/settings-menu", undefined, dave);
		assert.equal(denied.status, 403, denied.text);
		assert.equal((await node.api("GET", "/a/frontend/settings-menu")).status, 401);
		const r = await node.api("GET", "/a/frontend/settings-menu", undefined, node.admin);
		assert.equal(r.status, 200, r.text);
		const sections = r.body.Sections as { Key: string; LABEL: string; CHILDREN: { Key: string; LABEL: string; METADATA: { props: string }; Accesses: Record<string, { Policies: { Action: string; Resource: string }[] }> }[] }[];
		assert.deepEqual(sections.map((s) => s.Key), ["people", "data", "system"]);
		const entries = sections.flatMap((s) => s.CHILDREN);
		for (const key of ["users", "roles", "policies", "workspaces", "datasources", "versioning", "update", "license"]) assert.ok(entries.some((e) => e.Key === key), key);
		const users = entries.find((e) => e.Key === "users");
		assert.equal(users?.LABEL, "settings.users");
		assert.ok(users?.Accesses.read.Policies.some((p) => p.Action === "POST" && p.Resource === "rest:/user"));
		assert.deepEqual(JSON.parse(users?.METADATA.props ?? "{}").service, "users");
		// Every label is a key of the dictionaries, so the console can translate it.
		const fr = (await node.api("GET", "/a/frontend/messages/fr")).body;
		for (const s of sections) {
			assert.ok(fr[s.LABEL], s.LABEL);
			for (const e of s.CHILDREN) assert.ok(fr[e.LABEL], e.LABEL);
		}
	});
});

describe("HTTP: settings menu and plugins follow the running services", function () {
	this.timeout(60_000);
	const node = useNode({ services: ["api", "auth", "mfa", "users", "roles", "tokens", "frontend", "install", "policy", "workspaces", "acl", "datasources", "tree"] });

	it("leaves out what the cluster does not run", async () => {
		const admin = await node.login("admin", node.adminPassword);
		const r = await node.api("GET", "/a/frontend/settings-menu", undefined, admin);
		assert.equal(r.status, 200, r.text);
		const keys = (r.body.Sections as { CHILDREN: { Key: string }[] }[]).flatMap((s) => s.CHILDREN.map((c) => c.Key));
		assert.ok(keys.includes("users"));
		assert.ok(!keys.includes("versioning") && !keys.includes("update") && !keys.includes("encryption"), keys.join(","));
		const plugins = await node.api("GET", "/a/frontend/plugins/en-us");
		assert.ok(!plugins.text.includes("action.avatar"));
		assert.ok(!plugins.text.includes("meta.versions"));
	});
});
