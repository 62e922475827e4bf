// A Moleculer logger that ships a node's log entries to the cluster's log service: entries at or above the
// configured level are kept in a bounded buffer and sent in batches as `log.entries` events (one log service
// instance stores each batch). The buffer never grows past its size: entries beyond it are counted, not kept, and
// the count travels with the next batch (the log service records it). Never recursive: the log service's own
// lines are not shipped, lines logged while a batch is being handed to the broker are ignored, and the broker's
// transport modules only ship warnings and errors (their debug lines would describe the shipping itself).
// Until a log service is reachable (a node starting, a cluster without one) entries wait in the buffer.
import { inspect } from "node:util";
import { Loggers } from "moleculer";
import { emit, type ShippedEntry } from "../contracts";
import { atLeast, isLogLevel, type LogLevel } from "./model";

export interface ShipperOptions {
	/** Least severe level shipped. */
	level: LogLevel;
	/** Most entries kept while waiting to be sent. */
	bufferSize: number;
	/** Most entries per event. */
	batchSize: number;
	/** How long an entry may wait for its batch, in ms. */
	flushMs: number;
}

const MAX_MSG = 8192;
/** Broker modules whose debug lines are about moving packets, this shipper's included. */
const TRANSPORT_MODULES = new Set(["transit", "transporter", "tx", "serializer"]);

/** Credentials a URL may carry in its query (pre-signed S3 URLs, tokens): kept out of the stored log. */
const SECRET_PARAMS = /([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|awsaccesskeyid|token|access_token|refresh_token|jwt)=)[^&\s"']+/gi;

/** A log call's arguments as one line of text, credentials in URLs masked. */
export function formatArgs(args: unknown[]): string {
	const parts = args.map((a) => {
		if (typeof a === "string") return a;
		if (a instanceof Error) return a.stack ?? `${a.name}: ${a.message}`;
		return inspect(a, { depth: 3, breakLength: Infinity, maxStringLength: MAX_MSG });
	});
	const s = parts.join(" ").replace(SECRET_PARAMS, "$1***");
	return s.length > MAX_MSG ? `${s.slice(0, MAX_MSG)}…` : s;
}

/** What Moleculer tells a logger about who logs (its LoggerFactory.LoggerBindings). */
interface LoggerBindings {
	nodeID: string;
	mod: string;
	svc?: string;
}

export class LogShipper extends Loggers.Base<{ level?: Loggers.Base.LogLevels }> {
	private buffer: ShippedEntry[] = [];
	private dropped = 0;
	private timer?: NodeJS.Timeout;
	/** True while the broker is handed a batch: what it logs then is about the shipping. */
	private handing = false;
	private sending?: Promise<void>;
	private stopped = false;

	/** The level it was made with (LOG_SHIP_LEVEL), which `setLevel(undefined)` goes back to. */
	private readonly own: LogLevel;

	constructor(private readonly options: ShipperOptions) {
		super({ level: options.level });
		this.own = options.level;
	}

	/**
	 * The level shipped from now on: the configuration tree's log level (lib/config-tree/log-level), applied
	 * without a restart; undefined: back to the level it was made with.
	 */
	setLevel(level: LogLevel | undefined): void {
		this.options.level = level ?? this.own;
	}

	/** Entries waiting and entries dropped since the last batch (for tests and metrics). */
	get state(): { buffered: number; dropped: number } {
		return { buffered: this.buffer.length, dropped: this.dropped };
	}

	getLogHandler(bindings: LoggerBindings): Loggers.Base.LogHandler | null {
		if (bindings.svc === "log") return null;
		const logger = bindings.svc ?? (bindings.mod || "broker").toLowerCase();
		const transport = TRANSPORT_MODULES.has((bindings.mod || "").toLowerCase());
		return (type, args) => {
			if (this.handing || this.stopped || !isLogLevel(type) || !atLeast(type, this.options.level) || (transport && !atLeast(type, "warn"))) return;
			if (this.buffer.length >= this.options.bufferSize) {
				this.dropped++;
				return;
			}
			this.buffer.push({ ts: Date.now(), level: type, logger, msg: formatArgs(args) });
			this.schedule();
		};
	}

	private schedule(ms = this.buffer.length >= this.options.batchSize ? 0 : this.options.flushMs): void {
		if (this.timer || this.stopped) return;
		this.timer = setTimeout(() => {
			this.timer = undefined;
			void this.flush();
		}, ms);
		this.timer.unref();
	}

	/** Sends what waits, one batch at a time; entries stay buffered while no log service is reachable. */
	async flush(): Promise<void> {
		if (this.sending) return this.sending;
		const broker = this.broker;
		if (!this.buffer.length && !this.dropped) return;
		if (!broker || !broker.started || !broker.hasEventListener("log.entries")) {
			this.schedule(this.options.flushMs);
			return;
		}
		this.sending = (async () => {
			while ((this.buffer.length || this.dropped) && broker.hasEventListener("log.entries")) {
				const entries = this.buffer.splice(0, this.options.batchSize);
				const dropped = this.dropped;
				this.dropped = 0;
				let sent: Promise<void>;
				this.handing = true;
				try {
					sent = emit(broker, "log.entries", { node: broker.nodeID, entries, dropped });
				} catch (e) {
					sent = Promise.reject(e);
				} finally {
					this.handing = false;
				}
				try {
					await sent;
				} catch {
					// The batch is lost (a transporter down): counted, as a full buffer's entries are.
					this.dropped += dropped + entries.length;
					break;
				}
			}
		})();
		try {
			await this.sending;
		} finally {
			this.sending = undefined;
		}
		if (this.buffer.length) this.schedule();
	}

	async stop(): Promise<void> {
		if (this.timer) clearTimeout(this.timer);
		this.timer = undefined;
		// A stopping node sends what it has while the transporter is still up (loggers stop after the services).
		await this.flush().catch(() => undefined);
		this.stopped = true;
	}
}

/** The shipper among a broker's loggers, if it has one (to change its level at run time). */
export function shipperOf(broker: object): LogShipper | undefined {
	// Moleculer's typings leave the broker's loggerFactory out; it is there at run time.
	const appenders = (broker as { loggerFactory?: { appenders?: unknown[] } }).loggerFactory?.appenders ?? [];
	return appenders.find((a): a is LogShipper => a instanceof LogShipper);
}

/** The shipper of a node's configuration (LOG_SHIP_LEVEL), or null when it ships nothing. */
export function shipperFor(cfg: { logShipLevel: string }): LogShipper | null {
	if (!isLogLevel(cfg.logShipLevel)) return null;
	return new LogShipper({ level: cfg.logShipLevel, bufferSize: 5000, batchSize: 200, flushMs: 1000 });
}
