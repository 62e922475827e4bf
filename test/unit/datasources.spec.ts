import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker } from "moleculer";
import type { Identity } from "../../lib/auth/identity";
import { cleanResolvedPath, parseResolution, resolveVirtualPath, splitResolved } from "../../lib/datasources/resolution";
import { checkDataSourceName, normalizeDataSource, normalizeVirtualNode, workspacesUsing, type DataSource } from "../../lib/datasources/model";
import { allowedLocalRoots, resolveLocalFolder } from "../../lib/datasources/local";
import { bucketFilter, describeS3Error } from "../../lib/datasources/s3";
import { startS3rver, type TestS3 } from "../helpers/s3rver";

const alice = { Login: "alice", Uuid: "u-alice", GroupPath: "/team/dev" };

describe("lib/datasources/resolution", () => {
	it("resolves Cells' default scripts", () => {
		assert.equal(resolveVirtualPath('Path = DataSources.personal + "/" + User.Name;', alice), "personal/alice");
		assert.equal(resolveVirtualPath('Path = DataSources.cellsdata + "/" + User.Name;', alice), "cellsdata/alice");
	});
	it("accepts every user field, single quotes, bracket access, comments, no semicolon and blanks", () => {
		assert.equal(resolveVirtualPath("Path = DataSources.personal + '/' + User.Login", alice), "personal/alice");
		assert.equal(resolveVirtualPath('Path=DataSources.pydiods1+"/users/"+User.Uuid;', alice), "pydiods1/users/u-alice");
		assert.equal(resolveVirtualPath('Path = DataSources.pydiods1 + "/groups" + User.GroupPath + "/" + User.Name;', alice), "pydiods1/groups/team/dev/alice");
		assert.equal(resolveVirtualPath('Path = DataSources["personal"] + "/" + User.Name;', alice), "personal/alice");
		assert.equal(resolveVirtualPath('// my files\nPath = /* ds */ DataSources.personal\n  + "/" + User.Name ;\n', alice), "personal/alice");
		assert.equal(resolveVirtualPath('Path = DataSources.personal + "/a\\"b";', alice), 'personal/a"b');
		assert.equal(resolveVirtualPath('Path = DataSources.personal + "/\\u00e9t\\u00e9";', alice), "personal/été");
	});
	it("normalises slashes (a root GroupPath makes no double slash) and allows the datasource root", () => {
		assert.equal(resolveVirtualPath('Path = DataSources.personal + "/" + User.GroupPath + "/" + User.Name;', { Login: "bob", GroupPath: "/" }), "personal/bob");
		assert.equal(resolveVirtualPath("Path = DataSources.personal;", alice), "personal");
		assert.deepEqual(splitResolved("personal/alice/x"), { datasource: "personal", path: "alice/x" });
		assert.deepEqual(splitResolved("personal"), { datasource: "personal", path: "" });
	});
	it("lists the datasources a script refers to", () => {
		assert.deepEqual(parseResolution('Path = DataSources.a1 + "/" + DataSources.b2 + DataSources.a1;').dataSources, ["a1", "b2"]);
	});
	it("refuses anything that is not a Path = concatenation", () => {
		const bad = [
			"",
			"   ",
			"Path = ;",
			'Path = DataSources.personal + "/" + User.Name; Path = "x";',
			'Path == DataSources.personal;',
			'Other = DataSources.personal;',
			'Path = DataSources.personal + "/" + User.Password;',
			'Path = DataSources.personal + "/" + User.Name.toUpperCase();',
			'Path = DataSources.personal + "/" + require("fs");',
			'Path = DataSources.personal + "/" + process.env.HOME;',
			"Path = DataSources.personal + `/${User.Name}`;",
			'Path = DataSources.personal - "/";',
			'Path = DataSources.personal + "/" +;',
			'Path = DataSources.Personal;',
			'Path = DataSources["../etc"];',
			'Path = (DataSources.personal);',
			'Path = DataSources.personal + "unterminated;',
			'Path = DataSources.personal + "/\\n";',
			'Path = DataSources.personal + "/\\x41";',
			'Path = DataSources.personal /* open',
			'Path = DataSources.personal + 1;',
			"x".repeat(5000),
		];
		for (const s of bad) assert.throws(() => parseResolution(s), { code: 400 }, JSON.stringify(s.slice(0, 60)));
	});
	it("refuses resolved paths with traversal, NUL or nothing in them", () => {
		assert.throws(() => resolveVirtualPath('Path = DataSources.personal + "/../etc";', alice), { code: 400 });
		assert.throws(() => resolveVirtualPath('Path = DataSources.personal + "/./x";', alice), { code: 400 });
		assert.throws(() => resolveVirtualPath('Path = DataSources.personal + "/" + User.Name;', { Login: "../x" }), { code: 400 });
		assert.throws(() => resolveVirtualPath('Path = DataSources.personal + "/" + User.Name;', { Login: "a\u0000b" }), { code: 400 });
		assert.throws(() => resolveVirtualPath('Path = "/" + "/";', alice), { code: 400 });
		assert.throws(() => resolveVirtualPath('Path = DataSources.personal + "/" + User.Uuid;', { Login: "x" }), { code: 400 });
		assert.throws(() => cleanResolvedPath("a/b\u0001"), { code: 400 });
		assert.equal(cleanResolvedPath("//a//b/"), "a/b");
	});
});

describe("lib/datasources/model and local", () => {
	it("checks datasource names", () => {
		assert.equal(checkDataSourceName("pydiods1"), "pydiods1");
		for (const bad of ["", "Upper", "with-dash", "a/b", "..", "a b", "x".repeat(65), "é"]) assert.throws(() => checkDataSourceName(bad), { code: 400 }, bad);
		assert.equal(checkDataSourceName("x".repeat(64)).length, 64);
	});
	it("normalises a LOCAL datasource and refuses unsupported storage or encryption", () => {
		const ds = normalizeDataSource({ StorageConfiguration: { folder: "data1" }, FlatStorage: true, VersioningPolicyName: "default-policy" }, "data1", null, 1000);
		assert.deepEqual(ds, { Name: "data1", Disabled: false, StorageType: "LOCAL", StorageConfiguration: { folder: "data1" }, FlatStorage: true, EncryptionMode: "CLEAR", CreationDate: 1000, VersioningPolicyName: "default-policy" });
		assert.throws(() => normalizeDataSource({ StorageType: "AZURE" }, "x"), /storage type AZURE is not supported/);
		assert.throws(() => normalizeDataSource({ EncryptionMode: "MASTER" }, "x"), /needs an EncryptionKey/);
		// Clients cannot make a datasource internal, nor change the format of an existing one.
		assert.equal(normalizeDataSource({ StorageConfiguration: { folder: "x", cellsInternal: "true" } }, "x").StorageConfiguration!.cellsInternal, undefined);
		assert.throws(() => normalizeDataSource({ FlatStorage: false }, "x", { ...ds, Name: "x" }), { code: 400 });
		// An update keeps the creation date and the folder when none is sent.
		const upd = normalizeDataSource({ FlatStorage: true }, "data1", ds, 2000);
		assert.equal(upd.CreationDate, 1000);
		assert.equal(upd.StorageConfiguration!.folder, "data1");
	});
	it("normalises an S3 datasource: bucket and keys required, stored secret kept for the same key", () => {
		const input: Partial<DataSource> = { StorageType: "S3", ObjectsBucket: "my-bucket", ApiKey: "K", ApiSecret: "S", StorageConfiguration: { customEndpoint: "http://127.0.0.1:9000", customRegion: "eu-west-1" } };
		const ds = normalizeDataSource(input, "s3ds");
		assert.equal(ds.ApiSecret, "S");
		assert.throws(() => normalizeDataSource({ ...input, ObjectsBucket: "Bad_Bucket" }, "s3ds"), { code: 400 });
		assert.throws(() => normalizeDataSource({ ...input, ApiKey: "" }, "s3ds"), /ApiKey is required/);
		assert.throws(() => normalizeDataSource({ ...input, ApiSecret: undefined }, "s3ds"), /ApiSecret is required/);
		assert.equal(normalizeDataSource({ ...input, ApiSecret: undefined }, "s3ds", ds).ApiSecret, "S");
		assert.throws(() => normalizeDataSource({ ...input, ApiKey: "K2", ApiSecret: undefined }, "s3ds", ds), /ApiSecret is required/);
		assert.throws(() => normalizeDataSource({ ...input, StorageConfiguration: { customEndpoint: "ftp://x" } }, "s3ds"), { code: 400 });
		assert.throws(() => normalizeDataSource({ ...input, ObjectsBaseFolder: "a/../b" }, "s3ds"), { code: 400 });
	});
	it("keeps LOCAL folders under DATA_DIR or ALLOWED_LOCAL_FOLDERS", () => {
		const data = "/srv/cellar-data";
		assert.equal(resolveLocalFolder("pydiods1", data, []), "/srv/cellar-data/pydiods1");
		assert.equal(resolveLocalFolder("a/b", data, []), "/srv/cellar-data/a/b");
		assert.equal(resolveLocalFolder("/srv/cellar-data/x", data, []), "/srv/cellar-data/x");
		assert.equal(resolveLocalFolder("/mnt/nas/share", data, ["/mnt/nas"]), "/mnt/nas/share");
		assert.equal(resolveLocalFolder("/mnt/nas", data, ["/mnt/nas"]), "/mnt/nas");
		for (const bad of ["/etc", "../x", "a/../../x", "/srv/cellar-data", ".", "db", "db/x", "outbox", ".hidden", "/mnt/nasty", "a\u0000b", ""]) {
			assert.throws(() => resolveLocalFolder(bad, data, ["/mnt/nas"]), { code: 400 }, bad);
		}
		// An allowed root that contains DATA_DIR does not open DATA_DIR's own files.
		assert.throws(() => resolveLocalFolder("/srv", data, ["/srv"]), { code: 400 });
		assert.throws(() => resolveLocalFolder("/srv/cellar-data/db", data, ["/srv"]), { code: 400 });
		assert.deepEqual(allowedLocalRoots("/mnt/a, /mnt/b:relative"), ["/mnt/a", "/mnt/b"]);
	});
	it("validates virtual nodes and finds the workspaces using a datasource", () => {
		const { node } = normalizeVirtualNode({ MetaStore: { resolution: JSON.stringify('Path = DataSources.pydiods1 + "/shared/" + User.Name;') } }, "shared-home");
		assert.equal(node.Path, "shared-home");
		assert.equal(node.MetaStore.name, '"shared-home"');
		assert.equal(node.MetaStore.contentType, '"text/javascript"');
		// A raw (not JSON-encoded) script is accepted and stored encoded.
		assert.equal(normalizeVirtualNode({ MetaStore: { resolution: "Path = DataSources.a + User.Name;" } }, "v").node.MetaStore.resolution, JSON.stringify("Path = DataSources.a + User.Name;"));
		assert.throws(() => normalizeVirtualNode({ MetaStore: {} }, "v"), { code: 400 });
		assert.throws(() => normalizeVirtualNode({ MetaStore: { resolution: '"Path = \\"x/\\" + User.Name;"' } }, "v"), { code: 400 });
		assert.throws(() => normalizeVirtualNode({ MetaStore: { resolution: '"Path = DataSources.a;"', onDelete: '"explode"' } }, "v"), { code: 400 });
		assert.throws(() => normalizeVirtualNode({ MetaStore: { resolution: '"Path = DataSources.a;"' } }, "../v"), { code: 400 });
		const acls = [
			{ WorkspaceID: "w1", NodeID: "DATASOURCE:pydiods1", Action: { Name: "workspace-path", Value: "pydiods1" } },
			{ WorkspaceID: "w2", NodeID: "n2", Action: { Name: "workspace-path", Value: "data2/projects" } },
			{ WorkspaceID: "w3", NodeID: "n3", Action: { Name: "workspace-path", Value: "data22/projects" } },
		];
		assert.deepEqual(workspacesUsing("pydiods1", acls), ["w1"]);
		assert.deepEqual(workspacesUsing("data2", acls), ["w2"]);
		assert.deepEqual(workspacesUsing("data", acls), []);
	});
	it("describes S3 errors", () => {
		assert.equal(describeS3Error({ name: "NotFound", message: "UnknownError", $metadata: { httpStatusCode: 404 } }), "NotFound (HTTP 404): the bucket does not exist");
		assert.equal(describeS3Error({ name: "InvalidAccessKeyId", message: "The key is unknown", $metadata: { httpStatusCode: 403 } }), "InvalidAccessKeyId (HTTP 403): The key is unknown");
	});
	it("filters buckets by a regular expression, a 400 for one that does not compile", () => {
		assert.equal(bucketFilter(undefined), undefined);
		assert.equal(bucketFilter(""), undefined);
		assert.deepEqual(["fresh-1", "old", "fresh2"].filter((b) => bucketFilter("^fresh")!.test(b)), ["fresh-1", "fresh2"]);
		assert.throws(() => bucketFilter("("), (e: { code?: number; message?: string }) => e.code === 400 && /Invalid BucketsRegexp/.test(e.message ?? ""));
	});
});

describe("datasources service", function () {
	this.timeout(30_000);
	let broker: ServiceBroker;
	let dataDir: string;
	let outside: string;
	const events: Record<string, unknown>[] = [];
	const rootAcls: { WorkspaceID: string; NodeID: string; Action: { Name: string; Value: string } }[] = [];
	const savedEnv = { DATA_DIR: process.env.DATA_DIR, ALLOWED_LOCAL_FOLDERS: process.env.ALLOWED_LOCAL_FOLDERS, CELLAR_DEFAULT_DS_STRUCT: process.env.CELLAR_DEFAULT_DS_STRUCT };
	const admin: Identity = { Uuid: "u1", Login: "admin", Profile: "admin", GroupPath: "/", Roles: ["ROOT_GROUP"], TokenKind: "session", ExpiresAt: 2e9 };
	const bob: Identity = { Uuid: "u2", Login: "bob", Profile: "standard", GroupPath: "/", Roles: ["ROOT_GROUP", "u2"], TokenKind: "session", ExpiresAt: 2e9 };
	const call = <T = any>(action: string, params: object = {}, user: Identity | null = admin) => broker.call<T, object>(`datasources.${action}`, params, { meta: { user } });

	let s3: TestS3 | undefined;
	let s3Endpoint = "";

	before(async () => {
		dataDir = mkdtempSync(join(tmpdir(), "cellar-ds-"));
		outside = mkdtempSync(join(tmpdir(), "cellar-ds-outside-"));
		process.env.DATA_DIR = dataDir;
		process.env.ALLOWED_LOCAL_FOLDERS = join(outside, "allowed");
		delete process.env.CELLAR_DEFAULT_DS_STRUCT;
		broker = new ServiceBroker({ logger: false, validator: true });
		broker.createService({
			name: "acl",
			actions: {
				find: {
					params: { Actions: { type: "array", optional: true, items: "string" } },
					handler: (ctx: { params: { Actions?: string[] } }) => rootAcls.filter((a) => !ctx.params.Actions || ctx.params.Actions.includes(a.Action.Name)),
				},
			},
		});
		broker.createService({ name: "listener", events: { "datasources.changed"(ctx: { params: Record<string, unknown> }) { events.push(ctx.params); } } });
		broker.loadService(join(__dirname, "../../services/datasources.service.ts"));
		await broker.start();

		s3 = await startS3rver();
		s3Endpoint = s3.endpoint;
		await s3.createBucket("cellar-bucket");
	});
	after(async () => {
		await broker.stop();
		await s3?.stop();
		for (const [k, v] of Object.entries(savedEnv)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		for (const d of [dataDir, outside]) rmSync(d, { recursive: true, force: true });
	});

	it("creates the Cells defaults at start: five LOCAL datasources with their folders, two virtual nodes", async () => {
		const list: DataSource[] = await call("list");
		assert.deepEqual(list.map((d) => d.Name), ["cellsdata", "personal", "pydiods1", "thumbnails", "versions"]);
		const main = list.find((d) => d.Name === "pydiods1")!;
		assert.equal(main.StorageType, "LOCAL");
		assert.equal(main.FlatStorage, true);
		assert.equal(main.StorageConfiguration!.folder, "pydiods1");
		assert.equal(list.find((d) => d.Name === "thumbnails")!.StorageConfiguration!.folder, "thumbs");
		assert.equal(list.find((d) => d.Name === "versions")!.StorageConfiguration!.cellsInternal, "true");
		assert.equal(list.find((d) => d.Name === "personal")!.StorageConfiguration!.cellsInternal, undefined);
		for (const f of ["pydiods1", "personal", "cellsdata", "versions", "thumbs"]) assert.ok(statSync(join(dataDir, f)).isDirectory(), f);
		const vns: any[] = await call("virtualNodes");
		assert.deepEqual(vns.map((v) => v.Uuid), ["cells", "my-files"]);
		const my = vns.find((v) => v.Uuid === "my-files");
		assert.deepEqual(my, {
			Uuid: "my-files",
			Path: "my-files",
			Type: "COLLECTION",
			MetaStore: { name: '"my-files"', resolution: JSON.stringify('Path = DataSources.personal + "/" + User.Name;'), contentType: '"text/javascript"', onDelete: '"rename-uuid"' },
		});
		// Idempotent.
		assert.deepEqual(await call("ensureDefaults"), { Created: [] });
	});

	it("resolves virtual nodes for a user", async () => {
		assert.deepEqual(await call("resolveVirtual", { uuid: "my-files", user: { Login: "alice", Uuid: "ua", GroupPath: "/" } }), { datasource: "personal", path: "alice" });
		assert.deepEqual(await call("resolveVirtual", { uuid: "cells", user: { Login: "alice" } }), { datasource: "cellsdata", path: "alice" });
		await assert.rejects(call("resolveVirtual", { uuid: "nope", user: { Login: "alice" } }), { code: 404 });
		await assert.rejects(call("resolveVirtual", { uuid: "my-files", user: { Login: "../x" } }), { code: 400 });
	});

	it("REST actions are for administrators only", async () => {
		await assert.rejects(call("listDataSources", {}, bob), { code: 403 });
		await assert.rejects(call("listDataSources", {}, null), { code: 401 });
		await assert.rejects(call("putDataSource", { Name: "x" }, bob), { code: 403 });
		await assert.rejects(call("listVirtualNodes", {}, bob), { code: 403 });
	});

	it("creates, reads, updates and lists a LOCAL datasource; its folder is created", async () => {
		events.length = 0;
		const ds = await call("putDataSource", { Name: "data2", StorageConfiguration: { folder: "stores/data2" }, FlatStorage: true, VersioningPolicyName: "default-policy" });
		assert.equal(ds.Name, "data2");
		assert.equal(ds.StorageType, "LOCAL");
		assert.ok(ds.CreationDate > 0);
		assert.ok(statSync(join(dataDir, "stores/data2")).isDirectory());
		assert.deepEqual(events, [{ name: "data2" }]);
		const got = await call("getDataSource", { Name: "data2" });
		assert.equal(got.StorageConfiguration.folder, "stores/data2");
		const upd = await call("putDataSource", { Name: "data2", StorageConfiguration: { folder: "stores/data2" }, FlatStorage: true, Disabled: true });
		assert.equal(upd.Disabled, true);
		assert.equal(upd.CreationDate, ds.CreationDate);
		assert.equal(upd.VersioningPolicyName, undefined);
		const list = await call("listDataSources");
		assert.equal(list.Total, 6);
		assert.ok(list.DataSources.some((d: DataSource) => d.Name === "data2"));
		await assert.rejects(call("getDataSource", { Name: "missing" }), { code: 404 });
		await assert.rejects(call("get", { name: "missing" }), { code: 404 });
	});

	it("refuses bad names, unsupported storage, encryption, folders outside the allowed places and overlaps", async () => {
		for (const name of ["Bad", "a-b", "x".repeat(65), "../x"]) await assert.rejects(call("putDataSource", { Name: name }), { code: 400 }, name);
		await assert.rejects(call("putDataSource", { Name: "az", StorageType: "AZURE" }), /storage type AZURE is not supported/);
		await assert.rejects(call("putDataSource", { Name: "enc", EncryptionMode: "MASTER" }), /needs an EncryptionKey/);
		await assert.rejects(call("putDataSource", { Name: "etc", StorageConfiguration: { folder: "/etc/cellar" } }), { code: 400 });
		await assert.rejects(call("putDataSource", { Name: "up", StorageConfiguration: { folder: "../up" } }), { code: 400 });
		await assert.rejects(call("putDataSource", { Name: "dbdir", StorageConfiguration: { folder: "db" } }), { code: 400 });
		await assert.rejects(call("putDataSource", { Name: "inner", StorageConfiguration: { folder: "pydiods1/inner" } }), /overlaps the folder of datasource pydiods1/);
		await assert.rejects(call("putDataSource", { Name: "outer", StorageConfiguration: { folder: "stores" } }), /overlaps the folder of datasource data2/);
		// Through a symbolic link inside DATA_DIR that points outside.
		mkdirSync(join(outside, "elsewhere"), { recursive: true });
		symlinkSync(join(outside, "elsewhere"), join(dataDir, "link"));
		await assert.rejects(call("putDataSource", { Name: "linked", StorageConfiguration: { folder: "link/x" } }), /outside the allowed places/);
		assert.equal(existsSync(join(outside, "elsewhere", "x")), false); // refused before anything is created
		await assert.rejects(call("get", { name: "linked" }), { code: 404 });
	});

	it("accepts an absolute folder under ALLOWED_LOCAL_FOLDERS", async () => {
		const folder = join(outside, "allowed", "nas1");
		const ds = await call("putDataSource", { Name: "nas1", StorageConfiguration: { folder }, FlatStorage: true });
		assert.equal(ds.StorageConfiguration.folder, folder);
		assert.ok(statSync(folder).isDirectory());
	});

	it("refuses to delete the default, internal and in-use datasources; deletes others without touching data", async () => {
		await assert.rejects(call("deleteDataSource", { Name: "pydiods1" }), { code: 403 });
		await assert.rejects(call("deleteDataSource", { Name: "versions" }), { code: 403 });
		await assert.rejects(call("deleteDataSource", { Name: "thumbnails" }), { code: 403 });
		await assert.rejects(call("deleteDataSource", { Name: "personal" }), (e: any) => e.code === 409 && /virtual node my-files/.test(e.message));
		await assert.rejects(call("deleteDataSource", { Name: "missing" }), { code: 404 });
		await assert.rejects(call("deleteDataSource", { Name: "data2" }, bob), { code: 403 });
		rootAcls.push({ WorkspaceID: "ws-projects", NodeID: "node-x", Action: { Name: "workspace-path", Value: "data2/projects" } });
		await assert.rejects(call("deleteDataSource", { Name: "data2" }), (e: any) => e.code === 409 && /used by workspace ws-projects/.test(e.message));
		rootAcls.length = 0;
		rootAcls.push({ WorkspaceID: "ws-root", NodeID: "DATASOURCE:data2", Action: { Name: "workspace-path", Value: "DATASOURCE:data2" } });
		await assert.rejects(call("deleteDataSource", { Name: "data2" }), { code: 409 });
		rootAcls.length = 0;
		events.length = 0;
		assert.deepEqual(await call("deleteDataSource", { Name: "data2" }), { Success: true });
		assert.deepEqual(events, [{ name: "data2" }]);
		await assert.rejects(call("get", { name: "data2" }), { code: 404 });
		assert.ok(statSync(join(dataDir, "stores/data2")).isDirectory());
	});

	it("creates, lists, resolves and deletes a virtual node", async () => {
		events.length = 0;
		const script = 'Path = DataSources.pydiods1 + "/homes/" + User.Login;';
		const node = await call("putVirtualNode", { Uuid: "homes", Type: "COLLECTION", MetaStore: { name: '"Homes"', resolution: JSON.stringify(script) } });
		assert.equal(node.Uuid, "homes");
		assert.equal(node.Path, "homes");
		assert.equal(node.MetaStore.name, '"Homes"');
		assert.deepEqual(events, [{ virtualNode: "homes" }]);
		assert.deepEqual(await call("resolveVirtual", { uuid: "homes", user: { Login: "carol" } }), { datasource: "pydiods1", path: "homes/carol" });
		const listed = await call("listVirtualNodes");
		assert.deepEqual(listed.Children.map((c: any) => c.Uuid), ["cells", "homes", "my-files"]);
		// Bad scripts and unknown datasources are refused.
		await assert.rejects(call("putVirtualNode", { Uuid: "evil", MetaStore: { resolution: JSON.stringify('Path = require("child_process").execSync("id");') } }), { code: 400 });
		await assert.rejects(call("putVirtualNode", { Uuid: "ghost", MetaStore: { resolution: JSON.stringify("Path = DataSources.ghost + User.Name;") } }), /unknown datasource/);
		await assert.rejects(call("putVirtualNode", { Uuid: "a/b", MetaStore: { resolution: JSON.stringify(script) } }), { code: 400 });
		// Protected, unknown, in use.
		await assert.rejects(call("deleteVirtualNode", { Uuid: "my-files" }), { code: 403 });
		await assert.rejects(call("deleteVirtualNode", { Uuid: "cells" }), { code: 403 });
		await assert.rejects(call("deleteVirtualNode", { Uuid: "nope" }), { code: 404 });
		rootAcls.push({ WorkspaceID: "ws-homes", NodeID: "homes", Action: { Name: "workspace-path", Value: "homes" } });
		await assert.rejects(call("deleteVirtualNode", { Uuid: "homes" }), { code: 409 });
		rootAcls.length = 0;
		assert.deepEqual(await call("deleteVirtualNode", { Uuid: "homes" }), { Success: true });
		await assert.rejects(call("resolveVirtual", { uuid: "homes", user: { Login: "carol" } }), { code: 404 });
	});

	describe("S3 (s3rver)", () => {
		const s3ds = () => ({ StorageType: "S3", ObjectsBucket: "cellar-bucket", ApiKey: "S3RVER", ApiSecret: "S3RVER", StorageConfiguration: { customEndpoint: s3Endpoint } });

		it("creates an S3 datasource when the bucket is reachable; never returns the secret", async () => {
			const ds = await call("putDataSource", { Name: "s3data", ...s3ds(), FlatStorage: true });
			assert.equal(ds.StorageType, "S3");
			assert.equal(ds.ObjectsBucket, "cellar-bucket");
			assert.equal(ds.ApiKey, "S3RVER");
			assert.equal(ds.ApiSecret, undefined);
			assert.equal((await call("getDataSource", { Name: "s3data" })).ApiSecret, undefined);
			assert.ok(!(await call("listDataSources")).DataSources.some((d: DataSource) => d.ApiSecret));
			// Internal consumers get it.
			assert.equal((await call("get", { name: "s3data" })).ApiSecret, "S3RVER");
			// An update without the secret keeps it.
			const upd = await call("putDataSource", { Name: "s3data", ...s3ds(), ApiSecret: undefined, FlatStorage: true, Disabled: true });
			assert.equal(upd.Disabled, true);
			assert.equal((await call("get", { name: "s3data" })).ApiSecret, "S3RVER");
		});

		it("answers 400 with the S3 error when the bucket or the keys are wrong", async () => {
			await assert.rejects(call("putDataSource", { Name: "s3missing", ...s3ds(), ObjectsBucket: "no-such-bucket" }), (e: any) => e.code === 400 && /no-such-bucket/.test(e.message) && /404|NotFound/.test(e.message));
			await assert.rejects(call("putDataSource", { Name: "s3badkey", ...s3ds(), ApiKey: "WRONG", ApiSecret: "WRONG" }), (e: any) => e.code === 400 && /Cannot reach bucket/.test(e.message));
			await assert.rejects(call("putDataSource", { Name: "s3down", ...s3ds(), StorageConfiguration: { customEndpoint: "http://127.0.0.1:1" } }), { code: 400 });
			await assert.rejects(call("get", { name: "s3missing" }), { code: 404 });
		});

		it("lists and creates buckets", async () => {
			const created = await call("createBucket", { BucketName: "fresh-bucket", DataSource: s3ds() });
			assert.deepEqual(created, { Success: true, BucketName: "fresh-bucket" });
			const all = await call("listBuckets", { DataSource: s3ds() });
			assert.deepEqual(all.Children.map((c: any) => c.Path), ["cellar-bucket", "fresh-bucket"]);
			assert.equal(all.Children[0].Type, "COLLECTION");
			assert.ok(all.Children[0].MTime > 0);
			const filtered = await call("listBuckets", { DataSource: s3ds(), BucketsRegexp: "^fresh" });
			assert.deepEqual(filtered.Children.map((c: any) => c.Path), ["fresh-bucket"]);
			// A stored datasource sent back without its secret still works.
			const again = await call("listBuckets", { DataSource: { ...s3ds(), Name: "s3data", ApiSecret: undefined } });
			assert.equal(again.Children.length, 2);
			await assert.rejects(call("listBuckets", { DataSource: { ...s3ds(), ApiSecret: undefined } }), { code: 400 });
			await assert.rejects(call("listBuckets", { DataSource: { StorageType: "LOCAL" } }), { code: 400 });
			await assert.rejects(call("listBuckets", { DataSource: s3ds(), BucketsRegexp: "(" }), { code: 400 });
			await assert.rejects(call("createBucket", { BucketName: "Bad_Name", DataSource: s3ds() }), { code: 400 });
			await assert.rejects(call("createBucket", { BucketName: "other", DataSource: s3ds() }, bob), { code: 403 });
		});
	});
});

describe("datasources service: structured default", function () {
	this.timeout(20_000);
	it("makes pydiods1 structured when CELLAR_DEFAULT_DS_STRUCT=true", async () => {
		const saved = { DATA_DIR: process.env.DATA_DIR, S: process.env.CELLAR_DEFAULT_DS_STRUCT };
		const dataDir = mkdtempSync(join(tmpdir(), "cellar-ds-struct-"));
		process.env.DATA_DIR = dataDir;
		process.env.CELLAR_DEFAULT_DS_STRUCT = "true";
		const broker = new ServiceBroker({ logger: false, validator: true });
		broker.loadService(join(__dirname, "../../services/datasources.service.ts"));
		try {
			await broker.start();
			const main = await broker.call<DataSource, object>("datasources.get", { name: "pydiods1" });
			assert.equal(main.FlatStorage, false);
			assert.equal((await broker.call<DataSource, object>("datasources.get", { name: "personal" })).FlatStorage, true);
		} finally {
			await broker.stop();
			if (saved.DATA_DIR === undefined) delete process.env.DATA_DIR;
			else process.env.DATA_DIR = saved.DATA_DIR;
			if (saved.S === undefined) delete process.env.CELLAR_DEFAULT_DS_STRUCT;
			else process.env.CELLAR_DEFAULT_DS_STRUCT = saved.S;
			rmSync(dataDir, { recursive: true, force: true });
		}
	});
});
