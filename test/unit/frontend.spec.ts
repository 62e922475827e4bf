import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import FrontendService from "../../services/frontend.service";
import type { Identity } from "../../lib/auth/identity";
import type { AccessibleWorkspace } from "../../lib/frontend/state";
import { toXml, escapeAttr } from "../../lib/frontend/xml";

const VERSION = (JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as { version: string }).version;

const admin: Identity = { Uuid: "u-admin", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP", "ADMINS", "u-admin"], TokenKind: "session", ExpiresAt: 2e9 };
const bob: Identity = { ...admin, Uuid: "u-bob", Login: "bob", Profile: "standard", Roles: ["ROOT_GROUP", "u-bob"] };
const guest: Identity = { ...admin, Uuid: "u-guest", Login: "guest", Profile: "shared", Roles: ["ROOT_GROUP", "u-guest"] };

const BOOTCONF_KEYS = [
	"ajxpResourcesFolder",
	"ENDPOINT_REST_API",
	"ENDPOINT_S3_GATEWAY",
	"ENDPOINT_WEBSOCKET",
	"PUBLIC_BASEURI",
	"zipEnabled",
	"multipleFilesDownloadEnabled",
	"customWording",
	"usersEnabled",
	"loggedUser",
	"currentLanguage",
	"session_timeout",
	"client_timeout",
	"client_timeout_warning",
	"availableLanguages",
	"usersEditable",
	"ajxpVersion",
	"ajxpVersionDate",
	"i18nMessages",
	"theme",
	"ajxpImagesCommon",
	"validMailer",
	"backend",
].sort();

describe("frontend service", () => {
	const broker = new ServiceBroker({ logger: false });
	const asked: string[][] = [];
	const byRoles: Record<string, AccessibleWorkspace[]> = {
		"u-admin": [
			{ UUID: "ws-common", Slug: "common-files", Label: "Common Files", Description: "Files shared by everyone", Scope: "ADMIN", Access: "rw" },
			{ UUID: "ws-personal", Slug: "personal-files", Label: "My Files", Description: "", Scope: "ADMIN", Access: "rw" },
			{ UUID: "ws-cell", Slug: "project-x", Label: `R&D <"x"> 'cell'`, Description: "a]]>b", Scope: "ROOM", Access: "r" },
			{ UUID: "ws-link", Slug: "link-1", Label: "A link", Scope: "LINK", Access: "r" },
		],
		"u-bob": [{ UUID: "ws-common", Slug: "common-files", Label: "Common Files", Scope: "ADMIN", Access: "r" }],
		"u-guest": [{ UUID: "ws-cell", Slug: "project-x", Label: "Project X", Scope: "ROOM", Access: "rw" }],
	};
	before(async () => {
		broker.createService(FrontendService);
		broker.createService({
			name: "workspaces",
			actions: {
				accessible: {
					params: { roles: { type: "array", items: "string" } },
					handler(ctx) {
						const roles = (ctx.params as { roles: string[] }).roles;
						asked.push(roles);
						return byRoles[roles.at(-1) ?? ""] ?? [];
					},
				},
			},
		});
		await broker.start();
	});
	after(() => broker.stop());

	async function call(action: string, params: object, user: Identity | null) {
		const meta: Record<string, unknown> = { user };
		const out = await broker.call<string, object>(`frontend.${action}`, params, { meta });
		return { out, type: meta.$responseType as string | undefined };
	}

	it("serves bootconf as a JSON string with exactly Cells' keys", async () => {
		const { out, type } = await call("bootconf", {}, null);
		assert.equal(typeof out, "string");
		assert.match(type!, /^application\/json/);
		const conf = JSON.parse(out);
		assert.deepEqual(Object.keys(conf).sort(), BOOTCONF_KEYS);
		assert.equal(conf.ENDPOINT_REST_API, "/a");
		assert.equal(conf.ENDPOINT_S3_GATEWAY, "/io");
		assert.equal(conf.ENDPOINT_WEBSOCKET, "/ws/event");
		assert.equal(conf.PUBLIC_BASEURI, "/public");
		assert.equal(conf.ajxpResourcesFolder, "plug/gui.ajax/res");
		assert.equal(conf.loggedUser, false);
		assert.equal(conf.currentLanguage, "en-us");
		assert.equal(conf.theme, "material");
		assert.equal(conf.customWording.title, "Cellar");
		assert.deepEqual(Object.keys(conf.customWording).sort(), ["icon", "iconBinary", "loginLegend", "loginTitle", "title"]);
		assert.equal(conf.client_timeout_warning, 3);
		assert.equal(typeof conf.session_timeout, "number");
		assert.deepEqual(conf.availableLanguages, { "en-us": "English", fr: "Français" });
		assert.ok(Object.keys(conf.i18nMessages).length >= 10);
		for (const v of Object.values(conf.i18nMessages)) assert.equal(typeof v, "string");
		assert.equal(conf.validMailer, false);
		assert.equal(conf.backend.PackageType, "cellar");
		assert.equal(conf.backend.PackageLabel, "Cellar");
		assert.equal(conf.backend.License, "agplv3");
		assert.equal(conf.backend.ServerOffset, -new Date().getTimezoneOffset() * 60 || 0);
	});

	it("hides the version from anonymous callers behind its md5", async () => {
		const anon = JSON.parse((await call("bootconf", {}, null)).out);
		const md5 = createHash("md5").update(VERSION).digest("hex");
		assert.equal(anon.ajxpVersion, md5);
		assert.equal(anon.backend.Version, md5);
		assert.ok(!JSON.stringify(anon).includes(`"${VERSION}"`));
		const logged = JSON.parse((await call("bootconf", {}, bob)).out);
		assert.equal(logged.ajxpVersion, VERSION);
		assert.equal(logged.backend.Version, VERSION);
		assert.match(logged.ajxpVersionDate, /^\d{4}-\d\d-\d\d$/);
		assert.equal(logged.loggedUser, false);
	});

	it("serves an anonymous state without a user node and without asking for workspaces", async () => {
		asked.length = 0;
		const { out, type } = await call("state", {}, null);
		assert.equal(type, "text/xml; charset=utf-8");
		assert.ok(out.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<pydio_registry>'));
		assert.ok(!out.includes("<user"));
		assert.ok(out.includes('<action name="login"/>'));
		assert.equal(asked.length, 0);
	});

	it("lists an admin's workspaces with their rights, escaped", async () => {
		asked.length = 0;
		const { out } = await call("state", {}, admin);
		assert.deepEqual(asked, [admin.Roles]);
		assert.ok(out.includes('<user id="admin">'));
		assert.ok(out.includes('<active_repo id="homepage" write="0" read="1"/>'));
		assert.ok(
			out.includes(
				'<repo id="ws-common" access_type="gateway" repositorySlug="common-files" acl="rw" repository_type="workspace" allowCrossRepositoryCopy="true"><label>Common Files</label><description>Files shared by everyone</description><client_settings/></repo>',
			),
		);
		assert.ok(out.includes('repositorySlug="personal-files" acl="rw" repository_type="workspace-personal"'));
		assert.ok(out.includes('<repo id="ws-cell" access_type="gateway" repositorySlug="project-x" acl="r" repository_type="cell" owner="shared" user_editable_repository="true">'));
		assert.ok(out.includes("<label>R&amp;D &lt;\"x\"&gt; 'cell'</label>"));
		assert.ok(out.includes("<description>a]]&gt;b</description>"));
		assert.ok(!out.includes("ws-link"), "a public link's workspace is not listed");
		assert.ok(out.includes('<repo id="settings" access_type="settings"'));
		assert.ok(out.includes('<special_rights is_admin="1"/>'));
		assert.ok(out.includes('<preferences><pref name="lang" value="en-us"/></preferences>'));
	});

	it("opens the workspace named by ws, by uuid or slug", async () => {
		assert.ok((await call("state", { ws: "common-files" }, admin)).out.includes('<active_repo id="ws-common" write="1" read="1"/>'));
		assert.ok((await call("state", { ws: "ws-cell" }, admin)).out.includes('<active_repo id="ws-cell" write="0" read="1"/>'));
		assert.ok((await call("state", { ws: "unknown" }, admin)).out.includes('<active_repo id="homepage"'));
	});

	it("gives standard users no admin rights and shared users no home page", async () => {
		const b = (await call("state", {}, bob)).out;
		assert.ok(b.includes('acl="r" repository_type="workspace"'));
		assert.ok(!b.includes("allowCrossRepositoryCopy"));
		assert.ok(!b.includes("special_rights"));
		assert.ok(!b.includes('id="settings"'));
		const g = (await call("state", {}, guest)).out;
		assert.ok(!g.includes('id="homepage"'));
		assert.ok(g.includes('<active_repo id="ws-cell" write="1" read="1"/>'));
	});

	it("returns only the part named by XPath", async () => {
		const { out } = await call("state", { XPath: "user/repositories" }, admin);
		assert.ok(out.includes('<pydio_registry_part xPath="user/repositories"><repositories>'));
		assert.ok(!out.includes("<user"));
		await assert.rejects(call("state", { XPath: "//repo[@id='x']" }, admin), { code: 400 });
	});

	it("refuses malformed parameters with a 400", async () => {
		await assert.rejects(call("state", { ws: "../etc" }, admin), { code: 400 });
		await assert.rejects(call("state", { ws: "a\u0000b" }, admin), { code: 400 });
		await assert.rejects(call("state", { lang: "<script>" }, admin), { code: 400 });
		assert.ok((await call("state", { lang: "de" }, admin)).out.includes('<pref name="lang" value="en-us"/>'));
		assert.ok((await call("state", { lang: "fr" }, admin)).out.includes('<pref name="lang" value="fr"/>'));
	});

	it("answers the login connectors and the caller's auth state", async () => {
		const c = await broker.call("frontend.loginConnectors", {});
		assert.deepEqual(c, { Connectors: [{ Id: "pydio", Name: "Cellar", Type: "pydio" }] });
		assert.deepEqual(await broker.call("frontend.authState", {}, { meta: { user: null } }), { Logged: false, Connectors: ["pydio"] });
		const s = await broker.call<Record<string, unknown>, object>("frontend.authState", {}, { meta: { user: bob } });
		assert.equal(s.Logged, true);
		assert.equal(s.Login, "bob");
		assert.equal(s.Profile, "standard");
	});
});

describe("xml writer", () => {
	it("escapes attributes and text and drops characters XML cannot carry", () => {
		assert.equal(toXml({ name: "a", attrs: { v: `<"&'>\n` }, children: ["x\u0001<y>"] }), '<a v="&lt;&quot;&amp;&apos;&gt;&#10;">x&lt;y&gt;</a>');
		assert.equal(escapeAttr("\uffff\ud800ok"), "ok");
		assert.equal(toXml({ name: "p", cdata: "a]]>b" }), "<p><![CDATA[a]]]]><![CDATA[>b]]></p>");
		assert.throws(() => toXml({ name: "bad name" }));
	});
});
