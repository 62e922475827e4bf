// The visible children of folders, sorted by name, kept in memory once a folder has been listed: the index
// store cannot sort a folder of 100,000 children per request, this serves any page of it in microseconds.
// Every index write updates the folders it touches; writes made by another replica drop them (tree.changed).
import type { NodeType } from "./model";

export interface ChildEntry {
	name: string;
	id: string;
	type: NodeType;
}

function search(list: ChildEntry[], name: string): number {
	let lo = 0;
	let hi = list.length;
	while (lo < hi) {
		const mid = (lo + hi) >>> 1;
		if (list[mid].name < name) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

export class ChildListings {
	private folders = new Map<string, ChildEntry[]>();
	/** How many of each listing's entries are folders (kept with every change: counting a million is slow). */
	private subfolders = new WeakMap<ChildEntry[], number>();
	private entries = 0;

	constructor(private readonly maxEntries = 2_000_000) {}

	get(parentKey: string): ChildEntry[] | undefined {
		const list = this.folders.get(parentKey);
		if (list) {
			// Most recently used last: the first folders are the ones evicted.
			this.folders.delete(parentKey);
			this.folders.set(parentKey, list);
		}
		return list;
	}

	/** Files and folders in a listing held here. */
	counts(list: ChildEntry[]): { files: number; folders: number } {
		let folders = this.subfolders.get(list);
		if (folders === undefined) {
			folders = 0;
			for (const e of list) if (e.type === "COLLECTION") folders++;
			this.subfolders.set(list, folders);
		}
		return { files: list.length - folders, folders };
	}

	set(parentKey: string, unsorted: ChildEntry[]): ChildEntry[] {
		const list = unsorted.filter((e) => !e.name.startsWith(".")).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
		this.drop(parentKey);
		this.folders.set(parentKey, list);
		this.entries += list.length;
		for (const [key, l] of this.folders) {
			if (this.entries <= this.maxEntries || key === parentKey) break;
			this.folders.delete(key);
			this.entries -= l.length;
		}
		return list;
	}

	add(parentKey: string, entry: ChildEntry): void {
		const list = this.folders.get(parentKey);
		if (!list || entry.name.startsWith(".")) return;
		const i = search(list, entry.name);
		const folders = this.subfolders.get(list);
		const was = list[i]?.name === entry.name ? list[i] : undefined;
		if (was) list[i] = entry;
		else {
			list.splice(i, 0, entry);
			this.entries++;
		}
		if (folders !== undefined) this.subfolders.set(list, folders + (entry.type === "COLLECTION" ? 1 : 0) - (was?.type === "COLLECTION" ? 1 : 0));
	}

	remove(parentKey: string, name: string): void {
		const list = this.folders.get(parentKey);
		if (!list) return;
		const i = search(list, name);
		if (list[i]?.name === name) {
			const [gone] = list.splice(i, 1);
			this.entries--;
			const folders = this.subfolders.get(list);
			if (folders !== undefined && gone.type === "COLLECTION") this.subfolders.set(list, folders - 1);
		}
	}

	drop(parentKey: string): void {
		const list = this.folders.get(parentKey);
		if (list) {
			this.entries -= list.length;
			this.folders.delete(parentKey);
		}
	}

	clear(): void {
		this.folders.clear();
		this.entries = 0;
	}
}
