// Where a queued mail goes: an SMTP relay (SMTP_URL, through nodemailer), or the outbox folder when there is none.
// Both deliver the same bytes, composed once by nodemailer's MailComposer from the stored message (so a mail
// retried after a restart is the same mail, Message-ID included).
import { createTransport, type Transporter } from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport";
import MailComposer from "nodemailer/lib/mail-composer";
import type { Mailbox } from "./outbox";
import { writeOutboxRaw } from "./outbox";

/** A mail as the queue stores it: rendered, addresses checked, ready to send. */
export interface MailMessage {
	from: Mailbox;
	to: Mailbox;
	replyTo?: Mailbox;
	subject: string;
	text: string;
	html?: string;
	/** `<id@host>`, fixed when queued. */
	messageId: string;
	/** Unix ms when queued (the Date header). */
	date: number;
	/** TemplateId it was made from, if any (for logs and tests). */
	templateId?: string;
}

export interface MailTransport {
	/** "smtp" or "outbox", for logs. */
	readonly kind: string;
	/** Delivers, or throws why not (the sender retries later). */
	deliver(mail: MailMessage): Promise<void>;
	close(): void;
}

/** The message's RFC 5322 bytes. */
export async function composeMail(mail: MailMessage): Promise<Buffer> {
	const composer = new MailComposer({
		from: mail.from,
		to: mail.to,
		replyTo: mail.replyTo,
		subject: mail.subject,
		text: mail.text,
		html: mail.html,
		messageId: mail.messageId,
		date: new Date(mail.date),
		headers: { "X-Mailer": "Cellar" },
		// RFC 5322 lines end in CRLF: an SMTP connection converts bare LFs on the way, an outbox file must have them.
		newline: "windows",
		// The content is ours: never let a field be read as a file path or a URL to fetch.
		disableFileAccess: true,
		disableUrlAccess: true,
	});
	return composer.compile().build();
}

export class SmtpTransport implements MailTransport {
	readonly kind = "smtp";
	private readonly transporter: Transporter<SMTPTransport.SentMessageInfo>;

	constructor(url: string) {
		// Bounded waits: a relay that hangs must fail the attempt (and be retried), not hold the sender.
		this.transporter = createTransport({ url, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000 } as SMTPTransport.Options);
	}

	async deliver(mail: MailMessage): Promise<void> {
		const raw = await composeMail(mail);
		await this.transporter.sendMail({ envelope: { from: mail.from.address, to: [mail.to.address] }, raw });
	}

	close(): void {
		this.transporter.close();
	}
}

export class OutboxTransport implements MailTransport {
	readonly kind = "outbox";
	constructor(private readonly dataDir: string) {}

	async deliver(mail: MailMessage): Promise<void> {
		writeOutboxRaw(await composeMail(mail), this.dataDir);
	}

	close(): void {}
}

/** SMTP when a relay is configured, else the outbox under DATA_DIR. */
export function transportFor(cfg: { smtpUrl?: string; dataDir: string }): MailTransport {
	return cfg.smtpUrl ? new SmtpTransport(cfg.smtpUrl) : new OutboxTransport(cfg.dataDir);
}
