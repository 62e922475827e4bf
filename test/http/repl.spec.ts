// The REPL's domain commands (lib/repl) against a real node, without a terminal; then `npm run repl` itself, a
// separate process joining a node over Redis and driven through its stdin.
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrokerOptions } from "moleculer";
import { useNode, startNode, type TestNode } from "../helpers/node";
import * as repl from "../../lib/repl/commands";
import { contextOf } from "../../lib/repl/custom-commands";

describe("REPL commands (lib/repl)", function () {
	this.timeout(30_000);
	const node = useNode();
	let r: repl.ReplContext;

	before(async () => {
		r = contextOf(node.broker);
		const put = await node.api("PUT", "/a/user/repl-alice", { Login: "repl-alice", Password: "Alice-Pass-1234", GroupPath: "/", Attributes: { profile: "standard", displayName: "Alice Repl" } }, node.admin);
		assert.equal(put.status, 200, put.text);
		const c = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/repl-dir/inner", Type: "COLLECTION" }], Recursive: true }, node.admin);
		assert.equal(c.status, 200, c.text);
	});

	it("users lists every user and searches by login or display name", async () => {
		const all = await repl.users(r);
		assert.match(all, /^LOGIN\s+PROFILE/m);
		assert.match(all, /^admin\s+admin/m);
		assert.match(all, /^repl-alice\s+standard\s+\/\s+Alice Repl/m);
		const some = await repl.users(r, "alice");
		assert.match(some, /repl-alice/);
		assert.doesNotMatch(some, /^admin/m);
		assert.equal(await repl.users(r, "nobody-like-this"), 'No user matches "nobody-like-this".');
	});

	it("tree ls lists datasources and folders; tree stat shows one node; a missing path is a clear error", async () => {
		assert.match(await repl.treeLs(r, ""), /^dir\s+pydiods1$/m);
		const ls = await repl.treeLs(r, "pydiods1");
		assert.match(ls, /^dir\s+\S+\s+pydiods1\/repl-dir$/m);
		const stat = await repl.treeStat(r, "pydiods1/repl-dir/inner");
		assert.match(stat, /^Path\s+pydiods1\/repl-dir\/inner$/m);
		assert.match(stat, /^Type\s+COLLECTION$/m);
		await assert.rejects(repl.treeStat(r, "pydiods1/nope"), /not found/);
	});

	it("datasources shows where the bytes are, never the keys", async () => {
		const out = await repl.datasources(r);
		assert.match(out, /^pydiods1\s+LOCAL\s+/m);
		assert.match(out, /^personal\s+LOCAL/m);
		assert.doesNotMatch(out, /ApiSecret|secret/i);
	});

	it("jobs lists every user's jobs with their latest task", async () => {
		const admin = await node.login("admin", node.adminPassword);
		const created = await node.api("PUT", "/a/jobs/user/datasource-resync", { JsonParameters: JSON.stringify({ dsName: "pydiods1" }) }, admin);
		assert.equal(created.status, 200, created.text);
		const out = await repl.jobs(r);
		assert.match(out, /^ID\s+LABEL\s+OWNER\s+LAST TASK/m);
		assert.match(out, new RegExp(`^${created.body.JobUuid}\\s+.*\\badmin\\b`, "m"));
	});

	it("peers shows this node with its services", async () => {
		const out = await repl.peers(r);
		assert.match(out, new RegExp(`^${node.broker.nodeID}\\s+up\\s+`, "m"));
		assert.match(out, /\bapi\b.*\btree\b|\btree\b.*\bapi\b/);
		// A REPL's own node runs nothing: left out, which leaves nothing here.
		assert.match(await repl.peers({ ...r, self: node.broker.nodeID }), /No other node/);
	});

	it("config set validates, stores and applies; config get reads it back", async () => {
		assert.match(await repl.configGet(r, "services/config"), /not set|logLevel/);
		assert.equal(await repl.configSet(r, "services/config", '{"logLevel":"warn"}'), 'services/config = {"logLevel":"warn"}');
		assert.deepEqual(JSON.parse(await repl.configGet(r, "services/config")), { logLevel: "warn" });
		await assert.rejects(repl.configSet(r, "services/config", '{"logLevel":"loud"}'), /logLevel/);
		await assert.rejects(repl.configSet(r, "services/config", "{not json"), /Not JSON/);
		await repl.configSet(r, "services/config", '{"logLevel":"info"}');
	});
});

describe("npm run repl (a separate process over Redis)", function () {
	this.timeout(60_000);
	const namespace = `repl-test-${process.pid}-${Date.now()}`;
	let node: TestNode;
	let child: ChildProcessWithoutNullStreams | undefined;
	let home: string;

	before(async () => {
		node = await startNode({ env: { TRANSPORTER: "redis://127.0.0.1:6379", NAMESPACE: namespace }, broker: { namespace, transporter: "redis://127.0.0.1:6379" as BrokerOptions["transporter"], serializer: "JSON", nodeID: "repl-target" } });
		home = mkdtempSync(join(tmpdir(), "cellar-repl-home-"));
	});
	after(async () => {
		if (child && child.exitCode === null) child.kill("SIGKILL");
		await node.stop();
		rmSync(home, { recursive: true, force: true });
	});

	function startRepl(env: Record<string, string | undefined>): { proc: ChildProcessWithoutNullStreams; output: () => string; waitFor(re: RegExp, ms?: number): Promise<string>; exited: Promise<number | null> } {
		const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, LOG_LEVEL: "warn", ...env };
		const proc = spawn(process.execPath, ["--import", "tsx", join(__dirname, "..", "..", "bin", "repl.ts")], { env: clean, cwd: join(__dirname, "..", "..") });
		let out = "";
		proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
		proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
		const exited = new Promise<number | null>((res) => proc.on("exit", (code) => res(code)));
		return {
			proc,
			output: () => out,
			async waitFor(re, ms = 20_000) {
				const until = Date.now() + ms;
				while (!re.test(out)) {
					if (Date.now() > until) throw new Error(`timed out waiting for ${re} in:\n${out}`);
					await new Promise((res) => setTimeout(res, 50));
				}
				return out;
			},
			exited,
		};
	}

	it("without TRANSPORTER it says why and exits non-zero", async () => {
		const p = startRepl({ NAMESPACE: namespace });
		assert.equal(await p.exited, 2);
		assert.match(p.output(), /TRANSPORTER is not set/);
		assert.match(p.output(), /npm run dev/);
	});

	it("joins the node, answers peers and config get on stdin, and exits at the end of its input", async () => {
		const p = startRepl({ TRANSPORTER: "redis://127.0.0.1:6379", NAMESPACE: namespace });
		child = p.proc;
		await p.waitFor(/Joined namespace .*repl-target/);
		await node.broker.call("config.putConfig", { FullPath: "frontend/plugin/core.pydio", Data: '{"APPLICATION_TITLE":"Repl Cellar"}' }, { meta: { user: repl.REPL_USER } });
		// As a script pipes them: both lines, then the end of the input at once; the answers come in order.
		p.proc.stdin.end("peers\nconfig get frontend/plugin/core.pydio\n");
		assert.equal(await p.exited, 0);
		const out = p.output();
		const peersAt = out.search(/^repl-target\s+up\s+.*\bdiscovery\b/m);
		const configAt = out.indexOf('"APPLICATION_TITLE": "Repl Cellar"');
		assert.ok(peersAt >= 0 && configAt > peersAt, out);
	});
});
