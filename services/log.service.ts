/**
 * log — the cluster's system log and audit trail. Every node's logger (lib/logs/shipper, set in
 * moleculer.config.ts) sends its entries as `log.entries` batches; one instance of this service stores each batch
 * (lib/db/logs), as it stores audit events. Admins read them: `POST /log/sys` and `/log/audit` (Bleve-like Query,
 * Page, Size: lib/logs/query), `POST /log/sys/export` and `/log/audit/export` (the whole result streamed as JSON or
 * CSV), `POST /log/audit/chartdata` (audit counts per time range). One node of the cluster (a lease) prunes the
 * store every 10 minutes (LOG_RETENTION_DAYS, LOG_MAX_ROWS, AUDIT_RETENTION_DAYS). Rules in lib/logs/book.
 * Consumes: `log.entries` {node, entries, dropped}, `audit.log` (AuditEntry), `auth.login.failed` and
 * `auth.login.succeeded` {login, ip}, `share.changed` {Uuid, Scope, Action} (broadcast: stored once, by key). Emits nothing; its own log lines are never shipped (no loop).
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { DatabaseMixin } from "../mixins/database.mixin";
import { LeasesRepo, type Db } from "../lib/db";
import { LogsRepo } from "../lib/db/logs";
import { PeriodicLease } from "../lib/cluster/periodic";
import { loadConfig, type CellarConfig } from "../lib/config";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { LogBook, type ListParams, type TimeRangeParams } from "../lib/logs/book";
import type { AuditEntry, LogBatch, LoginAttempt, ShareChange } from "../lib/contracts";
import type { LogKind } from "../lib/logs/model";
import { auditEntry } from "../lib/logs/audit";

const PRUNE_EVERY_MS = 10 * 60_000;
/** The first prune soon after a start, so that a node that restarts often still prunes. */
const FIRST_PRUNE_MS = 30_000;
const LEASE_TTL_MS = 25 * 60_000;

const str = (max: number) => ({ type: "string", optional: true, max }) as const;
const int32 = { type: "number", optional: true, integer: true, convert: true, min: 0, max: 2 ** 31 - 1 } as const;
const listParams = { Query: str(4096), Page: int32, Size: int32, Format: str(16) } as const;

interface LogVars {
	db: Db;
	cfg: CellarConfig;
	book: LogBook;
	lease: PeriodicLease;
	timer?: NodeJS.Timeout;
}
interface LogMethods {
	exportAs(ctx: Context<ListParams, Meta>, kind: LogKind): unknown;
	prune(): Promise<void>;
	loginAttempt(ctx: Context<LoginAttempt, Meta>, action: "login.failed" | "login.succeeded"): Promise<void>;
	store(what: string, work: Promise<unknown>): Promise<void>;
}
type LogThis = Service & LogVars & LogMethods;

const LogService: ServiceSchema<ServiceSettingSchema, LogMethods, LogVars> = {
	name: "log",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		syslog: {
			rest: "POST /log/sys",
			params: listParams,
			handler(this: LogThis, ctx: Context<ListParams, Meta>) {
				requireAdmin(ctx);
				return this.book.list("sys", ctx.params);
			},
		},
		syslogExport: {
			rest: "POST /log/sys/export",
			params: listParams,
			handler(this: LogThis, ctx: Context<ListParams, Meta>) {
				return this.exportAs(ctx, "sys");
			},
		},
		audit: {
			rest: "POST /log/audit",
			params: listParams,
			handler(this: LogThis, ctx: Context<ListParams, Meta>) {
				requireAdmin(ctx);
				return this.book.list("audit", ctx.params);
			},
		},
		auditExport: {
			rest: "POST /log/audit/export",
			params: listParams,
			handler(this: LogThis, ctx: Context<ListParams, Meta>) {
				return this.exportAs(ctx, "audit");
			},
		},
		auditChart: {
			rest: "POST /log/audit/chartdata",
			params: { MsgId: str(128), TimeRangeType: str(4), RefTime: int32, Offset: { type: "any", optional: true } },
			handler(this: LogThis, ctx: Context<TimeRangeParams, Meta>) {
				requireAdmin(ctx);
				return this.book.chart(ctx.params);
			},
		},
	},

	events: {
		"log.entries"(this: LogThis, ctx: Context<LogBatch>) {
			return this.store("log batch", this.book.ingest(ctx.params));
		},
		"audit.log"(this: LogThis, ctx: Context<AuditEntry>) {
			return this.store("audit event", this.book.audit(ctx.params, ctx.caller ?? "audit", ctx.nodeID ?? this.broker.nodeID));
		},
		"auth.login.failed"(this: LogThis, ctx: Context<LoginAttempt, Meta>) {
			return this.loginAttempt(ctx, "login.failed");
		},
		// Broadcast by the share service: every instance gets it, the request's id makes it one row.
		"share.changed"(this: LogThis, ctx: Context<ShareChange, Meta>) {
			const p = ctx.params;
			const e = auditEntry(ctx.meta, "share.changed", { target: `${p.Scope === "LINK" ? "link" : "cell"} ${p.Uuid}`, targetUuid: p.Uuid, detail: `${p.Action}${p.Members?.length ? `, members ${p.Members.join(", ")}` : ""}`, wsUuid: p.Uuid });
			const key = `share.changed|${ctx.requestID ?? ctx.id}|${p.Uuid}|${p.Action}`;
			return this.store("audit event", this.book.audit(e, ctx.caller ?? "share", ctx.nodeID ?? this.broker.nodeID, key));
		},
		"auth.login.succeeded"(this: LogThis, ctx: Context<LoginAttempt, Meta>) {
			return this.loginAttempt(ctx, "login.succeeded");
		},
	},

	methods: {
		exportAs(this: LogThis, ctx: Context<ListParams, Meta>, kind: LogKind) {
			requireAdmin(ctx);
			const file = this.book.export(kind, ctx.params);
			ctx.meta.$responseType = file.contentType;
			ctx.meta.$responseHeaders = { "Content-Disposition": `attachment; filename="${file.fileName}"` };
			return file.stream;
		},
		/** A login attempt the auth service reported, as an audit event. */
		loginAttempt(this: LogThis, ctx: Context<LoginAttempt, Meta>, action: "login.failed" | "login.succeeded") {
			const e: AuditEntry = { action, actor: ctx.params.login, ip: ctx.params.ip, userAgent: ctx.meta?.userAgent, time: Date.now() / 1000 };
			return this.store("audit event", this.book.audit(e, "auth", ctx.nodeID ?? this.broker.nodeID));
		},
		/** An event's write: a failure is this node's warning (never shipped: this service's lines stay local). */
		async store(this: LogThis, what: string, work: Promise<unknown>) {
			try {
				await work;
			} catch (e) {
				this.logger.warn(`Could not store a ${what}: ${(e as Error).message}`);
			}
		},
		async prune(this: LogThis) {
			this.timer = undefined;
			try {
				const out = await this.lease.run(() =>
					this.book.prune({ sysDays: this.cfg.logRetentionDays, sysMaxRows: this.cfg.logMaxRows, auditDays: this.cfg.auditRetentionDays }),
				);
				if (out.ran && (out.value.sys || out.value.audit)) this.logger.info(`Log retention: ${out.value.sys} system and ${out.value.audit} audit entries pruned`);
			} catch (e) {
				this.logger.warn(`Log retention pass failed: ${(e as Error).message}`);
			}
			this.timer = setTimeout(() => void this.prune(), PRUNE_EVERY_MS);
			this.timer.unref();
		},
	},

	async started(this: LogThis) {
		this.cfg = loadConfig();
		this.book = new LogBook(new LogsRepo(this.db));
		this.lease = new PeriodicLease(new LeasesRepo(this.db), "log.prune", this.broker.nodeID, LEASE_TTL_MS, (e) =>
			this.logger.warn(`Log retention lease renewal failed: ${(e as Error).message}`),
		);
		this.timer = setTimeout(() => void this.prune(), FIRST_PRUNE_MS);
		this.timer.unref();
	},

	async stopped(this: LogThis) {
		if (this.timer) clearTimeout(this.timer);
		await this.lease?.release().catch(() => undefined);
	},
};

export = LogService;
