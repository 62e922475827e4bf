// A stand-in for lib/frontend/thumbnail-worker, speaking its protocol, for test/unit/frontend-thumbnails: what it
// does depends on the bytes it is sent. "crash": an uncaught error; "exit": exits with code 3; "hang": never answers;
// "hold:<name>": says on the "thumbnail-test" broadcast channel that it started <name> (with its thread id), then
// answers once the test releases <name>; anything else: answered at once, upper-cased.
import { BroadcastChannel, parentPort, threadId } from "node:worker_threads";
import { WORKER_READY, type ThumbnailReply, type ThumbnailRequest } from "../../lib/frontend/thumbnail-pool";

export interface HoldMessage {
	started?: string;
	thread?: number;
	release?: string;
}

const port = parentPort;
if (!port) throw new Error("a worker thread");
const channel = new BroadcastChannel("thumbnail-test");
channel.unref();
const held = new Map<string, () => void>();
channel.onmessage = (e) => {
	const m = (e as { data: HoldMessage }).data;
	if (m.release) held.get(m.release)?.();
};

port.on("message", (req: ThumbnailRequest) => {
	const label = Buffer.from(req.png).toString();
	const reply = (data: string) => port.postMessage({ id: req.id, ok: true, data: Buffer.from(data) } satisfies ThumbnailReply);
	if (label === "crash") setImmediate(() => {
		throw new Error("boom");
	});
	else if (label === "exit") process.exit(3);
	else if (label === "hang") return;
	else if (label.startsWith("hold:")) {
		const name = label.slice(5);
		held.set(name, () => reply(`${name}@${threadId}`));
		channel.postMessage({ started: name, thread: threadId } satisfies HoldMessage);
	} else reply(label.toUpperCase());
});
port.postMessage(WORKER_READY);
