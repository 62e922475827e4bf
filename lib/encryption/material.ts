// Key material for services that open encrypted datasources (tree, /io gateway): a small cache in front of the
// `encryption.keyMaterial` action, so that opening a store does not cost a call each time. Clear it on the
// `encryption.changed` event ({KeyID}).
import { CellarError } from "../errors";
import { KEY_BYTES } from "./keys";

export class KeyMaterialCache {
	private readonly entries = new Map<string, { at: number; value: Promise<Buffer> }>();

	/** `fetch(id)` returns the base64 key (e.g. `(id) => broker.call("encryption.keyMaterial", { id })`). */
	constructor(
		private readonly fetch: (id: string) => Promise<string>,
		private readonly ttlMs = 60_000,
	) {}

	get(id: string): Promise<Buffer> {
		const now = Date.now();
		const hit = this.entries.get(id);
		if (hit && now - hit.at < this.ttlMs) return hit.value;
		const value = this.fetch(id).then((b64) => {
			const key = Buffer.from(String(b64), "base64");
			if (key.length !== KEY_BYTES) throw new CellarError(`Encryption key ${id} has an invalid length`, 500, "encryption.key.invalid");
			return key;
		});
		this.entries.set(id, { at: now, value });
		value.catch(() => {
			if (this.entries.get(id)?.value === value) this.entries.delete(id);
		});
		return value;
	}

	/** Forgets one key (or all). */
	clear(id?: string): void {
		if (id === undefined) this.entries.clear();
		else this.entries.delete(id);
	}

	/** The function openDataStore() takes. */
	get resolver(): (id: string) => Promise<Buffer> {
		return (id) => this.get(id);
	}
}
