// A console logger whose level can change while the node runs. Moleculer's loggers fix their level when a module's
// logger is created; this one creates every module's handler at "trace" and filters at each call against a level
// that `setLevel` changes, so PUT /a/config/services/config {logLevel} applies without a restart. The same level
// goes to the node's log shipper (lib/logs/shipper): what reaches the cluster's log follows it too.
import { Loggers } from "moleculer";
import { atLeast, isLogLevel, type LogLevel } from "../logs/model";
import { LogShipper } from "../logs/shipper";

type ConsoleOptions = ConstructorParameters<typeof Loggers.Console>[0];

export class AdjustableConsoleLogger extends Loggers.Console {
	private readonly own: LogLevel;
	private current: LogLevel;

	constructor(opts: Omit<NonNullable<ConsoleOptions>, "level"> & { level: LogLevel }) {
		super({ ...opts, level: "trace" });
		this.own = opts.level;
		this.current = opts.level;
	}

	get level(): LogLevel {
		return this.current;
	}

	/** The level written from now on; undefined: back to the one it was made with (LOG_LEVEL). */
	setLevel(level: LogLevel | undefined): void {
		this.current = level ?? this.own;
	}

	override getLogHandler(bindings: Parameters<InstanceType<typeof Loggers.Console>["getLogHandler"]>[0]) {
		const inner = super.getLogHandler(bindings);
		if (!inner) return null;
		return (type: string, args: unknown[]) => {
			if (!isLogLevel(type) || !atLeast(type, this.current)) return;
			inner(type, args);
		};
	}
}

/** The node's log level as the configuration sets it: applied to every adjustable appender of the broker. */
const controls = new WeakMap<object, LogLevelControl>();

export class LogLevelControl {
	/** The configuration's level; undefined: each appender keeps its own (LOG_LEVEL, LOG_SHIP_LEVEL). */
	private configured: LogLevel | undefined;

	/** The control of this broker (one per node), made on first use. */
	static of(broker: object, initial: string, appenders: () => unknown[]): LogLevelControl {
		let c = controls.get(broker);
		if (!c) {
			c = new LogLevelControl(initial, appenders);
			controls.set(broker, c);
		}
		return c;
	}

	constructor(
		private readonly initial: string,
		private readonly appenders: () => unknown[],
	) {}

	/** The console's level (the configuration's, else LOG_LEVEL). */
	get level(): string {
		return this.configured ?? this.initial;
	}

	/** Applies the configuration's level (undefined: none, each appender goes back to its own); false when unchanged. */
	apply(level: LogLevel | undefined): boolean {
		if (level === this.configured) return false;
		this.configured = level;
		for (const a of this.appenders()) if (a instanceof AdjustableConsoleLogger || a instanceof LogShipper) a.setLevel(level);
		return true;
	}
}
