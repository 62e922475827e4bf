// Bytes through /io, for /metrics: what the connection's socket read and wrote while a request was served (headers
// included), or the request's Content-Length when more than the socket saw after the request reached the gateway
// (its first bytes were read before). Plain counters: the gateway's metrics read them when scraped.
import type { IncomingMessage, ServerResponse } from "node:http";

export class IoTransfers {
	bytesIn = 0;
	bytesOut = 0;
	requests = 0;

	track(req: IncomingMessage, res: ServerResponse): void {
		const socket = req.socket;
		const read0 = socket.bytesRead;
		const written0 = socket.bytesWritten;
		this.requests++;
		res.once("close", () => {
			const declared = Number(req.headers["content-length"]);
			this.bytesIn += Math.max(socket.bytesRead - read0, Number.isFinite(declared) ? declared : 0);
			this.bytesOut += Math.max(0, socket.bytesWritten - written0);
		});
	}
}
