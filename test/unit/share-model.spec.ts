// lib/share/model: permissions to ACL actions and back, link status over time and downloads, share settings from
// role ACLs (later roles win, bad values ignored), hashes and hidden logins, member READ policies.
import assert from "node:assert/strict";
import { actionsToPermissions, checkCustomHash, checkPermissions, linkStatus, newHash, newHiddenLogin, ownerOf, ownerPolicies, permissionsToActions, presetPassword, settingsFrom, withMemberReads, DEFAULT_SETTINGS } from "../../lib/share/model";

describe("share model", () => {
	it("maps permissions to read/write and rebuilds them as Cells does", () => {
		assert.deepEqual(permissionsToActions(["Preview"]), ["read"]);
		assert.deepEqual(permissionsToActions(["Download", "Upload"]), ["read", "write"]);
		assert.deepEqual(permissionsToActions(["Upload"]), ["write"]);
		assert.deepEqual(permissionsToActions([]), []);
		assert.deepEqual(actionsToPermissions(true, false, "pydio_shared_folder", false), ["Preview", "Download"]);
		assert.deepEqual(actionsToPermissions(true, false, "pydio_unique_dl", false), ["Download"]);
		assert.deepEqual(actionsToPermissions(true, true, "", true), ["Preview", "Upload"]);
		assert.deepEqual(checkPermissions(["Download", "NoAccess", "Download"]), ["Download"]);
		assert.throws(() => checkPermissions(["Admin"]), /Unknown link permission/);
	});

	it("tells a link's status at a time", () => {
		const base = { accessStart: 0, accessEnd: 0, downloadLimit: 0, downloadCount: 0 };
		assert.equal(linkStatus(base, 1000), "ok");
		assert.equal(linkStatus({ ...base, accessStart: 2000 }, 1000), "not-started");
		assert.equal(linkStatus({ ...base, accessEnd: 1000 }, 1000), "expired");
		assert.equal(linkStatus({ ...base, accessEnd: 1001 }, 1000), "ok");
		assert.equal(linkStatus({ ...base, downloadLimit: 2, downloadCount: 2 }, 1000), "exhausted");
		assert.equal(linkStatus({ ...base, downloadLimit: 2, downloadCount: 1 }, 1000), "ok");
	});

	it("reads share settings from parameter:action.share:* ACLs, roles in order", () => {
		const acl = (RoleID: string, name: string, Value: string) => ({ RoleID, Action: { Name: `parameter:action.share:${name}`, Value } });
		const s = settingsFrom(
			[acl("ROOT_GROUP", "ENABLE_FILE_PUBLIC_LINK", "false"), acl("me", "ENABLE_FILE_PUBLIC_LINK", "true"), acl("ROOT_GROUP", "HASH_MIN_LENGTH", "16"), acl("me", "FILE_MAX_DOWNLOAD", "-3"), acl("other", "SHARE_FORCE_PASSWORD", "true"), acl("me", "UNKNOWN", "1")],
			["ROOT_GROUP", "me"],
		);
		assert.equal(s.ENABLE_FILE_PUBLIC_LINK, true);
		assert.equal(s.HASH_MIN_LENGTH, 16);
		assert.equal(s.FILE_MAX_DOWNLOAD, 0);
		assert.equal(s.SHARE_FORCE_PASSWORD, false);
		assert.deepEqual(settingsFrom([], ["me"]), DEFAULT_SETTINGS);
	});

	it("makes hashes, hidden logins and preset passwords; checks custom hashes", () => {
		assert.match(newHash(12), /^[0-9a-f]{12}$/);
		assert.equal(newHash(40).length, 40);
		assert.notEqual(newHash(12), newHash(12));
		assert.match(newHiddenLogin(), /^[0-9a-f]{16}$/);
		assert.equal(presetPassword("abc"), "abc#$!Az1");
		assert.equal(checkCustomHash("my-link_1", 4), "my-link_1");
		assert.throws(() => checkCustomHash("../x", 1));
		assert.throws(() => checkCustomHash("a b", 1));
	});

	it("owner policies name the owner; member reads replace the previous ones", () => {
		const p = ownerPolicies("ws", "u1");
		assert.equal(ownerOf(p), "u1");
		const withMembers = withMemberReads(p, "ws", ["r1", "r2"]);
		assert.equal(withMembers.filter((x) => x.Subject?.startsWith("role:")).length, 2);
		const again = withMemberReads(withMembers, "ws", ["r2"]);
		assert.deepEqual(again.filter((x) => x.Subject?.startsWith("role:")).map((x) => x.Subject), ["role:r2"]);
		assert.equal(again.length, p.length + 1);
	});
});
