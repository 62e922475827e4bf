// MailQueueRepo on SQLite and PostgreSQL: a mail reads back as queued, a due mail goes to one claimer only (two
// nodes claiming at once included), a claim that ran out (its node died) is taken again, transitions apply only
// to the claimer's rows, and a given-up mail keeps its error.
import assert from "node:assert/strict";
import { MailQueueRepo, type NewQueuedMail } from "../../lib/db/mail-queue";
import { onEveryBackend } from "../helpers/db";

interface Msg {
	to: string;
	text: string;
}

onEveryBackend("MailQueueRepo", (h) => {
	let repo: MailQueueRepo<Msg>;
	let seq = 0;
	const mail = (to: string, maxAttempts = 3): NewQueuedMail<Msg> => ({ id: `m-${String(++seq).padStart(4, "0")}`, recipient: to, subject: `s${seq}`, message: { to, text: `body é ${seq}` }, maxAttempts });
	const T = 1_800_000_000_000;

	beforeEach(async () => {
		repo = new MailQueueRepo<Msg>(h().db);
		// Each test starts with an empty queue.
		await h().db.kysely.deleteFrom("mail_queue").execute();
	});

	it("reads a queued mail back as written, due at once", async () => {
		const m = mail("a@example.com");
		await repo.enqueue([m], T);
		const got = await repo.get(m.id);
		assert.deepEqual(got, { id: m.id, recipient: "a@example.com", subject: m.subject, message: m.message, status: "queued", attempts: 0, maxAttempts: 3, nextAttemptAt: T, createdAt: T });
		assert.equal(await repo.get("nope"), null);
		assert.equal(await repo.nextDue(), T);
	});

	it("counts the mails by status (the queue depth /metrics shows)", async () => {
		assert.deepEqual(await repo.countByStatus(), {});
		await repo.enqueue([mail("a@x.io"), mail("b@x.io"), mail("c@x.io")], T);
		await repo.claim("node-1", T + 1, 60_000, 1);
		assert.deepEqual(await repo.countByStatus(), { queued: 2, sending: 1 });
	});

	it("gives a due mail to one claimer, counting the attempt; not-yet-due mails wait", async () => {
		const [a, b] = [mail("a@x.io"), mail("b@x.io")];
		await repo.enqueue([a], T);
		await repo.enqueue([b], T + 10_000);
		const first = await repo.claim("node-1", T + 1, 60_000, 10);
		assert.deepEqual(first.map((m) => m.id), [a.id]);
		assert.equal(first[0].status, "sending");
		assert.equal(first[0].attempts, 1);
		assert.equal(first[0].claimedBy, "node-1");
		assert.equal(first[0].claimedUntil, T + 60_001);
		assert.deepEqual(await repo.claim("node-2", T + 2, 60_000, 10), []);
		assert.deepEqual((await repo.claim("node-2", T + 10_000, 60_000, 10)).map((m) => m.id), [b.id]);
	});

	it("of two nodes claiming at once, each mail goes to exactly one", async () => {
		const mails = Array.from({ length: 40 }, (_, i) => mail(`u${i}@x.io`));
		await repo.enqueue(mails, T);
		const other = new MailQueueRepo<Msg>(await h().second());
		const got: string[][] = [[], []];
		await Promise.all(
			[repo, other].map(async (r, i) => {
				for (let round = 0; round < 10; round++) got[i].push(...(await r.claim(`node-${i}`, T + 1, 60_000, 3)).map((m) => m.id));
			}),
		);
		const all = [...got[0], ...got[1]];
		assert.equal(new Set(all).size, all.length, "no mail claimed twice");
		assert.equal(all.length, 40);
	});

	it("takes again a mail whose claim ran out (its node died mid-send); the dead node can no longer finish it", async () => {
		const m = mail("c@x.io");
		await repo.enqueue([m], T);
		assert.equal((await repo.claim("dead", T, 1000, 1)).length, 1);
		assert.deepEqual(await repo.claim("alive", T + 999, 1000, 1), []);
		const again = await repo.claim("alive", T + 1000, 1000, 1);
		assert.equal(again.length, 1);
		assert.equal(again[0].attempts, 2);
		assert.equal(await repo.markSent(m.id, "dead", T + 1001), false);
		assert.equal(await repo.markAttemptFailed(m.id, "dead", "late", T + 5000), false);
		assert.equal(await repo.markSent(m.id, "alive", T + 1002), true);
		const sent = await repo.get(m.id);
		assert.equal(sent?.status, "sent");
		assert.equal(sent?.sentAt, T + 1002);
		assert.equal(sent?.claimedBy, undefined);
	});

	it("queues a failed attempt again for later, then gives up keeping the error", async () => {
		const m = mail("d@x.io", 2);
		await repo.enqueue([m], T);
		await repo.claim("n", T, 1000, 1);
		assert.equal(await repo.markAttemptFailed(m.id, "n", "421 try later", T + 4000), true);
		let row = await repo.get(m.id);
		assert.equal(row?.status, "queued");
		assert.equal(row?.lastError, "421 try later");
		assert.equal(row?.nextAttemptAt, T + 4000);
		assert.deepEqual(await repo.claim("n", T + 3999, 1000, 1), []);
		assert.equal((await repo.claim("n", T + 4000, 1000, 1))[0].attempts, 2);
		assert.equal(await repo.markAttemptFailed(m.id, "n", "550 no such user", null), true);
		row = await repo.get(m.id);
		assert.equal(row?.status, "failed");
		assert.equal(row?.lastError, "550 no such user");
		assert.deepEqual(await repo.claim("n", T + 10_000_000, 1000, 1), []);
		assert.deepEqual((await repo.list("failed")).map((x) => x.id), [m.id]);
		assert.equal(await repo.nextDue(), null);
	});

	it("gives back a stopping node's claims, due at once and the unfinished attempt not counted", async () => {
		const [a, b] = [mail("e@x.io"), mail("f@x.io")];
		await repo.enqueue([a, b], T);
		await repo.claim("stopping", T, 60_000, 1);
		await repo.claim("other", T, 60_000, 1);
		assert.equal(await repo.releaseClaims("stopping", T + 5), 1);
		const back = (await repo.list("queued"))[0];
		assert.equal(back.attempts, 0);
		assert.equal(back.nextAttemptAt, T + 5);
		assert.equal((await repo.list("sending"))[0].claimedBy, "other");
	});

	it("purges sent mails older than a date, never failed or pending ones", async () => {
		const [a, b, c] = [mail("g@x.io", 1), mail("h@x.io"), mail("i@x.io")];
		await repo.enqueue([a, b, c], T);
		await repo.claim("n", T, 1000, 2);
		await repo.markAttemptFailed(a.id, "n", "boom", null);
		await repo.markSent(b.id, "n", T + 10);
		assert.equal(await repo.purgeSent(T + 10), 0);
		assert.equal(await repo.purgeSent(T + 11), 1);
		assert.equal(await repo.get(b.id), null);
		assert.ok(await repo.get(a.id));
		assert.ok(await repo.get(c.id));
	});
});
