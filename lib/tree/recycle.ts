// Deleting and restoring as users do it (POST /a/tree/delete and /a/tree/restore): to the recycle bin of the
// workspace root, for good from inside the bin or when asked, and back to where a node came from.
import { randomUUID } from "node:crypto";
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import type { TreeOperations } from "./operations";
import type { Resolver } from "./resolver";
import { joinPath, parentOf } from "./paths";
import { RECYCLE_BIN, type NodeDoc } from "./model";
import type { TreeChange } from "../contracts/tree";

export interface RecycleDeps {
	ops: TreeOperations;
	resolver: Resolver;
	changed(type: TreeChange["type"], doc: NodeDoc, from?: TreeChange["from"]): void;
}

export interface BackgroundJob {
	Uuid: string;
	Label: string;
	NodeUuid: string;
}

export async function deleteNodes(deps: RecycleDeps, user: Identity, paths: string[], permanently: boolean): Promise<BackgroundJob[]> {
	const jobs: BackgroundJob[] = [];
	for (const path of paths) {
		const loc = await deps.resolver.require(path, user, "write");
		if (loc.rel === "") throw new ForbiddenError("Please do not modify directly the root of a workspace", "node.not.writeable");
		const doc = await deps.ops.index.get(loc.ds, loc.path);
		if (!doc) throw new NotFoundError(`${path} not found`, "node.notfound");
		const inBin = loc.rel === RECYCLE_BIN || loc.rel.startsWith(`${RECYCLE_BIN}/`);
		if (permanently || inBin) {
			await deps.ops.removePermanently(loc.ds, loc.path, user.Uuid);
			deps.changed("delete", doc);
			jobs.push({ Uuid: randomUUID(), Label: `Deleted ${path}`, NodeUuid: doc._id });
		} else {
			const moved = await deps.ops.recycle(loc.ds, loc.rootPath, loc.path, joinPath(loc.base ?? loc.ws.Slug, loc.rel));
			deps.changed("move", moved, { ds: loc.ds, path: loc.path });
			jobs.push({ Uuid: randomUUID(), Label: `Moved ${path} to the recycle bin`, NodeUuid: doc._id });
		}
	}
	return jobs;
}

export async function restoreNodes(deps: RecycleDeps, user: Identity, paths: string[]): Promise<BackgroundJob[]> {
	const jobs: BackgroundJob[] = [];
	const targets = new Set<string>();
	for (const path of paths) {
		const loc = await deps.resolver.require(path, user, "write");
		const doc = await deps.ops.index.get(loc.ds, loc.path);
		if (!doc) throw new NotFoundError(`${path} not found`, "node.notfound");
		const raw = doc.meta.recycle_restore;
		if (!raw) throw new BadRequestError(`${path} is not in a recycle bin`);
		const original = JSON.parse(raw) as string;
		if (targets.has(original)) throw new BadRequestError(`Two nodes would be restored to ${original}`);
		targets.add(original);
		const dest = await deps.resolver.require(original, user, "write");
		await deps.ops.mkdir(dest.ds, parentOf(dest.path), true);
		const target = await deps.ops.freeName(dest.ds, dest.path, doc.type === "COLLECTION");
		const moved = await deps.ops.move(loc.ds, loc.path, dest.ds, target);
		await deps.ops.index.setMeta(moved._id, { recycle_restore: undefined });
		deps.changed("move", moved, { ds: loc.ds, path: loc.path });
		jobs.push({ Uuid: randomUUID(), Label: `Restored ${original}`, NodeUuid: doc._id });
	}
	return jobs;
}
