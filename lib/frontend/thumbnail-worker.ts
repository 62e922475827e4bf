// A thread of lib/frontend/thumbnail-pool: makes the thumbnails it is sent, one at a time, with the code the main
// thread used to run (images' pngThumbnail). Its answer carries no bytes when the original is to be served.
import { parentPort } from "node:worker_threads";
import { pngThumbnail } from "./images";
import { WORKER_READY, type ThumbnailReply, type ThumbnailRequest } from "./thumbnail-pool";

const port = parentPort;
if (!port) throw new Error("thumbnail-worker runs as a worker thread of lib/frontend/thumbnail-pool");
port.on("message", (req: ThumbnailRequest) => {
	let reply: ThumbnailReply;
	try {
		const png = Buffer.from(req.png.buffer, req.png.byteOffset, req.png.byteLength);
		const thumb = pngThumbnail(png, req.dim);
		reply = { id: req.id, ok: true, data: thumb && thumb !== png ? thumb : null };
	} catch (e) {
		reply = { id: req.id, ok: false, message: (e as Error).message };
	}
	port.postMessage(reply);
});
port.postMessage(WORKER_READY);
