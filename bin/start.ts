// `npm start`: moleculer-runner, with SERVICES=api,users,… understood for TypeScript services (lib/runner.ts).
import { join } from "node:path";
import { Runner } from "moleculer";
import { prepareServicesEnv } from "../lib/runner";
import { parseConfig } from "../lib/config";

try {
	// Checked before anything starts: every wrong variable is listed at once, and nothing runs half-configured.
	parseConfig(process.env);
	prepareServicesEnv(process.env, join(__dirname, "..", "services"));
} catch (err) {
	console.error(`[cellar] ${(err as Error).message}`);
	process.exit(1);
}
void new Runner().start(process.argv);
