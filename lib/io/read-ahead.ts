// The start of a body read before the answer starts. Until the status line is sent an error is still an error
// answer the client can read; after it, all that is left is cutting the connection.

/**
 * Reads `stream` until it ends or `limit` bytes came (then it is left paused, the rest to be piped). A stream
 * that fails within those bytes rejects here, before anything was sent.
 */
export function readAhead(stream: NodeJS.ReadableStream, limit: number): Promise<{ head: Buffer[]; ended: boolean }> {
	return new Promise((resolve, reject) => {
		const head: Buffer[] = [];
		let size = 0;
		const cleanup = () => {
			stream.removeListener("data", onData);
			stream.removeListener("end", onEnd);
			stream.removeListener("error", onError);
		};
		const onData = (chunk: Buffer | string) => {
			const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
			head.push(b);
			size += b.length;
			if (size < limit) return;
			stream.pause();
			cleanup();
			resolve({ head, ended: false });
		};
		const onEnd = () => {
			cleanup();
			resolve({ head, ended: true });
		};
		const onError = (err: Error) => {
			cleanup();
			reject(err);
		};
		stream.on("data", onData);
		stream.once("end", onEnd);
		stream.once("error", onError);
	});
}
