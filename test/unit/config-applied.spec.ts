// Values of the configuration tree that services apply: read once, dropped by a change that touches them (the
// path, an ancestor or a descendant), a failed read not kept; the converters of the share and upload settings.
import assert from "node:assert/strict";
import { CachedConfig, overlaps } from "../../lib/config-tree/cached";
import { DEFAULT_SETTINGS, settingsFrom, settingsFromConfig } from "../../lib/share/model";
import { uploadMaxFromConfig } from "../../lib/config-tree/schemas";
import { titleFromConfig } from "../../lib/frontend/bootconf";

describe("configuration applied without restart", () => {
	it("tells which changes touch a path", () => {
		assert.ok(overlaps("frontend/plugin/action.share", "frontend/plugin/action.share"));
		assert.ok(overlaps("frontend", "frontend/plugin/action.share"));
		assert.ok(overlaps("frontend/plugin/action.share/FILE_MAX_DOWNLOAD", "frontend/plugin/action.share"));
		assert.ok(!overlaps("frontend/plugin/action.share2", "frontend/plugin/action.share"));
		assert.ok(!overlaps("services/config", "frontend/plugin/action.share"));
	});

	it("reads once, again after a change that touches it, and never keeps a failed read", async () => {
		let reads = 0;
		let fail = false;
		const c = new CachedConfig("a/b", async () => {
			reads++;
			if (fail) throw new Error("down");
			return { n: reads };
		}, (v) => (v as { n: number }).n);
		assert.equal(await c.get(), 1);
		assert.equal(await c.get(), 1);
		c.changed("other");
		assert.equal(await c.get(), 1);
		c.changed("a");
		fail = true;
		await assert.rejects(c.get(), /down/);
		fail = false;
		assert.equal(await c.get(), 3);
		assert.equal(reads, 3);
	});

	it("takes the tree's share settings as defaults that role parameters override", () => {
		const base = settingsFromConfig({ SHARE_FORCE_PASSWORD: true, FILE_MAX_DOWNLOAD: 5, UNKNOWN: 1, HASH_MIN_LENGTH: -3 });
		assert.deepEqual(base, { ...DEFAULT_SETTINGS, SHARE_FORCE_PASSWORD: true, FILE_MAX_DOWNLOAD: 5 });
		assert.deepEqual(settingsFromConfig(null), DEFAULT_SETTINGS);
		const acls = [{ RoleID: "r", Action: { Name: "parameter:action.share:SHARE_FORCE_PASSWORD", Value: "false" } }];
		assert.deepEqual(settingsFrom(acls, ["r"], base), { ...base, SHARE_FORCE_PASSWORD: false });
	});

	it("reads the upload limit and the title", () => {
		assert.equal(uploadMaxFromConfig({ UPLOAD_MAX_SIZE: 1024 }), 1024);
		assert.equal(uploadMaxFromConfig({}), 0);
		assert.equal(uploadMaxFromConfig(null), 0);
		assert.equal(titleFromConfig({ APPLICATION_TITLE: "  Team  " }), "Team");
		assert.equal(titleFromConfig({ APPLICATION_TITLE: "" }), undefined);
	});
});
