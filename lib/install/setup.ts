// The first-run set-up, as plain steps over injected calls so that it can be tested without a cluster.
// Every step calls an idempotent `ensure*` action of the service that owns the data: running the set-up
// twice (two nodes, a crash half-way) creates nothing twice.
import type { InstallEvent, InstallRecord } from "./record";
import type { ParamsOf, ResultOf } from "../contracts";

/** The services the set-up talks to; it waits for them before the first call. */
export const SETUP_SERVICES = ["roles", "users", "workspaces"];

/** The actions the set-up calls (lib/contracts: roles, users, workspaces). */
export type SetupAction = "roles.ensureDefaults" | "users.ensureAdmin" | "workspaces.ensureDefaults";

export interface SetupDeps {
	call<A extends SetupAction>(action: A, params: ParamsOf<A>): Promise<ResultOf<A>>;
	/** Resolves when every service is reachable, rejects after `timeoutMs`. */
	waitForServices(names: string[], timeoutMs: number): Promise<void>;
	onEvent?(event: InstallEvent): void;
	now?(): Date;
}

export interface SetupOptions {
	adminLogin: string;
	/** Given by the operator (ADMIN_PASSWORD) or by the installer (POST /install); generated when absent. */
	adminPassword?: string;
	version: string;
	nodeID?: string;
	waitTimeoutMs?: number;
}

export interface AdminOutcome {
	login: string;
	/** The account did not exist and was created now. */
	created: boolean;
	/** Only when the users service generated it: to be shown once, never stored. */
	generatedPassword?: string;
}

export interface SetupResult {
	record: InstallRecord;
	admin: AdminOutcome;
}

export async function runSetup(deps: SetupDeps, opts: SetupOptions): Promise<SetupResult> {
	const now = deps.now ?? (() => new Date());
	const events: InstallEvent[] = [];
	const emit = (Step: string, Progress: number, Message: string, Success = true) => {
		const e: InstallEvent = { Step, Progress, Message, Timestamp: Math.floor(now().getTime() / 1000), Success };
		events.push(e);
		deps.onEvent?.(e);
	};
	const step = async <T>(name: string, progress: number, message: string, fn: () => Promise<T>): Promise<T> => {
		try {
			const out = await fn();
			emit(name, progress, message);
			return out;
		} catch (err) {
			emit(name, progress, `${name} failed: ${(err as Error).message ?? String(err)}`, false);
			throw err;
		}
	};

	await step("services", 10, "Identity services are reachable", () => deps.waitForServices(SETUP_SERVICES, opts.waitTimeoutMs ?? 60_000));
	await step("roles", 30, "Default roles are in place", () => deps.call("roles.ensureDefaults", {}));
	const adminParams: ParamsOf<"users.ensureAdmin"> = opts.adminPassword ? { login: opts.adminLogin, password: opts.adminPassword } : { login: opts.adminLogin };
	const a = await step("admin", 60, "Administrator account is in place", () => deps.call("users.ensureAdmin", adminParams));
	const admin: AdminOutcome = {
		login: opts.adminLogin,
		created: a.created === true,
		generatedPassword: a.created === true && !opts.adminPassword && typeof a.password === "string" ? a.password : undefined,
	};
	await step("workspaces", 90, "Default workspaces are in place", () => deps.call("workspaces.ensureDefaults", {}));
	emit("done", 100, "Installation complete");
	return {
		record: { installedAt: now().toISOString(), version: opts.version, adminLogin: opts.adminLogin, nodeID: opts.nodeID, events },
		admin,
	};
}
