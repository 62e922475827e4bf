// The domain commands (lib/repl/commands) as moleculer-repl custom commands, for `npm run repl` (bin/repl.ts) and
// the REPL of `npm run dev` (moleculer.config.ts): argument parsing and printing only.
import type { ServiceBroker, ReplOptions } from "moleculer";
import type { RegistryNode } from "../discovery/model";
import * as commands from "./commands";

type CustomCommand = NonNullable<ReplOptions["customCommands"]>[number];
/** What moleculer-repl hands an action: the declared arguments by name (its typings say string[]). */
type Args = Record<string, string | undefined>;

/** `self`: the node to leave out of `peers` (the REPL's own, which runs no service). */
export function contextOf(broker: ServiceBroker, self?: string): commands.ReplContext {
	return {
		caller: broker,
		nodes: () => broker.registry.getNodeList({ onlyAvailable: false, withServices: true }) as unknown as RegistryNode[],
		self: self ?? "",
	};
}

/** One line per failure: the action's message (and its Cells type), not a stack. */
export function describeError(err: unknown): string {
	const e = err as { message?: string; type?: string; code?: number };
	return `error: ${e?.message ?? String(err)}${e?.code ? ` (${e.code}${e.type ? ` ${e.type}` : ""})` : ""}`;
}

// Node's REPL evaluates piped lines as they arrive, without waiting for the previous command: the commands run
// one after the other, so that a script's answers come in its order.
let queue: Promise<void> = Promise.resolve();

/** Resolves once every command typed so far has printed its answer (bin/repl.ts waits for it before stopping). */
export function idle(): Promise<void> {
	return queue;
}

function command(spec: string, description: string, run: (r: commands.ReplContext, args: Args) => Promise<string>, self?: string): CustomCommand {
	return {
		command: spec,
		description,
		action: (broker: ServiceBroker, args: unknown) => {
			queue = queue.then(async () => {
				try {
					console.log(await run(contextOf(broker, self), args as Args));
				} catch (err) {
					console.log(describeError(err));
				}
			});
			return queue;
		},
	};
}

/** The REPL's domain commands; `self` is the REPL's own node when it runs none of the services. */
export function replCommands(self?: string): CustomCommand[] {
	return [
		command("users [text]", "Users whose login or display name contains <text> (every user without it)", (r, a) => commands.users(r, a.text), self),
		command(
			"tree <command> [path]",
			"tree ls <datasource>/<folder>: list a folder of the index (the datasources without a path); tree stat <datasource>/<path>: one node",
			(r, a) => {
				if (a.command === "ls") return commands.treeLs(r, a.path ?? "");
				if (a.command === "stat") return commands.treeStat(r, a.path ?? "");
				return Promise.resolve(`Unknown tree command "${a.command}": tree ls <path>, tree stat <path>`);
			},
			self,
		),
		command("datasources", "The datasources and where their bytes are", (r) => commands.datasources(r), self),
		command("jobs", "Every user's jobs with their latest task", (r) => commands.jobs(r), self),
		command("peers", "The cluster's nodes: host, pid, uptime, memory, load, services", (r) => commands.peers(r), self),
		command(
			"config <command> <path> [json]",
			"config get <path>: a value of the configuration tree; config set <path> '<json>': change it on every node",
			(r, a) => {
				if (a.command === "get") return commands.configGet(r, a.path ?? "");
				if (a.command === "set") return commands.configSet(r, a.path ?? "", a.json as string);
				return Promise.resolve(`Unknown config command "${a.command}": config get <path>, config set <path> <json>`);
			},
			self,
		),
	];
}
