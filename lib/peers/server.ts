// The holder's side of a LOCAL datasource reached from other nodes: `/_peer/store/<datasource>?op=…` on the
// gateway, direct HTTP between nodes (the transporter is far too slow for file bytes). Every ObjectStore method
// is one request; bodies and downloads are streamed. Anything not signed with the cluster secret is refused (403).
//   GET  op=get&key[&start&end]   the bytes (200)          PUT op=put&key[&size][&type]  {size, md5}
//   GET  op=list&prefix           NDJSON ObjectInfo lines  PUT op=part&upload&n[&size]   {etag, size}
//   POST op=<method>              {args: [...]} -> {result}: head delete copy rename mkdir rmdir createMultipart
//                                 listParts completeMultipart abortMultipart freeSpace
// Errors answer {status, type, message} with the error's status. An upload the client gives up on ends with the
// trailer x-cellar-abort: the store discards it before the answer, so the caller knows nothing is left behind.
import type { IncomingMessage, ServerResponse } from "node:http";
import { PassThrough } from "node:stream";
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import type { ObjectStore } from "../storage/types";
import { checkPeerSignature } from "./signing";

export const PEER_PREFIX = "/_peer/store/";
export const ABORT_TRAILER = "x-cellar-abort";

const JSON_OPS = new Set(["head", "delete", "copy", "rename", "mkdir", "rmdir", "createMultipart", "listParts", "completeMultipart", "abortMultipart", "freeSpace"]);
const MAX_JSON = 4 * 1024 * 1024;

export interface PeerStoreServerDeps {
	secret(): string;
	/** The raw store of a datasource this node holds; throws NotFoundError when it holds no such datasource. */
	store(name: string): Promise<ObjectStore>;
	log(line: string): void;
}

function num(v: string | null, field: string): number | undefined {
	if (v === null || v === "") return undefined;
	if (!/^\d{1,15}$/.test(v)) throw new BadRequestError(`${field} must be a non-negative integer`);
	return Number(v);
}

export class PeerStoreServer {
	constructor(private readonly deps: PeerStoreServerDeps) {}

	static handles(url: string): boolean {
		return url.startsWith(PEER_PREFIX);
	}

	handle(req: IncomingMessage, res: ServerResponse): void {
		this.serve(req, res).catch((err) => this.fail(req, res, err));
	}

	private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const path = req.url ?? "";
		const method = req.method ?? "GET";
		const refused = checkPeerSignature(this.deps.secret(), method, path, req.headers);
		if (refused) {
			this.deps.log(`peer store: refused ${method} ${path.split("?")[0]} from ${req.socket.remoteAddress}: ${refused}`);
			throw new ForbiddenError(`Peer request refused: ${refused}`, "peer.forbidden");
		}
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
				res.end(`${JSON.stringify({ $error: errorBody(err) })}\n`);
			}
			return;
		}
		if (method === "PUT" && (op === "put" || op === "part")) {
			const size = num(q.get("size"), "size");
			const body = uploadBody(req);
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
			const raw = await readJson(req);
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

	private fail(req: IncomingMessage, res: ServerResponse, err: unknown): void {
		const body = errorBody(err);
		if (body.status >= 500) this.deps.log(`peer store: ${req.method} ${(req.url ?? "").split("?")[0]}: ${(err as Error)?.stack ?? String(err)}`);
		if (res.headersSent) return void res.destroy();
		req.resume();
		this.json(res, body.status, body);
	}
}

export function errorBody(err: unknown): { status: number; type: string; message: string } {
	const e = err as { code?: unknown; type?: unknown; message?: unknown; name?: unknown } | undefined;
	// The holder could not ask the cluster (the datasources service not reachable yet): a moment, not a 404.
	if (e?.name === "ServiceNotFoundError" || e?.name === "ServiceNotAvailableError" || e?.name === "RequestTimeoutError") {
		return { status: 503, type: "service.unavailable", message: `the holder cannot read the datasource's configuration yet: ${String(e.message)}` };
	}
	const status = typeof e?.code === "number" && e.code >= 400 && e.code <= 599 ? e.code : 500;
	return { status, type: typeof e?.type === "string" ? e.type : "internal", message: typeof e?.message === "string" ? e.message : "Internal error" };
}

/** The request body as the store reads it: ends only once the client said it finished well (no abort trailer). */
function uploadBody(req: IncomingMessage): NodeJS.ReadableStream {
	const out = new PassThrough();
	// The store reports its own failures; a late write after it gave up must not become an unhandled error.
	out.on("error", () => undefined);
	req.on("data", (c: Buffer) => {
		if (out.destroyed) return;
		if (!out.write(c)) {
			req.pause();
			out.once("drain", () => req.resume());
		}
	});
	req.once("end", () => {
		if (req.trailers[ABORT_TRAILER]) out.destroy(new Error(`the sending node gave up: ${String(req.trailers[ABORT_TRAILER]).slice(0, 200)}`));
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

async function readJson(req: IncomingMessage): Promise<{ args?: unknown } | null> {
	const chunks: Buffer[] = [];
	let n = 0;
	for await (const c of req as AsyncIterable<Buffer>) {
		n += c.length;
		if (n > MAX_JSON) throw new BadRequestError("Peer request body too large");
		chunks.push(c);
	}
	if (!n) return null;
	try {
		return JSON.parse(Buffer.concat(chunks).toString("utf8"));
	} catch {
		throw new BadRequestError("Peer request body is not JSON");
	}
}
