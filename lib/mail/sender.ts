// The sender: delivers the queued mails, on one node of the cluster at a time (a PeriodicLease), each mail claimed
// in the store before it is sent (lib/db/mail-queue) so that even two senders would never send the same one. A
// failed attempt is queued again after a delay that doubles each time (`retryDelayMs`, at most `maxRetryDelayMs`),
// until the mail's attempts are spent: then it is given up, its last error kept. A mail being sent when its node
// died is due again once its claim runs out (`claimMs`); a node that stops gives its claims back at once. A mail
// done with (sent or given up) keeps its envelope, subject and error, not its body.
import type { RunOutcome } from "../cluster/periodic";
import type { MailQueueRepo, QueuedMail } from "../db/mail-queue";
import type { MailMessage, MailTransport } from "./transport";

export interface SenderOptions {
	/** This node, unique in the cluster. */
	node: string;
	/** First retry delay; doubles after each failure. */
	retryDelayMs: number;
	maxRetryDelayMs: number;
	/** How long a claim protects a mail being sent: longer than the transport's own time limits. */
	claimMs: number;
	/** Mails taken per claim. */
	batch: number;
	/** Sent mails are kept this long, then purged. */
	keepSentMs: number;
	clock?: () => number;
	log?: { info(msg: string): void; warn(msg: string): void };
}

/** What the sender needs of a lease (PeriodicLease has it). */
export interface SenderLease {
	run<T>(work: () => Promise<T>): Promise<RunOutcome<T>>;
}

export interface TickResult {
	/** Whether this node held the lease and looked at the queue. */
	ran: boolean;
	sent: number;
	retried: number;
	failed: number;
}

const PURGE_EVERY_MS = 3600_000;

export class MailSender {
	private readonly now: () => number;
	private lastPurge = 0;

	constructor(
		private readonly queue: MailQueueRepo<MailMessage>,
		private readonly transport: MailTransport,
		private readonly lease: SenderLease,
		private readonly opts: SenderOptions,
	) {
		this.now = opts.clock ?? Date.now;
	}

	/** Delay before the attempt after `attempts` failed ones. */
	retryDelay(attempts: number): number {
		return Math.min(this.opts.maxRetryDelayMs, this.opts.retryDelayMs * 2 ** Math.max(0, attempts - 1));
	}

	/** One pass: if this node holds the lease, sends every due mail (batch after batch). */
	async tick(): Promise<TickResult> {
		const out = await this.lease.run(() => this.drain());
		return out.ran ? { ran: true, ...out.value } : { ran: false, sent: 0, retried: 0, failed: 0 };
	}

	/** When the next mail is due (unix ms), or null when none waits. */
	nextDue(): Promise<number | null> {
		return this.queue.nextDue();
	}

	/** Gives back this node's unfinished claims (a stopping node). */
	releaseClaims(): Promise<number> {
		return this.queue.releaseClaims(this.opts.node, this.now());
	}

	private async drain(): Promise<Omit<TickResult, "ran">> {
		const total = { sent: 0, retried: 0, failed: 0 };
		for (let round = 0; round < 100; round++) {
			const mails = await this.queue.claim(this.opts.node, this.now(), this.opts.claimMs, this.opts.batch);
			if (!mails.length) break;
			for (const m of mails) {
				const r = await this.deliver(m);
				total[r]++;
			}
		}
		if (this.now() - this.lastPurge > PURGE_EVERY_MS) {
			this.lastPurge = this.now();
			await this.queue.purgeSent(this.now() - this.opts.keepSentMs);
		}
		return total;
	}

	private async deliver(m: QueuedMail<MailMessage>): Promise<"sent" | "retried" | "failed"> {
		try {
			await this.transport.deliver(m.message);
		} catch (err) {
			const why = describe(err);
			const giveUp = m.attempts >= m.maxAttempts;
			const retryAt = giveUp ? null : this.now() + this.retryDelay(m.attempts);
			await this.queue.markAttemptFailed(m.id, this.opts.node, why, retryAt, withoutBody(m.message));
			if (giveUp) this.opts.log?.warn(`Mail ${m.id} "${m.subject}" to ${m.recipient} given up after ${m.attempts} attempts: ${why}`);
			else this.opts.log?.warn(`Mail ${m.id} to ${m.recipient} not delivered (attempt ${m.attempts} of ${m.maxAttempts}), retried in ${Math.round((retryAt! - this.now()) / 1000)} s: ${why}`);
			return giveUp ? "failed" : "retried";
		}
		await this.queue.markSent(m.id, this.opts.node, this.now(), withoutBody(m.message));
		this.opts.log?.info(`Mail ${m.id} "${m.subject}" delivered to ${m.recipient} (${this.transport.kind})`);
		return "sent";
	}
}

/**
 * What the queue keeps of a mail once it is done with it (sent, or given up): the envelope and subject, not the
 * body, which may hold a secret (a password-reset key) that has no business staying in the database.
 */
export function withoutBody(m: MailMessage): MailMessage {
	const { html: _html, ...rest } = m;
	return { ...rest, text: "" };
}

function describe(err: unknown): string {
	const e = err as { message?: string; code?: string; responseCode?: number; response?: string };
	const parts = [e.responseCode ? `${e.responseCode}` : "", e.code ?? "", e.response ?? e.message ?? String(err)].filter(Boolean);
	return parts.join(" ").slice(0, 2000);
}
