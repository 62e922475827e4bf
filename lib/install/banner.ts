// What the node prints on stdout when it is ready. Printed with console.log, outside the logger, so that
// LOG_LEVEL=silent cannot hide the one chance to read a generated password.
export interface BannerInput {
	/** `http://127.0.0.1:8080`, or undefined when this node runs no gateway. */
	url?: string;
	/** Nodes that run the gateway, when it is not this one. */
	gatewayNodes?: string[];
	adminLogin: string;
	/** How the administrator's password is known. */
	password: { kind: "generated"; value: string } | { kind: "env" } | { kind: "installer" } | { kind: "existing" };
}

const RULE = "=".repeat(72);

export function formatBanner(b: BannerInput): string {
	const lines = [RULE, "Cellar is installed and ready."];
	if (b.url) lines.push(`  URL:      ${b.url}   (REST API under ${b.url}/a)`);
	else if (b.gatewayNodes?.length) lines.push(`  URL:      served by the node(s) running the api service: ${b.gatewayNodes.join(", ")}`);
	else lines.push("  URL:      no node runs the api service yet (start one with SERVICES including api)");
	lines.push(`  Login:    ${b.adminLogin}`);
	switch (b.password.kind) {
		case "generated":
			lines.push(`  Password: ${b.password.value}`);
			lines.push("  This password was generated and is shown only this once: note it, then change it.");
			break;
		case "env":
			lines.push("  Password: the value of ADMIN_PASSWORD");
			break;
		case "installer":
			lines.push("  Password: the one given to POST /a/install");
			break;
		case "existing":
			lines.push("  Password: unchanged (this administrator account already existed)");
			break;
	}
	lines.push(RULE);
	return lines.join("\n");
}

/** The line a node prints on later starts: no credentials. */
export function formatReadyLine(url: string | undefined, installedAt: string): string {
	return url ? `Cellar is ready: ${url} (installed ${installedAt})` : `Cellar node ready (installed ${installedAt}); this node runs no gateway`;
}
