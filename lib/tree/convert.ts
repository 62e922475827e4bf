// "Upgrade DataSource Format": structured (object key = path) to flat (object key = node uuid). The index says,
// per file, which key holds its content, so the datasource keeps working during the conversion: files are
// moved one at a time (copy to the uuid key, point the index at it, delete the old object). Re-running after a
// crash picks up where it stopped; nothing is deleted before the index points at its copy.
import type { ObjectStore } from "../storage/types";
import { NotFoundError } from "../errors";
import type { TreeIndex } from "./index";
import type { NodeDoc } from "./model";

export interface ConversionReport {
	files: number;
	converted: number;
	alreadyFlat: number;
	failed: { path: string; error: string }[];
}

export async function convertToFlat(index: TreeIndex, ds: string, store: ObjectStore, onProgress: (done: number, total: number) => void = () => undefined): Promise<ConversionReport> {
	// Page by page (the index may hold millions of files): a page's keys change, not the uuids it is read by.
	const total = await index.fileCount(ds);
	const report: ConversionReport = { files: 0, converted: 0, alreadyFlat: 0, failed: [] };
	let done = 0;
	for await (const page of index.files(ds)) for (const n of page.filter((d): d is NodeDoc & { key: string } => typeof d.key === "string")) {
		report.files++;
		try {
			if (isFlatKey(n)) report.alreadyFlat++;
			else {
				const target = n._id;
				if (store.rename) await store.rename(n.key, target).catch((e) => adoptMoved(store, e, target));
				else await store.copy(n.key, target);
				await index.setKey(n._id, target);
				if (!store.rename) await store.delete(n.key).catch(() => undefined);
				report.converted++;
			}
		} catch (e) {
			report.failed.push({ path: n.path, error: (e as Error).message });
		}
		onProgress(++done, total);
	}
	// Empty folders of the old layout are left in storage: removing folders recursively could only lose data.
	return report;
}

/**
 * A rename that finds its source gone while the target exists was done before a crash that came before the index
 * was pointed at it: the target is the file's content (no other writer uses a node's bare uuid as a key).
 */
async function adoptMoved(store: ObjectStore, err: unknown, target: string): Promise<void> {
	if (!(err instanceof NotFoundError) || !(await store.head(target))) throw err;
}

/** Flat keys are the node uuid, possibly with a version suffix (`<uuid>.<nonce>`). */
export function isFlatKey(n: { _id: string; key?: string }): boolean {
	return n.key === n._id || !!n.key?.startsWith(`${n._id}.`);
}
