// The gateway floor of bench/floors.ts: a broker with Cellar's cluster options and moleculer-web, publishing one
// action under /a that validates its path parameter and answers FLOOR_BYTES (parsed once). Nothing else runs.
import { ServiceBroker, type Context } from "moleculer";
import ApiGateway from "moleculer-web";
import { clusterBrokerOptions } from "../lib/cluster/broker-options";
import { loadConfig } from "../lib/config";

const answer: unknown = JSON.parse(process.env.FLOOR_BYTES || "{}");
const broker = new ServiceBroker({ ...clusterBrokerOptions(loadConfig()), logger: false });
broker.createService({
	name: "floor",
	settings: { rest: "/floor" },
	actions: {
		stat: { rest: "GET /stat/:Node", params: { Node: { type: "string", max: 8192 } }, handler: (_ctx: Context<{ Node: string }>) => answer },
	},
});
broker.createService({ name: "api", mixins: [ApiGateway], settings: { port: Number(process.env.PORT), ip: "127.0.0.1", routes: [{ path: "/a", autoAliases: true, mappingPolicy: "restrict", bodyParsers: { json: true } }] } });
void broker.start();
