// Test data streams: a large deterministic stream whose md5 is known once it has been read.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";

export function generated(total: number): { stream: Readable; md5(): string } {
	const hash = createHash("md5");
	let produced = 0;
	let seed = 12345;
	const stream = new Readable({
		read() {
			if (produced >= total) return void this.push(null);
			const n = Math.min(256 * 1024, total - produced);
			const chunk = Buffer.allocUnsafe(n);
			for (let i = 0; i < n; i += 4) {
				seed = (seed * 1103515245 + 12345) >>> 0;
				chunk.writeUInt32LE(seed, i);
			}
			produced += n;
			hash.update(chunk);
			this.push(chunk);
		},
	});
	return { stream, md5: () => hash.digest("hex") };
}
