// The real rclone (Debian's /usr/bin/rclone) against /io: a second `rclone sync` of an unchanged tree transfers
// nothing, and `rclone check` verifies every file, multipart ones included. rclone keeps a file's modification
// time in x-amz-meta-mtime and the md5 of a multipart upload (whose ETag is no md5) in x-amz-meta-md5chksum: a
// server that drops them gets every file copied again on every run.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";

const RCLONE = "/usr/bin/rclone";

interface Run {
	code: number;
	out: string;
}

describe("HTTP: rclone sync and check against /io", function () {
	this.timeout(180_000);
	let node: TestNode;
	let token: string;
	let work: string;
	let local: string;

	before(async function () {
		if (!existsSync(RCLONE)) {
			// CI installs rclone: there its absence is a failure, elsewhere a reason to skip.
			if (process.env.CI === "true") throw new Error(`${RCLONE} is missing: CI must install rclone (apt-get install rclone)`);
			console.log(`      skipped: ${RCLONE} is not installed`);
			this.skip();
		}
		node = await startNode();
		token = await node.login("admin", node.adminPassword);
		work = mkdtempSync(join(tmpdir(), "cellar-rclone-"));
		local = join(work, "tree");
		mkdirSync(join(local, "docs", "deep"), { recursive: true });
		writeFileSync(join(local, "readme.txt"), "hello rclone\n");
		writeFileSync(join(local, "docs", "a.json"), JSON.stringify({ a: 1 }));
		writeFileSync(join(local, "docs", "deep", "notes en français.md"), "# notes\n".repeat(100));
		writeFileSync(join(local, "empty.dat"), "");
		// Above the multipart cutoff given below: three parts of 5 MB, 5 MB and ~2 MB.
		const big = Buffer.alloc(12 * 1024 * 1024 + 12345);
		for (let i = 0; i + 4 <= big.length; i += 4096) big.writeUInt32BE(i ^ 0x5a5a5a5a, i);
		writeFileSync(join(local, "docs", "big.bin"), big);
		// Times with sub-second parts, as file systems have them: rclone compares them to the nanosecond.
		const t = new Date(Date.UTC(2023, 5, 1, 12, 0, 0, 250));
		for (const f of ["readme.txt", "docs/a.json", "docs/deep/notes en français.md", "empty.dat", "docs/big.bin"]) utimesSync(join(local, f), t, t);
	});
	after(async () => {
		if (work) rmSync(work, { recursive: true, force: true });
		if (node) await node.stop();
	});

	function rclone(...args: string[]): Promise<Run> {
		// The caller's AWS_* and RCLONE_* settings are not this test's (an AWS_CA_BUNDLE makes rclone's SDK fail even
		// on plain http).
		const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_") && !k.startsWith("RCLONE_")));
		const env = {
			...inherited,
			RCLONE_CONFIG: join(work, "rclone.conf"),
			RCLONE_CONFIG_CELLAR_TYPE: "s3",
			RCLONE_CONFIG_CELLAR_PROVIDER: "Other",
			RCLONE_CONFIG_CELLAR_ACCESS_KEY_ID: token,
			RCLONE_CONFIG_CELLAR_SECRET_ACCESS_KEY: "gatewaysecret",
			RCLONE_CONFIG_CELLAR_ENDPOINT: node.url,
			RCLONE_CONFIG_CELLAR_REGION: "us-east-1",
			RCLONE_CONFIG_CELLAR_FORCE_PATH_STYLE: "true",
		};
		// The same flags on every run: a 1 MB multipart cutoff with 5 MB parts puts big.bin in three parts.
		const flags = ["--s3-upload-cutoff", "1M", "--s3-chunk-size", "5M", "--retries", "1", "--low-level-retries", "1"];
		return new Promise((resolve) => {
			execFile(RCLONE, [...args, ...flags], { env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
				resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` });
			});
		});
	}

	/** "Transferred: N / M, …" (the file count line of rclone's final stats), N. */
	function filesTransferred(out: string): number {
		const m = /Transferred:\s+(\d+) \/ \d+, /.exec(out);
		return m ? Number(m[1]) : 0;
	}

	const remote = "cellar:io/personal-files/synced";

	it("uploads a tree, then a second sync of it transfers nothing and changes nothing", async () => {
		const first = await rclone("sync", local, remote, "-v");
		assert.equal(first.code, 0, first.out);
		assert.equal(filesTransferred(first.out), 5, first.out);
		const second = await rclone("sync", local, remote, "-v");
		assert.equal(second.code, 0, second.out);
		assert.equal(filesTransferred(second.out), 0, `nothing to transfer:\n${second.out}`);
		assert.doesNotMatch(second.out, /Copied|Updated|Deleted|server-side/i, second.out);
		assert.match(second.out, /Checks:\s+5 \/ 5/, second.out);
		// The multipart file's md5 is stored with it: the listing shows what rclone will compare against.
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent("personal-files/synced/docs/big.bin")}`, undefined, token);
		assert.equal(stat.status, 200, stat.text);
		assert.match(stat.body.Node.Etag, /-3$/, "uploaded in three parts");
	});

	it("verifies every file with rclone check, multipart ones by their stored md5", async () => {
		const check = await rclone("check", local, remote);
		assert.equal(check.code, 0, check.out);
		assert.match(check.out, /0 differences found/, check.out);
		assert.match(check.out, /5 matching files/, check.out);
		assert.doesNotMatch(check.out, /hash(es)? (could not be checked|missing)|md5 differ|differences found.*[1-9]/i, check.out);
		// --download reads the bytes back: the content itself matches, not only the hashes.
		const download = await rclone("check", local, remote, "--download");
		assert.equal(download.code, 0, download.out);
		assert.match(download.out, /0 differences found/, download.out);
	});

	it("syncs a change: only the changed files travel, and the next run is quiet again", async () => {
		writeFileSync(join(local, "readme.txt"), "hello again, rclone\n");
		const t = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
		utimesSync(join(local, "readme.txt"), t, t);
		// A touched multipart file with the same bytes: only its time is set, server-side, nothing uploaded.
		utimesSync(join(local, "docs", "big.bin"), t, t);
		const changed = await rclone("sync", local, remote, "-v");
		assert.equal(changed.code, 0, changed.out);
		assert.equal(filesTransferred(changed.out), 1, changed.out);
		const quiet = await rclone("sync", local, remote, "-v");
		assert.equal(quiet.code, 0, quiet.out);
		assert.equal(filesTransferred(quiet.out), 0, quiet.out);
		assert.doesNotMatch(quiet.out, /Copied|Updated/i, quiet.out);
		const check = await rclone("check", local, remote);
		assert.match(check.out, /0 differences found/, check.out);
	});
});
