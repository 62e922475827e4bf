// ShareLinksRepo on SQLite and PostgreSQL: a link reads back by hash, workspace and hidden login; hash, workspace
// and hidden user are each unique (ConflictError); an update may change the hash but never the count; downloads
// are counted up to the limit and no further, also when many arrive at once.
import assert from "node:assert/strict";
import { ShareLinksRepo, type LinkRecord } from "../../lib/db/share-links";
import { ConflictError } from "../../lib/errors";
import { onEveryBackend } from "../helpers/db";

function link(n: string, over: Partial<LinkRecord> = {}): LinkRecord {
	return {
		hash: `hash${n}`,
		workspace: `ws-${n}`,
		ownerUuid: "owner-1",
		ownerLogin: "alice",
		template: "pydio_shared_folder",
		accessStart: 0,
		accessEnd: 0,
		downloadLimit: 0,
		downloadCount: 0,
		userUuid: `user-${n}`,
		userLogin: `login${n}`,
		passwordRequired: false,
		createdAt: 1_700_000_000,
		extra: {},
		...over,
	};
}

onEveryBackend("ShareLinksRepo", (h) => {
	let repo: ShareLinksRepo;
	before(() => {
		repo = new ShareLinksRepo(h().db);
	});

	it("reads a link back by hash, workspace and hidden login; null when unknown", async () => {
		const a = link("a", { passwordRequired: true, accessEnd: 2_000_000_000, downloadLimit: 3, extra: { DownloadDisabled: true, TargetUsers: { x: { Display: "X" } } } });
		await repo.create(a);
		assert.deepEqual(await repo.byHash("hasha"), a);
		assert.deepEqual(await repo.byWorkspace("ws-a"), a);
		assert.deepEqual(await repo.byUserLogin("logina"), a);
		assert.equal(await repo.byHash("nope"), null);
		assert.ok((await repo.all()).some((l) => l.hash === "hasha"));
	});

	it("refuses a second link with the same hash, workspace or hidden user", async () => {
		await repo.create(link("b"));
		await assert.rejects(repo.create(link("c", { hash: "hashb" })), (e: unknown) => e instanceof ConflictError && (e as ConflictError).type === "link.hash.exists");
		await assert.rejects(repo.create(link("c", { workspace: "ws-b" })), ConflictError);
		await assert.rejects(repo.create(link("c", { userLogin: "loginb" })), ConflictError);
	});

	it("updates a link, its hash included, without touching the download count", async () => {
		await repo.create(link("d", { downloadLimit: 5 }));
		assert.equal(await repo.countDownload("logind"), "counted");
		assert.equal(await repo.update(link("d", { hash: "hashd2", template: "pydio_unique_dl", downloadLimit: 9, downloadCount: 0 }), "hashd"), true);
		assert.equal(await repo.byHash("hashd"), null);
		const got = await repo.byHash("hashd2");
		assert.equal(got?.template, "pydio_unique_dl");
		assert.equal(got?.downloadLimit, 9);
		assert.equal(got?.downloadCount, 1);
		assert.equal(await repo.update(link("zz"), "hashzz"), false);
	});

	it("counts downloads up to the limit, even when they arrive together", async () => {
		await repo.create(link("e", { downloadLimit: 3 }));
		const outcomes = await Promise.all(Array.from({ length: 8 }, () => repo.countDownload("logine")));
		assert.equal(outcomes.filter((o) => o === "counted").length, 3);
		assert.equal(outcomes.filter((o) => o === "exhausted").length, 5);
		assert.equal((await repo.byHash("hashe"))?.downloadCount, 3);
		await repo.create(link("f"));
		for (let i = 0; i < 4; i++) assert.equal(await repo.countDownload("loginf"), "counted");
		assert.equal(await repo.countDownload("nobody"), "unknown");
	});

	it("deletes a link by hash", async () => {
		await repo.create(link("g"));
		assert.equal(await repo.delete("hashg"), true);
		assert.equal(await repo.delete("hashg"), false);
		assert.equal(await repo.byWorkspace("ws-g"), null);
	});
});
