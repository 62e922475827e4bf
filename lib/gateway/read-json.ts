// Reads a JSON request body once, within a size limit, for the gateway's cached-response path (body-parser is
// the general path; this one skips its content negotiation, which costs more than the parse on small bodies).
import type { IncomingMessage } from "node:http";
import { BadRequestError, PayloadTooLargeError } from "../errors";

export function parseSize(limit: string | number): number {
	if (typeof limit === "number") return limit;
	const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(limit);
	if (!m) throw new Error(`Invalid size "${limit}"`);
	const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(m[2] ?? "b").toLowerCase() as "b"];
	return Math.floor(Number(m[1]) * unit);
}

/** Resolves with the raw body text; rejects with a 413 past the limit. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
	return new Promise((resolve, reject) => {
		const declared = Number(req.headers["content-length"] ?? NaN);
		if (declared > limit) {
			req.resume();
			return reject(new PayloadTooLargeError(`Request body is larger than ${limit} bytes`));
		}
		const chunks: Buffer[] = [];
		let size = 0;
		let failed = false;
		req.on("data", (chunk: Buffer) => {
			if (failed) return;
			size += chunk.length;
			if (size > limit) {
				failed = true;
				return reject(new PayloadTooLargeError(`Request body is larger than ${limit} bytes`));
			}
			chunks.push(chunk);
		});
		req.on("error", (err) => {
			failed = true;
			reject(err);
		});
		req.on("end", () => {
			if (!failed) resolve(chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks, size).toString("utf8"));
		});
	});
}

/** The parsed body (undefined when empty), or a 400 that says why it is not a JSON object or array. */
export function parseJsonBody(text: string): unknown {
	if (text.trim() === "") return undefined;
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (e) {
		throw new BadRequestError(`Request body is not valid JSON: ${(e as Error).message}`);
	}
	if (value === null || typeof value !== "object") throw new BadRequestError("Request body must be a JSON object or array");
	return value;
}
