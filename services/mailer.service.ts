/**
 * mailer — the outgoing mail queue: `POST /mailer/send` (Cells' MailerService.Send) for logged-in users, and
 * `mailer.queue` for services (password resets, share invitations, digests). Mails are rendered from the templates
 * in lib/mail/templates and persisted in the SQL store before the caller is answered; one node of the cluster (a
 * lease) delivers them through SMTP_URL, or into DATA_DIR/outbox when no relay is configured, retrying with a
 * growing delay and giving up after MAIL_MAX_ATTEMPTS with the error kept (lib/mail/sender).
 * Emits: `mailer.queued` (broadcast, {count}) after queuing. Consumes: `mailer.queued` (the lease holder sends now).
 * Calls: `users.byUuid`, `users.byLogin`, `users.byEmail` (recipients' and sender's accounts).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { AddressInfo } from "node:net";
import { DatabaseMixin } from "../mixins/database.mixin";
import { LeasesRepo, type Db } from "../lib/db";
import { MailQueueRepo } from "../lib/db/mail-queue";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig, type CellarConfig } from "../lib/config";
import { isAdmin, type Meta } from "../lib/auth/identity";
import { ServiceUnavailableError } from "../lib/errors";
import { requireUser } from "../lib/identity/resource-policy";
import { publicUrl } from "../lib/install/defaults";
import { APPLICATION_TITLE } from "../lib/frontend/bootconf";
import { Mailer, type MailerMail, type QueueRequest, type UserLookup } from "../lib/mail/mailer";
import { MailSender } from "../lib/mail/sender";
import { TEMPLATE_IDS } from "../lib/mail/templates";
import { transportFor, type MailMessage, type MailTransport } from "../lib/mail/transport";
import { broadcast, call, type PublicUser } from "../lib/contracts";

/** How often every node looks whether it should send (and takes the lease when its holder is gone). */
const POLL_MS = 5000;
/** A lease outlives a few polls: its holder keeps it, a dead holder's work moves within half a minute. */
const LEASE_TTL_MS = 30_000;
/** Longer than the SMTP transport's own time limits (15 s to connect, 30 s of silence). */
const CLAIM_MS = 2 * 60_000;
const MAX_RETRY_DELAY_MS = 3600_000;
const KEEP_SENT_MS = 7 * 24 * 3600_000;
/** How long a stopping node waits for the mails it is sending. */
const STOP_WAIT_MS = 5000;

const str = (max: number) => ({ type: "string", optional: true, max }) as const;
const mailerUser = { type: "object", optional: true, props: { Uuid: str(255), Address: str(320), Name: str(255), Language: str(32) } } as const;
const templateData = { type: "record", optional: true, key: { type: "string", max: 64 }, value: { type: "string", max: 65536 } } as const;

interface MailerVars {
	db: Db;
	cfg: CellarConfig;
	queueRepo: MailQueueRepo<MailMessage>;
	mailer: Mailer;
	sender: MailSender;
	transport: MailTransport;
	lease: PeriodicLease;
	timer?: NodeJS.Timeout;
	running?: Promise<void>;
	again: boolean;
	stopping: boolean;
}
interface MailerMethods {
	schedule(ms: number): void;
	tick(): Promise<void>;
	serverUrl(): string;
	queued(ctx: Context<unknown, Meta>, count: number): void;
}
type MailerThis = Service & MailerVars & MailerMethods;

const MailerService: ServiceSchema<ServiceSettingSchema, MailerMethods, MailerVars> = {
	name: "mailer",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		send: {
			rest: "POST /mailer/send",
			params: {
				From: mailerUser,
				Sender: mailerUser,
				To: { type: "array", optional: true, items: { ...mailerUser, optional: false }, max: 1000 },
				Cc: { type: "array", optional: true, items: { ...mailerUser, optional: false }, max: 1000 },
				Subject: str(998),
				ContentPlain: str(1 << 20),
				ContentHtml: str(1 << 20),
				ContentMarkdown: str(1 << 20),
				TemplateId: str(64),
				TemplateData: templateData,
				Attachments: { type: "array", optional: true, items: "string", max: 100 },
				DateSent: { type: "any", optional: true },
				Retries: { type: "any", optional: true },
				ThreadIndex: str(255),
				ThreadUuid: str(255),
				sendErrors: { type: "array", optional: true, items: "string", max: 100 },
			},
			async handler(this: MailerThis, ctx: Context<MailerMail, Meta>) {
				const caller = requireUser(ctx);
				if (ctx.params.TemplateId === "AdminTestMail" && isAdmin(caller)) {
					// Sent at once, not queued: the administrator testing the relay sees its answer.
					await this.mailer.send(caller, ctx.params, async (m) => {
						try {
							await this.transport.deliver(m);
						} catch (e) {
							throw new ServiceUnavailableError(`The mail could not be delivered (${this.transport.kind}): ${(e as Error).message}`);
						}
					});
					this.logger.info(`${caller.Login} sent a test mail (${this.transport.kind})`);
					return { Success: true };
				}
				const out = await this.mailer.send(caller, ctx.params);
				this.logger.info(`${caller.Login} queued ${out.ids.length} mail(s)${ctx.params.TemplateId ? ` (${ctx.params.TemplateId})` : ""}${out.skipped.length ? `, ${out.skipped.length} recipient(s) without address skipped` : ""}`);
				this.queued(ctx, out.ids.length);
				return { Success: true };
			},
		},
		// Internal (no route): services queue mails here.
		queue: {
			params: {
				to: {
					type: "array",
					min: 1,
					max: 1000,
					items: { type: "object", props: { uuid: str(255), login: str(255), address: str(320), name: str(255), language: str(32) } },
				},
				templateId: { type: "enum", optional: true, values: [...TEMPLATE_IDS] },
				templateData,
				subject: str(998),
				text: str(1 << 20),
				html: str(1 << 20),
				onBehalfOf: { type: "object", optional: true, props: { name: { type: "string", max: 255 }, email: str(320) } },
			},
			async handler(this: MailerThis, ctx: Context<QueueRequest, Meta>) {
				const out = await this.mailer.queue(ctx.params);
				this.queued(ctx, out.ids.length);
				return out;
			},
		},
	},

	events: {
		"mailer.queued"(this: MailerThis) {
			if (this.sender && !this.stopping) this.schedule(0);
		},
	},

	methods: {
		queued(this: MailerThis, ctx: Context<unknown, Meta>, count: number) {
			void broadcast(ctx, "mailer.queued", { count }).catch(() => this.schedule(0));
		},
		/** The next pass in `ms` (sooner replaces later); one pass at a time. */
		schedule(this: MailerThis, ms: number) {
			if (this.stopping) return;
			if (this.running) {
				if (ms === 0) this.again = true;
				return;
			}
			if (this.timer) clearTimeout(this.timer);
			this.timer = setTimeout(() => void this.tick(), Math.max(0, ms));
			this.timer.unref();
		},
		async tick(this: MailerThis) {
			this.timer = undefined;
			let next = POLL_MS;
			const pass = (async () => {
				try {
					const r = await this.sender.tick();
					if (r.ran) {
						// The holder comes back when the next retry is due, if that is before the next poll.
						const due = await this.sender.nextDue();
						if (due !== null) next = Math.min(POLL_MS, Math.max(50, due - Date.now()));
					}
				} catch (e) {
					this.logger.warn(`Mail sending pass failed: ${(e as Error).message}`);
				}
			})();
			this.running = pass;
			await pass;
			this.running = undefined;
			if (this.again) {
				this.again = false;
				next = 0;
			}
			this.schedule(next);
		},
		/** Where users open this server, for links in mails. */
		serverUrl(this: MailerThis): string {
			if (this.cfg.publicUrl) return this.cfg.publicUrl;
			const api = this.broker.getLocalService("api") as unknown as { server?: { address?: () => AddressInfo | string | null } } | undefined;
			const addr = api?.server?.address?.();
			return publicUrl(this.cfg, addr && typeof addr === "object" ? addr.port : this.cfg.port);
		},
	},

	async started(this: MailerThis) {
		// Read once, when the service starts: the environment of a test or a second node may change afterwards.
		this.cfg = loadConfig();
		this.again = false;
		this.stopping = false;
		this.queueRepo = new MailQueueRepo<MailMessage>(this.db);
		const lookup = async (p: Promise<PublicUser | null>): Promise<PublicUser | null> => {
			try {
				return await p;
			} catch (e) {
				if ((e as { code?: number }).code === 404) return null;
				throw e;
			}
		};
		const users: UserLookup = {
			byUuid: (uuid) => lookup(call(this.broker, "users.byUuid", { uuid })),
			byLogin: (login) => lookup(call(this.broker, "users.byLogin", { login })),
			byEmail: (email) => lookup(call(this.broker, "users.byEmail", { email })),
		};
		this.mailer = new Mailer(this.queueRepo, users, () => ({
			mailFrom: this.cfg.mailFrom,
			publicUrl: this.serverUrl(),
			title: APPLICATION_TITLE,
			maxAttempts: this.cfg.mailMaxAttempts,
		}));
		this.transport = transportFor(this.cfg);
		this.lease = new PeriodicLease(new LeasesRepo(this.db), "mailer.send", this.broker.nodeID, LEASE_TTL_MS, (e) =>
			this.logger.warn(`Mail sender lease renewal failed: ${(e as Error).message}`),
		);
		this.sender = new MailSender(this.queueRepo, this.transport, this.lease, {
			node: this.broker.nodeID,
			retryDelayMs: this.cfg.mailRetryDelay * 1000,
			maxRetryDelayMs: MAX_RETRY_DELAY_MS,
			claimMs: CLAIM_MS,
			batch: 20,
			keepSentMs: KEEP_SENT_MS,
			log: { info: (m) => this.logger.info(m), warn: (m) => this.logger.warn(m) },
		});
		// Claims this node left when it last stopped without giving them back (same NODE_ID): due again now.
		const back = await this.sender.releaseClaims();
		if (back) this.logger.info(`${back} mail(s) this node was sending when it stopped are queued again`);
		this.logger.info(this.cfg.smtpUrl ? "Mails are delivered through the SMTP relay of SMTP_URL" : `No SMTP_URL: mails are written to ${this.cfg.dataDir}/outbox`);
		this.schedule(0);
	},

	async stopped(this: MailerThis) {
		this.stopping = true;
		if (this.timer) clearTimeout(this.timer);
		// The pass under way may end (a few seconds at most: a relay that hangs must not hold the stop); the mails it
		// has not finished are given back, due at once for whichever node sends next (possibly sent twice if the
		// relay did take one: mail is delivered at least once, never lost).
		let timer: NodeJS.Timeout | undefined;
		await Promise.race([this.running?.catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, STOP_WAIT_MS)))]);
		clearTimeout(timer);
		// Before the mixin closes the database (mixins stop after the service).
		await this.sender?.releaseClaims().catch(() => undefined);
		await this.lease?.release().catch(() => undefined);
		this.transport?.close();
	},
};

export = MailerService;
