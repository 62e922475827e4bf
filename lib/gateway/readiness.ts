// When a node's gateway really serves: its port opens when the `api` service starts, which may be before the
// other services of the node have started and before their routes are published. Until then it answers 503
// with Retry-After (never a 404 for a route that exists), and the start banner waits for it.

/** What the gateway service exposes of its start to other local services. */
export interface GatewayReadiness {
	/** Every local service has started and the gateway's routes were generated after that. */
	serving: boolean;
}

/** Whether a local `api` service (from broker.getLocalService) serves; a node without one has nothing to wait for. */
export function gatewayServing(api: unknown): boolean {
	if (!api || typeof api !== "object") return true;
	return (api as Partial<GatewayReadiness>).serving === true;
}
