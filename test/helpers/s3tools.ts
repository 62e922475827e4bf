// The real S3 command-line tools, Debian's aws CLI (/usr/bin/aws: `aws` on PATH may be another one), rclone and
// s3cmd, pointed at a test node's /io with throwaway configuration files and a throwaway HOME, so that nothing of
// the machine's own configuration (~/.aws, ~/.config/rclone, ~/.s3cfg, AWS_* variables) takes part.
import { execFile } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

export type ToolName = "aws" | "rclone" | "s3cmd";

export interface ToolRun {
	code: number;
	stdout: string;
	stderr: string;
}

/** Where a tool is, or null: Debian's aws CLI only at /usr/bin/aws, the others on PATH. */
export function toolPath(name: ToolName): string | null {
	const candidates = name === "aws" ? ["/usr/bin/aws"] : (process.env.PATH ?? "").split(delimiter).filter(Boolean).map((d) => join(d, name));
	for (const c of candidates) {
		try {
			accessSync(c, constants.X_OK);
			return c;
		} catch {
			// not there: the next one
		}
	}
	return null;
}

/**
 * In a `before` hook: skips the suite when a tool is missing, with the reason printed; under CI=true a missing tool
 * fails instead (.ci/run installs them), so that CI never passes without having run these tests.
 */
export function requireTools(ctx: Mocha.Context, ...names: ToolName[]): void {
	const missing = names.filter((n) => !toolPath(n));
	if (!missing.length) return;
	const reason = `${missing.join(", ")} not installed (apt-get install -y awscli rclone s3cmd)`;
	if (process.env.CI === "true") throw new Error(`CI=true: ${reason}`);
	console.log(`      skipped: ${reason}`);
	ctx.skip();
}

/** The three tools configured for one node and one access key (a token), secret gatewaysecret, path-style. */
export class S3Tools {
	readonly home: string;
	readonly rcloneConfig: string;
	readonly s3cmdConfig: string;
	readonly awsConfig: string;
	private readonly env: NodeJS.ProcessEnv;

	constructor(
		readonly endpoint: string,
		accessKey: string,
	) {
		this.home = mkdtempSync(join(tmpdir(), "cellar-s3tools-"));
		const host = new URL(endpoint).host;
		this.awsConfig = join(this.home, "aws-config");
		writeFileSync(this.awsConfig, ["[default]", "region = us-east-1", "s3 =", "    addressing_style = path", ""].join("\n"));
		const awsCredentials = join(this.home, "aws-credentials");
		writeFileSync(awsCredentials, ["[default]", `aws_access_key_id = ${accessKey}`, "aws_secret_access_key = gatewaysecret", ""].join("\n"), { mode: 0o600 });
		this.rcloneConfig = join(this.home, "rclone.conf");
		writeFileSync(
			this.rcloneConfig,
			["[cellar]", "type = s3", "provider = Other", `access_key_id = ${accessKey}`, "secret_access_key = gatewaysecret", `endpoint = ${endpoint}`, "region = us-east-1", "force_path_style = true", ""].join("\n"),
			{ mode: 0o600 },
		);
		this.s3cmdConfig = join(this.home, "s3cfg");
		writeFileSync(
			this.s3cmdConfig,
			["[default]", `access_key = ${accessKey}`, "secret_key = gatewaysecret", `host_base = ${host}`, `host_bucket = ${host}`, "use_https = False", "signature_v2 = False", "bucket_location = us-east-1", ""].join("\n"),
			{ mode: 0o600 },
		);
		const env: NodeJS.ProcessEnv = {};
		// The machine's AWS_CA_BUNDLE (and any other AWS_/RCLONE_ setting) would change what the tools do.
		for (const [k, v] of Object.entries(process.env)) if (!/^(AWS_|RCLONE_|S3CMD)/.test(k)) env[k] = v;
		Object.assign(env, { HOME: this.home, AWS_CONFIG_FILE: this.awsConfig, AWS_SHARED_CREDENTIALS_FILE: awsCredentials, AWS_PAGER: "", AWS_EC2_METADATA_DISABLED: "true" });
		this.env = env;
	}

	/** Runs a tool to its end (at most `timeoutMs`), whatever its exit code. */
	run(name: ToolName, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<ToolRun> {
		const bin = toolPath(name);
		if (!bin) return Promise.reject(new Error(`${name} is not installed`));
		const full =
			name === "aws" ? ["--endpoint-url", this.endpoint, ...args] : name === "rclone" ? ["--config", this.rcloneConfig, ...args] : ["-c", this.s3cmdConfig, ...args];
		return new Promise((resolve, reject) => {
			execFile(bin, full, { env: this.env, cwd: opts.cwd ?? this.home, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
				const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : -1) : 0;
				if (err && code === -1) return reject(new Error(`${name} ${args.join(" ")}: ${err.message}\n${stderr}`));
				resolve({ code, stdout: String(stdout), stderr: String(stderr) });
			});
		});
	}

	/** Runs a tool and fails with its output unless it exits 0. */
	async ok(name: ToolName, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<ToolRun> {
		const r = await this.run(name, args, opts);
		if (r.code !== 0) throw new Error(`${name} ${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
		return r;
	}

	aws(...args: string[]): Promise<ToolRun> {
		return this.ok("aws", args);
	}
	rclone(...args: string[]): Promise<ToolRun> {
		return this.ok("rclone", args);
	}
	s3cmd(...args: string[]): Promise<ToolRun> {
		return this.ok("s3cmd", args);
	}

	cleanup(): void {
		rmSync(this.home, { recursive: true, force: true });
	}
}
