// The peer store on a real gateway: /_peer/store/ refuses anything not signed with the cluster secret (403), and
// serves the LOCAL datasources the node holds (on one node: all of them) to a signed PeerObjectStore.
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { useNode } from "../helpers/node";
import { derivedKey } from "../../lib/auth/jwt";
import { PEER_SECRET_LABEL } from "../../lib/peers/holder";
import { PeerObjectStore } from "../../lib/peers/client";

describe("HTTP: the peer store of the gateway", function () {
	this.timeout(60_000);
	const node = useNode();

	it("refuses unsigned and wrongly signed requests, and serves a held datasource to a signed client", async () => {
		for (const method of ["GET", "PUT", "POST"]) {
			const r = await fetch(`${node.url}/_peer/store/pydiods1?op=get&key=x`, { method, body: method === "GET" ? undefined : "{}" });
			assert.equal(r.status, 403, method);
		}
		const wrong = new PeerObjectStore({ datasource: "pydiods1", holder: "self", baseUrl: () => node.url, secret: () => "not-the-cluster-secret" });
		await assert.rejects(wrong.head("x"), { code: 403 });
		const peer = new PeerObjectStore({ datasource: "pydiods1", holder: "self", baseUrl: () => node.url, secret: () => derivedKey(PEER_SECRET_LABEL) });
		await peer.put("peer-test/x.txt", Readable.from([Buffer.from("over the peer store")]));
		assert.equal((await peer.head("peer-test/x.txt"))?.size, 19);
		await peer.delete("peer-test/x.txt");
		assert.equal(await peer.head("peer-test/x.txt"), null);
		const unknown = new PeerObjectStore({ datasource: "nosuchds", holder: "self", baseUrl: () => node.url, secret: () => derivedKey(PEER_SECRET_LABEL) });
		await assert.rejects(unknown.head("x"), { code: 404 });
	});
});
