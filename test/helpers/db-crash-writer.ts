// Child process of the durability test: opens the SQLite database in DATA_DIR, inserts leases one at a time and
// prints each name once its insert has returned (acknowledged), then kills itself with SIGKILL in the middle of
// further writes: no exit handler, no close, nothing flushed by a clean shutdown.
import { openDatabase } from "../../lib/db";

(async () => {
	const db = await openDatabase({ dataDir: process.env.DATA_DIR as string });
	const total = Number(process.env.WRITES || 200);
	const killAt = Number(process.env.KILL_AT || 150);
	for (let i = 0; i < total; i++) {
		const name = `acked-${i}`;
		const write = db.kysely.insertInto("leases").values({ name, holder: "writer", expires_at: i }).execute();
		if (i === killAt) process.kill(process.pid, "SIGKILL");
		await write;
		process.stdout.write(`${name}\n`);
	}
})();
