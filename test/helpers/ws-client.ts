// A /ws/event client for tests: keeps every message it receives and waits for the one a test expects.
import assert from "node:assert/strict";
import WebSocket from "ws";

export type WsMessage = Record<string, any>;

/** A client socket that keeps every message it receives, and waits for the one a test expects. */
export class WsClient {
	readonly messages: WsMessage[] = [];
	closed: { code: number; reason: string } | undefined;
	private waiters: (() => void)[] = [];
	private constructor(readonly ws: WebSocket) {
		ws.on("message", (d) => {
			this.messages.push(JSON.parse(d.toString()));
			this.wake();
		});
		ws.on("close", (code, reason) => {
			this.closed = { code, reason: reason.toString() };
			this.wake();
		});
	}
	private wake() {
		for (const w of this.waiters.splice(0)) w();
	}
	static async open(url: string, jwt?: string): Promise<WsClient> {
		const ws = new WebSocket(`${url.replace(/^http/, "ws")}/ws/event`);
		await new Promise<void>((res, rej) => {
			ws.once("open", () => res());
			ws.once("error", rej);
		});
		const c = new WsClient(ws);
		if (jwt !== undefined) ws.send(JSON.stringify({ "@type": "subscribe", jwt }));
		// The subscription is handled before any later event: give the gateway a moment to resolve the token.
		await new Promise((r) => setTimeout(r, 100));
		return c;
	}
	async waitFor(pred: (m: WsMessage) => boolean, ms = 5000): Promise<WsMessage> {
		const end = Date.now() + ms;
		for (;;) {
			const hit = this.messages.find(pred);
			if (hit) return hit;
			if (this.closed || Date.now() > end) throw new Error(`no such message; got ${JSON.stringify(this.messages)}${this.closed ? ` (closed ${this.closed.code})` : ""}`);
			await new Promise<void>((res) => {
				this.waiters.push(res);
				setTimeout(res, 100);
			});
		}
	}
	async waitClosed(ms = 5000): Promise<{ code: number; reason: string }> {
		const end = Date.now() + ms;
		while (!this.closed && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
		assert.ok(this.closed, "the socket stays open");
		return this.closed;
	}
	close() {
		this.ws.close();
	}
}

