// Waiting for something another part of the node does in its own time (a mail, a shipped log line, an event):
// the probe is asked again until it answers anything but undefined, or the deadline passes.
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 10_000, stepMs = 100): Promise<T> {
	const end = Date.now() + ms;
	for (;;) {
		const v = await probe();
		if (v !== undefined) return v;
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, stepMs));
	}
}
