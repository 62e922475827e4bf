// Creating nodes as users do it (POST /a/tree/create): folders (with their missing parents when asked) and empty
// files, never a workspace root nor anything in the recycle bin, which the server manages.
import { BadRequestError, ForbiddenError } from "../errors";
import type { Identity } from "../auth/identity";
import type { RecycleDeps } from "./recycle";
import { presentNode } from "./present";
import { RECYCLE_BIN, type TreeNode } from "./model";

export async function createNodes(deps: RecycleDeps, user: Identity, nodes: { Path?: string; Type?: string }[], recursive: boolean): Promise<TreeNode[]> {
	const seen = new Set<string>();
	const out: TreeNode[] = [];
	for (const n of nodes) {
		if (!n.Path) throw new BadRequestError("Every node needs a Path");
		const path = n.Path.replace(/\/$/, "");
		if (seen.has(path)) continue;
		seen.add(path);
		const loc = await deps.resolver.require(path, user, "write");
		if (loc.rel === "") throw new ForbiddenError("A workspace root cannot be created", "node.not.writeable");
		if (loc.rel.split("/")[0] === RECYCLE_BIN) throw new ForbiddenError("The recycle bin is managed by the server", "node.not.writeable");
		// Folders announce themselves (with their missing parents) through the operations' hook.
		const doc = n.Type === "LEAF" ? await deps.ops.createEmptyFile(loc.ds, loc.path) : await deps.ops.mkdir(loc.ds, loc.path, recursive);
		if (doc.type === "LEAF") deps.changed("create", doc);
		out.push(presentNode(doc, loc));
	}
	return out;
}
