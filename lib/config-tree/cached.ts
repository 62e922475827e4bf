// A value of the configuration tree that a service applies on every request (the application title, the share
// link policies): read once, kept until `config.changed` names its path, an ancestor or a descendant (a write of
// "frontend" replaces "frontend/plugin/action.share" too). A failed read is not kept: the next request tries again.
import type { Json } from "./tree";

/** Whether a change at `changed` replaces (part of) the subtree at `path`. */
export function overlaps(changed: string, path: string): boolean {
	return changed === path || path.startsWith(`${changed}/`) || changed.startsWith(`${path}/`) || changed === "";
}

export class CachedConfig<T> {
	private value?: Promise<T>;

	constructor(
		readonly path: string,
		private readonly read: (path: string) => Promise<Json | null>,
		private readonly convert: (v: Json | null) => T,
	) {}

	get(): Promise<T> {
		if (!this.value) {
			const p = this.read(this.path).then(this.convert);
			this.value = p;
			p.catch(() => {
				if (this.value === p) this.value = undefined;
			});
		}
		return this.value;
	}

	/** Drops the kept value when the change touches it. */
	changed(path: string): void {
		if (overlaps(path, this.path)) this.value = undefined;
	}
}
