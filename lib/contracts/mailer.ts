// mailer — queue mails for delivery (`mailer.queue`), and the `mailer.queued` event that wakes the node sending them.
import type { MailRecipient, QueueRequest, QueueResult } from "../mail/mailer";
import type { TemplateId } from "../mail/templates";

export type { MailRecipient, QueueRequest as MailQueueRequest, QueueResult as MailQueueResult, TemplateId as MailTemplateId };

export interface MailerActions {
	/**
	 * Queues a mail per recipient (persisted when it answers): `{ to: [{ uuid } | { login } | { address }],
	 * templateId, templateData }`, or `{ to, subject, text }`. Recipients given as accounts get their `email`
	 * attribute; those without one are `skipped`. 400 when no recipient has an address. Trusted: services only.
	 * Templates and their data (lib/mail/templates/en-us.ts): Cell {Inviter, Cell, LinkPath}, PublicFile
	 * {Inviter, FileName, LinkPath | LinkUrl, Message?, Expire?, MaxDownloads?}, PublicFolder (FolderName instead),
	 * Digest (the list as `text`), ResetPassword {Login, LinkPath, Code, Minutes}, ResetPasswordDone {Login},
	 * Welcome / Invite {Login, Password?, Inviter}. LinkPath is a path on the server's PUBLIC_URL.
	 */
	"mailer.queue": { params: QueueRequest; result: QueueResult };
}

export interface MailerEvents {
	/** Mails were queued on some node: the node holding the sender's lease sends them now. */
	"mailer.queued": { count: number };
}
