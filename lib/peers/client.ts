// A LOCAL datasource held by another node, as an ObjectStore: every call is a signed HTTP request to that node's
// gateway (lib/peers/server.ts), bytes streamed both ways. The holder's address is looked up on each call (it
// comes from the registry, and a restarted node may come back elsewhere). When the holder is not there, calls fail
// at once with a 503 that names it: a short connect timeout, and no waiting for a node the registry lost.
import { createHash } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BadRequestError, CellarError, ConflictError, ForbiddenError, NotFoundError, ServiceUnavailableError } from "../errors";
import { RangeNotSatisfiableError, type MultipartPart, type ObjectInfo, type ObjectStore } from "../storage/types";
import { ABORT_TRAILER, PEER_PREFIX } from "./server";
import { CONTENT_LENGTH_TRAILER, CONTENT_SHA256_HEADER, sha256, SIGNATURE_HEADER, signPeerRequest, signPeerTrailer, STREAMING_PAYLOAD, TRAILER_SIGNATURE } from "./signing";

export interface PeerObjectStoreOptions {
	datasource: string;
	/** The node id of the holder, for messages. */
	holder: string;
	/** The holder's internal base URL (http://host:port), or undefined when the holder is not in the cluster now. */
	baseUrl(): string | undefined;
	secret(): string;
	/** Connecting to the holder; past it the holder is down (default 2 s). */
	connectTimeoutMs?: number;
	/** Silence on an open connection before giving up (default 60 s: a large range read may take a while to start). */
	idleTimeoutMs?: number;
}

type Query = Record<string, string | number | undefined>;

export class PeerObjectStore implements ObjectStore {
	readonly kind = "LOCAL" as const;
	private readonly connectTimeout: number;
	private readonly idleTimeout: number;

	constructor(private readonly opts: PeerObjectStoreOptions) {
		this.connectTimeout = opts.connectTimeoutMs ?? 2000;
		this.idleTimeout = opts.idleTimeoutMs ?? 60_000;
	}

	async put(key: string, body: NodeJS.ReadableStream, opts?: { size?: number; contentType?: string }): Promise<{ size: number; md5: string }> {
		return this.json(await this.upload({ op: "put", key, size: opts?.size, type: opts?.contentType }, body));
	}

	async get(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
		const res = await this.send("GET", { op: "get", key, start: range?.start, end: range?.end });
		await this.check(res);
		return res;
	}

	head(key: string): Promise<ObjectInfo | null> {
		return this.op("head", key);
	}
	async delete(key: string): Promise<void> {
		await this.op("delete", key);
	}
	copy(from: string, to: string): Promise<{ size: number }> {
		return this.op("copy", from, to);
	}
	async rename(from: string, to: string): Promise<void> {
		await this.op("rename", from, to);
	}
	async mkdir(key: string): Promise<void> {
		await this.op("mkdir", key);
	}
	async rmdir(key: string): Promise<void> {
		await this.op("rmdir", key);
	}
	createMultipart(key: string): Promise<string> {
		return this.op("createMultipart", key);
	}
	async putPart(uploadId: string, partNumber: number, body: NodeJS.ReadableStream, size?: number): Promise<{ etag: string; size: number }> {
		return this.json(await this.upload({ op: "part", upload: uploadId, n: partNumber, size }, body));
	}
	listParts(uploadId: string): Promise<MultipartPart[]> {
		return this.op("listParts", uploadId);
	}
	completeMultipart(uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number; md5?: string; etag: string }> {
		return this.op("completeMultipart", uploadId, parts);
	}
	async abortMultipart(uploadId: string): Promise<void> {
		await this.op("abortMultipart", uploadId);
	}
	freeSpace(): Promise<number> {
		return this.op("freeSpace");
	}

	async *list(prefix: string): AsyncIterable<ObjectInfo> {
		const res = await this.send("GET", { op: "list", prefix });
		await this.check(res);
		let rest = "";
		res.setEncoding("utf8");
		try {
			for await (const chunk of res as AsyncIterable<string>) {
				rest += chunk;
				let nl: number;
				while ((nl = rest.indexOf("\n")) >= 0) {
					const line = rest.slice(0, nl);
					rest = rest.slice(nl + 1);
					if (!line) continue;
					const item = JSON.parse(line) as ObjectInfo & { $error?: PeerError };
					if (item.$error) throw toError(item.$error);
					yield item;
				}
			}
		} finally {
			res.destroy();
		}
	}

	// ------------------------------------------------------------------ transport

	private async op<T>(name: string, ...args: unknown[]): Promise<T> {
		const res = await this.send("POST", { op: name }, Buffer.from(JSON.stringify({ args })));
		return (await this.json<{ result: T }>(res)).result;
	}

	private async json<T>(res: IncomingMessage): Promise<T> {
		await this.check(res);
		return JSON.parse((await readAll(res)).toString("utf8")) as T;
	}

	/** Throws the holder's error (its status and message) for an error answer. */
	private async check(res: IncomingMessage): Promise<void> {
		const status = res.statusCode ?? 500;
		if (status < 400) return;
		const text = (await readAll(res).catch(() => Buffer.alloc(0))).toString("utf8");
		let body: { Title?: string; Code?: string } = {};
		try {
			body = JSON.parse(text);
		} catch {
			/* not ours: the status says enough */
		}
		if (status === 503) throw this.unavailable(body.Title ?? "it is starting");
		throw toError({ status, Code: body.Code ?? "peer.error", Title: body.Title ?? `Node ${this.opts.holder} answered ${status}` });
	}

	private unavailable(why: string): ServiceUnavailableError {
		return new ServiceUnavailableError(`Datasource ${this.opts.datasource} is held by node ${this.opts.holder}, which cannot be reached: ${why}`);
	}

	/**
	 * Streams `body` to the holder, its sha256 and length signed in trailers once it is sent; a body that fails is
	 * aborted there (trailer) before this rejects with its error.
	 */
	private upload(query: Query, body: NodeJS.ReadableStream): Promise<IncomingMessage> {
		return new Promise((resolve, reject) => {
			let bodyError: Error | undefined;
			const trailers = [ABORT_TRAILER, CONTENT_SHA256_HEADER, CONTENT_LENGTH_TRAILER, TRAILER_SIGNATURE].join(", ");
			const req = this.open("PUT", query, STREAMING_PAYLOAD, { "Transfer-Encoding": "chunked", Trailer: trailers }, (err, res) => {
				if (bodyError) {
					res?.resume();
					return reject(bodyError);
				}
				if (err) return reject(err);
				resolve(res as IncomingMessage);
			});
			if (!req) return;
			const hash = createHash("sha256");
			let length = 0;
			(async () => {
				try {
					for await (const chunk of body as AsyncIterable<Buffer | string>) {
						if (req.destroyed) return;
						const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
						hash.update(bytes);
						length += bytes.length;
						if (!req.write(bytes)) await new Promise((r) => req.once("drain", r));
					}
					if (req.destroyed) return;
					req.addTrailers(signPeerTrailer(this.opts.secret(), String(req.getHeader(SIGNATURE_HEADER)), hash.digest("hex"), length));
					req.end();
				} catch (err) {
					bodyError = err instanceof Error ? err : new Error(String(err));
					if (req.destroyed) return;
					req.addTrailers({ [ABORT_TRAILER]: bodyError.message.replace(/[^\x20-\x7e]/g, "?").slice(0, 200) || "aborted" });
					req.end();
				}
			})();
		});
	}

	private send(method: string, query: Query, body?: Buffer): Promise<IncomingMessage> {
		return new Promise((resolve, reject) => {
			const headers: Record<string, string> = body ? { "Content-Type": "application/json", "Content-Length": String(body.length) } : {};
			const req = this.open(method, query, sha256(body ?? Buffer.alloc(0)), headers, (err, res) => (err ? reject(err) : resolve(res as IncomingMessage)));
			req?.end(body);
		});
	}

	/** Opens a request that signs `payload` (see lib/peers/signing); `done` gets the answer's head or why none (once). */
	private open(method: string, query: Query, payload: string, headers: Record<string, string>, done: (err: Error | null, res?: IncomingMessage) => void): ReturnType<typeof httpRequest> | undefined {
		const base = this.opts.baseUrl();
		if (!base) {
			done(this.unavailable("it is not in the cluster now"));
			return undefined;
		}
		const qs = new URLSearchParams();
		for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
		const path = `${PEER_PREFIX}${encodeURIComponent(this.opts.datasource)}?${qs.toString()}`;
		const url = new URL(path, base);
		const signed = signPeerRequest(this.opts.secret(), method, path, payload);
		let settled = false;
		const finish = (err: Error | null, res?: IncomingMessage) => {
			if (settled) return;
			settled = true;
			clearTimeout(connectTimer);
			done(err, res);
		};
		const make = url.protocol === "https:" ? httpsRequest : httpRequest;
		const req = make(url, { method, headers: { ...headers, ...signed }, agent: false });
		const connectTimer = setTimeout(() => {
			if (req.socket && !req.socket.connecting) return;
			req.destroy(Object.assign(new Error(`no connection within ${this.connectTimeout} ms`), { code: "ETIMEDOUT" }));
		}, this.connectTimeout);
		req.setTimeout(this.idleTimeout, () => req.destroy(Object.assign(new Error(`silent for ${this.idleTimeout} ms`), { code: "ETIMEDOUT" })));
		req.once("response", (res) => {
			res.once("error", () => undefined);
			finish(null, res);
		});
		req.once("error", (err: Error & { code?: string }) => finish(this.unavailable(err.code ? `${err.code} ${err.message}` : err.message)));
		return req;
	}
}

/** An error answer of the holder: the status and Cells' error body (toRestError). */
type PeerError = { status: number; Code: string; Title: string };

function toError(b: PeerError): Error {
	switch (b.status) {
		case 400:
			return new BadRequestError(b.Title);
		case 403:
			return new ForbiddenError(b.Title, b.Code);
		case 404:
			return new NotFoundError(b.Title, b.Code);
		case 409:
			return new ConflictError(b.Title, b.Code);
		case 416:
			return new RangeNotSatisfiableError(b.Title);
		default:
			return new CellarError(b.Title, b.status, b.Code);
	}
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
	return Buffer.concat(chunks);
}
