// log — the cluster's system log: every node's logger (lib/logs/shipper) sends its entries in batches to the log
// service (services/log.service.ts), which stores them (lib/db/logs) for `POST /a/log/sys`. Audit events arrive as
// `audit.log` (lib/contracts/audit) and the auth events.
import type { LogLevel } from "../logs/model";

export interface ShippedEntry {
	/** Unix ms. */
	ts: number;
	level: LogLevel;
	/** The service, or the broker module (broker, transit, registry…) that logged it. */
	logger: string;
	msg: string;
}

export interface LogBatch {
	node: string;
	entries: ShippedEntry[];
	/** Entries this node dropped since its last batch (its buffer was full, or the log service unreachable). */
	dropped: number;
}

export interface LogEvents {
	/** Emitted (one log service instance stores it) by every node's shipper. */
	"log.entries": LogBatch;
}
