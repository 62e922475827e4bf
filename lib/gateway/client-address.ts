// The address of the client behind a request, for bans, login throttling, policy conditions and logs. Behind a
// reverse proxy every socket comes from the proxy: one client failing logins would get the proxy, and so
// everyone, banned. The forwarding headers are believed only when the socket comes from a configured proxy;
// anything else can write them, so otherwise the socket's peer is the client.
import type { IncomingMessage } from "node:http";
import ipaddr from "ipaddr.js";
import { normalizeIp } from "../policy/ipban";

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export class ClientAddress {
	private readonly ranges: Range[];

	/** `trusted`: addresses and networks (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`) already checked by the configuration. */
	constructor(trusted: string[]) {
		this.ranges = trusted.map((t) => {
			const [addr, bits] = t.split("/");
			const ip = ipaddr.process(addr);
			return [ip, bits === undefined ? (ip.kind() === "ipv4" ? 32 : 128) : Number(bits)] as Range;
		});
	}

	/** The client's address: the socket's peer, or, when that peer is a trusted proxy, the nearest hop it vouches for. */
	of(req: IncomingMessage): string {
		const peer = this.peerOf(req.socket);
		if (!this.ranges.length || !this.trusted(peer)) return peer;
		// Each proxy appends the address it received from: reading from the right, the first hop that is not one of
		// ours is the client. Hops further left were written by the client itself and prove nothing.
		const forwarded = headerValue(req.headers["x-forwarded-for"]);
		if (forwarded) {
			const hops = forwarded.split(",");
			let nearest = peer;
			for (let i = hops.length - 1; i >= 0; i--) {
				const hop = parseHop(hops[i]);
				// A hop that is not an address: nothing on its left can be believed either.
				if (!hop) return nearest;
				if (!this.trusted(hop)) return hop;
				nearest = hop;
			}
			return nearest;
		}
		return parseHop(headerValue(req.headers["x-real-ip"]) ?? "") ?? peer;
	}

	// A connection's peer, parsed once: keep-alive clients send many requests on one socket, and each request
	// asks for its address several times (bans, the response cache, the call's meta, logs).
	private readonly peers = new WeakMap<object, string>();

	private peerOf(socket: IncomingMessage["socket"]): string {
		let peer = this.peers.get(socket);
		if (peer === undefined) {
			const raw = socket.remoteAddress ?? "";
			peer = normalizeIp(raw) ?? raw;
			// Before it connects (or once closed) a socket has no address yet: nothing worth keeping.
			if (raw) this.peers.set(socket, peer);
		}
		return peer;
	}

	private trusted(ip: string): boolean {
		let addr: ipaddr.IPv4 | ipaddr.IPv6;
		try {
			addr = ipaddr.process(ip);
		} catch {
			return false;
		}
		return this.ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match([net, bits] as [typeof addr, number]));
	}
}

function headerValue(h: string | string[] | undefined): string | undefined {
	return Array.isArray(h) ? h.join(",") : h;
}

/** `1.2.3.4`, `1.2.3.4:5678`, `[2001:db8::1]:443`, `"2001:db8::1"` (proxies write all of these) → the address. */
function parseHop(s: string): string | undefined {
	let v = s.trim().replace(/^"(.*)"$/, "$1");
	const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(v);
	if (bracket) v = bracket[1];
	else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(v)) v = v.slice(0, v.lastIndexOf(":"));
	return normalizeIp(v);
}
