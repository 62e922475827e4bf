// Which node opens a LOCAL datasource's folder, the address a node announces for its peer store, and how the
// holder checks peer requests: signatures over the body, no replay, a body changed on the way never stored.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { advertisedPeerUrl, holds, remoteHolder, unheld, withHolder, type HeldDataSource } from "../../lib/peers/holder";
import { PeerObjectStore } from "../../lib/peers/client";
import { PeerStoreServer } from "../../lib/peers/server";
import { checkPeerBody, checkPeerSignature, EMPTY_SHA256, SeenNonces, sha256, SIGNATURE_HEADER, signPeerRequest, signPeerTrailer, STREAMING_PAYLOAD, type PeerSignature } from "../../lib/peers/signing";
import { LocalStore } from "../../lib/storage/local";

describe("peers: holders of LOCAL datasources", () => {
	it("names the holder only in a cluster, for a LOCAL datasource held by another node", () => {
		const onB = { StorageType: "LOCAL", PeerAddress: "b" };
		assert.equal(remoteHolder(onB, "a", true), "b");
		assert.equal(holds(onB, "a", true), false);
		assert.equal(remoteHolder(onB, "b", true), undefined);
		assert.equal(holds(onB, "b", true), true);
		// One process: whatever node id it had when the datasource was created.
		assert.equal(remoteHolder(onB, "a", false), undefined);
		assert.equal(remoteHolder({ StorageType: "S3", PeerAddress: "b" }, "a", true), undefined);
		assert.equal(holds({ StorageType: "S3" }, "a", true), false);
		// No holder recorded: in a cluster nobody serves it to the others until one claims it; one process holds it.
		assert.equal(holds({ StorageType: "LOCAL" }, "a", true), false);
		assert.equal(holds({ StorageType: "LOCAL" }, "a", false), true);
		assert.equal(unheld({ StorageType: "LOCAL" }, true), true);
		assert.equal(unheld({}, true), true);
		assert.equal(unheld({ StorageType: "LOCAL" }, false), false);
		assert.equal(unheld(onB, true), false);
		assert.equal(unheld({ StorageType: "S3" }, true), false);
	});

	it("claims a datasource without holder only in a cluster and only on a node that can hold it", async () => {
		const claimed: string[] = [];
		const claim = async (name: string): Promise<HeldDataSource & { Name: string }> => {
			claimed.push(name);
			return { Name: name, StorageType: "LOCAL", PeerAddress: "a" };
		};
		const bare: HeldDataSource & { Name: string } = { Name: "personal", StorageType: "LOCAL" };
		// One process: unchanged, no claim.
		assert.deepEqual(await withHolder(bare, { clustered: false, canHold: false, claim }), bare);
		// Held already, or S3: nothing to claim.
		const held = { Name: "photos", StorageType: "LOCAL", PeerAddress: "b" };
		assert.equal(await withHolder(held, { clustered: true, canHold: true, claim }), held);
		const s3 = { Name: "bucket", StorageType: "S3" };
		assert.equal(await withHolder(s3, { clustered: true, canHold: true, claim }), s3);
		assert.deepEqual(claimed, []);
		// A node without the peer endpoint never claims: 503 until a node running api has.
		await assert.rejects(withHolder(bare, { clustered: true, canHold: false, claim }), (e: { code?: number; message?: string }) => e.code === 503 && /personal has no holder yet/.test(e.message ?? ""));
		assert.deepEqual(claimed, []);
		assert.equal((await withHolder(bare, { clustered: true, canHold: true, claim })).PeerAddress, "a");
		assert.deepEqual(claimed, ["personal"]);
	});

	it("announces PEER_URL, else the bound host, else the first address of the machine", () => {
		assert.equal(advertisedPeerUrl({ peerUrl: "http://10.0.0.9:9000", host: "0.0.0.0", port: 8080, ips: ["10.0.0.2"] }), "http://10.0.0.9:9000");
		assert.equal(advertisedPeerUrl({ host: "127.0.0.1", port: 8081, ips: ["10.0.0.2"] }), "http://127.0.0.1:8081");
		assert.equal(advertisedPeerUrl({ host: "0.0.0.0", port: 8080, ips: ["10.0.0.2"] }), "http://10.0.0.2:8080");
		assert.equal(advertisedPeerUrl({ host: "::", port: 8080, ips: [] }), "http://127.0.0.1:8080");
		assert.equal(advertisedPeerUrl({ host: "fd00::2", port: 8080, ips: [] }), "http://[fd00::2]:8080");
	});

	it("signs method, path, expiry, nonce and body digest; any change, another secret or an old signature is refused", () => {
		const now = Date.now();
		const path = "/_peer/store/ds?op=get&key=a";
		const h = signPeerRequest("s", "GET", path, EMPTY_SHA256, now);
		const good = checkPeerSignature("s", "GET", path, h, now) as PeerSignature;
		assert.equal(good.payload, EMPTY_SHA256);
		assert.equal(good.nonce, h["x-cellar-peer-nonce"]);
		assert.notEqual(signPeerRequest("s", "GET", path, EMPTY_SHA256, now)["x-cellar-peer-nonce"], good.nonce);
		const refused = (secret: string, method: string, p: string, headers: Record<string, string>, at = now) => (checkPeerSignature(secret, method, p, headers, at) as { refused?: string }).refused;
		assert.equal(refused("s", "DELETE", path, h), "bad signature");
		assert.equal(refused("s", "GET", "/_peer/store/ds?op=get&key=b", h), "bad signature");
		assert.equal(refused("t", "GET", path, h), "bad signature");
		assert.equal(refused("s", "GET", path, { ...h, "x-cellar-peer-nonce": "another-nonce-of-22-chars" }), "bad signature");
		assert.equal(refused("s", "GET", path, { ...h, "x-cellar-content-sha256": sha256(Buffer.from("x")) }), "bad signature");
		assert.equal(refused("s", "GET", path, { ...h, "x-cellar-content-sha256": "UNSIGNED" }), "no body digest");
		const { "x-cellar-peer-nonce": _n, ...noNonce } = h;
		assert.equal(refused("s", "GET", path, noNonce), "no nonce");
		assert.equal(refused("s", "GET", path, h, now + 60_000), "signature expired");
		assert.equal(refused("s", "GET", "/x", {}), "unsigned request");
		const far = signPeerRequest("s", "GET", "/x", EMPTY_SHA256, now + 3_600_000);
		assert.equal(refused("s", "GET", "/x", far), "signature expiry too far ahead");
	});

	it("checks a body against its signed digest, or a streamed one against its trailer chained on the signature", () => {
		const body = Buffer.from("the signed body");
		const json = checkPeerSignature("s", "POST", "/p", signPeerRequest("s", "POST", "/p", sha256(body))) as PeerSignature;
		assert.equal(checkPeerBody("s", json, {}, sha256(body), body.length), null);
		assert.equal(checkPeerBody("s", json, {}, sha256(Buffer.from("another body")), 12), "the body is not the signed one");
		const head = signPeerRequest("s", "PUT", "/p", STREAMING_PAYLOAD);
		const streamed = checkPeerSignature("s", "PUT", "/p", head) as PeerSignature;
		const trailer = signPeerTrailer("s", head[SIGNATURE_HEADER], sha256(body), body.length);
		assert.equal(checkPeerBody("s", streamed, trailer, sha256(body), body.length), null);
		assert.equal(checkPeerBody("s", streamed, trailer, sha256(Buffer.from("changed")), 7), "the body is not the signed one");
		assert.equal(checkPeerBody("s", streamed, {}, sha256(body), body.length), "the body's signed digest is missing");
		// Whoever changes the body cannot sign its digest, nor move a trailer to another request.
		const forged = { ...trailer, "x-cellar-content-sha256": sha256(Buffer.from("changed")), "x-cellar-content-length": "7" };
		assert.equal(checkPeerBody("s", streamed, forged, sha256(Buffer.from("changed")), 7), "bad signature of the body's digest");
		const other = checkPeerSignature("s", "PUT", "/p", signPeerRequest("s", "PUT", "/p", STREAMING_PAYLOAD)) as PeerSignature;
		assert.equal(checkPeerBody("s", other, trailer, sha256(body), body.length), "bad signature of the body's digest");
	});

	it("keeps nonces until their expiry, refuses a repeat, and refuses new ones when full instead of growing", () => {
		const now = 1_000_000_000_000;
		const t = now / 1000;
		const nonces = new SeenNonces(2);
		assert.equal(nonces.admit("a", t + 30, now), "ok");
		assert.equal(nonces.admit("a", t + 30, now), "replayed");
		assert.equal(nonces.admit("b", t + 5, now), "ok");
		assert.equal(nonces.admit("c", t + 30, now), "full");
		assert.equal(nonces.size, 2);
		// Once b's signature expired it is dropped, and there is room again; a stays until its own expiry.
		assert.equal(nonces.admit("c", t + 36, now + 6_000), "ok");
		assert.equal(nonces.admit("a", t + 30, now + 6_000), "replayed");
		assert.equal(nonces.size, 2);
		assert.equal(nonces.admit("d", t + 90, now + 31_000), "ok");
		assert.equal(nonces.size, 2);
	});
});

describe("peers: the holder's endpoint refuses tampered and replayed requests", function () {
	this.timeout(20_000);
	const secret = "peer-secret";
	let root: string;
	let local: LocalStore;
	let server: Server;
	let base: string;
	const temps = () => (existsSync(join(root, ".cellar-tmp")) ? readdirSync(join(root, ".cellar-tmp")) : []);

	before(async () => {
		root = mkdtempSync(join(tmpdir(), "cellar-peer-replay-"));
		local = new LocalStore(root);
		const handler = new PeerStoreServer({ secret: () => secret, store: async () => local, log: () => undefined, maxNonces: 50 });
		server = createServer((req, res) => handler.handle(req, res));
		await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
		base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
	});
	after(async () => {
		server.closeAllConnections();
		await new Promise((r) => server.close(r));
		rmSync(root, { recursive: true, force: true });
	});

	/** Sends a request as a client would, with the given headers, body chunks and trailers; the status and body. */
	function send(method: string, path: string, headers: Record<string, string>, body?: Buffer, trailers?: Record<string, string>): Promise<{ status: number; text: string }> {
		return new Promise((resolve, reject) => {
			const chunked = trailers !== undefined;
			const req = request(new URL(path, base), { method, headers: { ...headers, ...(chunked ? { "Transfer-Encoding": "chunked" } : body ? { "Content-Length": String(body.length) } : {}) }, agent: false });
			req.once("error", reject);
			req.once("response", async (res: IncomingMessage) => {
				const chunks: Buffer[] = [];
				for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
				resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
			});
			if (body) req.write(body);
			if (trailers) req.addTrailers(trailers);
			req.end();
		});
	}

	it("stores a streamed upload whose signed digest matches, and a good client works end to end", async () => {
		const good = new PeerObjectStore({ datasource: "ds", holder: "b", baseUrl: () => base, secret: () => secret });
		const put = await good.put("good.txt", Readable.from([Buffer.from("hello "), "peer"]));
		assert.equal(put.size, 10);
		assert.equal((await good.head("good.txt"))?.size, 10);
		await good.copy("good.txt", "copy.txt");
		assert.deepEqual((await local.head("copy.txt"))?.size, 10);
	});

	it("refuses a streamed upload whose body was changed on the way, and leaves no object nor temp file", async () => {
		const path = "/_peer/store/ds?op=put&key=tampered.txt";
		const original = Buffer.from("what the node sent");
		const head = signPeerRequest(secret, "PUT", path, STREAMING_PAYLOAD);
		const trailer = signPeerTrailer(secret, head[SIGNATURE_HEADER], sha256(original), original.length);
		const changed = await send("PUT", path, head, Buffer.from("what arrived instead"), trailer);
		assert.equal(changed.status, 403);
		assert.match(JSON.parse(changed.text).Title, /the body is not the signed one/);
		// The attacker's own digest in the trailer: its signature does not hold.
		const head2 = signPeerRequest(secret, "PUT", path, STREAMING_PAYLOAD);
		const evil = Buffer.from("evil");
		const forged = { ...signPeerTrailer(secret, head2[SIGNATURE_HEADER], sha256(original), original.length), "x-cellar-content-sha256": sha256(evil), "x-cellar-content-length": "4" };
		const re = await send("PUT", path, head2, evil, forged);
		assert.equal(re.status, 403);
		assert.match(JSON.parse(re.text).Title, /bad signature of the body's digest/);
		// Trailers stripped: nothing says the body is the signed one.
		const stripped = await send("PUT", path, signPeerRequest(secret, "PUT", path, STREAMING_PAYLOAD), evil, {});
		assert.equal(stripped.status, 403);
		// An upload must sign its digest: one claiming an empty body is not an upload.
		const unsignedPut = await send("PUT", path, signPeerRequest(secret, "PUT", path, EMPTY_SHA256), evil);
		assert.equal(unsignedPut.status, 403);
		assert.equal(await local.head("tampered.txt"), null);
		assert.ok(existsSync(join(root, ".cellar-tmp")));
		assert.deepEqual(temps(), []);
	});

	it("refuses an operation whose JSON body is not the signed one, and does nothing", async () => {
		await local.put("victim.txt", Readable.from([Buffer.from("still here")]));
		const path = "/_peer/store/ds?op=delete";
		const headers = signPeerRequest(secret, "POST", path, sha256(Buffer.from('{"args":["harmless.txt"]}')));
		const r = await send("POST", path, headers, Buffer.from('{"args":["victim.txt"]}'));
		assert.equal(r.status, 403);
		assert.match(JSON.parse(r.text).Title, /the body is not the signed one/);
		assert.equal((await local.head("victim.txt"))?.size, 10);
		// A GET signs the empty body.
		const get = await send("GET", "/_peer/store/ds?op=get&key=victim.txt", signPeerRequest(secret, "GET", "/_peer/store/ds?op=get&key=victim.txt", sha256(Buffer.from("x"))));
		assert.equal(get.status, 403);
	});

	it("answers a signed request once: the same request played again is refused with 403", async () => {
		await local.put("once.txt", Readable.from([Buffer.from("x")]));
		const path = "/_peer/store/ds?op=delete";
		const body = Buffer.from('{"args":["once.txt"]}');
		const headers = signPeerRequest(secret, "POST", path, sha256(body));
		assert.equal((await send("POST", path, headers, body)).status, 200);
		assert.equal(await local.head("once.txt"), null);
		await local.put("once.txt", Readable.from([Buffer.from("y")]));
		const replay = await send("POST", path, headers, body);
		assert.equal(replay.status, 403);
		assert.match(JSON.parse(replay.text).Title, /Peer request refused: replayed request/);
		assert.equal((await local.head("once.txt"))?.size, 1);
		// A download too: the holder answers it once.
		const getPath = "/_peer/store/ds?op=get&key=once.txt";
		const get = signPeerRequest(secret, "GET", getPath);
		assert.equal((await send("GET", getPath, get)).text, "y");
		assert.equal((await send("GET", getPath, get)).status, 403);
		// An upload replayed with its trailers is refused before anything is written.
		const putPath = "/_peer/store/ds?op=put&key=replayed.txt";
		const data = Buffer.from("first");
		const head = signPeerRequest(secret, "PUT", putPath, STREAMING_PAYLOAD);
		const trailer = signPeerTrailer(secret, head[SIGNATURE_HEADER], sha256(data), data.length);
		assert.equal((await send("PUT", putPath, head, data, trailer)).status, 200);
		await local.delete("replayed.txt");
		assert.equal((await send("PUT", putPath, head, data, trailer)).status, 403);
		assert.equal(await local.head("replayed.txt"), null);
	});

	it("refuses with 429, not more memory, when it keeps as many live nonces as it may", async () => {
		const handler = new PeerStoreServer({ secret: () => secret, store: async () => local, log: () => undefined, maxNonces: 1 });
		const small = createServer((req, res) => handler.handle(req, res));
		await new Promise<void>((r) => small.listen(0, "127.0.0.1", () => r()));
		try {
			const peer = new PeerObjectStore({ datasource: "ds", holder: "b", baseUrl: () => `http://127.0.0.1:${(small.address() as { port: number }).port}`, secret: () => secret });
			assert.equal(await peer.head("none"), null);
			await assert.rejects(peer.head("none"), { code: 429 });
		} finally {
			small.closeAllConnections();
			await new Promise((r) => small.close(r));
		}
	});
});
