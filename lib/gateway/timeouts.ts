// Time limits on what clients owe the gateway. A JSON body is small: it must arrive whole within a deadline, or
// a client announcing 100 kB and sending a byte every few seconds holds a connection (and a parser) for ever.
// /io transfers may last hours: they are only cut when the connection goes silent while the client owes data
// (an upload stalls) or does not take the answer (a download nobody reads).
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** Headers (the request line and header fields) must arrive within this time, whatever the route. */
const HEADERS_TIMEOUT_MS = 20_000;

/**
 * Arms the body deadline of one request: `expire` answers it (with the error it chooses) when the body is not
 * complete after `ms`; the connection is then closed, the rest of the body is never read.
 */
export function bodyDeadline(req: IncomingMessage, res: ServerResponse, ms: number, expire: () => void): void {
	if (ms <= 0 || req.complete || !hasBody(req)) return;
	const timer = setTimeout(() => {
		if (req.complete || res.writableEnded) return;
		res.once("finish", () => req.socket.destroy());
		if (!res.headersSent) res.setHeader("Connection", "close");
		expire();
		// An answer already under way (or none written): the socket goes now, the client sees the cut.
		if (!res.writableEnded) req.socket.destroy();
	}, ms);
	const clear = () => clearTimeout(timer);
	req.once("end", clear);
	res.once("finish", clear);
	res.once("close", clear);
}

function hasBody(req: IncomingMessage): boolean {
	return Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
}

/**
 * Node's own limits, set for a server whose uploads may be long: no cap on the whole request (Node's default,
 * 5 minutes, cuts any upload that takes longer), headers within HEADERS_TIMEOUT_MS, and `idleMs` of silence
 * tolerated only while the server itself is working on a received request.
 */
export function applyServerTimeouts(server: Server, idleMs: number): void {
	server.requestTimeout = 0;
	server.headersTimeout = HEADERS_TIMEOUT_MS;
	if (idleMs <= 0) return;
	server.timeout = idleMs;
	const current = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();
	server.on("request", (req: IncomingMessage, res: ServerResponse) => {
		current.set(req.socket, { req, res });
		// Node drops the socket's timeout after a keep-alive wait: every request arms it again.
		req.socket.setTimeout(idleMs);
	});
	// With a listener here Node no longer destroys timed-out sockets itself: this decides.
	server.on("timeout", (socket: Socket) => {
		const cur = current.get(socket);
		const serverBusy = !!cur && cur.req.complete && !cur.res.writableEnded && !socket.writableNeedDrain;
		// Waiting for a slow answer (a large server-side copy): not the client's silence. Service calls are bounded
		// by REQUEST_TIMEOUT, so this does not wait for ever.
		if (serverBusy) return void socket.setTimeout(idleMs);
		socket.destroy();
	});
}
