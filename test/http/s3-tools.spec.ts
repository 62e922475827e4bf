// The /io gateway driven by the real S3 tools people use against it: Debian's aws CLI, rclone and s3cmd (see
// test/helpers/s3tools.ts for their configuration). Trees up and down, server-side copies and moves of a 20 MB
// object, deletes that must never take a folder by its name, and deletes that must leave no empty folder behind.
// Skipped, with the reason printed, when a tool is missing; under CI=true a missing tool fails.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { S3Tools, requireTools } from "../helpers/s3tools";

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

/** Every file under `dir`, by relative path, with the md5 of its content. */
function snapshot(dir: string): Record<string, string> {
	const out: Record<string, string> = {};
	const walk = (d: string) => {
		for (const name of readdirSync(d)) {
			const p = join(d, name);
			if (statSync(p).isDirectory()) walk(p);
			else out[relative(dir, p)] = md5(readFileSync(p));
		}
	};
	walk(dir);
	return out;
}

describe("S3 tools against /io: aws CLI, rclone, s3cmd", function () {
	this.timeout(60_000);
	const node = useNode();
	let token: string;
	let tools: S3Tools;
	let work: string;
	let tree: string;
	let big: string;
	let bigMd5: string;

	const stat = (p: string) => node.api("GET", `/a/tree/stat/${encodeURIComponent(p)}`, undefined, token);
	const exists = async (p: string) => (await stat(p)).status === 200;
	const remoteMd5 = async (key: string) => {
		const r = await fetch(`${node.url}/io/${key.split("/").map(encodeURIComponent).join("/")}`, { headers: { "X-Pydio-Bearer": token } });
		assert.equal(r.status, 200, key);
		return md5(Buffer.from(await r.arrayBuffer()));
	};
	const mkdir = async (p: string) => assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: p, Type: "COLLECTION" }], Recursive: true }, token)).status, 200);
	const fresh = (name: string) => {
		const d = join(work, name);
		rmSync(d, { recursive: true, force: true });
		mkdirSync(d, { recursive: true });
		return d;
	};

	before(async () => {
		token = await addUser(node, node.admin, "tess", "Tess-Pass-12345");
		// The access key is a personal access token: it outlives the session's short JWT.
		const pat = await node.api("POST", "/a/auth/token/personal", { Label: "s3 tools", AutoRefresh: 3600 }, token);
		assert.equal(pat.status, 200, pat.text);
		tools = new S3Tools(node.url, pat.body.AccessToken as string);
		work = mkdtempSync(join(tmpdir(), "cellar-s3tools-work-"));
		tree = join(work, "tree");
		for (const [p, content] of [
			["top.txt", "top\n"],
			["a/f1.txt", "one\n"],
			["a/b/f2.txt", "two\n"],
			["a/b/c/deep.bin", randomBytes(200_000)],
			["notes été/rés umé.txt", "accents and spaces\n"],
		] as const) {
			mkdirSync(join(tree, p, ".."), { recursive: true });
			writeFileSync(join(tree, p), content);
		}
		big = join(work, "big.bin");
		const bytes = randomBytes(20 * 1024 * 1024);
		writeFileSync(big, bytes);
		bigMd5 = md5(bytes);
	});
	after(() => {
		tools?.cleanup();
		if (work) rmSync(work, { recursive: true, force: true });
	});

	describe("aws CLI (Debian's /usr/bin/aws)", function () {
		before(function () {
			requireTools(this, "aws");
		});

		it("copies a tree up and down", async () => {
			await tools.aws("s3", "cp", "--recursive", "--only-show-errors", tree, "s3://io/personal-files/aws-tree/");
			const listed = await tools.aws("s3", "ls", "--recursive", "s3://io/personal-files/aws-tree/");
			assert.equal(listed.stdout.trim().split("\n").length, 5, listed.stdout);
			const down = fresh("aws-down");
			await tools.aws("s3", "cp", "--recursive", "--only-show-errors", "s3://io/personal-files/aws-tree/", down);
			assert.deepEqual(snapshot(down), snapshot(tree));
		});

		it("copies (tags included) and moves a 20 MB object server-side", async () => {
			await tools.aws("s3", "cp", "--only-show-errors", big, "s3://io/personal-files/aws-big/big.bin");
			await tools.aws("s3api", "put-object-tagging", "--bucket", "io", "--key", "personal-files/aws-big/big.bin", "--tagging", "TagSet=[{Key=kind,Value=test}]");
			await tools.aws("s3", "cp", "--only-show-errors", "s3://io/personal-files/aws-big/big.bin", "s3://io/personal-files/aws-big/copy/big.bin");
			assert.equal(await remoteMd5("personal-files/aws-big/copy/big.bin"), bigMd5);
			const tags = JSON.parse((await tools.aws("s3api", "get-object-tagging", "--bucket", "io", "--key", "personal-files/aws-big/copy/big.bin")).stdout) as { TagSet: { Key: string; Value: string }[] };
			assert.deepEqual(tags.TagSet, [{ Key: "kind", Value: "test" }]);
			await tools.aws("s3", "mv", "--only-show-errors", "s3://io/personal-files/aws-big/copy/big.bin", "s3://data/personal-files/aws-big/moved/big.bin");
			assert.equal(await remoteMd5("personal-files/aws-big/moved/big.bin"), bigMd5);
			assert.equal(await exists("personal-files/aws-big/copy"), false, "the moved file's folder went with it");
			assert.equal(await remoteMd5("personal-files/aws-big/big.bin"), bigMd5);
		});

		it("removes nothing when a folder's name is deleted (no --recursive, no trailing slash)", async () => {
			const r = await tools.aws("s3", "rm", "s3://io/personal-files/aws-tree/a");
			assert.match(r.stdout, /delete: s3:\/\/io\/personal-files\/aws-tree\/a/);
			for (const p of ["a/f1.txt", "a/b/f2.txt", "a/b/c/deep.bin"]) assert.ok(await exists(`personal-files/aws-tree/${p}`), p);
		});

		it("rm --recursive leaves no folder behind, empty ones made in Cells or by a marker included", async () => {
			await mkdir("personal-files/aws-tree/made/in-cells");
			await tools.aws("s3api", "put-object", "--bucket", "io", "--key", "personal-files/aws-tree/a/marker/");
			await tools.aws("s3", "rm", "--recursive", "--only-show-errors", "s3://io/personal-files/aws-tree/");
			assert.equal(await exists("personal-files/aws-tree"), false);
			assert.equal((await tools.aws("s3", "ls", "--recursive", "s3://io/personal-files/aws-tree/").catch(() => ({ stdout: "" }))).stdout, "");
		});
	});

	describe("rclone", function () {
		before(function () {
			requireTools(this, "rclone");
		});

		it("copies a tree up and down, making the bucket as it goes (no --s3-no-check-bucket)", async () => {
			await tools.rclone("copy", tree, "cellar:io/personal-files/rc-tree");
			assert.equal((await tools.rclone("lsf", "-R", "--files-only", "cellar:io/personal-files/rc-tree")).stdout.trim().split("\n").length, 5);
			const down = fresh("rc-down");
			await tools.rclone("copy", "cellar:io/personal-files/rc-tree", down);
			assert.deepEqual(snapshot(down), snapshot(tree));
		});

		it("copyto and moveto a 20 MB object server-side", async () => {
			await tools.rclone("copyto", big, "cellar:io/personal-files/rc-big/big.bin");
			const copied = await tools.rclone("copyto", "-v", "cellar:io/personal-files/rc-big/big.bin", "cellar:io/personal-files/rc-big/copy/big.bin");
			assert.match(copied.stderr, /server-side copy/);
			assert.equal(await remoteMd5("personal-files/rc-big/copy/big.bin"), bigMd5);
			const moved = await tools.rclone("moveto", "-v", "cellar:io/personal-files/rc-big/copy/big.bin", "cellar:data/personal-files/rc-big/moved/big.bin");
			assert.match(moved.stderr, /server-side copy/);
			assert.equal(await remoteMd5("personal-files/rc-big/moved/big.bin"), bigMd5);
			assert.equal(await exists("personal-files/rc-big/copy"), false);
			assert.equal(await remoteMd5("personal-files/rc-big/big.bin"), bigMd5);
		});

		it("delete then rmdirs leaves no empty folder, and purge removes a whole tree", async () => {
			await tools.rclone("delete", "cellar:io/personal-files/rc-tree");
			await tools.rclone("rmdirs", "cellar:io/personal-files/rc-tree");
			assert.equal(await exists("personal-files/rc-tree"), false);
			assert.equal((await tools.rclone("lsf", "-R", "cellar:io/personal-files/")).stdout.includes("rc-tree"), false);
			await tools.rclone("copy", tree, "cellar:io/personal-files/rc-purge");
			await tools.rclone("purge", "cellar:io/personal-files/rc-purge");
			assert.equal(await exists("personal-files/rc-purge"), false);
		});
	});

	describe("s3cmd", function () {
		before(function () {
			requireTools(this, "s3cmd");
		});

		it("lists the bucket, puts and gets a tree, and shows a file's info with its ACL", async () => {
			const buckets = await tools.s3cmd("ls");
			assert.match(buckets.stdout, /^\d{4}-\d\d-\d\d \d\d:\d\d\s+s3:\/\/io$/m);
			assert.doesNotMatch(buckets.stdout, /1970/);
			await tools.s3cmd("put", "--recursive", "--no-progress", `${tree}/`, "s3://io/personal-files/s3cmd-tree/");
			const top = await tools.s3cmd("ls", "s3://io/personal-files/s3cmd-tree/");
			assert.match(top.stdout, /DIR\s+s3:\/\/io\/personal-files\/s3cmd-tree\/a\//);
			assert.match(top.stdout, /\s4\s+s3:\/\/io\/personal-files\/s3cmd-tree\/top\.txt/);
			const down = fresh("s3cmd-down");
			await tools.s3cmd("get", "--recursive", "--no-progress", "s3://io/personal-files/s3cmd-tree/", `${down}/`);
			assert.deepEqual(snapshot(down), snapshot(tree));
			const info = await tools.s3cmd("info", "s3://io/personal-files/s3cmd-tree/a/b/c/deep.bin");
			assert.match(info.stdout, /File size:\s+200000/);
			assert.match(info.stdout, /ACL:\s+tess: FULL_CONTROL/);
			assert.match(info.stdout, new RegExp(`MD5 sum:\\s+${md5(readFileSync(join(tree, "a/b/c/deep.bin")))}`));
			const bucket = await tools.s3cmd("info", "s3://io");
			assert.match(bucket.stdout, /ACL:\s+tess: FULL_CONTROL/);
		});

		it("removes nothing by a folder's name, and del --recursive leaves nothing", async () => {
			await tools.s3cmd("del", "s3://io/personal-files/s3cmd-tree/a");
			assert.ok(await exists("personal-files/s3cmd-tree/a/b/c/deep.bin"));
			await tools.s3cmd("del", "--recursive", "s3://io/personal-files/s3cmd-tree/");
			assert.equal(await exists("personal-files/s3cmd-tree"), false);
		});
	});
});
