// The mailer: turns a request (Cells' mailer.Mail from `POST /a/mailer/send`, or a service's `mailer.queue`) into
// rendered mails in the queue, one per recipient, written before the caller is answered. Recipients given as
// users (uuid or login) get the `email` attribute of their account.
//
// What a REST caller may send (services queuing through `mailer.queue` are trusted):
// - anyone logged in: mails to users of this server (by uuid, login, or an address that is a user's email), as
//   plain text or with a sharing template (Cell, PublicFile, PublicFolder); the From is the server's (MAIL_FROM)
//   under the caller's name, Reply-To the caller's email; the template's Inviter is the caller; links point into
//   this server (LinkPath), never elsewhere;
// - administrators, besides: any address, every template, HTML content, absolute links (LinkUrl).
// Nobody sets headers: addresses are checked (lib/mail/outbox) and everything else goes into the body.
import { randomUUID } from "node:crypto";
import type { Identity } from "../auth/identity";
import { isAdmin } from "../auth/identity";
import type { MailQueueRepo, NewQueuedMail } from "../db/mail-queue";
import { BadRequestError, ForbiddenError } from "../errors";
import type { PublicUser } from "../identity/users";
import { isMailAddress, parseMailbox, type Mailbox } from "./outbox";
import { isTemplateId, renderPlain, renderTemplate, type TemplateId } from "./templates";
import type { MailMessage } from "./transport";

/** Cells' mailerUser. */
export interface MailerUser {
	Uuid?: string;
	Address?: string;
	Name?: string;
	Language?: string;
}

/** Cells' mailerMail, as `POST /a/mailer/send` takes it. */
export interface MailerMail {
	From?: MailerUser;
	Sender?: MailerUser;
	To?: MailerUser[];
	Cc?: MailerUser[];
	Subject?: string;
	ContentPlain?: string;
	ContentHtml?: string;
	ContentMarkdown?: string;
	TemplateId?: string;
	TemplateData?: Record<string, string>;
	Attachments?: string[];
	DateSent?: string;
	Retries?: number;
	ThreadIndex?: string;
	ThreadUuid?: string;
	sendErrors?: string[];
}

/** A recipient for `mailer.queue`: an account (uuid or login) or a plain address. */
export interface MailRecipient {
	uuid?: string;
	login?: string;
	address?: string;
	name?: string;
	language?: string;
}

export interface QueueRequest {
	to: MailRecipient[];
	templateId?: TemplateId;
	templateData?: Record<string, string>;
	/** Without template: the subject and plain text. With one: `text` is added after its button. */
	subject?: string;
	text?: string;
	html?: string;
	/** Who the mail is on behalf of (the From's display name, and Reply-To). */
	onBehalfOf?: { name: string; email?: string };
}

export interface QueueResult {
	/** The queued mails' ids, one per recipient. */
	ids: string[];
	/** Recipients left out: no such user, or no email on the account. */
	skipped: string[];
}

/** The users service, as the mailer needs it: null when there is no such user. */
export interface UserLookup {
	byUuid(uuid: string): Promise<PublicUser | null>;
	byLogin(login: string): Promise<PublicUser | null>;
	byEmail(email: string): Promise<PublicUser | null>;
}

export interface MailerSettings {
	mailFrom: string;
	/** Without trailing slash. */
	publicUrl: string;
	title: string;
	maxAttempts: number;
}

/** Templates any user may send through the API: invitations to what they share. */
const USER_TEMPLATES: ReadonlySet<string> = new Set(["Cell", "PublicFile", "PublicFolder"]);
/** Recipients per request, as Cells limits them. */
export const MAX_RECIPIENTS = 100;

interface Resolved {
	to: Mailbox;
	language?: string;
	/** The user's account, when the address is one's. */
	user?: PublicUser;
}

export class Mailer {
	constructor(
		private readonly queueRepo: MailQueueRepo<MailMessage>,
		private readonly users: UserLookup,
		private readonly settings: () => MailerSettings,
		private readonly clock: () => number = Date.now,
	) {}

	/** Queues a mail for each recipient it can resolve (a trusted caller: a service). */
	async queue(req: QueueRequest): Promise<QueueResult> {
		const skipped: string[] = [];
		const resolved: Resolved[] = [];
		for (const r of req.to) {
			const got = await this.resolve(r);
			if (got) resolved.push(got);
			else skipped.push(r.address ?? r.login ?? r.uuid ?? "?");
		}
		if (!resolved.length) throw new BadRequestError(`Could not find any address to send to${skipped.length ? ` (${skipped.join(", ")})` : ""}`);
		return { ids: await this.write(resolved, req), skipped };
	}

	/**
	 * `POST /a/mailer/send` for `caller`: checks what the caller may send, then queues it. With `direct`, the mails
	 * are handed to it at once instead of queued, and its failure is the caller's (Cells sends the administrator's
	 * AdminTestMail this way, so that the settings page shows whether the relay works).
	 */
	async send(caller: Identity, mail: MailerMail, direct?: (m: MailMessage) => Promise<void>): Promise<QueueResult> {
		const admin = isAdmin(caller);
		const people = [...(mail.To ?? []), ...(mail.Cc ?? [])];
		if (people.length > MAX_RECIPIENTS) throw new ForbiddenError(`You are not allowed to send emails to more than ${MAX_RECIPIENTS} people at once`);
		if (mail.Attachments?.length) throw new BadRequestError("Attachments are not supported: share the files and send the link instead");
		const templateId = mail.TemplateId?.trim() || undefined;
		if (templateId !== undefined && !isTemplateId(templateId)) throw new BadRequestError(`Unknown TemplateId ${templateId}`);
		if (templateId && !admin && !USER_TEMPLATES.has(templateId)) throw new ForbiddenError(`The ${templateId} template is reserved to administrators`);
		if (mail.ContentHtml && !admin) throw new ForbiddenError("HTML content is reserved to administrators: send ContentPlain");
		const body = mail.ContentPlain || mail.ContentMarkdown || "";
		if (!templateId) {
			if (!mail.Subject?.trim()) throw new BadRequestError("Subject is required for a mail without TemplateId");
			if (!body && !mail.ContentHtml) throw new BadRequestError("Please provide one of ContentPlain, ContentMarkdown or ContentHtml");
		}
		if (!people.length) throw new BadRequestError("Could not find any address to send to: To is empty");

		const me = await this.users.byUuid(caller.Uuid);
		const myName = me?.Attributes?.displayName?.trim() || caller.Login;
		const myEmail = me?.Attributes?.email?.trim();
		const data: Record<string, string> = {};
		for (const [k, v] of Object.entries(mail.TemplateData ?? {})) if (typeof v === "string") data[k] = v;
		if (!admin || !data.Inviter) data.Inviter = myName;
		if (templateId === "AdminTestMail") data.AdminName = myName;
		if (!admin) delete data.LinkUrl;

		const resolved: Resolved[] = [];
		const skipped: string[] = [];
		for (const p of people) {
			const got = await this.resolveApiUser(p, admin);
			if (got) resolved.push(got);
			else skipped.push(p.Uuid || p.Address || "?");
		}
		if (!resolved.length) throw new BadRequestError("Could not find any address to send to");
		const ids = await this.write(
			resolved,
			{
			to: [],
			templateId: templateId as TemplateId | undefined,
			templateData: data,
			subject: mail.Subject,
			text: body || undefined,
			html: admin ? mail.ContentHtml || undefined : undefined,
				onBehalfOf: { name: myName, email: myEmail && isMailAddress(myEmail) ? myEmail : undefined },
			},
			direct,
		);
		return { ids, skipped };
	}

	/** A mailerUser from the API: an account (Uuid may hold a uuid, a login or an email, as in Cells) or an address. */
	private async resolveApiUser(p: MailerUser, admin: boolean): Promise<Resolved | null> {
		const key = p.Uuid?.trim();
		const language = p.Language?.trim() || undefined;
		if (key) {
			const user = (await this.users.byUuid(key)) ?? (await this.users.byLogin(key));
			if (user) return this.fromUser(user, language);
			if (!isMailAddress(key)) return null;
			return this.external(key, p.Name, language, admin);
		}
		const address = p.Address?.trim();
		if (!address) return null;
		return this.external(address, p.Name, language, admin);
	}

	/** A plain address from the API: any for an administrator, else only a user's of this server. */
	private async external(address: string, name: string | undefined, language: string | undefined, admin: boolean): Promise<Resolved> {
		const box = parseMailbox(address, "recipient");
		const user = await this.users.byEmail(box.address);
		if (user) return { to: { address: box.address, name: displayName(user) }, language, user };
		if (!admin) throw new ForbiddenError(`You can only send mail to users of this server (${box.address} is not one)`);
		const n = name?.trim();
		return { to: n ? { name: cleanName(n), address: box.address } : box, language };
	}

	private async resolve(r: MailRecipient): Promise<Resolved | null> {
		if (r.address) {
			const box = parseMailbox(r.address, "recipient");
			return { to: r.name ? { name: cleanName(r.name), address: box.address } : box, language: r.language };
		}
		const user = r.uuid ? await this.users.byUuid(r.uuid) : r.login ? await this.users.byLogin(r.login) : null;
		return user ? this.fromUser(user, r.language) : null;
	}

	/** A user's mailbox from the `email` attribute; null when there is none (or it is not a valid address). */
	private fromUser(user: PublicUser, language?: string): Resolved | null {
		const email = user.Attributes?.email?.trim();
		if (!email || !isMailAddress(email)) return null;
		return { to: { name: displayName(user), address: email }, language: language ?? (user.Attributes?.lang || undefined), user };
	}

	private async write(recipients: Resolved[], req: QueueRequest, direct?: (m: MailMessage) => Promise<void>): Promise<string[]> {
		const s = this.settings();
		const server = parseMailbox(s.mailFrom, "sender");
		const domain = server.address.split("@")[1] || "localhost";
		const now = this.clock();
		const rows: NewQueuedMail<MailMessage>[] = [];
		for (const r of recipients) {
			const ctx = { title: s.title, url: s.publicUrl, recipientName: r.to.name || r.user?.Login || r.to.address, language: r.language };
			const rendered = req.templateId
				? renderTemplate(req.templateId, req.templateData ?? {}, ctx, req.text)
				: renderPlain(req.subject ?? "", req.text ?? "", ctx);
			const from: Mailbox = req.onBehalfOf ? { name: cleanName(`${req.onBehalfOf.name} (${s.title})`), address: server.address } : server;
			const message: MailMessage = {
				from,
				to: r.to,
				subject: rendered.subject.slice(0, 250),
				text: rendered.text,
				html: req.html ?? rendered.html,
				messageId: `<${randomUUID()}@${domain}>`,
				date: now,
			};
			if (req.onBehalfOf?.email) message.replyTo = { name: cleanName(req.onBehalfOf.name), address: req.onBehalfOf.email };
			if (req.templateId) message.templateId = req.templateId;
			rows.push({ id: randomUUID(), recipient: r.to.address, subject: message.subject, message, maxAttempts: s.maxAttempts });
		}
		if (direct) for (const r of rows) await direct(r.message);
		else await this.queueRepo.enqueue(rows, now);
		return rows.map((r) => r.id);
	}
}

function displayName(u: PublicUser): string {
	return cleanName(u.Attributes?.displayName?.trim() || u.Login || "");
}

/** A display name that stays one: no control characters, quotes or angle brackets (nodemailer encodes the rest). */
function cleanName(s: string): string {
	// eslint-disable-next-line no-control-regex
	return s.replace(/[\u0000-\u001f\u007f<>"\\]/g, " ").replace(/\s{2,}/g, " ").trim().slice(0, 200);
}
