// A console logger whose level can change while the node runs. Moleculer's loggers fix their level when a module's
// logger is created; this one creates every module's handler at "trace" and filters at each call against a level
// that `setLevel` changes, so PUT /a/config/services/config {logLevel} applies without a restart.
import { Loggers } from "moleculer";

const RANK: Record<string, number> = { fatal: 0, error: 1, warn: 2, info: 3, debug: 4, trace: 5 };

type ConsoleOptions = ConstructorParameters<typeof Loggers.Console>[0];

export class AdjustableConsoleLogger extends Loggers.Console {
	private current: string;

	constructor(opts: Omit<NonNullable<ConsoleOptions>, "level"> & { level: string }) {
		super({ ...opts, level: "trace" });
		this.current = opts.level;
	}

	get level(): string {
		return this.current;
	}

	setLevel(level: string): void {
		this.current = level;
	}

	override getLogHandler(bindings: Parameters<InstanceType<typeof Loggers.Console>["getLogHandler"]>[0]) {
		const inner = super.getLogHandler(bindings);
		if (!inner) return null;
		return (type: string, args: unknown[]) => {
			if ((RANK[type] ?? 0) > (RANK[this.current] ?? -1)) return;
			inner(type as Parameters<typeof inner>[0], args);
		};
	}
}

/** The node's log level as the configuration sets it: applied to every adjustable appender of the broker. */
const controls = new WeakMap<object, LogLevelControl>();

export class LogLevelControl {
	private applied: string;

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
		initial: string,
		private readonly appenders: () => unknown[],
	) {
		this.applied = initial;
	}

	get level(): string {
		return this.applied;
	}

	apply(level: string): boolean {
		if (level === this.applied) return false;
		this.applied = level;
		for (const a of this.appenders()) if (a instanceof AdjustableConsoleLogger) a.setLevel(level);
		return true;
	}
}
