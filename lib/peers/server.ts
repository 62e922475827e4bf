// The holder's side of a LOCAL datasource reached from other nodes: `/_peer/store/<datasource>?op=…` on the
// gateway, direct HTTP between nodes (the transporter is far too slow for file bytes). Every ObjectStore method
// is one request; bodies and downloads are streamed. Anything not signed with the cluster secret, a request seen
// already and a body that is not the signed one are refused (403; lib/peers/signing).
//   GET  op=get&key[&start&end]   the bytes (200)          PUT op=put&key[&size][&type]  {size, md5}
//   GET  op=list&prefix           NDJSON ObjectInfo lines  PUT op=part&upload&n[&size]   {etag, size}
//   POST op=<method>              {args: [...]} -> {result}: head delete copy rename mkdir rmdir createMultipart
//                                 listParts completeMultipart abortMultipart freeSpace
// Errors answer Cells' {Code, Title, Detail} (toRestError) with the error's status. An upload the client gives up
// on ends with the trailer x-cellar-abort: the store discards it before the answer, so the caller knows nothing is
// left behind.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { PassThrough } from "node:stream";
import { BadRequestError, ForbiddenError, NotFoundError, toRestError, TooManyRequestsError } from "../errors";
import type { ObjectStore } from "../storage/types";
import { checkPeerBody, checkPeerSignature, EMPTY_SHA256, SeenNonces, sha256, STREAMING_PAYLOAD, type PeerSignature } from "./signing";

export const PEER_PREFIX = "/_peer/store/";
export const ABORT_TRAILER = "x-cellar-abort";

const JSON_OPS = new Set(["head", "delete", "copy", "rename", "mkdir", "rmdir", "createMultipart", "listParts", "completeMultipart", "abortMultipart", "freeSpace"]);
const MAX_JSON = 4 * 1024 * 1024;

export interface PeerStoreServerDeps {
	secret(): string;
	/** The raw store of a datasource this node holds; throws NotFoundError when it holds no such datasource. */
	store(name: string): Promise<ObjectStore>;
	log(line: string): void;
	/** How many nonces of live signatures the holder keeps at most (default 100 000). */
	maxNonces?: number;
}

function num(v: string | null, field: string): number | undefined {
	if (v === null || v === "") return undefined;
	if (!/^\d{1,15}$/.test(v)) throw new BadRequestError(`${field} must be a non-negative integer`);
	return Number(v);
}

export class PeerStoreServer {
	private readonly nonces: SeenNonces;

	constructor(private readonly deps: PeerStoreServerDeps) {
		this.nonces = new SeenNonces(deps.maxNonces);
	}

	static handles(url: string): boolean {
		return url.startsWith(PEER_PREFIX);
	}

	handle(req: IncomingMessage, res: ServerResponse): void {
		this.serve(req, res).catch((err) => this.fail(req, res, err));
	}

	private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const path = req.url ?? "";
		const method = req.method ?? "GET";
		const secret = this.deps.secret();
		const signed = checkPeerSignature(secret, method, path, req.headers);
		if ("refused" in signed) throw this.refuse(req, signed.refused);
		const seen = this.nonces.admit(signed.nonce, signed.expires);
		if (seen === "replayed") throw this.refuse(req, "replayed request (its nonce was used already)");
		if (seen === "full") throw new TooManyRequestsError("Peer request refused: too many peer requests in the last seconds", 1);
		if (method === "GET" && signed.payload !== EMPTY_SHA256) throw this.refuse(req, "a GET has no body to sign");
		const url = new URL(path, "http://peer");
		const name = decodeURIComponent(url.pathname.slice(PEER_PREFIX.length));
		if (!/^[0-9a-z]{1,64}$/.test(name)) throw new NotFoundError(`Unknown datasource "${name.slice(0, 80)}"`);
		const store = await this.deps.store(name);
		const q = url.searchParams;
		const op = q.get("op") ?? "";
		const key = q.get("key") ?? "";
		if (method === "GET" && op === "get") {
			const start = num(q.get("start"), "start");
			const end = num(q.get("end"), "end");
			const range = start === undefined && end === undefined ? undefined : { start: start ?? 0, end: end ?? Number.MAX_SAFE_INTEGER };
			const body = await store.get(key, range);
			res.statusCode = 200;
			res.setHeader("Content-Type", "application/octet-stream");
			const src = body as NodeJS.ReadableStream & { destroy?(e?: Error): void };
			res.once("close", () => src.destroy?.());
			src.on("error", () => res.destroy());
			src.pipe(res);
			return;
		}
		if (method === "GET" && op === "list") {
			const it = store.list(q.get("prefix") ?? "")[Symbol.asyncIterator]();
			// The first item before the headers: a bad prefix is an error status, not a broken stream.
			let next = await it.next();
			res.statusCode = 200;
			res.setHeader("Content-Type", "application/x-ndjson");
			try {
				while (!next.done) {
					if (res.destroyed) return void (await it.return?.());
					if (!res.write(`${JSON.stringify(next.value)}\n`)) await new Promise((r) => res.once("drain", r));
					next = await it.next();
				}
				res.end();
			} catch (err) {
				const { status, body } = toRestError(err);
				res.end(`${JSON.stringify({ $error: { status, ...body } })}\n`);
			}
			return;
		}
		if (method === "PUT" && (op === "put" || op === "part")) {
			if (signed.payload !== STREAMING_PAYLOAD) throw this.refuse(req, "an upload signs its digest in a trailer");
			const size = num(q.get("size"), "size");
			const body = uploadBody(req, (digest, length) => {
				const wrong = checkPeerBody(secret, signed, req.trailers, digest, length);
				return wrong ? this.refuse(req, wrong) : null;
			});
			let result: unknown;
			try {
				if (op === "put") result = await store.put(key, body, { size, contentType: q.get("type") ?? undefined });
				else result = await store.putPart(q.get("upload") ?? "", num(q.get("n"), "n") ?? 0, body, size);
			} finally {
				// Whatever the store did not read is drained: the answer goes to a client that has finished sending.
				await drained(req);
			}
			return this.json(res, 200, result);
		}
		if (method === "POST" && JSON_OPS.has(op)) {
			const raw = await this.readJson(req, secret, signed);
			const args = Array.isArray(raw?.args) ? (raw.args as unknown[]) : [];
			const fn = (store as unknown as Record<string, ((...a: unknown[]) => Promise<unknown>) | undefined>)[op];
			if (!fn) throw new BadRequestError(`The store of datasource ${name} has no ${op}`);
			const result = await fn.apply(store, args);
			return this.json(res, 200, { result: result ?? null });
		}
		throw new BadRequestError(`Unknown peer store operation ${method} ${op.slice(0, 40)}`);
	}

	private json(res: ServerResponse, status: number, body: unknown): void {
		res.statusCode = status;
		res.setHeader("Content-Type", "application/json; charset=utf-8");
		res.end(JSON.stringify(body));
	}

	private refuse(req: IncomingMessage, why: string): ForbiddenError {
		this.deps.log(`peer store: refused ${req.method} ${(req.url ?? "").split("?")[0]} from ${req.socket.remoteAddress}: ${why}`);
		return new ForbiddenError(`Peer request refused: ${why}`, "peer.forbidden");
	}

	private async readJson(req: IncomingMessage, secret: string, signed: PeerSignature): Promise<{ args?: unknown } | null> {
		const chunks: Buffer[] = [];
		let n = 0;
		for await (const c of req as AsyncIterable<Buffer>) {
			n += c.length;
			if (n > MAX_JSON) throw new BadRequestError("Peer request body too large");
			chunks.push(c);
		}
		const raw = Buffer.concat(chunks);
		const wrong = checkPeerBody(secret, signed, req.trailers, sha256(raw), n);
		if (wrong) throw this.refuse(req, wrong);
		if (!n) return null;
		try {
			return JSON.parse(raw.toString("utf8"));
		} catch {
			throw new BadRequestError("Peer request body is not JSON");
		}
	}

	private fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
		const { status, body } = toRestError(err);
		// The holder's log has what a 500 does not tell the other node (toRestError keeps internals out).
		if (status >= 500) this.deps.log(`peer store: ${req.method} ${(req.url ?? "").split("?")[0]}: ${(err as Error)?.stack ?? String(err)}`);
		if (res.headersSent) return void res.destroy();
		req.resume();
		this.json(res, status, body);
	}
}

/**
 * The request body as the store reads it: ends only once the client said it finished well (no abort trailer) and
 * `verify` found it is the signed body; otherwise it fails with verify's error, and the store drops what it wrote.
 */
function uploadBody(req: IncomingMessage, verify: (sha256: string, length: number) => Error | null): NodeJS.ReadableStream {
	const out = new PassThrough();
	const hash = createHash("sha256");
	let length = 0;
	// The store reports its own failures; a late write after it gave up must not become an unhandled error.
	out.on("error", () => undefined);
	req.on("data", (c: Buffer) => {
		if (out.destroyed) return;
		hash.update(c);
		length += c.length;
		if (!out.write(c)) {
			req.pause();
			out.once("drain", () => req.resume());
		}
	});
	req.once("end", () => {
		if (out.destroyed) return;
		if (req.trailers[ABORT_TRAILER]) return void out.destroy(new Error(`the sending node gave up: ${String(req.trailers[ABORT_TRAILER]).slice(0, 200)}`));
		const wrong = verify(hash.digest("hex"), length);
		if (wrong) out.destroy(wrong);
		else out.end();
	});
	req.once("aborted", () => out.destroy(new Error("the sending node went away")));
	req.once("error", (err) => out.destroy(err));
	return out;
}

function drained(req: IncomingMessage): Promise<void> {
	if (req.complete || req.destroyed) return Promise.resolve();
	return new Promise((resolve) => {
		req.resume();
		req.once("end", () => resolve());
		req.once("close", () => resolve());
	});
}
