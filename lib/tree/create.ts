// Creating nodes as users do it (POST /a/tree/create): folders (with their missing parents when asked) and
// files, empty or with a document template's content, never a workspace root nor anything in the recycle bin,
// which the server manages.
import { lookup as mimeLookup } from "mime-types";
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import { getTemplate } from "../templates";
import type { RecycleDeps } from "./recycle";
import { presentNode } from "./present";
import { checkUserWritable, type TreeNode } from "./model";

export async function createNodes(deps: RecycleDeps, user: Identity, nodes: { Path?: string; Type?: string }[], recursive: boolean, templateUuid?: string): Promise<TreeNode[]> {
	// An unknown template fails the request before anything is created; folders ignore a known one.
	const template = templateUuid ? getTemplate(templateUuid) : undefined;
	if (templateUuid && !template) throw new NotFoundError(`template ${templateUuid} not found`, "template.notfound");
	const seen = new Set<string>();
	const out: TreeNode[] = [];
	for (const n of nodes) {
		if (!n.Path) throw new BadRequestError("Every node needs a Path");
		const path = n.Path.replace(/\/$/, "");
		if (seen.has(path)) continue;
		seen.add(path);
		const loc = await deps.resolver.require(path, user, "write");
		checkUserWritable(loc.rel);
		// Folders announce themselves (with their missing parents) through the operations' hook.
		const doc =
			n.Type !== "LEAF"
				? await deps.ops.mkdir(loc.ds, loc.path, recursive)
				: template
					? await deps.ops.createFileWith(loc.ds, loc.path, template.content, mimeLookup(loc.path) || "application/octet-stream")
					: await deps.ops.createEmptyFile(loc.ds, loc.path);
		if (doc.type === "LEAF") deps.changed("create", doc);
		out.push(presentNode(doc, loc));
	}
	return out;
}
