// The in-process task queue: tasks wait in order, at most `perUser` run at once for one owner and `total` for
// the node. Each task has a TaskControl: the runner calls `checkpoint()` between items, which is where Stop
// (cooperative cancellation) and Pause / Resume take effect.

export class TaskInterrupted extends Error {
	constructor(readonly reason: "stop" | "shutdown" = "stop") {
		super(reason === "stop" ? "Interrupted by the user" : "Interrupted by a server shutdown");
		this.name = "TaskInterrupted";
	}
}

export class TaskControl {
	private readonly abort = new AbortController();
	private pausedFlag = false;
	private wake: (() => void)[] = [];

	constructor(readonly taskId: string) {}

	get signal(): AbortSignal {
		return this.abort.signal;
	}
	get stopped(): boolean {
		return this.abort.signal.aborted;
	}
	get paused(): boolean {
		return this.pausedFlag;
	}
	get reason(): "stop" | "shutdown" | undefined {
		return this.stopped ? (this.abort.signal.reason as TaskInterrupted).reason : undefined;
	}

	stop(reason: "stop" | "shutdown" = "stop"): void {
		if (!this.stopped) this.abort.abort(new TaskInterrupted(reason));
		this.release();
	}
	pause(): void {
		this.pausedFlag = true;
	}
	resume(): void {
		this.pausedFlag = false;
		this.release();
	}

	/** Throws TaskInterrupted once stopped; waits while paused. */
	async checkpoint(): Promise<void> {
		while (!this.stopped && this.pausedFlag) await new Promise<void>((res) => this.wake.push(res));
		if (this.stopped) throw this.abort.signal.reason as TaskInterrupted;
	}

	private release(): void {
		const w = this.wake;
		this.wake = [];
		for (const f of w) f();
	}
}

interface Entry {
	taskId: string;
	owner: string;
	control: TaskControl;
}

export class JobQueue {
	private readonly waiting: Entry[] = [];
	private readonly running = new Map<string, Entry>();
	private closed = false;

	constructor(
		private readonly run: (taskId: string, control: TaskControl) => Promise<void>,
		private readonly limits: { perUser: number; total: number } = { perUser: 2, total: 8 },
	) {}

	/** Adds a task; it starts as soon as the limits allow. */
	enqueue(taskId: string, owner: string): TaskControl {
		const existing = this.control(taskId);
		if (existing) return existing;
		const control = new TaskControl(taskId);
		this.waiting.push({ taskId, owner, control });
		queueMicrotask(() => this.pump());
		return control;
	}

	control(taskId: string): TaskControl | undefined {
		return this.running.get(taskId)?.control ?? this.waiting.find((e) => e.taskId === taskId)?.control;
	}

	isRunning(taskId: string): boolean {
		return this.running.has(taskId);
	}

	isWaiting(taskId: string): boolean {
		return this.waiting.some((e) => e.taskId === taskId);
	}

	/** Takes a waiting task out of the queue (Stop before it started). */
	withdraw(taskId: string): boolean {
		const i = this.waiting.findIndex((e) => e.taskId === taskId);
		if (i < 0) return false;
		this.waiting.splice(i, 1);
		return true;
	}

	get runningCount(): number {
		return this.running.size;
	}
	get waitingCount(): number {
		return this.waiting.length;
	}

	/** Stops everything (server shutdown); waiting tasks stay as they are (persisted as Queued by the caller). */
	close(): TaskControl[] {
		this.closed = true;
		this.waiting.length = 0;
		const list = [...this.running.values()].map((e) => e.control);
		for (const c of list) c.stop("shutdown");
		return list;
	}

	/** Starts what the limits allow, in order; paused waiting tasks are passed over. */
	pump(): void {
		if (this.closed) return;
		for (let i = 0; i < this.waiting.length && this.running.size < this.limits.total; ) {
			const e = this.waiting[i];
			if (e.control.paused) {
				i++;
				continue;
			}
			if (e.control.stopped) {
				this.waiting.splice(i, 1);
				continue;
			}
			let mine = 0;
			for (const r of this.running.values()) if (r.owner === e.owner) mine++;
			if (mine >= this.limits.perUser) {
				i++;
				continue;
			}
			this.waiting.splice(i, 1);
			this.running.set(e.taskId, e);
			void this.run(e.taskId, e.control)
				.catch(() => undefined)
				.finally(() => {
					this.running.delete(e.taskId);
					this.pump();
				});
		}
	}
}
