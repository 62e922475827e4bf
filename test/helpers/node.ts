// A whole Cellar node in the test process: a real broker with every service (or some), the real gateway on an
// ephemeral port, and a fresh DATA_DIR. `api()` sends real HTTP.
import { ServiceBroker, type BrokerOptions } from "moleculer";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";

export interface TestNode {
	broker: ServiceBroker;
	url: string;
	dataDir: string;
	adminLogin: string;
	adminPassword: string;
	api(method: string, path: string, body?: unknown, token?: string, headers?: Record<string, string>): Promise<ApiResponse>;
	login(login: string, password: string): Promise<string>;
	/** A request to the S3 gateway's `/io/<path>` with the token as Cells' web client sends it (X-Pydio-Bearer). */
	io(method: string, path: string, token: string, body?: string): Promise<Response>;
	stop(): Promise<void>;
}

export interface ApiResponse {
	status: number;
	body: any;
	text: string;
	headers: Headers;
}

export interface NodeOptions {
	services?: string[];
	env?: Record<string, string>;
	logger?: BrokerOptions["logger"];
	broker?: Partial<BrokerOptions>;
}

export interface NodeFixture extends TestNode {
	/** The administrator's token. */
	readonly admin: string;
}

/**
 * The usual frame of an HTTP spec: registers in the calling `describe` a `before` that starts a node (`opts` go to
 * startNode) and logs the administrator in, and an `after` that stops it. The returned object stands for that node
 * from the `before` on, so a spec still writes `node.api(…)`. Hooks run in the order they are registered: the spec's
 * own `before` and `after` written below this call run after these. `opts` may be a function, read when the node
 * starts, for options known only then (the address of a relay a `before` above this call started).
 */
export function useNode(opts: NodeOptions | (() => NodeOptions) = {}): NodeFixture {
	let live: TestNode | undefined;
	let admin: string | undefined;
	before(async () => {
		live = await startNode(typeof opts === "function" ? opts() : opts);
		admin = await live.login(live.adminLogin, live.adminPassword);
	});
	after(() => live?.stop());
	const started = (): TestNode => {
		if (!live) throw new Error("useNode: the node is used before its `before` hook has started it");
		return live;
	};
	return {
		get broker() {
			return started().broker;
		},
		get url() {
			return started().url;
		},
		get dataDir() {
			return started().dataDir;
		},
		get adminLogin() {
			return started().adminLogin;
		},
		get adminPassword() {
			return started().adminPassword;
		},
		get admin() {
			started();
			if (admin === undefined) throw new Error("useNode: the administrator is not logged in yet");
			return admin;
		},
		api: (...args) => started().api(...args),
		login: (...args) => started().login(...args),
		io: (...args) => started().io(...args),
		stop: () => started().stop(),
	};
}

export async function startNode(opts: NodeOptions = {}): Promise<TestNode> {
	const dataDir = mkdtempSync(join(tmpdir(), "cellar-test-"));
	const adminPassword = "Admin-Pass-1234";
	const env: Record<string, string> = { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", ADMIN_LOGIN: "admin", ADMIN_PASSWORD: adminPassword, SCRYPT_N: "1024", LOG_LEVEL: "silent", ...opts.env };
	const saved: Record<string, string | undefined> = {};
	for (const [k, v] of Object.entries(env)) {
		saved[k] = process.env[k];
		process.env[k] = v;
	}
	const broker = new ServiceBroker({ logger: opts.logger ?? false, requestTimeout: 10_000, validator: true, ...opts.broker });
	const files = opts.services ?? process.env.TEST_SERVICES?.split(",") ?? ["**/*"];
	for (const f of files) broker.loadServices(join(__dirname, "..", "..", "services"), `${f}.service.ts`);
	await broker.start();
	const api = broker.getLocalService("api") as unknown as { server: { address(): AddressInfo } } | undefined;
	const port = api?.server.address().port ?? 0;
	const url = `http://127.0.0.1:${port}`;
	// Aliases are generated shortly after services register: wait until the gateway routes a known path.
	if (api) {
		for (let i = 0; i < 100; i++) {
			const r = await fetch(`${url}/a/frontend/bootconf`).catch(() => null);
			if (r && r.status !== 404 && r.status !== 503) break;
			await new Promise((res) => setTimeout(res, 50));
		}
	}
	// The install service creates the admin, then the default workspaces, in the background once its
	// dependencies are up: wait for the whole set-up where every step runs here, else for the admin.
	const setUpHere = ["users", "roles", "workspaces", "install"].every((name) => broker.getLocalService(name));
	if (broker.getLocalService("users") && broker.getLocalService("install")) {
		for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
			const ok = setUpHere
				? await broker.call<{ Success: boolean }, Record<string, never>>("install.events", {}).then((r) => r.Success, () => false)
				: await broker.call("users.byLogin", { login: "admin" }).then(() => true, () => false);
			if (ok) break;
			await new Promise((res) => setTimeout(res, 50));
		}
	}
	const node: TestNode = {
		broker,
		url,
		dataDir,
		adminLogin: "admin",
		adminPassword,
		async api(method, path, body, token, headers = {}) {
			const h: Record<string, string> = { ...headers };
			if (token) h.Authorization = `Bearer ${token}`;
			let payload: string | undefined;
			if (body !== undefined) {
				h["Content-Type"] = h["Content-Type"] ?? "application/json";
				payload = typeof body === "string" ? body : JSON.stringify(body);
			}
			const res = await fetch(url + path, { method, headers: h, body: payload }).catch((e: Error & { cause?: { code?: string } }) => {
				// Client and server share this process's event loop: after a long synchronous stretch (hundreds of
				// events written at once) the server's keep-alive timer can close a pooled socket just as fetch
				// reuses it. A read is safe to send again; a write is not, and its failure stands.
				if ((method === "GET" || method === "HEAD") && e.cause?.code === "ECONNRESET") return fetch(url + path, { method, headers: h });
				throw e;
			});
			const text = await res.text();
			let parsed: unknown = undefined;
			try {
				parsed = text ? JSON.parse(text) : undefined;
			} catch {
				parsed = undefined;
			}
			return { status: res.status, body: parsed, text, headers: res.headers };
		},
		async login(login, password) {
			let r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login, password } });
			// Right after a start a service the login needs may not be registered yet: 503, retry as clients do.
			for (let i = 0; i < 50 && r.status === 503; i++) {
				await new Promise((res) => setTimeout(res, 100));
				r = await node.api("POST", "/a/frontend/session", { AuthInfo: { type: "credentials", login, password } });
			}
			if (r.status !== 200) throw new Error(`login ${login} failed: ${r.status} ${r.text}`);
			return r.body.JWT as string;
		},
		io(method, path, token, body) {
			return fetch(`${url}/io/${path}`, { method, headers: { "X-Pydio-Bearer": token }, body });
		},
		async stop() {
			await broker.stop();
			// The environment stays the node's while it runs: services read DATA_DIR and secrets at call time.
			for (const [k, v] of Object.entries(saved)) {
				if (v === undefined) delete process.env[k];
				else process.env[k] = v;
			}
			rmSync(dataDir, { recursive: true, force: true });
		},
	};
	return node;
}
