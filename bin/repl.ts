// `npm run repl`: a broker that joins the running cluster (NAMESPACE, TRANSPORTER, serializer and timeouts as
// its nodes have them: lib/cluster/broker-options), runs no service, and opens moleculer-repl with Cellar's
// commands (users, tree ls/stat, datasources, jobs, peers, config get/set: lib/repl) next to moleculer-repl's own
// (nodes, services, call…). A node started without TRANSPORTER has no transporter to join: its REPL is
// `npm run dev` (--repl).
import { hostname } from "node:os";
import { ServiceBroker } from "moleculer";
import { parseConfig } from "../lib/config";
import { clusterBrokerOptions } from "../lib/cluster/broker-options";
import { idle, replCommands } from "../lib/repl/custom-commands";

async function main(): Promise<void> {
	let cfg;
	try {
		cfg = parseConfig(process.env);
	} catch (err) {
		console.error(`[cellar] ${(err as Error).message}`);
		process.exit(1);
	}
	if (!cfg.transporter) {
		console.error(
			"[cellar] TRANSPORTER is not set: the REPL joins a cluster through its transporter (TRANSPORTER=redis://… as the nodes have it), " +
				"and a node started without one cannot be joined from another process. For a single-process node, use `npm run dev`: it opens the same REPL inside the node.",
		);
		process.exit(2);
	}
	const self = `repl-${hostname()}-${process.pid}`;
	const broker = new ServiceBroker({
		...clusterBrokerOptions(cfg),
		nodeID: self,
		// The REPL's own chatter would interleave with the answers: only problems are shown.
		logger: { type: "Console", options: { level: "warn", formatter: "short" } },
		replOptions: { delimiter: "cellar $", customCommands: replCommands(self) },
	});
	await broker.start();
	// Other nodes announce themselves when they see the REPL's INFO: wait a little for the first one.
	for (let i = 0; i < 50 && !broker.registry.getNodeList({ onlyAvailable: true }).some((n) => n.id !== self); i++) await new Promise((r) => setTimeout(r, 100));
	const others = broker.registry.getNodeList({ onlyAvailable: true }).filter((n) => n.id !== self);
	console.log(others.length ? `Joined namespace "${cfg.namespace}": ${others.map((n) => n.id).join(", ")}. Type help for the commands.` : `No node answered on ${cfg.transporter.replace(/\/\/[^@/]*@/, "//…@")} in namespace "${cfg.namespace}" yet (are the nodes running with the same TRANSPORTER and NAMESPACE?).`);
	// moleculer-repl stops the broker when its input ends: a piped script's last commands finish first.
	const stop = broker.stop.bind(broker);
	broker.stop = async () => {
		await idle();
		return stop();
	};
	broker.repl();
}

main().catch((err) => {
	console.error(`[cellar] ${(err as Error).message}`);
	process.exit(1);
});
