// Which node opens a LOCAL datasource's folder, and the address a node announces for its peer store.
import assert from "node:assert/strict";
import { advertisedPeerUrl, holds, remoteHolder, unheld, withHolder, type HeldDataSource } from "../../lib/peers/holder";
import { checkPeerSignature, signPeerRequest } from "../../lib/peers/signing";

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

	it("signs method, path and expiry; any change, another secret or an old signature is refused", () => {
		const now = Date.now();
		const h = signPeerRequest("s", "GET", "/_peer/store/ds?op=get&key=a", now);
		assert.equal(checkPeerSignature("s", "GET", "/_peer/store/ds?op=get&key=a", h, now), null);
		assert.equal(checkPeerSignature("s", "DELETE", "/_peer/store/ds?op=get&key=a", h, now), "bad signature");
		assert.equal(checkPeerSignature("s", "GET", "/_peer/store/ds?op=get&key=b", h, now), "bad signature");
		assert.equal(checkPeerSignature("t", "GET", "/_peer/store/ds?op=get&key=a", h, now), "bad signature");
		assert.equal(checkPeerSignature("s", "GET", "/_peer/store/ds?op=get&key=a", h, now + 60_000), "signature expired");
		assert.equal(checkPeerSignature("s", "GET", "/x", {}, now), "unsigned request");
		const far = signPeerRequest("s", "GET", "/x", now + 3_600_000);
		assert.equal(checkPeerSignature("s", "GET", "/x", far, now), "signature expiry too far ahead");
	});
});
