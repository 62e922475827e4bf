// Reads are retried at the caller. An action that declares `read: true` changes nothing, so when the node that was
// running it dies, leaves, or cannot be reached, the caller runs it again on another replica; the client never sees
// the failure. Nothing else is replayed: a write whose node died answers 503 (it may have happened whole, or not at
// all: each write is one transaction), and the client decides. The flag travels with the action in the registry,
// so every caller, the gateway included, knows which remote actions are reads. Only remote calls are wrapped: a
// local call has no node to lose. The caller's request timeout bounds the whole, retries included.
import type { Context, Middleware, ServiceBroker } from "moleculer";

declare module "moleculer" {
	interface ActionSchema {
		/** Changes nothing: a caller may run it again on another node when the one it went to fails (lib/cluster/reads). */
		read?: boolean;
	}
}

/**
 * Failures of a node or of the way to it, never of the work: the request was not taken, its node went away
 * (Moleculer rejects what was pending on a node that leaves), or nothing answers for the action right now.
 * A timeout comes from a replica that called a dead node in turn (this caller's own timeout ends the call).
 */
const NODE_FAILURES = new Set(["RequestRejectedError", "RequestTimeoutError", "ServiceNotAvailableError", "ServiceNotFoundError", "BrokerDisconnectedError"]);

export function isNodeFailure(err: unknown): boolean {
	const name = (err as { name?: unknown } | null)?.name;
	return typeof name === "string" && NODE_FAILURES.has(name);
}

export interface ReadRetryOptions {
	/** Further attempts after the first (a call's own `retries` option overrides it). */
	retries: number;
	/** Wait before the first retry, doubled at each next one up to `maxDelay` (ms): a replica may be coming back. */
	delay: number;
	maxDelay: number;
}

export const READ_RETRY: ReadRetryOptions = { retries: 3, delay: 100, maxDelay: 1000 };

/** What the middleware needs of the registry: the replicas of an action, in the balancer's order. */
interface Replicas {
	count(): number;
	next(ctx: Context): { id: string } | null;
}

/** A replica of the action on a node that has not failed this call yet, or undefined (the balancer then chooses). */
function anotherReplica(broker: ServiceBroker, action: string, ctx: Context, failed: Set<string>): string | undefined {
	const list = broker.registry.getActionEndpoints(action) as Replicas | undefined;
	for (let i = 0; list && i < list.count(); i++) {
		const ep = list.next(ctx);
		if (ep && !failed.has(ep.id)) return ep.id;
	}
	return undefined;
}

/** The middleware (moleculer.config.ts): read actions called on another node are retried there on a node failure. */
export function readRetry(opts: ReadRetryOptions = READ_RETRY): Middleware {
	// The attempts this middleware makes itself go through the whole chain again: the first call's loop owns them.
	const attempts = new WeakSet<Context>();
	return {
		name: "ReadRetry",
		remoteAction(next, action) {
			if (!action.read || !action.name) return next;
			const broker = this;
			const name = action.name;
			// Wrapped handlers are called without `this` (as every Moleculer middleware calls them).
			const send = next as unknown as (ctx: Context) => Promise<unknown>;
			return async function readRetry(ctx: Context) {
				// A call directed at one node (its folders, its processes) means that node: no other one answers for it.
				if (attempts.has(ctx) || ctx.options.nodeID) return send(ctx);
				const retries = typeof ctx.options.retries === "number" ? ctx.options.retries : opts.retries;
				const failed = new Set<string>();
				let attempt = ctx;
				for (let n = 0; ; n++) {
					try {
						return n === 0 ? await send(ctx) : await broker.call(name, ctx.params, { ctx: attempt, nodeID: anotherReplica(broker, name, ctx, failed) });
					} catch (err) {
						if (n >= retries || !isNodeFailure(err)) throw err;
						if (attempt.nodeID) failed.add(attempt.nodeID);
						broker.logger.warn(`${name} failed on node ${attempt.nodeID ?? "?"} (${(err as Error).name}): trying again on another one`);
						await new Promise((r) => setTimeout(r, Math.min(opts.delay * 2 ** n, opts.maxDelay)));
						attempt = ctx.copy();
						attempts.add(attempt);
					}
				}
			};
		},
	};
}
