// GET /license/stats' counts (lib/update/license): kept a short while, counted again when ForceRefresh asks or
// once they are older than the TTL; the answer in the caller's language.
import assert from "node:assert/strict";
import { LicenseStats } from "../../lib/update/license";
import type { StoreStats } from "../../lib/db/stats";

describe("lib/update license stats", () => {
	const running = { name: "cellar", version: "1.2.3", license: "AGPL-3.0-or-later" };
	let now = 1_000_000;
	let users = 0;
	let collected = 0;
	const collect = async (): Promise<StoreStats> => {
		collected++;
		return { users, groups: 0, workspaces: 2, cells: 0, files: 0, folders: 0, filesBytes: 0, versionsBytes: 0 };
	};

	it("answers kept counts within the TTL, counts again with ForceRefresh or after it", async () => {
		const l = new LicenseStats(running, collect, 30_000, () => now);
		users = 1;
		assert.equal((await l.answer({ peers: 2 })).ActiveUsers, "1");
		users = 5;
		now += 10_000;
		const kept = await l.answer({ peers: 3 });
		assert.equal(kept.ActiveUsers, "1", "kept");
		assert.equal(kept.ActivePeers, "3", "peers are always live");
		assert.equal(collected, 1);
		assert.equal((await l.answer({ peers: 3, force: true })).ActiveUsers, "5");
		assert.equal(collected, 2);
		users = 7;
		now += 30_000;
		assert.equal((await l.answer({ peers: 3 })).License.Features.Users, "7", "expired");
		assert.equal(collected, 3);
	});

	it("names the license in the caller's language", async () => {
		const l = new LicenseStats(running, collect);
		assert.match((await l.answer({ peers: 1, lang: "fr" })).License.AccountName, /logiciel libre/);
		assert.match((await l.answer({ peers: 1 })).License.AccountName, /free software/);
	});
});
