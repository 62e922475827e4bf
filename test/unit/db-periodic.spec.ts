// Periodic work runs once per cluster: PeriodicLease on both backends, then two nodes (two brokers in this process)
// sharing one PostgreSQL database, each with the services whose timers purge or sweep: one node does the work.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServiceBroker, type ServiceSchema } from "moleculer";
import { JobsRepo, LeasesRepo } from "../../lib/db";
import type { JobEngine } from "../../lib/jobs/engine";
import { SYSTEM_USER } from "../../lib/jobs/model";
import { PeriodicLease } from "../../lib/cluster/periodic";
import { BACKENDS, onEveryBackend, type DbHarness } from "../helpers/db";
import { Relay } from "../helpers/smtp";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

onEveryBackend("PeriodicLease", (h) => {
	it("of two nodes whose timers fire together, one runs the work, and keeps it on its next ticks", async () => {
		const a = new PeriodicLease(new LeasesRepo(h().db), "work-1", "node-a", 60_000);
		const b = new PeriodicLease(new LeasesRepo(await h().second()), "work-1", "node-b", 60_000);
		let runs = 0;
		const work = async () => {
			runs++;
			await sleep(20);
			return runs;
		};
		const [ra, rb] = await Promise.all([a.run(work), b.run(work)]);
		assert.equal(runs, 1);
		assert.equal([ra, rb].filter((r) => r.ran).length, 1);
		const winner = ra.ran ? a : b;
		const loser = ra.ran ? b : a;
		for (let i = 0; i < 3; i++) {
			assert.equal((await loser.run(work)).ran, false);
			assert.equal((await winner.run(work)).ran, true);
		}
		assert.equal(runs, 4);
		// The winner stops: the other node takes the work at its next tick.
		await winner.release();
		assert.equal((await loser.run(work)).ran, true);
		assert.equal((await winner.run(work)).ran, false);
	});

	it("renews the lease while a run lasts longer than its ttl, so no other node starts the same work", async () => {
		const a = new PeriodicLease(new LeasesRepo(h().db), "work-2", "node-a", 300);
		const b = new PeriodicLease(new LeasesRepo(await h().second()), "work-2", "node-b", 300);
		let overlap = false;
		let running = false;
		const slow = async () => {
			if (running) overlap = true;
			running = true;
			await sleep(900);
			running = false;
		};
		const first = a.run(slow);
		await sleep(50);
		const attempts: Promise<{ ran: boolean }>[] = [];
		for (let i = 0; i < 6; i++) {
			attempts.push(b.run(slow));
			await sleep(120);
		}
		assert.equal((await first).ran, true);
		assert.ok((await Promise.all(attempts)).every((r) => !r.ran));
		assert.equal(overlap, false);
		// A holder that died (stopped renewing) loses the lease after its ttl.
		await sleep(400);
		assert.equal((await b.run(async () => undefined)).ran, true);
	});
});

/** Two nodes of one cluster in this process: their own brokers and DATA_DIRs, one PostgreSQL database. */
async function twoNodes(harness: DbHarness, services: string[], stubs: ServiceSchema[] = []): Promise<{ nodes: ServiceBroker[]; stop(): Promise<void> }> {
	const saved = { DATABASE_URL: process.env.DATABASE_URL, DATA_DIR: process.env.DATA_DIR };
	const dirs: string[] = [];
	const nodes: ServiceBroker[] = [];
	try {
		process.env.DATABASE_URL = harness.options.databaseUrl;
		for (const id of ["node-a", "node-b"]) {
			const dir = mkdtempSync(join(tmpdir(), `cellar-${id}-`));
			dirs.push(dir);
			process.env.DATA_DIR = dir;
			const broker = new ServiceBroker({ nodeID: id, logger: false });
			for (const s of services) broker.loadService(join(__dirname, "..", "..", "services", `${s}.service.ts`));
			for (const stub of stubs) broker.createService(stub);
			// Settings are read when services start: each node starts with its own DATA_DIR.
			await broker.start();
			nodes.push(broker);
		}
	} finally {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}
	return {
		nodes,
		async stop() {
			for (const n of nodes) await n.stop();
			for (const d of dirs) rmSync(d, { recursive: true, force: true });
		},
	};
}

const postgres = BACKENDS.find((b) => b.name === "postgres");

describe("periodic work in a cluster of two nodes on one PostgreSQL database", function () {
	this.timeout(60_000);
	let harness: (DbHarness & { cleanup(): Promise<void> }) | undefined;
	before(async function () {
		if (!postgres) this.skip();
		harness = await postgres.open(this);
	});
	after(async () => harness?.cleanup());

	it("the token purge runs on one node; when it stops, the other takes over", async () => {
		const cluster = await twoNodes(harness as DbHarness, ["tokens"]);
		try {
			type Purging = { purge(): Promise<boolean> };
			const [a, b] = cluster.nodes.map((n) => n.getLocalService("tokens") as unknown as Purging);
			const first = await Promise.all([a.purge(), b.purge()]);
			assert.equal(first.filter(Boolean).length, 1, `ran on ${JSON.stringify(first)}`);
			const holder = first[0] ? 0 : 1;
			const [mine, theirs] = holder === 0 ? [a, b] : [b, a];
			assert.equal(await theirs.purge(), false);
			assert.equal(await mine.purge(), true);
			await cluster.nodes[holder].stop();
			assert.equal(await theirs.purge(), true);
		} finally {
			await cluster.stop();
		}
	});

	it("the mailer: mails queued on both nodes are each delivered once", async () => {
		const relay = new Relay();
		await relay.start();
		const saved = process.env.SMTP_URL;
		process.env.SMTP_URL = relay.url;
		// No users service: recipients are given as addresses.
		const cluster = await twoNodes(harness as DbHarness, ["mailer"]).finally(() => {
			if (saved === undefined) delete process.env.SMTP_URL;
			else process.env.SMTP_URL = saved;
		});
		try {
			const to = (node: number, i: number) => ({ address: `n${node}-${i}@example.com` });
			await Promise.all(
				cluster.nodes.map((n, node) =>
					Promise.all(Array.from({ length: 15 }, (_, i) => n.call("mailer.queue", { to: [to(node, i)], subject: `mail ${node}-${i}`, text: "x" }))),
				),
			);
			for (let i = 0; i < 400 && relay.received.length < 30; i++) await sleep(25);
			await sleep(300);
			const rcpts = relay.received.flatMap((r) => r.envelopeTo).sort();
			assert.equal(rcpts.length, 30, `received ${rcpts.length}`);
			assert.equal(new Set(rcpts).size, 30);
			assert.equal(new Set(relay.received.map((r) => r.mail.messageId)).size, 30);
		} finally {
			await cluster.stop();
			await relay.stop();
		}
	});

	it("the versions prune runs on one node", async () => {
		const cluster = await twoNodes(harness as DbHarness, ["versions"]);
		try {
			type Sweeping = { sweep(): Promise<boolean> };
			const [a, b] = cluster.nodes.map((n) => n.getLocalService("versions") as unknown as Sweeping);
			const ran = await Promise.all([a.sweep(), b.sweep()]);
			assert.equal(ran.filter(Boolean).length, 1, `ran on ${JSON.stringify(ran)}`);
			assert.deepEqual(await Promise.all([a.sweep(), b.sweep()]), ran);
		} finally {
			await cluster.stop();
		}
	});

	it("the selections sweep runs on one node", async () => {
		const cluster = await twoNodes(harness as DbHarness, ["selections"]);
		try {
			type Sweeping = { sweep(): Promise<boolean> };
			const [a, b] = cluster.nodes.map((n) => n.getLocalService("selections") as unknown as Sweeping);
			// Each node swept once as it started: one of them holds the lease since.
			const ran = await Promise.all([a.sweep(), b.sweep(), a.sweep(), b.sweep()]);
			assert.equal(ran.filter(Boolean).length, 2, `ran on ${JSON.stringify(ran)}`);
			assert.equal(ran[0], ran[2]);
			assert.notEqual(ran[0], ran[1]);
		} finally {
			await cluster.stop();
		}
	});

	it("the tree's timed sweep (staging leftovers, orphan objects) runs on one node", async () => {
		const cluster = await twoNodes(harness as DbHarness, ["tree"], [{ name: "datasources", actions: { list: () => [] } }]);
		try {
			type Sweeping = { leasedSweep(): Promise<boolean> };
			const [a, b] = cluster.nodes.map((n) => n.getLocalService("tree") as unknown as Sweeping);
			const ran = await Promise.all([a.leasedSweep(), b.leasedSweep()]);
			assert.equal(ran.filter(Boolean).length, 1, `ran on ${JSON.stringify(ran)}`);
			assert.deepEqual(await Promise.all([a.leasedSweep(), b.leasedSweep()]), ran);
		} finally {
			await cluster.stop();
		}
	});

	it("the start-up resync of structured datasources is queued by one node", async () => {
		const created: string[] = [];
		const stubs: ServiceSchema[] = [
			{ name: "tree" },
			{ name: "datasources", actions: { list: () => [{ Name: "structured", FlatStorage: false, CreationDate: 1 }], get: () => ({ Name: "structured" }) } },
		];
		const cluster = await twoNodes(harness as DbHarness, ["jobs"], stubs);
		try {
			type Resyncing = { resyncStructured(): Promise<boolean>; engine: JobEngine };
			const [a, b] = cluster.nodes.map((n) => n.getLocalService("jobs") as unknown as Resyncing);
			// Each node queued (or skipped) it as it started; asked again, the holder does it, the other skips.
			const ran = await Promise.all([a.resyncStructured(), b.resyncStructured()]);
			assert.equal(ran.filter(Boolean).length, 1, `ran on ${JSON.stringify(ran)}`);
			const repo = new JobsRepo((harness as DbHarness).db);
			const jobs = await repo.jobs(undefined);
			created.push(...jobs.map((j) => j.id));
			assert.deepEqual(jobs.map((j) => j.Name), ["datasource-resync"]);
			// Two nodes asked for the same (one per datasource) job at once: both answer it, neither a conflict.
			for (const j of jobs) await repo.deleteJob(j.id);
			const asSystem = { meta: { user: SYSTEM_USER } };
			const params = { JobName: "datasource-resync", JsonParameters: JSON.stringify({ dsName: "structured" }) };
			const answers = await Promise.all(cluster.nodes.map((n) => n.call<{ JobUuid: string }, typeof params>("jobs.create", params, asSystem)));
			assert.deepEqual(answers.map((x) => x.JobUuid), ["resync-ds-structured", "resync-ds-structured"]);
			created.push("resync-ds-structured");
		} finally {
			await cluster.stop();
			const repo = new JobsRepo((harness as DbHarness).db);
			for (const id of created) await repo.deleteJob(id);
		}
	});

	it("a task two nodes both hold (a dead node's, taken over by both) is run by one of them", async () => {
		const cluster = await twoNodes(harness as DbHarness, ["jobs"]);
		const repo = new JobsRepo((harness as DbHarness).db);
		try {
			type Running = { engine: JobEngine };
			const [a, b] = cluster.nodes.map((n) => (n.getLocalService("jobs") as unknown as Running).engine);
			const user = { Uuid: "u-alice", Login: "alice", Profile: "standard", GroupPath: "/", Roles: [], TokenKind: "session" };
			await repo.createJob({ id: "job-x", Name: "delete", Label: "Delete", Owner: "alice", OwnerUuid: "u-alice", Params: { nodes: ["ws/a.txt"] }, User: user, CreatedAt: 1, ModifiedAt: 1 });
			const task = (id: string, node: string) => ({ id, JobID: "job-x", Owner: "alice", Status: "Queued", StatusMessage: "Queued", TriggerOwner: "alice", Progress: 0, HasProgress: true, CanStop: true, CanPause: true, Node: node, Created: Date.now() });
			// A dead node's queued task: both survivors try to take it over; one does.
			await repo.createTask(task("t-dead", "gone-node"));
			await Promise.all([a.recover((t) => t.Node === "gone-node"), b.recover((t) => t.Node === "gone-node")]);
			// The same task in both queues (a repeated message): the claim lets one run it.
			await repo.createTask(task("t-twice", ""));
			a.queue.enqueue("t-twice", "alice");
			b.queue.enqueue("t-twice", "alice");
			const over = async (id: string) => {
				for (let i = 0; i < 200; i++) {
					const t = await repo.task(id);
					if (t && !["Queued", "Running", "Paused"].includes(t.Status)) return t;
					await sleep(25);
				}
				assert.fail(`task ${id} did not end`);
			};
			for (const id of ["t-dead", "t-twice"]) {
				const t = await over(id);
				assert.ok(["node-a", "node-b"].includes(t.Node), t.Node);
				const started = (await repo.logs({ TaskID: { eq: id } }, 100)).filter((l) => l.Msg.startsWith("Started:"));
				assert.equal(started.length, 1, `${id} started ${started.length} times`);
			}
		} finally {
			await cluster.stop();
			await repo.deleteJob("job-x");
		}
	});
});
