// The README's S3 tool set-up, run as printed: its curl commands make a personal access token, its aws, rclone
// and s3cmd configuration files go where it says (under a throwaway HOME), and its commands run against a test
// node. Only the server's address, the password and the `pat_…` placeholder are replaced.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startNode, type TestNode } from "../helpers/node";
import { requireTools, toolPath } from "../helpers/s3tools";

const README = readFileSync(join(__dirname, "..", "..", "README.md"), "utf8");

/** The fenced block that follows `<!-- readme-test: name -->` in the README. */
function block(name: string): string {
	const m = new RegExp(`<!-- readme-test: ${name} -->\\s*\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``).exec(README);
	assert.ok(m, `README has no block ${name}`);
	return m[1];
}

function run(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
	return new Promise((resolve) => {
		execFile("bash", ["-euo", "pipefail", "-c", script], { env, cwd, timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
			resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
		});
	});
}

describe("README: the S3 tool set-up, as printed", function () {
	this.timeout(120_000);
	let node: TestNode;
	let home: string;
	let env: NodeJS.ProcessEnv;
	let token: string;
	const local = (text: string) => text.replaceAll("http://127.0.0.1:8080", node.url).replaceAll("127.0.0.1:8080", new URL(node.url).host);

	before(async function () {
		requireTools(this, "aws", "rclone", "s3cmd");
		node = await startNode();
		home = mkdtempSync(join(tmpdir(), "cellar-readme-"));
		env = {};
		// Nothing of the machine's own tool settings: only what the README tells the user to write.
		for (const [k, v] of Object.entries(process.env)) if (!/^(AWS_|RCLONE_|S3CMD)/.test(k)) env[k] = v;
		// Debian's aws CLI, whatever `aws` is first on PATH here (a pyenv shim on some machines).
		const bin = join(home, "bin");
		mkdirSync(bin);
		writeFileSync(join(bin, "aws"), `#!/bin/sh\nexec ${toolPath("aws")} "$@"\n`, { mode: 0o755 });
		Object.assign(env, { HOME: home, PATH: `${bin}:${process.env.PATH}`, AWS_PAGER: "", AWS_EC2_METADATA_DISABLED: "true" });
		mkdirSync(join(home, "tree", "sub"), { recursive: true });
		writeFileSync(join(home, "tree", "a.txt"), "alpha\n");
		writeFileSync(join(home, "tree", "sub", "b.bin"), Buffer.alloc(300_000, 7));
	});
	after(async () => {
		if (home) rmSync(home, { recursive: true, force: true });
		if (node) await node.stop();
	});

	it("makes a personal access token with the README's curl commands", async () => {
		const script = local(block("token")).replace("YOUR-PASSWORD", node.adminPassword);
		const r = await run(script, env, home);
		assert.equal(r.code, 0, r.stderr);
		token = JSON.parse(r.stdout.trim()).AccessToken;
		assert.match(token, /^pat_/);
	});

	const write = (path: string, name: string) => {
		mkdirSync(dirname(join(home, path)), { recursive: true });
		writeFileSync(join(home, path), local(block(name)).replaceAll("pat_…", token), { mode: 0o600 });
	};
	const files = async (prefix: string) => {
		const r = await node.api("POST", "/a/meta/bulk/get", { NodePaths: [`personal-files/${prefix}/*`] }, token);
		assert.equal(r.status, 200, r.text);
		return (r.body.Nodes as { Path: string }[]).map((n) => n.Path.split("/").pop()).sort();
	};

	it("aws: the README's config files and commands", async () => {
		write(".aws/config", "aws-config");
		write(".aws/credentials", "aws-credentials");
		const r = await run(local(block("aws-commands")), env, home);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /a\.txt/);
		assert.deepEqual(await files("tree"), ["a.txt", "sub"]);
	});

	it("rclone: the README's config file and commands (sync, then check)", async () => {
		write(".config/rclone/rclone.conf", "rclone-config");
		const r = await run(local(block("rclone-commands")), env, home);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stderr, /0 differences found/);
		assert.deepEqual(await files("tree-rclone"), ["a.txt", "sub"]);
	});

	it("s3cmd: the README's config file and commands", async () => {
		write(".s3cfg", "s3cmd-config");
		const r = await run(local(block("s3cmd-commands")), env, home);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /sub\/b\.bin/);
		assert.deepEqual(await files("tree-s3cmd"), ["a.txt", "sub"]);
	});
});
