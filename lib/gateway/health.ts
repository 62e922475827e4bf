// GET /healthz (liveness: the process answers) and GET /readyz (readiness: this node can serve), anonymous: they
// say why a node is not ready — the broker not started, the gateway's routes not published, the store not
// answering, a service every request needs running nowhere — without secrets (no address, no credential, no
// driver message: the error's code at most). Load balancers and orchestrators probe them.
import type { IncomingMessage, ServerResponse } from "node:http";
import { within } from "../metrics/gateway-metrics";

/** Services the gateway needs to admit and serve ordinary requests: with one missing everywhere, the node is not ready. */
export const REQUIRED_SERVICES = ["auth", "policy", "tokens", "users", "roles", "workspaces", "acl", "datasources", "tree"] as const;

export interface HealthDeps {
	/** The broker has started (every local service's started() ran). */
	started(): boolean;
	/** The gateway publishes its routes (lib/gateway/readiness). */
	serving(): boolean;
	/** Names of the services available in the cluster, this node's included. */
	services(): string[];
	/** Resolves when the SQL store answers a trivial query. */
	pingStore(): Promise<void>;
}

export interface Readiness {
	Ready: boolean;
	Reasons?: string[];
}

const STORE_TIMEOUT_MS = 2000;

/** The store's failure as an operator may read it anonymously: a code such as ECONNREFUSED, or a timeout. */
function storeReason(err: unknown): string {
	const code = (err as { code?: unknown })?.code;
	if ((err as Error)?.message === "timeout") return `the store did not answer within ${STORE_TIMEOUT_MS / 1000} s`;
	return typeof code === "string" && /^[A-Z0-9_]{2,40}$/.test(code) ? `the store is unreachable (${code})` : "the store is unreachable";
}

export async function readiness(d: HealthDeps): Promise<Readiness> {
	const reasons: string[] = [];
	if (!d.started()) reasons.push("the broker is not started");
	else if (!d.serving()) reasons.push("the gateway is starting (its routes are not published yet)");
	const available = new Set(d.services());
	const missing = REQUIRED_SERVICES.filter((s) => !available.has(s));
	if (missing.length) reasons.push(`required services run on no node: ${missing.join(", ")}`);
	try {
		await within(d.pingStore(), STORE_TIMEOUT_MS);
	} catch (err) {
		reasons.push(storeReason(err));
	}
	return reasons.length ? { Ready: false, Reasons: reasons } : { Ready: true };
}

/** Whether the request is a health probe (then answered here). */
export function isHealthRequest(url: string | undefined): boolean {
	const path = (url ?? "").split("?")[0];
	return path === "/healthz" || path === "/readyz";
}

export async function answerHealth(req: IncomingMessage, res: ServerResponse, d: HealthDeps): Promise<void> {
	req.resume();
	const path = (req.url ?? "").split("?")[0];
	const send = (status: number, body: unknown) => {
		res.statusCode = status;
		res.setHeader("Content-Type", "application/json; charset=utf-8");
		res.setHeader("Cache-Control", "no-store");
		if (status === 503) res.setHeader("Retry-After", "1");
		res.end(req.method === "HEAD" ? undefined : JSON.stringify(body));
	};
	if (req.method !== "GET" && req.method !== "HEAD") {
		res.setHeader("Allow", "GET, HEAD");
		return send(405, { Code: 405, Title: `${path} answers GET and HEAD` });
	}
	if (path === "/healthz") return send(200, { Status: "UP" });
	const r = await readiness(d);
	send(r.Ready ? 200 : 503, r);
}
